"""The protocol planner: predictions against simulation, recommendations, bad input."""
import itertools
import math
import re

import numpy as np
import pytest

from lopub.collect import MarginalPlan, collect, collect_records, measure_marginals
from lopub.collect.adaptive import predict_plan_error
from lopub.collect.planner import bloom_m, plan, predict_bloom, privacy_statement
from lopub.data.domain import Domain
from lopub.reports.spec import CollectionSpec
from lopub.data.dataset import Dataset
from collect_data import make_data


def tvd(p, q):
    return 0.5 * float(np.abs(p - q).sum())


def mean_dependence(data):
    """Mean TVD of the true pairs from the product of their one-way marginals."""
    out = []
    for pair in itertools.combinations(data.domain.attrs, 2):
        t = data.project(pair).values
        out.append(tvd(t, np.outer(t.sum(1), t.sum(0))))
    return float(np.mean(out))


def simulate_release(data, mplan, reps, seed):
    """Mean 2-way TVD of the release: measured pair tables, or the product of one-ways."""
    errs = []
    for r in range(reps):
        src = measure_marginals(collect_records(data, mplan, rng=seed + r))
        e = []
        for pair in itertools.combinations(data.domain.attrs, 2):
            if src.covers(pair):
                est = src.marginal(pair).values
            else:
                est = np.outer(src.marginal([pair[0]]).values, src.marginal([pair[1]]).values)
            e.append(tvd(est, data.project(pair).values))
        errs.append(np.mean(e))
    return float(np.mean(errs))


@pytest.fixture(scope="module")
def data():
    return make_data(30000, sizes=(2, 3, 4))


@pytest.mark.parametrize("eps", [1.0, 4.0])
@pytest.mark.parametrize("family", ["marginals", "one-attribute"])
def test_prediction_within_25_percent(data, family, eps):
    """A family's predicted error of its tables vs a simulation of that family (8 runs);
    the planner's figure (a release with structure selection) is at most that."""
    dep = mean_dependence(data)
    report = plan(data.domain, data.n, eps, dependence=dep)
    option = report.option(family)
    subsets = option.params["subsets"]
    direct = predict_plan_error(data.domain, data.n, eps, subsets, dependence=dep, select_edges=False)
    assert option.predicted_tvd <= direct + 1e-12
    sim = simulate_release(data, MarginalPlan(data.domain, subsets, eps), 8, seed=100)
    assert direct == pytest.approx(sim, rel=0.25), (family, eps, sim)


def test_prediction_within_25_percent_noise_dominated():
    """Nearly independent data at small budgets: noisy tables, Norm-Sub clips cells."""
    data = make_data(40000, sizes=(3, 5, 6, 2), dep=0.05, seed=31337)
    dep = mean_dependence(data)
    for eps in (0.5, 1.0):
        for subsets in ([(a,) for a in data.domain.attrs],
                        list(itertools.combinations(data.domain.attrs, 2))):
            pred = predict_plan_error(data.domain, data.n, eps, subsets, dependence=dep,
                                      select_edges=False)
            sim = simulate_release(data, MarginalPlan(data.domain, subsets, eps), 8, seed=200)
            assert pred == pytest.approx(sim, rel=0.25), (eps, len(subsets), sim, pred)


def skewed_data(n=40000, seed=2718):
    """Skewed marginals (geometric-like) with some empty cells and chain dependence."""
    sizes = (4, 6, 8)
    dom = Domain.from_categories({f"s{i}": [str(j) for j in range(k)] for i, k in enumerate(sizes)})
    rng = np.random.default_rng(seed)
    cols = []
    for k in sizes:
        w = 0.5 ** np.arange(k)
        col = rng.choice(k, n, p=w / w.sum())
        cols.append(np.where(rng.random(n) < 0.3, cols[-1] % k, col) if cols else col)
    return Dataset(np.column_stack(cols), dom)


@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_prediction_with_prior_within_25_percent(eps):
    """With the data's own tables as the prior (cell probabilities and dependence)."""
    data = skewed_data()
    for subsets in ([(a,) for a in data.domain.attrs], list(itertools.combinations(data.domain.attrs, 2))):
        pred = predict_plan_error(data.domain, data.n, eps, subsets, prior=data, select_edges=False)
        sim = simulate_release(data, MarginalPlan(data.domain, subsets, eps), 8, seed=400)
        assert pred == pytest.approx(sim, rel=0.25), (eps, len(subsets), sim, pred)


@pytest.mark.slow
@pytest.mark.parametrize("eps", [3.0, 12.0])
def test_bloom_prediction_within_25_percent(data, eps):
    from lopub.client.encode import encode
    from lopub.estimate.api import estimate

    report = plan(data.domain, data.n, eps)
    bloom = report.option("bloom")
    assert bloom.params["h"] == 1
    spec = CollectionSpec.from_domain(data.domain, epsilon=eps, h=1, m=bloom.params["m"])
    errs = []
    for r in range(3):
        reports = encode(data, spec, rng=300 + r)
        errs.append(np.mean([tvd(estimate(reports, list(p), method="em").values, data.project(p).values)
                             for p in itertools.combinations(data.domain.attrs, 2)]))
    pred = predict_bloom(data.domain, data.n, eps, 1, select_edges=False)
    assert pred == pytest.approx(np.mean(errs), rel=0.25)


def adult_like():
    sizes = [7, 8, 16, 7, 14, 6, 5, 2, 41, 2, 2, 2, 3, 4, 2]
    return Domain.from_categories({f"a{i}": [f"v{j}" for j in range(k)] for i, k in enumerate(sizes)})


def test_recommendation_one_way_at_tiny_budget_pairs_at_large():
    dom = adult_like()
    tiny = plan(dom, 45222, 0.5)
    assert tiny.recommended in ("one-attribute", "marginals")
    assert all(len(s) == 1 for s in tiny.option(tiny.recommended).params["subsets"])
    big = plan(dom, 1_000_000, 8.0)
    assert big.recommended == "marginals"
    assert all(len(s) >= 2 for s in big.option("marginals").params["subsets"][:10])
    assert big.marginal_plan.plan_id == big.option("marginals").params["plan_id"]


def test_bloom_at_huge_budget_and_m_separates_values():
    dom = adult_like()
    report = plan(dom, 45222, 1000.0)
    preds = {o.protocol: o.predicted_tvd for o in report.options}
    assert min(preds, key=preds.get) == "bloom"
    # Bloom against a two-phase option is ranked from the screen's tables; after the screen Bloom wins here
    assert report.recommended == ("marginals" if report.two_phase is not None else "bloom")
    if report.two_phase is not None:
        rng = np.random.default_rng(3)
        data = Dataset(np.column_stack([rng.integers(0, k, 45222) for k in dom.sizes]), dom)
        reports, after = collect(data, 1000.0, protocol="auto", rng=4)
        assert after.recommended == "bloom" and reports.n == report.two_phase.n_main
    for h in (1, 2, 3, 4):
        m = bloom_m(dom, h)
        assert m[8] > 128 or h > 1  # 41 values need more than the default 128 bits at h = 1
        CollectionSpec.from_domain(dom, epsilon=20.0, h=h, m=list(m))  # no SpecError


def test_privacy_statement_and_warning():
    text, warning = privacy_statement(4.0)
    assert "epsilon = 4" in text and warning is None
    text, warning = privacy_statement(114.0)
    assert warning.startswith("WARNING: epsilon 114 per record") and "1 to 8" in warning
    report = plan(make_data(100).domain, 1000, 12.0)
    assert report.warning and "12" in report.warning and report.privacy in report.to_text()
    d = report.to_dict()
    assert d["epsilon_per_record"] == 12.0 and d["recommended"] == report.recommended


@pytest.mark.parametrize("eps", [0, -1, float("nan"), float("inf")])
def test_bad_epsilon_named(eps):
    with pytest.raises(ValueError, match=r"epsilon \(" + re.escape(str(float(eps))) + r"\)"):
        plan(adult_like(), 1000, eps)


def test_bad_n_and_domain():
    with pytest.raises(ValueError, match=r"n \(0\)"):
        plan(adult_like(), 0, 1.0)
    with pytest.raises(TypeError, match="Domain"):
        plan({"a": [1, 2]}, 100, 1.0)
    with pytest.raises(ValueError, match=r"dependence \(-0.1\)"):
        plan(adult_like(), 100, 1.0, dependence=-0.1)


@pytest.mark.parametrize("eps", [1e-12, 1e-3, 50.0, 1e4, 1e8])
def test_extreme_epsilon_never_nan(eps):
    report = plan(adult_like(), 5000, eps)
    for o in report.options:
        assert not math.isnan(o.predicted_tvd) and 0 <= o.predicted_tvd < 1


def test_fewer_users_than_attributes_only_bloom():
    report = plan(adult_like(), 5, 2.0)
    assert [o.protocol for o in report.options] == ["bloom"] and report.marginal_plan is None
    assert report.to_dict()["marginal_plan"] is None


@pytest.mark.parametrize("protocol", ["auto", "marginals", "one-attribute", "bloom"])
def test_collect_with_the_planned_protocol(protocol):
    from lopub.collect import MarginalReports, collect
    from lopub.reports.bloom import Reports

    data = make_data(3000)
    reports, report = collect(data, 4.0, protocol=protocol, rng=5)
    choice = report.recommended if protocol == "auto" else protocol
    if choice == "bloom":
        assert isinstance(reports, Reports) and reports.spec.epsilon == pytest.approx(4.0)
        assert reports.spec.h == (report.option("bloom").params["h"],) * 3
    else:
        assert isinstance(reports, MarginalReports) and reports.n == data.n
        assert reports.plan.epsilon == 4.0
        assert (choice == "one-attribute") == all(len(s) == 1 for s in reports.plan.subsets)
    with pytest.raises(ValueError, match=r"protocol \('rappor'\)"):
        collect(data, 4.0, protocol="rappor")


@pytest.mark.parametrize("eps", [2.515886241630512e-297, 1e-300, 5e-324])
def test_bloom_noise_at_vanishing_epsilon_is_infinite_not_an_error(eps):
    # (e^x - 1)^2 underflows to 0 for x below ~1e-154: no information, not a ZeroDivisionError
    from lopub.collect.planner import bloom_unit_noise

    assert bloom_unit_noise(eps, 1, 3) == math.inf
    assert bloom_unit_noise(1e-150, 1, 1) < math.inf
