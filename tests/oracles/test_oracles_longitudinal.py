"""Longitudinal protocols: matrices, single-report privacy, Table 1, L-OUE limit."""
import numpy as np
import pytest

from lopub.oracles.base import ldp_level, ue_bits_from_index
from lopub.oracles.longitudinal import (
    LGRR,
    LOSUE,
    LOUE,
    LSUE,
    loue_max_eps1,
    make_longitudinal,
)

BUDGETS = [(1.0, 0.6), (4.0, 2.4), (2.0, 0.3)]


@pytest.mark.parametrize(("eps_inf", "eps_1"), BUDGETS)
@pytest.mark.parametrize("cls", [LSUE, LOSUE, LOUE])
@pytest.mark.parametrize("k", [2, 5])
def test_unary_single_report_exact(cls, eps_inf, eps_1, k):
    proto = cls(eps_inf, eps_1, k)
    q = proto.transition_matrix()
    np.testing.assert_allclose(q.sum(axis=1), 1.0, atol=1e-12)
    assert ldp_level(q) == pytest.approx(eps_1, rel=1e-9)
    # permanent round alone is eps_inf-LDP
    assert proto.p1 * (1 - proto.q1) / ((1 - proto.p1) * proto.q1) == pytest.approx(np.exp(eps_inf))
    f = np.random.default_rng(k).dirichlet(np.ones(k))
    support = (f @ q) @ ue_bits_from_index(k).astype(float)
    np.testing.assert_allclose(proto.estimate_from_counts(support * 500, 500), f, atol=1e-12)


@pytest.mark.parametrize(("eps_inf", "eps_1"), BUDGETS)
@pytest.mark.parametrize("k", [2, 3, 6])
def test_lgrr_variants(eps_inf, eps_1, k):
    paper, exact = LGRR(eps_inf, eps_1, k, "paper"), LGRR(eps_inf, eps_1, k, "exact")
    for proto in (paper, exact):
        q = proto.transition_matrix()
        np.testing.assert_allclose(q.sum(axis=1), 1.0, atol=1e-12)
        assert ldp_level(q) <= eps_1 * (1 + 1e-12)
        f = np.random.default_rng(k).dirichlet(np.ones(k))
        np.testing.assert_allclose(proto.estimate_from_counts(f @ q * 10, 10), f, atol=1e-12)
    assert ldp_level(exact.transition_matrix()) == pytest.approx(eps_1, rel=1e-9)
    if k == 2:
        assert ldp_level(paper.transition_matrix()) == pytest.approx(eps_1, rel=1e-9)
    else:  # the paper's p2 wastes budget for k > 2
        assert ldp_level(paper.transition_matrix()) < eps_1 * (1 - 1e-6)
        assert exact.variance(1000) < paper.variance(1000)


@pytest.mark.parametrize(("budget", "expected"), [
    ((1.0, 0.6), {"lgrr2": 0.000270, "lgrr32": 0.125036, "losue": 0.001078,
                  "lsue": 0.001103, "loue": 0.001347}),
    ((4.0, 2.4), {"lgrr2": 0.000011, "lgrr32": 0.000078, "losue": 0.000044,
                  "lsue": 0.000062, "loue": 0.000057}),
])
def test_table1_check_values(budget, expected):
    n = 10_000
    got = {"lgrr2": LGRR(*budget, 2).variance(n), "lgrr32": LGRR(*budget, 32).variance(n),
           "losue": LOSUE(*budget, 4).variance(n), "lsue": LSUE(*budget, 4).variance(n),
           "loue": LOUE(*budget, 4).variance(n)}
    for key, value in expected.items():
        assert round(got[key], 6) == value, key


def test_losue_variance_equals_oue_at_eps1():
    from lopub.oracles.oneshot import OUE
    assert LOSUE(3.0, 1.2, 5).variance(777) == pytest.approx(OUE(1.2, 5).variance(777))


def test_loue_feasibility_error():
    limit = loue_max_eps1(1.0)
    assert limit == pytest.approx(np.log((2 * np.e + 1) / 3))
    LOUE(1.0, limit * 0.99, 3)
    with pytest.raises(ValueError, match=r"eps_1 \(0.9\) must be < ln\(\(2 e\^eps_inf \+ 1\)/3\)"):
        LOUE(1.0, 0.9, 3)


def test_epsilon_accounting():
    proto = LOSUE(2.0, 0.5, 4)
    assert proto.epsilon_over_reports(1) == 0.5
    assert proto.epsilon_over_reports(3) == 1.5
    assert proto.epsilon_over_reports(100) == 2.0
    assert proto.epsilon_over_reports(100, distinct_values=3) == 6.0
    with pytest.raises(ValueError, match="distinct_values"):
        proto.epsilon_over_reports(2, distinct_values=3)


def test_budget_errors():
    with pytest.raises(ValueError, match=r"eps_1 \(2.0\) must be < eps_inf \(1.0\)"):
        LOSUE(1.0, 2.0, 3)
    with pytest.raises(ValueError, match="variant"):
        LGRR(2.0, 1.0, 3, "other")
    with pytest.raises(ValueError, match="must be one of"):
        make_longitudinal("l-xyz", 2.0, 1.0, 3)


@pytest.mark.parametrize("name", ["l-grr", "l-sue", "l-osue", "l-oue"])
def test_one_round_estimate_within_sd(name):
    k, n = 6, 30_000
    proto = make_longitudinal(name, 3.0, 1.5, k)
    rng = np.random.default_rng()
    values = rng.integers(0, k, n)
    f = np.bincount(values, minlength=k) / n
    est = proto.estimate(proto.perturb(values, rng=rng))
    assert np.all(np.abs(est - f) < 5 * np.sqrt(proto.variance(n, f)))
