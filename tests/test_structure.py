"""Structure selection (lopub.dependency.structure): phi, auto (noise-aware) and tree rules."""
import itertools

import networkx as nx
import numpy as np
import pytest

from lopub.datasets import embedded_model
from lopub.dependency import DependencyGraph, MarginalCache, dependency_graph, pruned_dependency_graph
from lopub.dependency.structure import residual_test, structure_graph
from lopub.data.domain import Domain
from lopub.data.marginal import Marginal
from lopub.estimate.measurement import Measurement


class NoisyExact:
    """Exact marginals of ``model`` plus Gaussian noise of known per-cell variance ``p (1 - p) / size``.

    Every request draws fresh noise (a MarginalCache in front asks once per set).
    """

    def __init__(self, model, size, seed):
        self.model, self.domain, self.size = model, model.domain, size
        self.rng = np.random.default_rng(seed)

    def marginal(self, attrs):
        m = self.model.marginal(list(attrs))
        p = m.values
        var = p * (1 - p) / self.size
        raw = p + self.rng.normal(size=p.shape) * np.sqrt(var)
        clean = np.clip(raw, 0, None)
        return Measurement(m.domain, clean / clean.sum(), self.size, variance=var,
                           provenance={"protocol": "simulated"}, raw=raw)


class Product:
    """Independent attributes: the product of fixed one-way tables (never the full joint)."""

    def __init__(self, sizes, seed=0):
        rng = np.random.default_rng(seed)
        self.domain = Domain.from_categories({f"a{i}": [str(v) for v in range(s)]
                                              for i, s in enumerate(sizes)})
        self.factors = {a: rng.dirichlet(np.full(s, 3.0)) for a, s in zip(self.domain.attrs, sizes)}

    def marginal(self, attrs):
        t = np.ones(())
        for a in attrs:
            t = np.multiply.outer(t, self.factors[a])
        return Marginal(self.domain.project(list(attrs)), t, None)


def moment_measurements(reports):
    """Moment estimates of Bloom reports as Measurements: raw = the unbiased cross moment of the
    projected bits, variance = its sampling variance over users (what an estimator reports)."""
    from lopub.estimate import Estimator
    from lopub.estimate.moment import projected_bits

    est = Estimator(reports, method="moment")
    z = {a: projected_bits(reports, a) for a in reports.spec.domain.attrs}

    class Source:
        domain = reports.spec.domain

        def marginal(self, attrs):
            m = est.marginal(list(attrs))
            prod = z[attrs[0]]
            for a in attrs[1:]:
                prod = (prod[:, :, None] * z[a][:, None, :]).reshape(len(prod), -1)
            raw = prod.mean(0).reshape(m.values.shape)
            var = prod.var(0).reshape(m.values.shape) / len(prod)
            return Measurement.from_marginal(m, var, {"estimator": "moment"}, raw=raw)

    return Source()


def recall_precision(dg, truth):
    found = {frozenset(e) for e in dg.edges}
    truth = {frozenset(e) for e in truth}
    hit = len(found & truth)
    return hit / len(truth), hit / max(1, len(found))


def test_bad_structure_name_lists_choices():
    with pytest.raises(ValueError, match=r"structure \('chow-liu'\) must be one of \('auto', 'phi', 'tree'\)"):
        structure_graph(embedded_model(), "chow-liu")


def test_bad_options_are_named():
    bn = embedded_model()
    with pytest.raises(TypeError, match=r"structure 'tree' got unknown option\(s\) \['max_cells'\]"):
        structure_graph(bn, "tree", max_cells=10)
    with pytest.raises(ValueError, match=r"alpha \(1\.5\) must be a number in \(0, 1\)"):
        structure_graph(bn, "auto", alpha=1.5)
    with pytest.raises(ValueError, match=r"correction \('fdr'\) must be one of"):
        structure_graph(bn, "auto", correction="fdr")
    with pytest.raises(ValueError, match=r"max_cells \(0\) must be a number >= 1"):
        structure_graph(bn, "auto", max_cells=0)
    with pytest.raises(ValueError, match=r"n \(-3\) must be a positive integer"):
        structure_graph(bn, "auto", n=-3)


def test_phi_rule_is_the_papers():
    bn = embedded_model()
    cache = MarginalCache(bn)
    dg = structure_graph(cache, "phi", phi=0.4)
    assert dg.structure == "phi" and dg.edges == dependency_graph(cache, 0.4).edges
    pr = structure_graph(cache, "phi", phi=0.4, prune=True, rounding="ceil")
    assert pr.edges == pruned_dependency_graph(cache, 0.4, rounding="ceil").edges


def test_auto_finds_true_edges_under_known_noise():
    # exact marginals plus noise of 3,500 multinomial records: the noise-equivalent size of
    # moment estimates from 20,000 Bloom reports at f = 0.5 (measured N_eff 3,494-3,554)
    bn = embedded_model()
    for seed in (0, 1):
        dg = structure_graph(NoisyExact(bn, 3500, seed), "auto")
        recall, precision = recall_precision(dg, bn.dependency_edges())
        assert recall >= 0.9 and precision >= 0.9, (recall, precision)
        assert dg.stats["model_cells"] <= dg.stats["max_cells"]
        ind = {frozenset(e) for e in bn.independent_pairs()}
        assert not ind & {frozenset(e) for e in dg.edges}
        # race -> native_region -> urban: the indirect pair is left to the chain
        row = [r for r in dg.decisions() if (r["a"], r["b"]) == ("race", "urban")][0]
        assert row["pvalue"] < row["level"] and not row["edge"]
        assert row["reason"] == "explained by a path"
        assert row["explained_by"] == ["race", "native_region", "urban"]


def test_auto_keeps_no_edges_under_pure_noise():
    # 15 independent attributes, 105 pairs, family-wise level 0.05: P(> 3 false edges) < 1e-6
    src = Product([2, 3, 5, 4, 2, 6, 3, 2, 8, 3, 2, 4, 5, 2, 3], seed=3)
    for seed in range(3):
        dg = structure_graph(NoisyExact(src, 2000, seed), "auto")
        assert len(dg.edges) <= 3
        assert dg.stats["significant"] <= 3
    # plain tables with a record count: multinomial fallback (Pearson), here on a real sample
    rng = np.random.default_rng(7)
    codes = np.stack([rng.choice(len(f), size=3000, p=f) for f in src.factors.values()], axis=1)
    from lopub.data.dataset import Dataset

    dg = structure_graph(Dataset(codes, src.domain), "auto")
    assert len(dg.edges) <= 3
    assert dg.decisions()[0]["reason"] in ("not significant", "edge")


def test_independence_test_is_calibrated_under_the_null():
    # Gaussian cell noise of known variance around an independent table: p-values uniform
    rng = np.random.default_rng(11)
    pa, pb = rng.dirichlet(np.ones(4) * 3), rng.dirichlet(np.ones(5) * 3)
    p0 = np.outer(pa, pb)
    v = p0 * (1 - p0) / 4000
    from lopub.dependency.mi import null_residual_variance

    pvals = []
    for _ in range(400):
        p = p0 + rng.normal(size=p0.shape) * np.sqrt(v)
        r = p - np.outer(p.sum(1), p.sum(0))
        pvals.append(residual_test(r, v, null_residual_variance(v, p.sum(1), p.sum(0)), 12)[1])
    pvals = np.array(pvals)
    # share below 0.05: binomial(400, 0.05) has sd 0.011; allow 5 sd (plus linearisation slack)
    assert abs(np.mean(pvals < 0.05) - 0.05) < 0.06
    assert abs(np.mean(pvals) - 0.5) < 0.08  # uniform mean 0.5, sd 0.014


def test_size_bound_holds_and_is_recorded():
    bn = embedded_model()
    dg = structure_graph(NoisyExact(bn, 20000, 0), "auto", max_cells=600)
    assert dg.stats["max_cells"] == 600 and dg.stats["model_cells"] <= 600
    reasons = {d["reason"] for d in dg.decisions()}
    assert "model size" in reasons and "edge" in reasons
    # edges are taken strongest first: every skipped pair is weaker than the strongest edge
    strongest = max(dg.tests[frozenset(e)]["strength"] for e in dg.edges)
    assert all(d["strength"] <= strongest for d in dg.decisions() if d["reason"] == "model size")


def test_tree_is_a_spanning_tree_when_all_pairs_depend():
    bn = embedded_model()
    dg = structure_graph(NoisyExact(bn, 20000, 2), "tree")
    d = len(bn.domain)
    assert len(dg.edges) == d - 1 and nx.is_tree(dg.graph)
    # Chow-Liu on strong dependence recovers most of the skeleton (12 of its 15 edges at most)
    recall, precision = recall_precision(dg, bn.dependency_edges())
    assert precision >= 0.9


def test_tree_is_a_forest_over_independent_blocks():
    dom = Domain.from_categories({k: ["0", "1", "2"] for k in "abcde"})
    rng = np.random.default_rng(5)
    abc = rng.dirichlet(np.full(27, 0.3)).reshape(3, 3, 3)
    de = rng.dirichlet(np.full(9, 0.3)).reshape(3, 3)
    full = Marginal(dom, np.einsum("abc,de->abcde", abc, de), 50000)

    class Src:
        domain = dom

        def marginal(self, attrs):
            return full.project(attrs)

    dg = structure_graph(Src(), "tree")
    comps = sorted(sorted(c) for c in nx.connected_components(dg.graph))
    assert comps == [["a", "b", "c"], ["d", "e"]] and len(dg.edges) == 3


@pytest.mark.parametrize("structure", ["auto", "tree", "phi"])
def test_single_category_attribute_has_no_edges(structure):
    dom = Domain.from_categories({"a": ["0", "1"], "one": ["x"], "b": ["0", "1", "2"]})
    table = np.array([[0.3, 0.1, 0.1], [0.05, 0.05, 0.4]])[:, None, :]
    full = Marginal(dom, table, 10000)

    class Src:
        domain = dom

        def marginal(self, attrs):
            return full.project(attrs)

    dg = structure_graph(Src(), structure, phi=0.1)
    assert dg.edges == [("a", "b")]
    row = [r for r in dg.decisions() if {r["a"], r["b"]} == {"a", "one"}][0]
    assert row["edge"] is False
    if structure != "phi":
        assert row["reason"] == "no edge (single category)" and row["df"] == 0


def test_json_round_trip_keeps_rule_and_decisions():
    bn = embedded_model()
    dg = structure_graph(NoisyExact(bn, 5000, 4), "auto")
    obj = dg.to_dict()
    assert obj["structure"] == "auto"
    back = DependencyGraph.from_dict(obj, bn.domain)
    assert back.structure == "auto" and back.edges == dg.edges
    assert back.decisions() == dg.decisions()
    assert all("reason" in r and "pvalue" in r for r in back.decisions())
    old = dependency_graph(bn, 0.4).to_dict()
    del old["structure"]  # model files written before the rules existed
    assert DependencyGraph.from_dict(old, bn.domain).structure == "phi"
    with pytest.raises(ValueError, match=r"graph\.structure \('magic'\) must be one of"):
        DependencyGraph.from_dict(dict(obj, structure="magic"), bn.domain)


def test_progress_reports_pair_stages():
    seen = []
    structure_graph(NoisyExact(embedded_model(), 5000, 0), "auto",
                    progress=lambda stage, done, total: seen.append((stage, done, total)))
    stages = {s for s, _, _ in seen}
    assert {"one-way marginals", "pairwise joints", "edge tests"} <= stages
    assert ("pairwise joints", 78, 78) in seen and ("edge tests", 78, 78) in seen


def test_exact_tables_without_n_make_every_dependence_significant():
    bn = embedded_model()
    dg = structure_graph(bn, "auto", explain=False)
    dependent = [e for e in itertools.combinations(bn.domain.attrs, 2)
                 if frozenset(e) not in {frozenset(p) for p in bn.independent_pairs()}]
    assert dg.stats["significant"] == len(dependent) and dg.stats["max_cells"] is None
    assert set(map(frozenset, dg.edges)) == set(map(frozenset, dependent))


@pytest.mark.slow
def test_auto_on_bloom_reports_at_f_half():
    """Issue 11 target: true edges with recall and precision >= 0.9 from real reports, f = 0.5."""
    from lopub.client.encode import encode
    from lopub.reports.spec import CollectionSpec

    bn = embedded_model()
    rep = encode(bn.sample(20000, rng=1), CollectionSpec.from_domain(bn.domain, f=0.5), rng=11)
    dg = structure_graph(moment_measurements(rep), "auto")
    recall, precision = recall_precision(dg, bn.dependency_edges())
    assert recall >= 0.9 and precision >= 0.9, (recall, precision)
    assert not {frozenset(e) for e in bn.independent_pairs()} & {frozenset(e) for e in dg.edges}


def test_estimates_without_variance_warn():
    bn = embedded_model()

    class Estimated:
        domain = bn.domain

        def marginal(self, attrs):
            m = bn.marginal(attrs)
            return Marginal(m.domain, m.values, 1000, {"method": "em"})

    with pytest.warns(UserWarning, match=r"'em' estimates without a variance.*multinomial"):
        dg = structure_graph(Estimated(), "auto")
    assert dg.stats["variance"] == ["multinomial"]


@pytest.mark.slow
def test_auto_keeps_no_edges_from_bloom_reports_of_independent_attributes():
    from lopub.client.encode import encode
    from lopub.data.dataset import Dataset
    from lopub.reports.spec import CollectionSpec

    src = Product([2, 3, 5, 4, 2, 6, 3, 2, 8, 3], seed=4)
    rng = np.random.default_rng(9)
    codes = np.stack([rng.choice(len(f), size=20000, p=f) for f in src.factors.values()], axis=1)
    rep = encode(Dataset(codes, src.domain), CollectionSpec.from_domain(src.domain, f=0.5), rng=10)
    dg = structure_graph(moment_measurements(rep), "auto")
    assert len(dg.edges) <= 3  # family-wise level 0.05 over 45 pairs
    pvals = np.array([t["pvalue"] for t in dg.tests.values()])
    assert np.mean(pvals) > 0.3  # calibrated: uniform p-values have mean 0.5 (sd 0.04 here)
