"""Tour 40: exact privacy of the simulated oracles, LH-LIP's budget, as a new user meets them."""
import decimal
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

import lopub.oracles as O
from lopub.oracles.memo import permanent_from_uniforms
from lopub.oracles.oneshot import lh_hash

GRID = 2 ** 53  # Generator.random draws j / 2^53, j uniform below 2^53


def _within_exp(ratio: Fraction, eps: float) -> bool:
    """ratio <= e^eps, exactly (e^eps to 60 digits; a float ratio is never that close)."""
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        return Decimal(ratio.numerator) / Decimal(ratio.denominator) <= Decimal(eps).exp()


def _mass(kept) -> Fraction:
    """P(kept(U)) for U uniform on the grid j / 2^53 (kept true below a threshold, then false):
    the first grid point not kept, by bisection over j (53 calls of the rule)."""
    lo, hi = 0, GRID
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if kept(mid / GRID) else (lo, mid)
    return Fraction(lo, GRID)


class _Uniforms(np.random.Generator):
    """A Generator whose random() gives the one uniform u everywhere (integers stay random)."""

    def __init__(self, u):
        super().__init__(np.random.PCG64(0))
        self.u = u

    def random(self, size=None, dtype=np.float64, out=None):
        return np.full(size, self.u)


def test_generator_random_draws_on_the_53_bit_grid():
    """What the realized probabilities below assume: every uniform is j / 2^53."""
    for bits in (np.random.PCG64(1), np.random.MT19937(1), np.random.Philox(1), np.random.SFC64(1)):
        u = np.random.Generator(bits).random(10_000)
        assert np.array_equal(u * GRID, np.floor(u * GRID)) and u.min() >= 0 and u.max() < 1


EPS_K = [(eps, k) for k in (3, 10, 1000, 4096) for eps in (0.1, 0.5, 1.0, 1.7, 3.0, 5.0, 9.0)]


@pytest.mark.parametrize("eps,k", EPS_K)
def test_simulated_grr_keeps_no_more_often_than_epsilon_allows(eps, k):
    """GRR(eps, k).perturb kept the value when rng.random() < p: with p < 1/2 off the 2^-53
    grid that is ceil(p 2^53) / 2^53, up to 2^-53 above p, and the realized ratio
    keep (k - 1) / (1 - keep) was above e^eps (by ~1e-13 at k = 1000).  The realized keep
    probability of the comparison rule, the others' (1 - keep) / (k - 1) each (a uniform
    other value), must give a ratio <= e^eps exactly; the device's exact Bernoulli(p) too."""
    grr = O.GRR(eps, k)
    keep = _mass(lambda u: grr.perturb([0], rng=_Uniforms(u))[0] == 0)
    assert keep <= Fraction(grr.p)
    assert _within_exp(keep * (k - 1) / (1 - keep), eps)
    assert _within_exp(Fraction(grr.p) * (k - 1) / (1 - Fraction(grr.p)), eps)  # the device's


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0, 5.0, 9.0])
def test_simulated_olh_and_lgrr_keep_no_more_often_than_epsilon_allows(eps):
    """OLH's GRR on the hashed value and L-GRR's permanent round drew keep as GRR did."""
    olh = O.OLH(eps, 1000)

    def olh_kept(u):
        a, b, y = olh.perturb([7], rng=_Uniforms(u))[0]
        return y == lh_hash(np.array([a]), np.array([b]), np.array([7]), olh.g)[0, 0]

    keep = _mass(olh_kept)
    assert _within_exp(keep * (olh.g - 1) / (1 - keep), eps)
    lgrr = O.LGRR(eps, eps / 2, 1000)
    keep = _mass(lambda u: lgrr.permanent([0], rng=_Uniforms(u))[0] == 0)
    assert keep <= Fraction(lgrr.p1) and _within_exp(keep * 999 / (1 - keep), eps)


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0, 5.0])
def test_memoized_permanent_round_keeps_no_more_often_than_stated(eps):
    """A DeviceClient's permanent response (keyed uniforms, multiples of 2^-53) kept the value
    when u < p1 as the simulation did; unary bits are set with q1 rounded up (more noise)."""
    lgrr = O.LGRR(eps, eps / 2, 1000)
    u = np.full(1001, 0.5)
    keep = _mass(lambda x: permanent_from_uniforms(lgrr, 0, np.r_[x, u[1:]]) == 0)
    assert keep <= Fraction(lgrr.p1) and _within_exp(keep * 999 / (1 - keep), eps)
    losue = O.LOSUE(eps, eps / 2, 6)
    own = _mass(lambda x: bool(permanent_from_uniforms(losue, 0, np.r_[x, np.ones(6)])[0]))
    other = _mass(lambda x: bool(permanent_from_uniforms(losue, 0, np.r_[1.0, x, np.ones(5)])[1]))
    assert own <= Fraction(losue.p1) and other >= Fraction(losue.q1)


@pytest.mark.parametrize("eps", [0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.6, 1.0, 2.0])
def test_lh_lip_keeps_no_more_often_than_one_minus_e_to_the_minus_epsilon(eps):
    """LH-LIP reports h(x) w.p. 1 - e^-eps, else a prior draw: kept when rng.random() < a;
    a realized keep above 1 - e^-eps makes P(y | x) / P(y) leave [e^-eps, e^eps]."""
    lip = O.LHLIP(np.full(8, 1 / 8), eps)
    seen = []

    class Recording(np.random.Generator):
        def __init__(self):
            super().__init__(np.random.PCG64(3))

        def random(self, size=None, dtype=np.float64, out=None):
            u = super().random(size).view(_Compared)
            u.seen = seen
            return u

    class _Compared(np.ndarray):
        def __lt__(self, other):
            self.seen.append(float(other))
            return np.asarray(self) < other

    lip.perturb(np.arange(8), rng=Recording())
    assert len(seen) == 1
    keep = Fraction(math.ceil(Fraction(seen[0]) * GRID), GRID)  # P(U < t) = ceil(t 2^53) / 2^53
    assert _within_exp(1 / (1 - keep), eps)


@pytest.mark.parametrize(("prior", "eps", "lightest", "need"), [
    ([0.2] * 5, 0.0025, "0.4", "0.405466"),  # collect's race at --epsilon 0.01 over 4 attributes
    ([0.7, 0.2, 0.1], 0.5, "0.3", "0.847298"),
    ([0.9] + [0.1 / 30] * 30, 1.0, "0.1", "2.19723"),  # 31 values: beyond the enumeration
])
def test_lh_lip_refuses_a_budget_no_split_can_meet_at_construction(prior, eps, lightest, need):
    """LHLIP([0.2] * 5, 0.0025) was built; its perturb then redrew every user's hash 200 times
    (minutes at 10^6 users) and said 'no valid hash found in 200 redraws for g (2) and this
    prior at epsilon (0.0025)': no prior shown, nothing on the budget it needs.  No split of
    five 0.2s into two buckets gives both >= 1/(e^0.0025 + 1) = 0.499375 (the best is 0.4,
    needing e^eps >= 0.6 / 0.4).  Now the constructor says so, with the needed budget."""
    with pytest.raises(ValueError) as info:
        O.LHLIP(prior, eps)
    msg = str(info.value)
    assert f"epsilon ({eps}) is too small for LH-LIP with the prior [" in msg
    assert f"gives its lightest bucket {lightest};" in msg
    assert f"LH-LIP needs epsilon >= ln((1 - {lightest}) / {lightest}) = {need} " in msg
    assert "RR-LIP or UE-LIP" in msg and "redraws" not in msg
    mech = O.LHLIP(prior, float(need))  # the budget named is accepted ...
    if len(prior) <= 5:  # ... and random hashes find the split (the 0.9 alone: 2 in 2^31 do)
        assert mech.perturb(np.zeros(50, dtype=np.int64), rng=0).shape == (50, 3)


def test_lh_lip_budget_condition_is_the_best_split():
    """The bracket of the best lightest-bucket mass: exact (every subset) up to 20 values,
    a greedy split below and the largest values' bound above beyond."""
    from lopub.oracles.lip_split import split_bounds

    rng = np.random.default_rng(5)
    for k in (2, 3, 7, 12):
        prior = rng.dirichlet(np.ones(k))
        subsets = (np.arange(2 ** k)[:, None] >> np.arange(k)) & 1
        mass = subsets @ prior
        best = np.minimum(mass, 1 - mass).max()
        lo, hi = split_bounds(prior, 2)
        assert lo == pytest.approx(best, abs=1e-12) and hi == pytest.approx(best, abs=1e-12)
    prior = rng.dirichlet(np.ones(40))
    for g in (2, 3, 5):
        lo, hi = split_bounds(prior, g)
        assert 0 < lo <= hi <= 1 / g
    assert split_bounds(np.array([0.5, 0.5]), 3) == (0.0, 0.0)


def _constant_frame(n=3000):
    import pandas as pd

    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": rng.choice(list("xyz"), n), "b": rng.choice(list("pq"), n),
                         "c": rng.choice(list("tuvw"), n), "const": ["same"] * n})


def test_bloom_spec_refuses_to_spend_budget_on_a_constant_attribute():
    """CollectionSpec.from_domain(domain, epsilon=4) with a one-category column 'const' split
    the budget over it as over the others: epsilon 1 of 4 each (inspect-reports:
    'epsilon[const] = 1.0000'), a quarter of the budget buying nothing, while lopub schema
    notes 'one category: ... costs no budget' and the oracle protocols refuse the column.
    The Bloom format states one f and epsilon = sum_j 2 h_j ln((2 - f)/f) over every
    attribute (what the JS client checks), so the column cannot be left out of the sum
    without changing the format: the spec refuses, naming it and its share."""
    import lopub
    from lopub.errors import SpecError
    from lopub.reports.spec import CollectionSpec

    domain = lopub.infer_domain(_constant_frame())
    with pytest.raises(SpecError, match=r"attribute\(s\) 'const' \(only \['same'\]\) have one category: "
                                        r"Bloom reports split epsilon \(4\) over every attribute's hashes, "
                                        r"so they would take 25% of it \(1\)"):
        CollectionSpec.from_domain(domain, epsilon=4.0, h=2)
    spec = CollectionSpec.from_domain(domain.project(["a", "b", "c"]), epsilon=4.0, h=2)
    assert spec.epsilon_per_attribute == pytest.approx((4 / 3,) * 3)  # all of it informative
    # a flip probability given (no budget to split): accepted, its epsilon counted in full
    assert CollectionSpec.from_domain(domain, f=0.5).epsilon == pytest.approx(4 * 8 * np.log(3))


def test_collect_bloom_refuses_a_constant_column_and_auto_plans_without_it(tmp_path, capsys):
    """lopub collect --protocol bloom printed 'collected 3,000 reports with bloom' at epsilon
    1 per attribute, the constant column's included; --protocol auto could plan Bloom too."""
    from cli_run import run
    from lopub.collect.planner import plan

    import lopub

    _constant_frame().to_csv(tmp_path / "d.csv", index=False)
    assert run(capsys, "schema", str(tmp_path / "d.csv"), "--out", str(tmp_path / "dom.json"))[0] == 0
    base = ["collect", str(tmp_path / "d.csv"), "--domain", str(tmp_path / "dom.json"), "--epsilon", "4"]
    code, _, err = run(capsys, *base, "--protocol", "bloom", "--out", str(tmp_path / "r.parquet"))
    assert code == 2 and "attribute(s) ['const'] have one category: Bloom reports would spend" in err
    assert not (tmp_path / "r.parquet").exists()
    code, _, err = run(capsys, *base, "--protocol", "auto", "--out", str(tmp_path / "r.npz"))
    assert code == 0 and (tmp_path / "r.npz").exists(), err
    report = plan(lopub.infer_domain(_constant_frame()), 10 ** 6, 4.0)
    assert "one category" in report.refused["bloom"]
