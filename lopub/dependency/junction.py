"""Triangulation, maximal cliques and junction trees, with a clique-size budget.

* Triangulation: greedy vertex elimination with the *min-fill* heuristic
  (fewest fill-in edges, ties broken by the smallest clique in cells, then by
  domain order) or *min-size* (smallest clique in cells first, ties by fill).
  Deterministic for a given graph.
* Cliques: the maximal cliques of the chordal completion, each listed in
  domain order.
* Junction tree: a maximum spanning tree of the clique graph weighted by
  separator size (number of shared attributes), via networkx/Kruskal.  Cliques
  sharing no attribute are never joined, so independent components form a
  forest; each component is rooted at its largest clique.
* Budget: a clique whose joint domain has more than ``clique_budget`` cells
  is never estimated.  Remedy (:func:`budgeted_junction_tree`): drop the
  weakest original edge inside the largest offending clique (smallest
  MI / tau, i.e. the edge that passed its threshold by the least), re-triangulate,
  repeat.  Every dropped edge is reported (with whether a final clique still
  holds both ends) and a warning is issued; a single attribute larger than
  the budget raises :class:`~lopub.errors.BudgetError`.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Sec. V-B (junction tree from the
dependency graph), Alg. 6 (sampling along it).
"""
from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import networkx as nx

from lopub._util import check_int
from lopub.data.domain import Domain
from lopub.errors import BudgetError
from lopub.dependency.tree_format import tree_from_dict, tree_to_dict

HEURISTICS = ("min-fill", "min-size")


@dataclass
class JunctionTree:
    """Cliques of a chordal completion joined into a tree (forest).

    Attributes
    ----------
    cliques : list of tuple of str
        Maximal cliques, attributes in domain order.
    edges : list of (int, int)
        Tree edges ``(parent, child)`` as clique indices.
    roots : list of int
        One root clique per connected component.
    fill_edges : list of (str, str)
        Edges added by triangulation.
    order : list of int
        Clique indices, parents before children (sampling order).
    """

    cliques: list[tuple[str, ...]]
    edges: list[tuple[int, int]]
    roots: list[int]
    fill_edges: list[tuple[str, str]] = field(default_factory=list)
    order: list[int] = field(default_factory=list)

    def parent(self) -> dict[int, int | None]:
        """Parent clique index of every clique (None for roots)."""
        par: dict[int, int | None] = {r: None for r in self.roots}
        par.update({c: p for p, c in self.edges})
        return par

    def separator(self, i: int) -> tuple[str, ...]:
        """Attributes clique ``i`` shares with its parent (empty for roots)."""
        p = self.parent()[i]
        if p is None:
            return ()
        return tuple(a for a in self.cliques[i] if a in self.cliques[p])

    def to_nx(self) -> nx.Graph:
        t = nx.Graph()
        t.add_nodes_from(range(len(self.cliques)))
        t.add_edges_from(self.edges)
        return t

    def to_dict(self) -> dict[str, Any]:
        """The ``junction_tree`` JSON object of a model file (see :mod:`lopub.dependency.tree_format`)."""
        return tree_to_dict(self)

    @classmethod
    def from_dict(cls, obj: Any, domain: Domain | None = None, *,
                  name: str = "junction_tree") -> "JunctionTree":
        """Rebuild from :meth:`to_dict`, validating the structure first.

        Raises
        ------
        ValueError
            Naming the field (``name.edges[2]``...), its value and what was
            expected (see :func:`lopub.dependency.tree_format.tree_from_dict`).
        """
        return tree_from_dict(cls, obj, domain, name=name)


def elimination_order(graph: nx.Graph, domain: Domain, heuristic: str = "min-fill"
                      ) -> tuple[list[str], list[frozenset], list[tuple[str, str]]]:
    """Greedy elimination: (order, cliques formed, fill-in edges).

    References
    ----------
    Koller & Friedman, Probabilistic Graphical Models, Sec. 9.4.3 (min-fill).
    """
    if heuristic not in HEURISTICS:
        raise ValueError(f"heuristic ({heuristic!r}) must be one of {HEURISTICS}")
    adj = {a: set(graph.neighbors(a)) if a in graph else set() for a in domain.attrs}
    logsize = {a: math.log(domain.size(a)) for a in domain.attrs}
    pos = {a: i for i, a in enumerate(domain.attrs)}
    order, formed, fill = [], [], []
    while adj:
        def cost(v: str):
            nb = adj[v]
            nfill = sum(1 for x, y in itertools.combinations(nb, 2) if y not in adj[x])
            weight = logsize[v] + sum(logsize[x] for x in nb)
            key = (nfill, round(weight, 9)) if heuristic == "min-fill" else (round(weight, 9), nfill)
            return key + (pos[v],)
        v = min(adj, key=cost)
        nb = adj.pop(v)
        for x, y in itertools.combinations(sorted(nb, key=pos.__getitem__), 2):
            if y not in adj[x]:
                adj[x].add(y)
                adj[y].add(x)
                fill.append((x, y))
        for x in nb:
            adj[x].discard(v)
        order.append(v)
        formed.append(frozenset(nb | {v}))
    return order, formed, fill


def junction_tree(graph: nx.Graph, domain: Domain, *, heuristic: str = "min-fill") -> JunctionTree:
    """Chordal completion, maximal cliques and a maximum-separator spanning tree.

    Parameters
    ----------
    graph : networkx.Graph
        Dependency graph over (a subset of) ``domain.attrs``; attributes not
        in it become singleton cliques.
    domain : Domain
    heuristic : {"min-fill", "min-size"}

    Returns
    -------
    JunctionTree

    References
    ----------
    Ren et al., IEEE TIFS 2018, Sec. V-B; Jensen & Jensen (1994), optimal
    junction trees (maximum spanning tree on separator sizes).
    """
    pos = {a: i for i, a in enumerate(domain.attrs)}
    _, formed, fill = elimination_order(graph, domain, heuristic)
    maximal = [c for c in formed if not any(c < o for o in formed)]
    uniq = sorted(set(maximal), key=lambda c: sorted(pos[a] for a in c))
    cliques = [tuple(sorted(c, key=pos.__getitem__)) for c in uniq]
    cg = nx.Graph()
    cg.add_nodes_from(range(len(cliques)))
    for i, j in itertools.combinations(range(len(cliques)), 2):
        shared = set(cliques[i]) & set(cliques[j])
        if shared:
            cg.add_edge(i, j, weight=len(shared) + 1e-6 * math.log(domain.cells(list(shared))))
    tree = nx.maximum_spanning_tree(cg, weight="weight", algorithm="kruskal")
    roots, edges, order = [], [], []
    for comp in sorted(nx.connected_components(tree), key=min):
        root = max(sorted(comp), key=lambda i: domain.cells(list(cliques[i])))
        roots.append(root)
        order.append(root)
        for p, c in nx.bfs_edges(tree, root, sort_neighbors=sorted):
            edges.append((p, c))
            order.append(c)
    return JunctionTree(cliques, edges, roots, [(a, b) for a, b in fill], order)


def running_intersection(jt: JunctionTree) -> bool:
    """True when, for every attribute, the cliques holding it form a connected subtree.
    """
    t = jt.to_nx()
    attrs = set().union(*map(set, jt.cliques)) if jt.cliques else set()
    for a in attrs:
        holders = [i for i, c in enumerate(jt.cliques) if a in c]
        if not nx.is_connected(t.subgraph(holders)):
            return False
    return nx.is_forest(t)


def edge_strength(graph: nx.Graph, a: str, b: str) -> float:
    """MI / tau of edge (a, b) from its ``mi``/``tau`` data; inf when unknown.
    """
    data = graph.edges[a, b]
    m, t = data.get("mi"), data.get("tau")
    if m is None or not t:
        return math.inf
    return float(m) / float(t)


def budgeted_junction_tree(graph: nx.Graph, domain: Domain, clique_budget: int = 100_000, *,
                           heuristic: str = "min-fill",
                           strength: Callable[[nx.Graph, str, str], float] = edge_strength,
                           warn: bool = True) -> tuple[JunctionTree, nx.Graph, list[dict]]:
    """Junction tree whose cliques all have at most ``clique_budget`` cells.

    Remedy for an oversized clique: drop the weakest original edge inside it
    (smallest ``strength``, default MI / tau; ties by domain order) and
    re-triangulate, until every clique fits.  If the clique holds no original
    edge, the weakest edge touching its attributes is dropped.

    Returns
    -------
    (JunctionTree, graph actually used, dropped) where ``dropped`` lists
    ``{"a", "b", "strength", "clique", "cells", "in_clique"}`` per removed
    edge; ``in_clique`` is True when re-triangulation put both ends back into
    one clique of the final tree (the pair is still modelled jointly), False
    when no clique holds the pair (the dependency is lost to the budget).

    Raises
    ------
    BudgetError
        A single attribute has more categories than ``clique_budget``.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Sec. V-B (clique size drives the cost of Alg. 1
    on the clique joints).
    """
    clique_budget = check_int("clique_budget", clique_budget, 1)
    for a in domain.attrs:
        if domain.size(a) > clique_budget:
            raise BudgetError(f"clique_budget ({clique_budget}) is smaller than attribute {a!r}, "
                              f"which alone has {domain.size(a)} cells; raise clique_budget")
    g = graph.copy()
    pos = {a: i for i, a in enumerate(domain.attrs)}
    dropped: list[dict] = []
    while True:
        jt = junction_tree(g, domain, heuristic=heuristic)
        over = [c for c in jt.cliques if domain.cells(list(c)) > clique_budget]
        if not over:
            break
        worst = max(over, key=lambda c: domain.cells(list(c)))
        inside = [(a, b) for a, b in itertools.combinations(worst, 2) if g.has_edge(a, b)]
        if not inside:
            inside = [tuple(sorted(e, key=pos.__getitem__)) for e in g.edges(worst)]
        a, b = min(inside, key=lambda e: (strength(g, *e), pos[e[0]], pos[e[1]]))
        dropped.append({"a": a, "b": b, "strength": strength(g, a, b), "clique": list(worst),
                        "cells": domain.cells(list(worst))})
        g.remove_edge(a, b)
    for d in dropped:  # re-triangulation may put both ends back into one clique (fill-in)
        d["in_clique"] = any(d["a"] in c and d["b"] in c for c in jt.cliques)
    lost = [(d["a"], d["b"]) for d in dropped if not d["in_clique"]]
    if dropped and warn:
        warnings.warn(
            f"clique_budget ({clique_budget} cells) exceeded; dropped {len(dropped)} weakest "
            f"edge(s) {[(d['a'], d['b']) for d in dropped]} to split the cliques; "
            f"{len(lost)} of them end up in no clique: {lost}", stacklevel=2)
    return jt, g, dropped
