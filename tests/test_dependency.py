"""Dependency graph (Alg. 4), tau (Eq. 26), MI (Eq. 24), pruning (Alg. 5)."""
import itertools
import math

import networkx as nx
import numpy as np
import pytest

from lopub.datasets import embedded_model
from lopub.dependency import (MarginalCache, dependency_graph, entropy, mutual_information,
                              pruned_dependency_graph, sorted_edges, tau)
from lopub.data.domain import Domain
from lopub.data.marginal import Marginal


class JointSource:
    """Exact marginals of a full joint table (test helper)."""

    def __init__(self, domain, table):
        self.domain = domain
        self.full = Marginal(domain, table / table.sum(), 1000)
        self.asked = []

    def marginal(self, attrs):
        self.asked.append(tuple(attrs))
        return self.full.project(attrs)


class ProductSource:
    """Exact marginals of independent attributes (never builds the full joint)."""

    def __init__(self, domain, factors):
        self.domain, self.factors, self.asked = domain, factors, []

    def marginal(self, attrs):
        self.asked.append(tuple(attrs))
        table = np.ones(())
        for a in attrs:
            table = np.multiply.outer(table, self.factors[a])
        return Marginal(self.domain.project(attrs), table, 1000)


def product_source(sizes, seed=0):
    rng = np.random.default_rng(seed)
    dom = Domain.from_categories({f"a{i}": [str(v) for v in range(s)] for i, s in enumerate(sizes)})
    return ProductSource(dom, {a: rng.dirichlet(np.ones(s)) for a, s in zip(dom.attrs, sizes)})


def test_tau_matches_eq26():
    assert tau(16, 2, 0.4) == pytest.approx(1 * 0.16 / 2)
    assert tau(8, 41, 0.25) == pytest.approx(7 * 0.0625 / 2)


@pytest.mark.parametrize("phi", [0, -0.1, 1.5])
def test_phi_out_of_range(phi):
    with pytest.raises(ValueError, match=r"phi \(.*\) must be in \(0, 1\]"):
        tau(3, 3, phi)


def test_mi_and_entropy_known_values():
    k = 4
    assert mutual_information(np.eye(k) / k) == pytest.approx(math.log(k))
    assert mutual_information(np.outer([0.2, 0.8], [0.5, 0.3, 0.2])) == pytest.approx(0, abs=1e-12)
    assert entropy(np.full(8, 1 / 8)) == pytest.approx(math.log(8))
    # negative estimates are clipped, not propagated as NaN
    assert np.isfinite(mutual_information(np.array([[0.6, -0.1], [0.1, 0.4]])))


def test_exact_graph_matches_embedded_mi_graph():
    bn = embedded_model()
    for phi in (0.25, 0.4):
        dg = dependency_graph(bn, phi)
        assert dg.edges == sorted_edges(bn.mi_graph(phi).edges(), bn.domain)
        decisions = dg.decisions()
        assert len(decisions) == math.comb(len(bn.domain), 2)
        assert all(d["edge"] == (d["mi"] >= d["tau"]) for d in decisions)


def test_independent_attributes_have_no_edges():
    src = product_source([3, 4, 2, 5])
    dg = dependency_graph(src, 0.2)
    assert dg.edges == []
    assert dg.stats["pairs_computed"] == 6


def test_every_marginal_estimated_once():
    src = product_source([3, 4, 2, 5])
    cache = MarginalCache(src)
    dependency_graph(cache, 0.3)
    pruned_dependency_graph(cache, 0.3)
    keys = [frozenset(a) for a in src.asked]
    assert len(keys) == len(set(keys)) == 4 + 6


@pytest.mark.parametrize("phi", [0.1, 0.3, 0.4, 0.5])
def test_nonbinary_pruning_pair_counts(phi):
    bn = embedded_model()
    d = len(bn.domain)
    for rounding, fn in (("floor", math.floor), ("ceil", math.ceil)):
        dg = pruned_dependency_graph(bn, phi, rounding=rounding)
        k = fn(round(d * (1 - phi), 9))
        assert dg.stats["pairs_computed"] == math.comb(k, 2)
        assert dg.stats["pairs_total"] == math.comb(d, 2)
        # found edges are a subset of the all-pairs graph
        assert set(dg.edges) <= set(dependency_graph(bn, phi).edges)
        top = set(dg.stats["ranking"][:k])
        assert all(a in top and b in top for a, b in dg.edges)


def test_paper_pair_counts_for_adult_sized_domain():
    src = product_source([3] * 15)
    counts = [pruned_dependency_graph(MarginalCache(src), p, rounding="ceil").stats["pairs_computed"]
              for p in (0.1, 0.2, 0.3, 0.4, 0.5)]
    assert counts == [91, 66, 55, 36, 28]  # Tables VII-IX of the paper, Adult (d = 15)


def test_binary_pruning_starts_complete():
    rng = np.random.default_rng(3)
    dom = Domain.from_categories({f"b{i}": ["0", "1"] for i in range(6)})
    # b0-b1 dependent, everything else independent
    t01 = np.array([[0.45, 0.05], [0.05, 0.45]])
    table = t01
    for _ in range(4):
        p = rng.uniform(0.05, 0.5)
        table = np.multiply.outer(table, [1 - p, p])
    src = JointSource(dom, table)
    dg = pruned_dependency_graph(src, 0.4)
    assert dg.stats["variant"] == "binary"
    k = math.floor(6 * 0.6)
    low = set(dg.stats["ranking"][:k])
    tested = [(a, b) for a, b in itertools.combinations(dom.attrs, 2) if a in low or b in low]
    assert dg.stats["pairs_computed"] == len(tested)
    for a, b in itertools.combinations(dom.attrs, 2):
        untested = a not in low and b not in low
        expect = untested or {a, b} == {"b0", "b1"}
        assert dg.graph.has_edge(a, b) == expect


def test_pruning_bad_options():
    src = product_source([3, 3])
    with pytest.raises(ValueError, match="variant"):
        pruned_dependency_graph(src, 0.4, variant="dense")
    with pytest.raises(ValueError, match="rounding"):
        pruned_dependency_graph(src, 0.4, rounding="up")


def test_cache_rejects_unknown_attribute():
    with pytest.raises(ValueError, match="unknown attribute 'zz'"):
        MarginalCache(product_source([2, 3])).marginal(["a0", "zz"])


def test_graph_json_round_trip():
    bn = embedded_model()
    dg = dependency_graph(bn, 0.4)
    from lopub.dependency import DependencyGraph

    back = DependencyGraph.from_dict(dg.to_dict(), bn.domain)
    assert back.edges == dg.edges
    np.testing.assert_allclose(back.mi, dg.mi)
    assert nx.is_isomorphic(back.graph, dg.graph)


def test_graph_from_dict_rejects_malformed():
    from lopub.dependency import DependencyGraph

    bn = embedded_model()
    good = dependency_graph(bn, 0.4).to_dict()
    cases = [({"phi": 2.0}, r"graph\.phi \(2\.0\) must be in \(0, 1\]"),
             ({"phi": "x"}, r"graph\.phi \('x'\) must be a real number"),
             ({"mi": [[0.0]]}, r"graph\.mi must be a 13 x 13 matrix"),
             ({"edges": [["sex", "nope"]]}, r"graph\.edges .*pairs of different attributes"),
             ({"stats": []}, r"graph\.stats"), ]
    for change, match in cases:
        obj = dict(good, **change)
        with pytest.raises((ValueError, TypeError), match=match):
            DependencyGraph.from_dict(obj, bn.domain)
    obj = dict(good)
    del obj["mi"]
    with pytest.raises(ValueError, match="graph lacks the field 'mi'"):
        DependencyGraph.from_dict(obj, bn.domain)


def test_at_phi_rethresholds_without_estimating():
    bn = embedded_model()
    dg = dependency_graph(bn, 0.4)
    low = dg.at_phi(0.3)
    assert low.phi == 0.3 and low.stats["rethresholded_from"] == 0.4
    assert low.edges == dependency_graph(bn, 0.3).edges
    np.testing.assert_array_equal(low.mi, dg.mi)
    with pytest.raises(ValueError, match=r"phi \(3\.0\) must be in \(0, 1\]"):
        dg.at_phi(3.0)


def test_dropped_edges_flagged_in_decisions_and_json():
    bn = embedded_model()
    dg = dependency_graph(bn, 0.4)
    assert dg.dropped == [] and not any(d["dropped_for_budget"] for d in dg.decisions())
    dg.stats["dropped_for_budget"] = [["relationship", "age_group"]]
    assert dg.dropped == [("age_group", "relationship")]
    out = dg.to_dict()
    assert out["dropped_for_budget"] == [["age_group", "relationship"]]
    assert [(d["a"], d["b"]) for d in out["decisions"] if d["dropped_for_budget"]] == dg.dropped


def single_category_source():
    """Exact marginals over a, b (dependent), c (independent) and one (a single category)."""
    dom = Domain.from_categories({"a": ["0", "1"], "one": ["x"], "b": ["0", "1", "2"], "c": ["0", "1"]})
    ab = np.array([[0.3, 0.1, 0.1], [0.05, 0.05, 0.4]])
    table = np.einsum("ab,o,c->aobc", ab, np.ones(1), np.array([0.4, 0.6]))
    return JointSource(dom, table)


def test_single_category_attribute_gets_no_edge():
    # tau = 0 and MI = 0 for the single-category attribute: `MI >= tau` alone joined it to everything
    src = single_category_source()
    for phi in (0.1, 0.4):
        dg = dependency_graph(src, phi)
        assert dg.edges == [("a", "b")]
        assert not any(d["edge"] for d in dg.decisions() if "one" in (d["a"], d["b"]))
        assert dg.at_phi(0.05).edges == [("a", "b")]
    for variant in ("nonbinary", "binary"):
        dg = pruned_dependency_graph(src, 0.1, variant=variant)
        assert "one" not in {x for e in dg.edges for x in e}
