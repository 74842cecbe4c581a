"""Plans that fit the users: the minimum group size, plan-time checks, balanced assignment, refusals."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lopub.collect import (
    MarginalPlan,
    PlanError,
    assign_random,
    collect,
    collect_records,
    measure_marginals,
    plan,
)
from lopub.collect.adaptive import (
    Profile,
    candidate_plans,
    choose_subsets,
    predict_pair_errors,
    triple_cover,
)
from lopub.collect.cost import (
    best_oracle,
    cell_var,
    expected_tvd,
    normsub_errors,
    normsub_uniform,
)
from lopub.collect.groups import (
    INFORMATIVE_SHARE,
    MIN_GROUP_FLOOR,
    fit_to_users,
    informative_users,
    min_users,
    shortfall,
)
from lopub.collect.detect import DetectPlan, detect_users
from lopub.collect.twophase import TwoPhasePlan, plan_marginals
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain


def domain(sizes):
    return Domain.from_categories({f"a{i}": [str(j) for j in range(k)] for i, k in enumerate(sizes)})


ADULT_SIZES = [7, 8, 16, 7, 14, 6, 5, 2, 41, 2, 2, 2, 3, 4, 2]


def assert_fillable(dom, n, eps, subsets):
    """Every group of a balanced assignment (n // g users at least) reaches its minimum."""
    per = n // len(subsets)
    for s in subsets:
        assert per >= min_users(dom, eps, s), (n, eps, s, per)


# the minimum ----------------------------------------------------------------
@pytest.mark.parametrize("k", [2, 4, 16, 144, 5000])
@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0, 8.0])
def test_informative_minimum_is_the_smallest_group_within_the_share(k, eps):
    # the documented rule: expected raw TVD K sqrt(2 V / (pi n)) / 2 <= share * (1 - 1/K)
    n_min = informative_users(eps, k)
    f = 1.0 / k
    v = cell_var(best_oracle(eps, k), eps, k, 1.0, f=f) + f * (1 - f)
    tau = INFORMATIVE_SHARE * (1 - f)

    def raw(n):
        return k * math.sqrt(2 * v / (math.pi * n)) / 2

    assert raw(n_min) <= tau * (1 + 1e-12)
    if n_min > MIN_GROUP_FLOOR:
        assert raw(n_min - 1) > tau


def test_minimum_falls_with_epsilon_and_rises_with_cells():
    for k in (2, 4, 16, 100):
        needs = [informative_users(e, k) for e in (0.1, 0.5, 1, 2, 4, 8, 16)]
        assert needs == sorted(needs, reverse=True)
    for eps in (0.5, 4.0):
        needs = [informative_users(eps, k) for k in (2, 4, 16, 64, 256)]
        assert needs == sorted(needs)
    assert informative_users(1e-300, 4) > 10**15  # no number of users suffices: a huge minimum


def test_one_attribute_subsets_need_only_the_floor():
    dom = domain([50, 2])
    assert min_users(dom, 0.5, ("a0",)) == MIN_GROUP_FLOOR
    assert min_users(dom, 0.5, ("a0", "a1")) == informative_users(0.5, 100)


# plan-time checks -------------------------------------------------------------
@pytest.mark.parametrize("sizes", [[2] * 12, [4] * 12, [2, 5, 4, 9, 3, 16, 2, 6], ADULT_SIZES, [2] * 40])
@pytest.mark.parametrize("n", [30, 200, 2000, 1_000_000])
@pytest.mark.parametrize("eps", [0.3, 1.0, 8.0])
def test_planned_subsets_never_below_their_minimum(sizes, n, eps):
    dom = domain(sizes)
    report = plan(dom, n, eps)
    if n // len(dom) < MIN_GROUP_FLOOR:
        assert [o.protocol for o in report.options] == ["bloom"]
        assert "users per group" in report.refused["marginals"]
        return
    assert_fillable(dom, n, eps, report.option("one-attribute").params["subsets"])
    if isinstance(report.two_phase, DetectPlan):  # a detection screen: sized to detect, not released
        tp = report.two_phase
        per = tp.n_screen // len(tp.screen.subsets)
        assert all(per >= detect_users(eps, dom.cells(p)) for p in tp.screen.subsets)
        assert_fillable(dom, tp.n_main, eps, fit_to_users(dom, tp.n_main, eps, candidate_plans(dom)[tp.rule]))
    elif report.two_phase is not None:
        tp = report.two_phase
        assert_fillable(dom, tp.n_screen, eps, tp.screen.subsets)
    else:
        assert_fillable(dom, n, eps, report.marginal_plan.subsets)
    assert any(t.startswith("marginals: ") and "users each" in t for t in report.notes)
    assert "check: marginals" in report.to_text() and report.to_dict()["checks"] == list(report.notes)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=9),
       n=st.integers(1, 300_000), eps=st.floats(0.05, 20.0))
def test_hypothesis_a_plan_never_has_a_group_below_its_minimum(sizes, n, eps):
    dom = domain(sizes)
    try:
        _, subsets, err = choose_subsets(dom, n, eps)
    except PlanError as exc:  # only when not even one attribute per group can be filled
        assert "too small for marginal sampling" in str(exc)
        assert n // len(dom) < MIN_GROUP_FLOOR
        return
    # fewer users than MIN_GROUP_FLOOR per attribute can still fill a plan with fewer groups than
    # attributes (e.g. two one-category attributes in one pair): then that plan is the answer
    assert_fillable(dom, n, eps, subsets)
    assert {a for s in subsets for a in s} == set(dom.attrs)  # every attribute is still measured
    assert 0 <= err <= 1


def test_fit_to_users_keeps_the_candidate_when_it_fits_and_trims_it_otherwise():
    dom = domain([4] * 12)
    pairs = [tuple(p) for p in itertools.combinations(dom.attrs, 2)]
    assert fit_to_users(dom, 10**7, 4.0, pairs) == pairs
    cut = fit_to_users(dom, 200, 4.0, pairs)  # 66 pairs of 16 cells at 3 users each: too few
    assert cut is not None and not shortfall(dom, 200, 4.0, cut)
    assert {a for s in cut for a in s} == set(dom.attrs)
    assert fit_to_users(dom, 23, 4.0, pairs) is None  # 12 attributes need 24 users at 2 each


def test_issue_cases_plan_fills_every_subset():
    # issue 23: 200 users x 12 attributes of 4 categories at epsilon 4 (collect worked, fit failed)
    dom = domain([4] * 12)
    report = plan(dom, 200, 4.0)
    assert_fillable(dom, 200, 4.0, report.marginal_plan.subsets)
    # issue 23: Adult-like, 2,000 users at epsilon 0.3 (collect failed: 600 users for 105 subsets)
    dom = domain(ADULT_SIZES)
    report = plan(dom, 2000, 0.3)
    assert_fillable(dom, 2000, 0.3, report.marginal_plan.subsets)
    assert "mostly noise" in report.to_text()  # a hopeless budget says so


@pytest.mark.parametrize("protocol", ["auto", "marginals", "one-attribute"])
def test_collect_and_measure_200_users_12_attributes(protocol):
    dom = domain([4] * 12)
    data = Dataset(np.random.default_rng(3).integers(0, 4, (200, 12)), dom)
    reports, report = collect(data, 4.0, protocol=protocol, rng=4)
    if report.recommended == "bloom" and protocol == "auto":
        return
    sizes = reports.group_sizes()
    assert sizes.min() >= 200 // reports.plan.n_subsets and sizes.max() - sizes.min() <= 1
    source = measure_marginals(reports)  # no subset without users
    assert len(source.measurements()) == reports.plan.n_subsets


def test_more_budget_never_raises_the_predicted_error():
    for sizes in ([2] * 12, [4] * 12, ADULT_SIZES):
        dom = domain(sizes)
        for n in (200, 2000, 200_000):
            errs = [choose_subsets(dom, n, float(e))[2] for e in np.geomspace(0.1, 16, 15)]
            assert all(b <= a * (1 + 1e-9) for a, b in itertools.pairwise(errs)), (sizes, n, errs)


# refusals --------------------------------------------------------------------
def test_fixed_strategy_below_the_minimum_is_refused_with_the_figures():
    dom = domain([4] * 12)
    with pytest.raises(PlanError, match=r"strategy 'pairs' needs 66 subsets but n \(200\) users give 3 "
                                        r"per subset where \['a0', 'a1'\] needs >= \d+ at epsilon 4"):
        plan_marginals(dom, 200, 4.0, strategy="pairs")
    with pytest.raises(PlanError, match=r"the screen needs >= \d+ users \(66 pairs"):
        TwoPhasePlan.build(dom, 200, 4.0)


def test_too_few_users_refuses_the_sampling_protocols_with_the_reason():
    dom = domain(ADULT_SIZES)
    report = plan(dom, 20, 2.0)  # 20 users for 15 attributes: one per group at most
    assert [o.protocol for o in report.options] == ["bloom"]
    with pytest.raises(PlanError, match=r"'one-attribute' is not possible here: 20 users for 15 attributes"):
        report.option("one-attribute")
    data = Dataset(np.zeros((20, 15), dtype=int), dom)
    with pytest.raises(PlanError, match=r"'marginals' is not possible here"):
        collect(data, 2.0, protocol="marginals", rng=1)


def test_50000_categories_plan_answers_and_bloom_is_refused_naming_the_attribute():
    dom = Domain.from_categories({"id": [str(i) for i in range(50_000)], "b": ["x", "y"]})
    report = plan(dom, 100_000, 4.0)
    assert report.recommended in ("one-attribute", "marginals")
    assert "'id' (50000 values)" in report.refused["bloom"] and "one-attribute" in report.refused["bloom"]
    assert "mostly noise" in report.to_text()
    data = Dataset(np.random.default_rng(0).integers(0, 2, (1000, 2)), dom)
    with pytest.raises(PlanError, match=r"protocol 'bloom' is not possible here: attribute 'id'"):
        collect(data, 4.0, protocol="bloom", rng=1)


# balanced assignment -----------------------------------------------------------
@pytest.mark.parametrize("n,g", [(5, 15), (15, 15), (16, 15), (1000, 7), (99_999, 66)])
def test_random_assignment_is_balanced(n, g):
    dom = domain([2] * 12)
    subsets = [tuple(p) for p in itertools.combinations(dom.attrs, 2)][:g]
    mplan = MarginalPlan(dom, subsets, 1.0)
    ids = assign_random(mplan, n, rng=7)
    counts = np.bincount(ids, minlength=g)
    assert counts.sum() == n and counts.max() - counts.min() <= 1 and counts.min() == n // g


def test_random_assignment_gives_each_user_a_uniform_subset():
    # over R independent assignments, user 0's subset is uniform on g subsets (and so are the
    # groups that get the extra users): each count is binomial(R, 1/g); 5 SDs for any seed
    dom = domain([2] * 6)
    mplan = MarginalPlan(dom, [tuple(p) for p in itertools.combinations(dom.attrs, 2)][:5], 1.0)
    rng = np.random.default_rng(11)
    r, g = 4000, 5
    first = np.array([assign_random(mplan, 13, rng=rng)[0] for _ in range(r)])
    counts = np.bincount(first, minlength=g)
    assert np.all(np.abs(counts - r / g) < 5 * math.sqrt(r * (1 / g) * (1 - 1 / g)))


def test_collect_records_groups_differ_by_at_most_one():
    dom = domain([2] * 6)
    mplan = MarginalPlan(dom, [tuple(p) for p in itertools.combinations(dom.attrs, 2)], 2.0)
    data = Dataset(np.zeros((47, 6), dtype=int), dom)
    sizes = collect_records(data, mplan, rng=2).group_sizes()
    assert sizes.min() == 47 // 15 and sizes.max() - sizes.min() <= 1


# the fast cost model is the same model ------------------------------------------
def test_uniform_fast_path_equals_the_general_cost_model():
    class General(Profile):  # same tables, taken through the per-pair (general) path
        pass

    dom = domain([2, 5, 4, 9, 3, 16, 2, 6])
    screen = [tuple(p) for p in itertools.combinations(dom.attrs, 2)]
    for eps, n in ((0.1, 500), (4.0, 10**6)):
        for subsets in candidate_plans(dom).values():
            for extra in ((), ((screen, n / 3),)):
                fast = predict_pair_errors(dom, n, eps, subsets, extra_phases=extra)
                slow = predict_pair_errors(dom, n, eps, subsets, prior=General(dom), extra_phases=extra)
                for p in fast:  # sums of equal terms against a product: rounding only
                    assert fast[p] == pytest.approx(slow[p], rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("k", [2, 7, 64, 1000])
@pytest.mark.parametrize("var", [0.0, 1e-8, 1e-4, 1e-2, 1.0, math.inf])
def test_normsub_uniform_equals_normsub_errors(k, var):
    tvd, mse = normsub_uniform(k, var)
    tvd_full, mse_full = normsub_errors(np.full(k, 1.0 / k), var)
    assert tvd == pytest.approx(tvd_full, rel=1e-9, abs=1e-15)
    assert mse == pytest.approx(float(mse_full[0]), rel=1e-9, abs=1e-15)
    assert expected_tvd(var, 0.01, cells=k) == pytest.approx(
        expected_tvd(np.full(k, var), np.full(k, 0.01)), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("sizes", [[2] * 4, [2] * 9, [3, 2, 5, 2, 4, 2, 2], [2] * 30])
def test_triple_cover_covers_every_pair(sizes):
    dom = domain(sizes)
    cover = triple_cover(dom)
    covered = {frozenset(p) for t in cover for p in itertools.combinations(t, 2)}
    d = len(dom)
    assert len(covered) == d * (d - 1) // 2 and all(len(t) == 3 for t in cover)
    assert len(cover) <= d * (d - 1) // 2 // 3 * 1.3 + d  # close to the d(d-1)/6 lower bound
