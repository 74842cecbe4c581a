"""fit(): one shared estimator, graph recovery from LDP reports, releases, baseline model."""
import itertools
import warnings

import numpy as np
import pytest

from lopub.client import encode
from lopub.datasets import embedded_model
from lopub.dependency import MarginalCache, running_intersection
from lopub.publish.evaluate import average_tvd, correlation_identification
from lopub.pipeline.steps import fit, independence_model, make_estimator
from lopub.reports.spec import CollectionSpec
from lopub.publish.synthesize import sample_codes

# Measured (see docs/bench_pipeline.md): n = 5,000, f = 0.2, phi = 0.4 recovers
# 15/15 true (DAG-skeleton) edges and matches the exact MI graph on every pair
# (seeds 0-3, EM and moment).  The tests check floors under that.
RECALL_FLOOR = 0.9
ACCURACY_FLOOR = 0.95


def _fit(*args, **kw):
    res = fit(*args, **kw)
    return res.model, res.report.to_dict()


class Counting:
    def __init__(self, source):
        self.source, self.domain, self.asked = source, source.domain, []

    def marginal(self, attrs):
        self.asked.append(frozenset(attrs))
        return self.source.marginal(attrs)


@pytest.mark.parametrize("release", ["cliques", "pgm"])
def test_each_marginal_estimated_once(release):
    bn = embedded_model()
    src = Counting(bn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fit(estimator=src, phi=0.4, clique_budget=20_000, release=release, structure="phi")
    model, rep = res.model, res.report.to_dict()
    assert len(src.asked) == len(set(src.asked)) == rep["estimates"]
    d = len(bn.domain)
    big = {frozenset(c) for c in rep["cliques"] if len(c) > 2}
    # the paper's release estimates every big clique; the fitted model never does
    assert rep["estimates"] == d + d * (d - 1) // 2 + (len(big) if release == "cliques" else 0)
    assert not big & set(src.asked) if release == "pgm" else big <= set(src.asked)
    assert running_intersection(model.tree)
    assert all(c <= 20_000 for c in rep["clique_cells"])
    assert rep["dropped_edges"]  # the 75,264-cell clique was split


def test_exact_fit_reproduces_mi_graph_and_marginals():
    bn = embedded_model()
    model, rep = _fit(estimator=bn, phi=0.4, clique_budget=100_000, release="cliques", structure="phi")
    exp = correlation_identification(model.graph.edges, bn.mi_graph(0.4).edges(), bn.domain.attrs)
    assert exp["accuracy"] == 1.0
    for c, t in zip(model.tree.cliques, model.cliques):
        np.testing.assert_allclose(t.values, bn.marginal(list(c)).values, atol=1e-12)
    assert rep["calibration_avd_max"] < 1e-12


@pytest.mark.parametrize("method", ["moment", "em"])
def test_graph_recovery_from_reports_small_f(method):
    bn = embedded_model()
    data = bn.sample(5000, rng=11)
    reports = encode(data, CollectionSpec.from_domain(bn.domain, f=0.2), rng=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, rep = _fit(reports, phi=0.4, method=method, structure="phi")
    sk = correlation_identification(model.graph.edges, bn.dependency_edges(), bn.domain.attrs)
    mi = correlation_identification(model.graph.edges, bn.mi_graph(0.4).edges(), bn.domain.attrs)
    assert sk["recall"] >= RECALL_FLOOR, sk
    assert mi["accuracy"] >= ACCURACY_FLOOR, mi
    assert rep["n"] == 5000 and rep["method"] == method


def test_pruned_fit_and_independence_baseline():
    bn = embedded_model()
    data = bn.sample(4000, rng=3)
    reports = encode(data, CollectionSpec.from_domain(bn.domain, f=0.2), rng=4)
    cache = MarginalCache(make_estimator(reports, "moment"))
    model, rep = _fit(reports, phi=0.4, prune=True, estimator=cache, structure="phi")
    d = len(bn.domain)
    assert rep["pairs_computed"] == rep["graph"]["pairs_computed"] < d * (d - 1) // 2
    calls = cache.calls
    base = independence_model(cache)
    assert cache.calls == calls  # one-way marginals reused
    assert all(len(c) == 1 for c in base.tree.cliques) and base.n == 4000
    syn = sample_codes(base, rng=1)
    assert average_tvd(data, syn, 2)["mean"] > 0


def test_fit_needs_reports_or_estimator():
    with pytest.raises(ValueError, match=r"reports \(None\) must be given"):
        fit(phi=0.4)
    with pytest.raises(ValueError, match=r"phi \(2\.0\) must be in \(0, 1\]"):
        fit(estimator=embedded_model(), phi=2.0)


@pytest.mark.slow
def test_graph_recovery_em_f05():
    """n = 20,000, f = 0.5, EM: measured 15/15 true edges, 23/23 MI-graph edges."""
    bn = embedded_model()
    data = bn.sample(20000, rng=0)
    reports = encode(data, CollectionSpec.from_domain(bn.domain, f=0.5), rng=1)
    cache = MarginalCache(make_estimator(reports, "em"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, rep = _fit(reports, phi=0.4, estimator=cache, structure="phi")
    sk = correlation_identification(model.graph.edges, bn.dependency_edges(), bn.domain.attrs)
    assert sk["recall"] >= RECALL_FLOOR, sk
    syn = sample_codes(model, rng=2)
    tvd = average_tvd(data, syn, 2)["mean"]
    base = average_tvd(data, sample_codes(independence_model(cache), rng=3), 2)["mean"]
    assert tvd < base
    # every pair estimated at most once across graph and cliques
    assert rep["estimates"] == cache.calls
    assert len({frozenset(p) for p in itertools.combinations(bn.domain.attrs, 2)}) <= cache.calls


def test_model_phi_keeps_reported_graph_and_adds_model_edges():
    bn = embedded_model()
    src = Counting(bn)
    model, rep = _fit(estimator=src, phi=0.4, model_phi=0.3, clique_budget=10**6, warn=False,
                      release="cliques")  # a 10^6-cell budget: keep the fast release here
    assert rep["structure"] == "phi"  # model_phi is an option of the phi rule
    assert model.graph.edges == fit(estimator=bn, phi=0.4, clique_budget=10**6, warn=False,
                                    structure="phi").model.graph.edges
    extra = bn.mi_graph(0.3)
    assert rep["graph"]["model_edges"] == extra.number_of_edges() > rep["edges"]
    for a, b in extra.edges:
        assert any(a in c and b in c for c in model.tree.cliques)
    assert len(src.asked) == len(set(src.asked))  # no pair estimated twice


def test_single_attribute_and_independent_data_through_fit():
    from lopub.data.dataset import Dataset
    from lopub.data.domain import Domain

    rng = np.random.default_rng(0)
    one = Domain.from_categories({"x": ["a", "b", "c"]})
    data = Dataset(rng.integers(0, 3, size=(500, 1)), one)
    model, rep = _fit(estimator=data, phi=0.4)
    assert rep["edges"] == 0 and rep["cliques"] == [["x"]] and rep["pairs_total"] == 0
    assert len(sample_codes(model, rng=0)) == 500
    dom = Domain.from_categories({f"v{i}": ["0", "1", "2", "3"] for i in range(5)})
    data = Dataset(rng.integers(0, 4, size=(20000, 5)), dom)
    model, rep = _fit(estimator=data, phi=0.2, structure="phi")
    assert rep["edges"] == 0 and len(model.tree.roots) == 5


def test_model_phi_errors_name_model_phi_before_any_estimation():
    src = Counting(embedded_model())
    with pytest.raises(ValueError, match=r"^model_phi \(2\.0\) must be in \(0, 1\]$"):
        fit(estimator=src, phi=0.4, model_phi=2.0)
    with pytest.raises(TypeError, match=r"^model_phi \('a'\) must be a real number$"):
        fit(estimator=src, phi=0.4, model_phi="a")
    assert src.asked == []


def test_budget_stats_list_only_edges_in_no_clique():
    bn = embedded_model()
    model, rep = _fit(estimator=bn, phi=0.4, clique_budget=5000, warn=False, structure="phi")
    lost = [(d["a"], d["b"]) for d in rep["dropped_edges"] if not d["in_clique"]]
    kept = [(d["a"], d["b"]) for d in rep["dropped_edges"] if d["in_clique"]]
    assert lost and kept  # measured: age_group - relationship comes back through fill-in
    assert model.graph.dropped == sorted(lost, key=lambda e: model.graph.edges.index(e))
    for a, b in model.graph.edges:
        held = any(a in c and b in c for c in model.tree.cliques)
        assert held == ((a, b) not in model.graph.dropped)


def test_fit_records_collection_parameters():
    bn = embedded_model()
    spec = CollectionSpec.from_domain(bn.domain, f=0.3)
    reports = encode(bn.sample(800, rng=5), spec, rng=6)
    model, rep = _fit(reports, phi=0.4, method="moment", warn=False)
    col = model.collection
    assert col == rep["collection"]
    assert col["f"] == 0.3 and col["epsilon_per_record"] == pytest.approx(spec.epsilon)
    assert col["epsilon_per_attribute"] == dict(zip(bn.domain.attrs, spec.epsilon_per_attribute))
    assert col["h"] == dict(zip(bn.domain.attrs, spec.h)) and col["m"] == dict(zip(bn.domain.attrs, spec.m))
    # an estimator session over the reports also knows them; exact marginals do not
    session = fit(estimator=make_estimator(reports, "moment"), phi=0.4, warn=False)
    assert session.report.collection == col
    assert session.model.n == session.report.n == 800  # the record count comes with the estimates
    assert fit(estimator=bn, phi=0.4, warn=False).model.collection is None


def test_fit_returns_model_and_typed_report_recorded_in_the_model():
    from lopub.pipeline.steps import FitReport, FitResult

    bn = embedded_model()
    res = fit(estimator=bn, phi=0.4, warn=False, structure="phi")
    assert isinstance(res, FitResult) and isinstance(res.report, FitReport)
    rep = res.report
    assert (rep.release, rep.structure) == ("pgm", "phi")
    assert res.model.meta["fit"] == rep.to_dict()
    assert res.model.meta["fit"]["release"] == "pgm" and res.model.meta["fit"]["structure"] == "phi"
    fitted = rep.model_fit
    assert fitted["converged"] and fitted["iterations"] >= 1 and fitted["loss"] >= 0
    assert set(rep.seconds) >= {"graph", "junction_tree", "measurements", "model_fit", "total"}
    measured = {frozenset(m) for m in rep.measurements}
    assert {frozenset([a]) for a in bn.domain.attrs} <= measured
    assert all(len(m) <= 2 for m in measured)  # no clique joint estimated
    paper = fit(estimator=bn, phi=0.4, warn=False, release="cliques", structure="phi").report
    assert paper.release == "cliques" and paper.model_fit is None and paper.measurements == []


def test_pgm_release_matches_exact_pairs_of_its_cliques():
    """Exact one-way and pair marginals in: the model's pairs inside cliques reproduce them."""
    bn = embedded_model()
    model, rep = _fit(estimator=bn, phi=0.4, clique_budget=100_000, structure="phi")
    assert rep["calibration_avd_max"] < 1e-9  # the fitted marginals are already calibrated
    for m in rep["measurements"]:
        assert model.project(m).avd(bn.marginal(m)) < 2e-3, m


def test_fit_option_errors_name_the_option():
    bn = embedded_model()
    src = Counting(bn)
    with pytest.raises(ValueError, match=r"release \('paper'\) must be one of \('pgm', 'cliques'\)"):
        fit(estimator=src, release="paper")
    with pytest.raises(ValueError, match=r"structure \('mst'\) must be one of \('auto', 'phi', 'tree'\)"):
        fit(estimator=src, structure="mst")
    with pytest.raises(ValueError, match=r"prune \(True\) and model_phi \(None\) are options of structure 'phi'"):
        fit(estimator=src, structure="tree", prune=True)
    with pytest.raises(TypeError, match=r"fit_options has unknown key\(s\) \['iters'\]; expected some of"):
        fit(estimator=src, fit_options={"iters": 3})
    assert src.asked == []


def test_clique_budget_refused_before_any_estimation():
    from lopub.errors import BudgetError

    bn = embedded_model()
    data = bn.sample(300, rng=1)
    reports = encode(data, CollectionSpec.from_domain(bn.domain, f=0.5), rng=2)
    est = Counting(make_estimator(reports, "moment", {"memory_budget": 10**6}))
    with pytest.raises(BudgetError, match=r"clique_budget \(10000000 cells\) admits models whose fit"):
        fit(reports, estimator=est, clique_budget=10**7)
    with pytest.raises(BudgetError, match=r"--clique-budget N\) or raise that budget .*fit_options=\{'memory_budget'"):
        fit(reports, estimator=est, clique_budget=1000, fit_options={"memory_budget": 1000})
    assert est.asked == []


class Checked(Counting):
    """A source whose exact budget check refuses every table of more than two attributes."""

    def check(self, attrs):
        from lopub.errors import BudgetError

        if len(attrs) > 2:
            raise BudgetError(f"the joint of {list(attrs)} is over memory_budget")


def test_paper_release_refuses_a_clique_before_the_first_clique_estimation():
    from lopub.errors import BudgetError

    src = Checked(embedded_model())
    with pytest.raises(BudgetError, match=r"clique \[.*\] of the junction tree .* lower clique_budget or "
                                          r"use release='pgm'"):
        fit(estimator=src, phi=0.4, release="cliques", structure="phi", warn=False)
    assert src.asked and max(len(a) for a in src.asked) == 2  # pairs for the graph, no clique
    assert fit(estimator=Checked(embedded_model()), phi=0.4, structure="phi", warn=False).model


def test_tree_structure_gives_a_forest():
    import networkx as nx

    bn = embedded_model()
    model, rep = _fit(estimator=bn, phi=0.4, structure="tree")
    assert nx.is_forest(model.graph.graph) and rep["structure"] == "tree"
    assert all(len(c) <= 2 for c in model.tree.cliques)


def test_measure_triples_adds_three_way_tables_inside_cliques_only():
    bn = embedded_model()
    src = Counting(bn)
    res = fit(estimator=src, phi=0.4, structure="phi", measure_triples=2, warn=False)
    triples = [m for m in res.report.measurements if len(m) == 3]
    assert len(triples) == 2
    edges = {frozenset(e) for e in res.model.graph.edges}
    for t in triples:
        assert any(set(t) <= set(c) for c in res.model.tree.cliques)
        assert all(frozenset(p) in edges for p in itertools.combinations(t, 2))
        assert frozenset(t) in src.asked
    assert not any(len(a) > 3 for a in src.asked)


def test_plain_estimates_get_the_documented_fallback_variance():
    from lopub.estimate.measurement import Measurement, multinomial_variance
    from lopub.model.pgm.measure import EXACT_N, as_measurement

    bn = embedded_model()
    m = bn.marginal(["sex", "income"])
    got = as_measurement(m, 500)
    np.testing.assert_allclose(got.variance, multinomial_variance(m.values, 500))
    assert "fallback" in got.provenance["variance"]
    np.testing.assert_allclose(as_measurement(m, None).variance, multinomial_variance(m.values, EXACT_N))
    already = Measurement.from_marginal(m, 0.25)
    assert as_measurement(already, 500) is already


@pytest.mark.parametrize("release", ["pgm", "cliques"])
def test_default_clique_budget_is_recorded_and_bounds_the_cliques(release):
    from lopub.pipeline.steps import DEFAULT_CLIQUE_BUDGET

    bn = embedded_model()
    reports = encode(bn.sample(400, rng=3), CollectionSpec.from_domain(bn.domain, f=0.5), rng=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fit(reports, method="moment", release=release)
    assert res.report.clique_budget == DEFAULT_CLIQUE_BUDGET  # 400 users: the smallest default
    assert res.model.meta["fit"]["clique_budget"] == DEFAULT_CLIQUE_BUDGET
    assert all(bn.domain.cells(list(c)) <= DEFAULT_CLIQUE_BUDGET for c in res.model.tree.cliques)


def test_pgm_default_clique_budget_grows_with_the_users():
    from lopub.pipeline.steps import (DEFAULT_CLIQUE_BUDGET, PGM_CLIQUE_BUDGET, PGM_USERS_PER_CELL,
                                default_clique_budget)

    assert default_clique_budget("pgm", None) == DEFAULT_CLIQUE_BUDGET
    assert default_clique_budget("pgm", 45_222) == DEFAULT_CLIQUE_BUDGET
    assert default_clique_budget("pgm", 1_000_000) == 1_000_000 // PGM_USERS_PER_CELL
    assert DEFAULT_CLIQUE_BUDGET < 1_000_000 // PGM_USERS_PER_CELL < PGM_CLIQUE_BUDGET
    assert default_clique_budget("pgm", 10**8) == PGM_CLIQUE_BUDGET
    assert default_clique_budget("cliques", 10**8) == DEFAULT_CLIQUE_BUDGET
    # never more than the model fit's memory holds, never less than the old default
    assert default_clique_budget("pgm", 10**8, max_cells=60_000) == 60_000
    assert default_clique_budget("pgm", 10**8, max_cells=10_000) == DEFAULT_CLIQUE_BUDGET


def test_default_pgm_clique_budget_fits_the_model_memory_of_wide_data():
    # 300 attributes and 2M users: the N rule alone (200,000 cells) would be refused by the
    # capacity check (300 cliques x 200,000 cells x 64 bytes > 2 GiB)
    from lopub.model.pgm.fit import BYTES_PER_CELL, DEFAULT_MEMORY_BUDGET
    from lopub.pipeline.steps import default_clique_budget

    cap = DEFAULT_MEMORY_BUDGET // (300 * BYTES_PER_CELL)
    budget = default_clique_budget("pgm", 2_000_000, max_cells=cap)
    assert budget == cap and 300 * budget * BYTES_PER_CELL <= DEFAULT_MEMORY_BUDGET


def test_fit_defaults_the_pgm_clique_budget_from_n_and_the_model_memory():
    from lopub.collect import MarginalPlan, MarginalSource, collect_records, measure_marginals
    from lopub.datasets import embedded
    from lopub.model.pgm.fit import BYTES_PER_CELL

    data = embedded(2000, rng=5)
    plan = MarginalPlan(data.domain, list(itertools.combinations(data.domain.attrs, 2)), 8.0)
    measured = measure_marginals(collect_records(data, plan, rng=6))
    source = MarginalSource(data.domain, measured.measurements(), n=10**7)  # as if 10^7 users
    d = len(data.domain)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fit(estimator=source, fit_options={"memory_budget": d * BYTES_PER_CELL * 80_000})
    assert res.report.clique_budget == 80_000  # the memory's cap, below the N rule's 200,000
