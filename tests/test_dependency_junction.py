"""Triangulation, cliques, junction tree invariants and the clique budget."""
import itertools
import warnings

import networkx as nx
import pytest

from lopub.datasets import embedded_model
from lopub.dependency import (budgeted_junction_tree, dependency_graph, junction_tree,
                              running_intersection)
from lopub.domain import Domain
from lopub.errors import BudgetError


def domain_of(d, size=3):
    return Domain.from_categories({f"x{i}": [str(v) for v in range(size)] for i in range(d)})


def check_invariants(jt, graph, domain):
    assert running_intersection(jt)
    assert sorted(set().union(*map(set, jt.cliques))) == sorted(domain.attrs)
    for a, b in graph.edges:
        assert any(a in c and b in c for c in jt.cliques), (a, b)
    # cliques are maximal and pairwise distinct
    sets = [set(c) for c in jt.cliques]
    assert not any(s < t for s, t in itertools.permutations(sets, 2))
    # chordal completion: the graph plus fill edges is chordal and its cliques are ours
    h = nx.Graph(graph)
    h.add_nodes_from(domain.attrs)
    h.add_edges_from(jt.fill_edges)
    assert nx.is_chordal(h)
    assert {frozenset(c) for c in nx.chordal_graph_cliques(h)} == {frozenset(c) for c in jt.cliques}
    # order: parents before children, every clique once
    assert sorted(jt.order) == list(range(len(jt.cliques)))
    seen = set()
    par = jt.parent()
    for i in jt.order:
        assert par[i] is None or par[i] in seen
        seen.add(i)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("heuristic", ["min-fill", "min-size"])
def test_random_graph_invariants(seed, heuristic):
    dom = domain_of(12)
    g = nx.gnp_random_graph(12, 0.25, seed=seed)
    g = nx.relabel_nodes(g, {i: f"x{i}" for i in range(12)})
    jt = junction_tree(g, dom, heuristic=heuristic)
    check_invariants(jt, g, dom)
    assert len(jt.roots) == nx.number_connected_components(g)


def test_embedded_graph_invariants():
    bn = embedded_model()
    dg = dependency_graph(bn, 0.4)
    jt = junction_tree(dg.graph, bn.domain)
    check_invariants(jt, dg.graph, bn.domain)


def test_chordal_graph_needs_no_fill():
    dom = domain_of(5)
    g = nx.Graph([("x0", "x1"), ("x1", "x2"), ("x2", "x3"), ("x1", "x3"), ("x3", "x4")])
    jt = junction_tree(g, dom)
    assert jt.fill_edges == []
    assert sorted(map(set, jt.cliques), key=sorted) == sorted(
        [{"x0", "x1"}, {"x1", "x2", "x3"}, {"x3", "x4"}], key=sorted)


def test_cycle_gets_one_chord():
    dom = domain_of(4)
    g = nx.cycle_graph(4)
    g = nx.relabel_nodes(g, {i: f"x{i}" for i in range(4)})
    jt = junction_tree(g, dom)
    assert len(jt.fill_edges) == 1
    check_invariants(jt, g, dom)


def test_no_edges_gives_singletons_forest():
    dom = domain_of(4)
    g = nx.Graph()
    g.add_nodes_from(dom.attrs)
    jt = junction_tree(g, dom)
    assert sorted(jt.cliques) == [(a,) for a in dom.attrs]
    assert jt.edges == [] and len(jt.roots) == 4


def test_single_attribute():
    dom = domain_of(1)
    g = nx.Graph()
    g.add_node("x0")
    jt = junction_tree(g, dom)
    assert jt.cliques == [("x0",)] and jt.roots == [0]


def test_clique_over_budget_drops_weakest_edges():
    dom = domain_of(5, size=4)
    g = nx.complete_graph([f"x{i}" for i in range(5)])
    for k, (a, b) in enumerate(g.edges):
        g.edges[a, b].update(mi=1.0 + k, tau=1.0)
    weakest = min(g.edges, key=lambda e: g.edges[e]["mi"])
    with pytest.warns(UserWarning, match=r"clique_budget \(64 cells\) exceeded"):
        jt, used, dropped = budgeted_junction_tree(g, dom, 64)
    assert all(dom.cells(list(c)) <= 64 for c in jt.cliques)
    assert {dropped[0]["a"], dropped[0]["b"]} == set(weakest)
    assert used.number_of_edges() == g.number_of_edges() - len(dropped)
    check_invariants(jt, used, dom)
    # within the budget nothing is dropped and no warning is issued
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jt2, _, none = budgeted_junction_tree(g, dom, 4**5)
    assert none == [] and len(jt2.cliques) == 1


def test_attribute_larger_than_budget():
    dom = domain_of(2, size=10)
    g = nx.Graph([("x0", "x1")])
    with pytest.raises(BudgetError, match=r"clique_budget \(5\) is smaller than attribute 'x0'"):
        budgeted_junction_tree(g, dom, 5)


def test_bad_heuristic():
    with pytest.raises(ValueError, match="heuristic"):
        junction_tree(nx.Graph(), domain_of(2), heuristic="best")


def test_junction_tree_json_round_trip():
    from lopub.dependency import JunctionTree

    bn = embedded_model()
    jt = junction_tree(dependency_graph(bn, 0.4).graph, bn.domain)
    back = JunctionTree.from_dict(jt.to_dict())
    assert back.cliques == jt.cliques and back.edges == jt.edges and back.order == jt.order
