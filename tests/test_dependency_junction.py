"""Triangulation, cliques, junction tree invariants and the clique budget."""
import itertools
import warnings

import networkx as nx
import pytest

from lopub.datasets import embedded_model
from lopub.dependency import (budgeted_junction_tree, dependency_graph, junction_tree,
                              running_intersection)
from lopub.data.domain import Domain
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


def test_dropped_edges_say_whether_a_clique_still_holds_them():
    """Re-triangulation can put both ends of a dropped edge back into one clique (fill-in)."""
    bn = embedded_model()
    dg = dependency_graph(bn, 0.4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jt, used, dropped = budgeted_junction_tree(dg.graph, bn.domain, 5000)
    for d in dropped:
        assert d["in_clique"] == any(d["a"] in c and d["b"] in c for c in jt.cliques)
    fates = {(d["a"], d["b"]): d["in_clique"] for d in dropped}
    assert fates[("age_group", "relationship")] is True  # measured: back via fill-in
    assert fates[("marital", "occupation")] is False
    with pytest.warns(UserWarning, match=r"3 of them end up in no clique"):
        budgeted_junction_tree(dg.graph, bn.domain, 5000)


# --- JunctionTree.from_dict validates what it reads ---------------------------------------
def chain_tree_dict():
    return {"cliques": [["x0", "x1"], ["x1", "x2"], ["x2", "x3"]], "edges": [[0, 1], [1, 2]],
            "roots": [0], "order": [0, 1, 2], "fill_edges": []}


@pytest.mark.parametrize("change, match", [
    (lambda o: o.pop("edges"), r"missing field 'junction_tree\.edges'"),
    (lambda o: o.update(cliques=[]), r"'junction_tree\.cliques' \(\[\]\) is not a non-empty list"),
    (lambda o: o["cliques"].__setitem__(1, ["x1", "x1"]), r"'junction_tree\.cliques\[1\]'.*distinct"),
    (lambda o: o["cliques"].__setitem__(2, ["x2", "zz"]), r"'junction_tree\.cliques\[2\]'.*unknown attribute 'zz'"),
    (lambda o: o["edges"].append([2, 9]), r"'junction_tree\.edges\[2\]' \(\[2, 9\]\).*indices in 0\.\.2"),
    (lambda o: o["edges"].append([1, 1]), r"'junction_tree\.edges\[2\]'"),
    (lambda o: o["edges"].append(["0", 2]), r"'junction_tree\.edges\[2\]'"),
    (lambda o: o["edges"].append([2, 0]), r"'junction_tree\.edges'.*contain a cycle"),
    (lambda o: o["edges"].append([1, 0]), r"'junction_tree\.edges'.*contain a cycle"),
    (lambda o: o.update(edges=[[0, 1]]), r"'junction_tree\.roots' \(\[0\]\) misses clique 2.*one root per"),
    (lambda o: o.update(roots=[0, 1]), r"'junction_tree\.roots'.*lists clique 1, which has a parent"),
    (lambda o: o.update(order=[0, 1]), r"'junction_tree\.order'.*permutation of 0\.\.2"),
    (lambda o: o.update(order=[1, 0, 2]), r"'junction_tree\.order'.*puts clique 1 before its parent 0"),
    (lambda o: o.update(edges=[[0, 2], [2, 1]], order=[0, 2, 1]),
     r"running intersection.*'x1'"),
    (lambda o: o.update(fill_edges=[["x0"]]), r"'junction_tree\.fill_edges'"),
])
def test_junction_tree_from_dict_rejects(change, match):
    from lopub.dependency import JunctionTree

    obj = chain_tree_dict()
    assert JunctionTree.from_dict(obj, domain_of(4)).edges == [(0, 1), (1, 2)]
    change(obj)
    with pytest.raises(ValueError, match=match):
        JunctionTree.from_dict(obj, domain_of(4))


def test_junction_tree_from_dict_two_parents():
    from lopub.dependency import JunctionTree

    obj = {"cliques": [["x0", "x1"], ["x1", "x2"], ["x1", "x3"]], "edges": [[0, 2], [1, 2]],
           "roots": [0, 1], "order": [0, 1, 2]}
    with pytest.raises(ValueError, match=r"'junction_tree\.edges'.*give clique 2 two parents"):
        JunctionTree.from_dict(obj, domain_of(4))
