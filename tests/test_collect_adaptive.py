"""Adaptive marginal-sampling plans: the auto rule, candidates, two-phase plans."""
import itertools
import math

import numpy as np
import pytest

from lopub.collect import MarginalPlan, PlanError, measure_marginals
from lopub.collect.adaptive import predict_pair_errors, predict_plan_error, triple_cover
from lopub.collect.server import merge_sources
from lopub.collect.phases import collect_two_phase
from lopub.collect.twophase import TwoPhasePlan, plan_marginals
from lopub.collect.cost import best_oracle, cell_var, expected_tvd, grr_var, oue_var
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain


def domain(sizes):
    return Domain.from_categories({f"a{i}": [str(j) for j in range(k)] for i, k in enumerate(sizes)})


DOM = domain([2, 5, 4, 9, 3, 16, 2, 6])


def test_oracle_variances_match_papers_check_values():
    # PAPERS.md section 2 check values, n = 10,000
    assert round(grr_var(0.5, 32) / 1e4, 6) == 0.007520
    assert round(grr_var(4, 1024) / 1e4, 6) == 0.000037
    assert round(oue_var(0.5) / 1e4, 6) == 0.001567
    assert best_oracle(1.0, 10) == "grr" and best_oracle(1.0, 11) == "oue"  # 3e + 2 = 10.15


def test_cell_var_grr_projection_is_exact():
    """Merging m GRR cells is a randomized response again: check against the sum of
    the m x m block of the exact fixed-dataset covariance of the estimator."""
    eps, k, m, n = 1.0, 6, 3, 1000
    t = math.exp(eps)
    p, q = t / (t + k - 1), 1 / (t + k - 1)
    f = np.full(k, 1 / k)
    # fixed dataset (share f_x holds x): sum over x of f_x Cov(1[y=i], 1[y=j] | x)
    Q = np.full((k, k), q) + np.eye(k) * (p - q)
    cov = sum(f[x] * (np.diag(Q[x]) - np.outer(Q[x], Q[x])) for x in range(k)) / (n * (p - q) ** 2)
    assert math.isclose(cell_var("grr", eps, k, n, merged=m), cov[:m, :m].sum(), rel_tol=1e-9)


@pytest.mark.parametrize("eps", [1e-300, 1e-9, 0.1, 5, 50, 1e6, 1e300])
def test_cost_model_finite_or_capped(eps):
    errs = predict_pair_errors(DOM, 1000, eps, [("a0", "a1"), ("a2",)])
    for e in errs.values():
        assert not math.isnan(e) and 0 <= e < 1


def test_expected_tvd_limits():
    # bias only: sum |d| / 2 (the soft cap at 1 - 1/K = 0.75 lowers it by 0.13 %)
    assert expected_tvd(0.0, 0.1, cells=4) == pytest.approx(0.2, rel=2e-3)
    v = 1e-6
    assert expected_tvd(v, 0.0, cells=10) == pytest.approx(5 * math.sqrt(2 * v / math.pi), rel=1e-3)
    assert expected_tvd(10.0, 0.0, cells=4) == pytest.approx(0.75, rel=1e-3)  # saturated
    assert expected_tvd(math.inf, 0.0, cells=4) == 0.75


def test_auto_one_way_at_tiny_budget_pairs_at_large():
    tiny = plan_marginals(DOM, 5000, 0.2)
    assert all(len(s) == 1 for s in tiny.subsets)
    big = plan_marginals(DOM, 1_000_000, 8.0)
    assert any(len(s) >= 2 for s in big.subsets)
    covered = {frozenset(p) for s in big.subsets for p in itertools.combinations(s, 2)}
    assert len(covered) >= 20  # most of the 28 pairs are measured


def test_error_decreases_with_users_and_budget():
    subsets = [tuple(p) for p in itertools.combinations(DOM.attrs, 2)]
    errs = [predict_plan_error(DOM, n, eps, subsets) for n, eps in
            [(10_000, 1), (100_000, 1), (100_000, 4), (1_000_000, 4)]]
    assert all(a > b for a, b in zip(errs, errs[1:]))


def test_fixed_strategies():
    assert plan_marginals(DOM, 1000, 1.0, strategy="one-way").subsets == tuple((a,) for a in DOM.attrs)
    # a fixed strategy must give every group its minimum (lopub.collect.groups): 10^8 users do
    assert len(plan_marginals(DOM, 10**8, 1.0, strategy="pairs").subsets) == 28
    with pytest.raises(PlanError, match=r"needs 28 subsets but n \(1000\) users give 35 per subset"):
        plan_marginals(DOM, 1000, 1.0, strategy="pairs")
    tri = plan_marginals(DOM, 10**8, 1.0, strategy="triples")
    covered = {frozenset(p) for s in tri.subsets for p in itertools.combinations(s, 2)}
    assert len(covered) == 28 and all(len(s) == 3 for s in tri.subsets)
    assert len(triple_cover(DOM)) < 28


def test_bad_input():
    with pytest.raises(ValueError, match=r"strategy \('bogus'\)"):
        plan_marginals(DOM, 1000, 1.0, strategy="bogus")
    with pytest.raises(PlanError, match=r"n \(5\)"):
        plan_marginals(DOM, 5, 1.0)
    with pytest.raises(PlanError, match=r"needs 28 subsets but n \(20\)"):
        plan_marginals(DOM, 20, 1.0, strategy="pairs")
    for eps in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"epsilon \("):
            plan_marginals(DOM, 1000, eps)
    with pytest.raises(ValueError, match=r"n \(0\)"):
        plan_marginals(DOM, 0, 1.0)
    with pytest.raises(TypeError, match="n"):
        plan_marginals(DOM, "many", 1.0)
    with pytest.raises(ValueError, match=r"dependence \(1.5\)"):
        plan_marginals(DOM, 1000, 1.0, dependence=1.5)


def screen_data(n=60000, seed=777):
    """Six attributes; only (a0, a1) depend on each other (a1 copies a0 w.p. 0.8)."""
    dom = domain([3, 3, 4, 2, 3, 5])
    rng = np.random.default_rng(seed)
    cols = [rng.integers(0, k, n) for k in dom.sizes]
    cols[1] = np.where(rng.random(n) < 0.8, cols[0], cols[1])
    return Dataset(np.column_stack(cols), dom)


def test_two_phase_selects_the_dependent_pair():
    data = screen_data()
    tp = plan_marginals(data.domain, data.n, 4.0, strategy="two-phase", screen_share=0.3)
    assert isinstance(tp, TwoPhasePlan) and tp.n_screen == 18000 and tp.n_main == 42000
    screen, main = collect_two_phase(data, tp, rng=99)
    # the main plan measures the dependent pair (alone or inside a larger subset) ...
    assert any({"a0", "a1"} <= set(s) for s in main.plan.subsets)
    assert len(main.plan.subsets) < 15  # ... with fewer groups than one per pair
    assert {a for s in main.plan.subsets for a in s} == set(data.domain.attrs)
    source = merge_sources([measure_marginals(screen), measure_marginals(main)])
    both = source.marginal(["a0", "a1"])
    truth = data.project(["a0", "a1"]).values
    assert np.all(np.abs(both.raw - truth) < 5 * np.sqrt(both.variance))


def test_two_phase_bad_input():
    with pytest.raises(ValueError, match=r"screen_share \(1.5\)"):
        TwoPhasePlan.build(DOM, 10000, 1.0, screen_share=1.5)
    with pytest.raises(PlanError, match=r"n \(30\) is too small"):
        TwoPhasePlan.build(DOM, 30, 1.0)
    with pytest.raises(TypeError, match="TwoPhasePlan"):
        collect_two_phase(screen_data(100), MarginalPlan(DOM, [("a0",)], 1.0))
