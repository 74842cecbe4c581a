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
