"""lopub.model.pgm: exact constraints, the goodness-of-fit fields and measured sets outside the cliques."""
import itertools

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.dependency import junction_tree
from lopub.estimate.measurement import Measurement
from lopub.model.pgm import fit_mrf
from lopub.model.pgm.fit import IPF_ATOL
from lopub.model.pgm.relaxed import derived, interaction_factors, region_factors, regions, split

DOM = Domain.from_categories({"a": "012", "b": "01", "c": "0123", "d": "01"})


def tree_of(edges, domain=DOM):
    g = nx.Graph()
    g.add_nodes_from(domain.attrs)
    g.add_edges_from(edges)
    return junction_tree(g, domain)


def truth(seed=0):
    """A strictly positive joint over DOM (every cell >= 0.2 / 48)."""
    p = np.random.default_rng(seed).dirichlet(np.full(48, 5.0)).reshape(DOM.sizes)
    return 0.8 * p + 0.2 / p.size


def table(p, attrs):
    keep = [DOM.index(a) for a in attrs]
    out = p.sum(axis=tuple(i for i in range(p.ndim) if i not in keep))
    return out  # axes in domain order == attrs order here


def noisy(p, attrs, sigma, rng):
    """Measurement with noise in the sum-zero directions, per-cell variance sigma^2."""
    t = table(p, attrs)
    z = rng.normal(0.0, sigma, t.shape)
    z = (z - z.mean()) * np.sqrt(t.size / (t.size - 1))
    return Measurement(DOM.project(list(attrs)), t + z, 1000, variance=sigma ** 2)


def close_bound(fit, sigma2):
    """||mu - mu*|| <= sqrt(2 gap / w) for a loss strongly convex with modulus w = 1 / sigma2."""
    return np.sqrt(2.0 * max(fit.gap, 0.0) * sigma2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chi2_of_a_correct_model_is_near_its_dof_and_not_of_a_wrong_variance(seed):
    rng = np.random.default_rng(seed)
    p, sigma = truth(seed), 2e-3
    pairs = list(itertools.combinations(DOM.attrs, 2))
    ms = [noisy(p, s, sigma, rng) for s in pairs]
    full = tree_of(pairs)  # one clique: the model family holds the truth
    fit = fit_mrf(DOM, full, ms, tol=1e-9)
    assert fit.converged and fit.stop == "tol"
    # sum of (cells - 1) over the 6 pairs minus the 3 + 1 + 3 + 1 main effects and 11 interactions
    assert fit.dof == sum(DOM.cells(list(s)) - 1 for s in pairs) - (2 + 1 + 3 + 1) - (2 + 6 + 2 + 3 + 1 + 3)
    assert abs(fit.chi2 - fit.dof) <= 5 * np.sqrt(2 * fit.dof)
    understated = [Measurement(m.domain, m.values, m.n, variance=m.sigma2 / 100) for m in ms]
    bad = fit_mrf(DOM, full, understated, tol=1e-9)
    assert bad.chi2_z > 5 and bad.summary()["chi2_z"] == pytest.approx(bad.chi2_z)


def test_a_fit_stopped_early_is_not_converged():
    rng = np.random.default_rng(3)
    ms = [noisy(truth(3), s, 2e-3, rng) for s in itertools.combinations(DOM.attrs, 2)]
    fit = fit_mrf(DOM, tree_of(list(itertools.combinations(DOM.attrs, 2))), ms, max_iter=2)
    assert not fit.converged and fit.stop == "max_iter" and fit.summary()["converged"] is False


def test_zero_variance_measurement_is_met_exactly_and_the_rest_is_fitted():
    rng = np.random.default_rng(4)
    p = truth(4)
    jt = tree_of([("a", "b"), ("b", "c")])
    exact = Measurement(DOM.project(["c"]), table(p, ["c"]), 1000, variance=0.0)
    ms = [noisy(p, ("a", "b"), 1e-3, rng), noisy(p, ("b", "c"), 1e-3, rng), exact]
    fit = fit_mrf(DOM, jt, ms)
    assert fit.converged and fit.constraints == 1 and fit.constraint_violation <= IPF_ATOL
    c = next(m for m in fit.marginals if "c" in m.attrs).project(["c"]).values
    np.testing.assert_allclose(c, table(p, ["c"]), atol=IPF_ATOL)
    # the zero-variance term does not set the step: the fit moves far from uniform
    ab = next(m for m in fit.marginals if m.attrs == ("a", "b")).values
    assert np.abs(ab - table(p, ["a", "b"])).max() <= 5 * 1e-3 * 2


def test_one_category_attribute_does_not_freeze_the_fit():
    """Issue 23's repro through the pipeline: a (x 80 %, y 20 %), b, a constant c, epsilon 8."""
    from lopub.collect import MarginalPlan, collect_records, measure_marginals
    from lopub.pipeline.steps import fit

    rng = np.random.default_rng(5)
    n = 5000
    df = pd.DataFrame({"a": np.where(rng.random(n) < 0.8, "x", "y"), "b": rng.choice(list("uvw"), n),
                       "c": "k"})
    dom = Domain.from_categories({"a": "xy", "b": "uvw", "c": ["k"]})
    data = Dataset.from_pandas(df, dom)
    plan = MarginalPlan(dom, [("a",), ("b",), ("c",)], 8.0)
    reports = collect_records(data, plan, rng=rng)
    res = fit(reports)
    got = res.model.project(["a"]).values
    m = measure_marginals(reports).marginal(["a"])
    tol = 5 * np.sqrt(m.variance.max())  # the model's a is the measured one (a is alone in its clique)
    assert abs(got[0] - m.values[0]) <= tol + 1e-6
    assert abs(got[0] - data.project(["a"]).values[0]) <= 2 * tol
    assert res.report.model_fit["converged"]


def test_outside_pairs_on_a_tree_shaped_region_graph_match_the_exact_fit():
    """Regions that close no cycle: the local polytope is the marginal polytope, so relaxed == exact."""
    rng = np.random.default_rng(6)
    p = truth(6)
    ms = [noisy(p, s, 1e-3, rng) for s in (("a", "b"), ("b", "c"), ("c", "d"))] + \
         [noisy(p, (x,), 1e-3, rng) for x in DOM.attrs]
    small = tree_of([("a", "b"), ("b", "c")])       # cliques ab, bc, d: cd is outside
    inside, outside = split(ms, small.cliques)
    assert [m.attrs for m in outside] == [("c", "d")]
    relaxed = fit_mrf(DOM, small, inside + derived(outside, small.cliques), tol=1e-10)
    model = relaxed.to_model()
    cd = regions(outside, model.project, small.cliques, DOM, shrink=False)[0].values
    exact = fit_mrf(DOM, tree_of([("a", "b"), ("b", "c"), ("c", "d")]), ms, tol=1e-10)
    want = next(m for m in exact.marginals if m.attrs == ("c", "d")).values
    bound = close_bound(relaxed, 1e-6 * 4) + close_bound(exact, 1e-6) + 1e-9
    np.testing.assert_allclose(cd, want, atol=bound)
    for x in ("a", "b", "c"):
        np.testing.assert_allclose(model.project([x]).values, exact.to_model().project([x]).values, atol=bound)


def test_outside_pairs_of_exact_tables_are_reproduced():
    """All pairs measured exactly, tree on a chain: every outside pair answers its true table."""
    p = truth(7)
    pairs = list(itertools.combinations(DOM.attrs, 2))
    ms = [Measurement(DOM.project(list(s)), table(p, s), 1000, variance=1e-8) for s in pairs]
    jt = tree_of([("a", "b"), ("b", "c"), ("c", "d")])
    inside, outside = split(ms, jt.cliques)
    fit = fit_mrf(DOM, jt, inside + derived(outside, jt.cliques), tol=1e-10)
    model = fit.to_model()
    model.meta["regions"] = [{"attrs": list(t.attrs), "p": t.values.ravel().tolist()}
                             for t in regions(outside, model.project, jt.cliques, DOM)]
    bound = 4 * close_bound(fit, 1e-8 * 4) + 1e-6
    for s in pairs:
        got = model.project(list(s))
        np.testing.assert_allclose(got.values, table(p, s), atol=bound)
        assert got.meta["answer"] == ("clique" if any(set(s) <= set(c) for c in jt.cliques) else "region")


def test_gum_moves_records_to_a_region_table_and_keeps_the_other_attributes():
    from lopub.model.pgm.gum import refine_codes

    dom = Domain.from_categories({"x": "01", "y": "01", "z": "012"})
    rng = np.random.default_rng(8)
    n = 20_000
    codes = np.column_stack([rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, 3, n)])
    target = np.array([[0.4, 0.1], [0.1, 0.4]])
    out = refine_codes(codes, dom, [{"attrs": ["x", "y"], "p": target.ravel().tolist()}], rng=rng)
    got = np.bincount(out[:, 0] * 2 + out[:, 1], minlength=4).reshape(2, 2) / n
    # round 1 moves the whole expected excess, later rounds its binomial remainder (a few sqrt(n)
    # records, sqrt(n) / n = 0.007 before the 7 further rounds): well under 0.5 % of the records
    assert 0.5 * np.abs(got - target).sum() <= 0.005
    # z is untouched by the move except through copied records, which carry their own z
    z = np.bincount(out[:, 2], minlength=3) / n
    assert np.abs(z - 1 / 3).max() <= 5 * np.sqrt(2 / 9 / n) + 0.01


def test_model_answers_outside_sets_from_regions_and_keeps_them_on_save(tmp_path):
    from lopub.model.graphical import Model

    p = truth(9)
    jt = tree_of([("a", "b")])
    fit = fit_mrf(DOM, jt, [Measurement(DOM.project(list(s)), table(p, s), 100, variance=1e-6)
                            for s in (("a", "b"), ("c",), ("d",))])
    model = fit.to_model(n=100)
    cd = table(p, ("c", "d"))
    model.meta["regions"] = [{"attrs": ["c", "d"], "p": cd.ravel().tolist()}]
    got = model.project(["d", "c"])
    assert got.meta["answer"] == "region"
    np.testing.assert_allclose(got.values, cd.T, atol=1e-12)
    model.save(tmp_path / "m.json")
    again = Model.load(tmp_path / "m.json")
    np.testing.assert_allclose(again.project(["c", "d"]).values, cd, atol=1e-12)
    assert again.project(["a", "c"]).meta["answer"] == "inference"


@pytest.mark.parametrize("seed", range(3))
def test_an_outside_pair_pools_the_outside_triple_that_holds_it(seed):
    """A pair measured by few users (sd 0.02) inside an outside triple measured by many (sd 1e-3):
    the pair's answer is the pooled one (within a few of the triple's sd), not the noisy pair's."""
    rng = np.random.default_rng(10 + seed)
    p = truth(10 + seed)
    ones = [noisy(p, (x,), 1e-3, rng) for x in DOM.attrs]
    pair, triple = noisy(p, ("a", "c"), 0.02, rng), noisy(p, ("a", "c", "d"), 1e-3, rng)
    jt = tree_of([])  # one clique per attribute: both sets are outside
    inside, outside = split(ones + [pair, triple], jt.cliques)
    assert [m.attrs for m in outside] == [("a", "c"), ("a", "c", "d")]
    fit = fit_mrf(DOM, jt, inside + derived(outside, jt.cliques), tol=1e-10)
    model = fit.to_model()
    model.meta["regions"] = [{"attrs": list(t.attrs), "p": t.values.ravel().tolist()}
                             for t in regions(outside, model.project, jt.cliques, DOM, shrink=False)]
    got = model.project(["a", "c"])
    assert got.meta["answer"] == "region" and got.meta["region"] == ["a", "c"]
    # the triple's projection on (a, c) sums 4 cells: sd 2e-3 per cell; the pooled answer is within
    # 6 sd of the truth in every cell, where the pair alone (sd 0.02) is not (8 cells of sd 0.02)
    assert np.abs(got.values - table(p, ["a", "c"])).max() <= 6 * 2e-3
    assert np.abs(pair.values - table(p, ["a", "c"])).max() > 6 * 2e-3


def test_free_dof_counts_the_interactions_no_clique_holds():
    from lopub.model.pgm.relaxed import free_dof

    # DOM: a 3, b 2, c 4, d 2 categories
    singles = [("a",), ("b",), ("c",), ("d",)]
    assert free_dof(("a", "c"), singles, DOM) == 2 * 3
    # a triple none of whose pairs a clique holds: its three pair interactions and the three-way one
    assert free_dof(("a", "b", "c"), singles, DOM) == 2 * 1 + 2 * 3 + 1 * 3 + 2 * 1 * 3
    # the tree holds (a, b): only the interactions with c are free
    assert free_dof(("a", "b", "c"), [("a", "b"), ("c",), ("d",)], DOM) == 2 * 3 + 1 * 3 + 2 * 1 * 3
    assert free_dof(("a", "b"), [("a", "b", "c"), ("d",)], DOM) == 0


@pytest.mark.parametrize("shrink", [True, False])
def test_a_region_whose_tree_answer_is_beyond_the_query_budget_is_still_fitted(shrink):
    """The tree's exact answer for an outside set can pass the query budget (bn-mildew at 10^6 users,
    epsilon 16: a 30.8-million-cell table); the region then takes the maximum-entropy table with the
    tree's margins as its target, which is the exact answer where the tree holds no dependence between
    the set's attributes (here a, c, d lie in different cliques): the same regions either way."""
    from lopub.errors import BudgetError

    rng = np.random.default_rng(8)
    p = truth(8)
    ms = [noisy(p, s, 1e-2, rng) for s in (("a", "b"), ("a", "c"), ("c", "d"), ("a", "c", "d"))]
    jt = tree_of([("a", "b")])  # cliques ab, c, d
    inside, outside = split(ms, jt.cliques)
    model = fit_mrf(DOM, jt, inside + derived(outside, jt.cliques), tol=1e-10).to_model()
    held = [set(c) for c in jt.cliques]

    def over_budget(attrs):
        if not any(set(attrs) <= c for c in held):
            raise BudgetError(f"query over {attrs} needs a table beyond query_budget")
        return model.project(attrs)

    want = regions(outside, model.project, jt.cliques, DOM, shrink=shrink)
    got = regions(outside, over_budget, jt.cliques, DOM, shrink=shrink)
    assert [t.attrs for t in got] == [t.attrs for t in want] and len(got) == 3
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.values, w.values, atol=1e-9)


def _null_draws(count, s2, k=1):
    """``count`` squared deviations shaped exactly like noise alone: s2 times chi-square quantiles."""
    from scipy.stats import chi2

    return s2 * chi2.ppf((np.arange(count) + 0.5) / count, k)


def test_interaction_factors_keep_a_few_strong_regions_among_many_without_interaction():
    """40 regions at their noise, 3 at 50 noise variances: a pooled tau^2 (3.4 s2) would give all 43 the
    factor 0.77; the two-group prior leaves the strong ones near their measurement and the rest near none."""
    s2 = 1e-4
    d2 = np.concatenate([_null_draws(40, s2), np.full(3, 50 * s2)])
    lam = interaction_factors(d2, np.ones(43), np.full(43, s2))
    pooled = np.mean(d2 - s2) / (np.mean(d2 - s2) + s2)
    assert 0.7 < pooled < 0.8
    assert np.all(lam[40:] > 0.9)
    assert np.mean(lam[:40]) < 0.15
    assert np.all(np.diff(lam[:40]) >= -1e-12)  # a larger deviation at the same noise keeps more


def test_interaction_factors_are_near_zero_where_no_region_stands_out():
    s2 = np.full(60, 2e-4)
    for k in (1, 3):
        lam = interaction_factors(_null_draws(60, 2e-4, k), np.full(60, k), s2)
        assert lam.shape == (60,) and np.all(lam >= 0) and np.mean(lam) < 0.15


def test_interaction_factors_of_alike_regions_come_back_to_one_pooled_prior():
    """Every region drawn from one N(0, tau^2) interaction (tau^2 = 3 s2, k = 2): the factor of a typical
    region is tau^2 / (tau^2 + s2) = 0.75 (the quantiles' MLE of tau^2 is within a few % of it)."""
    s2 = 1e-4
    d2 = _null_draws(200, 4 * s2, 2)
    lam = interaction_factors(d2, np.full(200, 2), np.full(200, s2))
    assert abs(float(np.median(lam)) - 0.75) < 0.05


def test_region_factors_keep_a_precise_strong_region_among_noisy_ones_without_interaction():
    """bn-asia's case (10^6 records, epsilon 0.5): 40 pairs measured by the screen alone (noise 9e-4),
    none dependent, and one measured by the main phase too (noise 1.4e-4) at 22 noise variances.  The
    pooled tau^2 is 5.8e-5, a factor of 0.29 for the strong pair; the two-group prior keeps 0.85 of it
    (its second group also holds the noisiest null pairs, so those keep up to 0.3 of theirs)."""
    d2 = np.concatenate([_null_draws(40, 9e-4), [22 * 1.4e-4]])
    s2 = np.concatenate([np.full(40, 9e-4), [1.4e-4]])
    ks = np.ones(41)
    tau2 = np.mean(d2 / ks - s2)
    pooled = tau2 / (tau2 + s2)
    assert 0.2 < pooled[-1] < 0.35
    lam = region_factors(d2, ks, s2)
    assert lam[-1] > 0.8
    assert np.all(lam >= pooled - 1e-12) and np.all(lam <= 1)
    assert np.max(lam[:40]) < 0.3 and np.all(np.diff(lam[:40]) >= -1e-12)


def test_region_factors_keep_exact_tables_as_the_pooled_prior_does():
    """Exact tables (a tiny stated noise): every region far beyond it keeps its table, even one whose
    deviation is only 4.8 noise variances per dimension beside much stronger ones."""
    d2 = np.array([8.2e-4, 3.28e-6, 1.2e-4, 1.96e-5])
    ks = np.array([7.0, 28.0, 7.0, 35.0])
    s2 = np.array([5.8e-8, 2.4e-8, 5.8e-8, 2.0e-8])
    assert np.all(region_factors(d2, ks, s2) > 0.99)


def test_a_strong_precise_outside_pair_among_noisy_independent_ones_keeps_its_measurement():
    """Ten independent binary attributes, every pair outside the cliques and measured with noise sd 0.04,
    but one dependent pair (TVD 0.06 from independence) measured with sd 0.008: its region answers its
    measured dependence, not the tree's independence (the pooled prior alone has tau^2 = 0 on these draws
    and releases it independent); the independent pairs stay near the tree."""
    names = [f"x{i}" for i in range(10)]
    dom = Domain.from_categories({a: "01" for a in names})
    strong = np.array([[0.28, 0.22], [0.22, 0.28]])
    rng = np.random.default_rng(0)
    ms = []
    for a, b in itertools.combinations(names, 2):
        key = (a, b) == ("x0", "x9")
        sigma = 0.008 if key else 0.04
        t = strong if key else np.full((2, 2), 0.25)
        z = rng.normal(0.0, sigma, 4)
        z = (z - z.mean()) * np.sqrt(4 / 3)
        ms.append(Measurement(dom.project([a, b]), t + z.reshape(2, 2), 1000, variance=sigma ** 2))
    jt = tree_of([], dom)  # no edges: every pair is outside the cliques
    inside, outside = split(ms, jt.cliques)
    assert len(outside) == 45
    model = fit_mrf(dom, jt, inside + derived(outside, jt.cliques), tol=1e-10).to_model()
    tables = {tuple(t.attrs): t.values for t in regions(outside, model.project, jt.cliques, dom)}
    dep = lambda t: 0.5 * np.abs(t - np.outer(t.sum(1), t.sum(0))).sum()  # noqa: E731
    # the measured dependence's noise sd is about 2 x 0.008: kept within 3 of them
    assert abs(dep(tables[("x0", "x9")]) - 0.06) < 3 * 2 * 0.008
    others = [dep(t) for key, t in tables.items() if key != ("x0", "x9")]
    assert np.mean(others) < 0.5 * np.sqrt(2 / np.pi) * 2 * 0.04  # below the raw tables' expected 0.032
