"""Dependency graph from pairwise mutual information (LoPub Alg. 4).

An edge joins attributes A and B when their estimated mutual information
reaches ``tau = min(|O_A| - 1, |O_B| - 1) * phi**2 / 2`` nats (Eq. 26).
An attribute with a single category carries no information and gets no edge
(there tau = 0 and MI = 0, so ``MI >= tau`` alone would join it to
everything; docs/ARCHITECTURE.md, note 11).  Other rules (a noise-aware
test, a Chow-Liu tree) live in :mod:`lopub.dependency.structure` and return the
same :class:`DependencyGraph`, with ``structure`` naming the rule and
``tests`` holding each pair's test.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 4, Eq. 24 and Eq. 26.
"""
from __future__ import annotations

import itertools
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Sequence

import networkx as nx
import numpy as np

from lopub.data.domain import Domain
from lopub.dependency.cache import MarginalCache, Progress
from lopub.dependency.mi import pairwise_mi


def check_phi(phi: float, name: str = "phi") -> float:
    """``phi`` must be a real number in (0, 1]; errors name the parameter ``name``.
    """
    if isinstance(phi, bool) or not isinstance(phi, numbers.Real):
        raise TypeError(f"{name} ({phi!r}) must be a real number")
    if not 0.0 < float(phi) <= 1.0:
        raise ValueError(f"{name} ({phi}) must be in (0, 1]")
    return float(phi)


def tau(size_a: int, size_b: int, phi: float) -> float:
    """Threshold min(|O_a| - 1, |O_b| - 1) phi^2 / 2 in nats (LoPub Eq. 26).

    References
    ----------
    Ren et al., IEEE TIFS 2018, Eq. 26.
    """
    return min(int(size_a) - 1, int(size_b) - 1) * check_phi(phi) ** 2 / 2.0


@dataclass
class DependencyGraph:
    """Pairwise MI, the threshold decisions and the resulting graph.

    Attributes
    ----------
    domain : Domain
    phi : float
    mi : ndarray (d, d)
        MI in nats; NaN for pairs not computed (pruning); diagonal = entropy.
    thresholds : ndarray (d, d)
        tau per pair (Eq. 26).
    graph : networkx.Graph
        Nodes = attributes; edge attributes ``mi`` and ``tau``.
    stats : dict
        pairs_computed, pairs_total, edges, pruning details.
    structure : str
        The rule that decided the edges: ``"phi"`` (Eq. 26, the default of
        old model files), ``"auto"`` or ``"tree"`` (:mod:`.structure`).
    tests : dict
        Per pair (key ``frozenset({a, b})``): what the rule computed and
        decided (statistic, df, pvalue, strength, reason...); JSON numbers
        and strings only.  Empty for ``"phi"``.
    """

    domain: Domain
    phi: float
    mi: np.ndarray
    thresholds: np.ndarray
    graph: nx.Graph
    stats: dict[str, Any] = field(default_factory=dict)
    structure: str = "phi"
    tests: dict[frozenset, dict[str, Any]] = field(default_factory=dict)

    @property
    def edges(self) -> list[tuple[str, str]]:
        """Edges as pairs in domain order, sorted."""
        return sorted_edges(self.graph.edges(), self.domain)

    @property
    def dropped(self) -> list[tuple[str, str]]:
        """Edges of this graph dropped for the clique budget and held by no clique.

        They are dependencies the data show but that neither the model nor the
        synthetic release contains (``stats['dropped_for_budget']``, set by
        :func:`lopub.pipeline.steps.dependency`).
        """
        gone = {frozenset(e) for e in self.stats.get("dropped_for_budget", [])}
        return [e for e in self.edges if frozenset(e) in gone]

    def decisions(self) -> list[dict[str, Any]]:
        """One row per pair: mi, tau, computed, edge (the rule's decision), dropped_for_budget.

        Graphs of the ``"auto"`` and ``"tree"`` rules add the pair's test
        (``statistic``, ``df``, ``pvalue``, ``strength``, ``reason``...).
        """
        out = []
        gone = {frozenset(e) for e in self.dropped}
        for i, j in itertools.combinations(range(len(self.domain)), 2):
            a, b = self.domain.attrs[i], self.domain.attrs[j]
            m = self.mi[i, j]
            row = {"a": a, "b": b, "mi": None if np.isnan(m) else float(m),
                   "tau": float(self.thresholds[i, j]), "computed": bool(not np.isnan(m)),
                   "edge": bool(self.graph.has_edge(a, b)),
                   "dropped_for_budget": frozenset((a, b)) in gone}
            row.update(self.tests.get(frozenset((a, b)), {}))
            out.append(row)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"attrs": list(self.domain.attrs), "phi": self.phi, "structure": self.structure,
                "mi": [[None if np.isnan(x) else float(x) for x in row] for row in self.mi],
                "edges": [list(e) for e in self.edges],
                "dropped_for_budget": [list(e) for e in self.dropped],
                "decisions": self.decisions(), "stats": dict(self.stats)}

    @classmethod
    def from_dict(cls, obj: Any, domain: Domain) -> "DependencyGraph":
        """Rebuild from :meth:`to_dict`; ``ValueError`` naming the field when it is malformed.
        """
        if not isinstance(obj, dict):
            raise ValueError(f"graph ({type(obj).__name__}) must be a JSON object")
        for key in ("phi", "mi", "edges"):
            if key not in obj:
                raise ValueError(f"graph lacks the field {key!r}")
        phi = check_phi(obj["phi"], "graph.phi")
        if obj.get("attrs", list(domain.attrs)) != list(domain.attrs):
            raise ValueError(f"graph.attrs ({obj['attrs']!r:.60}) must be the domain's attributes "
                             f"{list(domain.attrs)}")
        d = len(domain)
        rows = obj["mi"]
        ok = isinstance(rows, list) and len(rows) == d and all(
            isinstance(r, list) and len(r) == d and all(x is None or (
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0)
                for x in r) for r in rows)
        if not ok:
            raise ValueError(f"graph.mi must be a {d} x {d} matrix of finite numbers >= 0 or null "
                             f"(not computed), one row and column per attribute {list(domain.attrs)}")
        mi = np.array([[np.nan if x is None else x for x in row] for row in rows], dtype=float)
        edges = obj["edges"]
        if not isinstance(edges, list) or not all(
                isinstance(e, list) and len(e) == 2 and all(a in domain for a in e) and e[0] != e[1]
                for e in edges):
            raise ValueError(f"graph.edges ({edges!r:.60}) must be a list of [a, b] pairs of "
                             f"different attributes of the domain")
        stats = obj.get("stats", {})
        if not isinstance(stats, dict):
            raise ValueError(f"graph.stats ({stats!r:.60}) must be a JSON object")
        dropped = stats.get("dropped_for_budget", [])
        if not isinstance(dropped, list) or not all(
                isinstance(e, list) and len(e) == 2 and all(a in domain for a in e) for e in dropped):
            raise ValueError(f"graph.stats.dropped_for_budget ({dropped!r:.60}) must be a list of "
                             f"[a, b] attribute pairs")
        structure = obj.get("structure", "phi")
        if structure not in STRUCTURES:
            raise ValueError(f"graph.structure ({structure!r:.60}) must be one of {STRUCTURES}")
        g = build_graph(domain, mi, phi, edges=[tuple(e) for e in edges])
        return cls(domain, phi, mi, threshold_matrix(domain, phi), g, dict(stats), structure,
                   _tests_of(obj.get("decisions", []), domain) if structure != "phi" else {})

    def at_phi(self, phi: float) -> "DependencyGraph":
        """The same computed MI thresholded at another ``phi`` (no pair re-estimated).

        Pairs not computed (pruning) keep their decision; ``stats['rethresholded_from']``
        records the original phi.  Dropped-for-budget marks are kept for
        edges still present.
        """
        phi = check_phi(phi)
        g = rethreshold(self, phi)
        stats = dict(self.stats, edges=g.number_of_edges(), rethresholded_from=self.phi)
        if self.structure != "phi":
            stats["rethresholded_from_structure"] = self.structure
        return DependencyGraph(self.domain, phi, self.mi, threshold_matrix(self.domain, phi), g, stats)


STRUCTURES = ("auto", "phi", "tree")
TEST_KEYS = ("statistic", "df", "pvalue", "strength", "reason", "level", "explained_by")


def _tests_of(rows: Any, domain: Domain) -> dict[frozenset, dict[str, Any]]:
    """The per-pair test fields of ``decisions`` rows (unknown or malformed rows are skipped)."""
    out: dict[frozenset, dict[str, Any]] = {}
    if not isinstance(rows, list):
        raise ValueError(f"graph.decisions ({rows!r:.60}) must be a list of objects")
    for r in rows:
        if isinstance(r, dict) and r.get("a") in domain and r.get("b") in domain:
            kept = {k: r[k] for k in TEST_KEYS if k in r}
            if kept:
                out[frozenset((r["a"], r["b"]))] = kept
    return out


def sorted_edges(edges, domain: Domain) -> list[tuple[str, str]]:
    """Edges normalized to domain order and sorted (stable output).
    """
    idx = {a: i for i, a in enumerate(domain.attrs)}
    return sorted((tuple(sorted(e, key=idx.__getitem__)) for e in edges),
                  key=lambda e: (idx[e[0]], idx[e[1]]))


def threshold_matrix(domain: Domain, phi: float) -> np.ndarray:
    """tau for every pair of attributes (Eq. 26); diagonal 0.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Eq. 26.
    """
    s = np.asarray(domain.sizes) - 1
    t = np.minimum.outer(s, s) * check_phi(phi) ** 2 / 2.0
    np.fill_diagonal(t, 0.0)
    return t


def passes_tau(domain: Domain, mi: np.ndarray, phi: float) -> np.ndarray:
    """(d, d) bool: MI computed and >= tau (Eq. 26), both attributes with >= 2 categories.

    An attribute with one category has MI 0 and tau 0 with everything; it
    gets no edge (docs/ARCHITECTURE.md, note 11).

    References
    ----------
    Ren et al., IEEE TIFS 2018, Alg. 4, Eq. 26.
    """
    many = np.asarray(domain.sizes) > 1
    with np.errstate(invalid="ignore"):
        ok = ~np.isnan(mi) & (mi >= threshold_matrix(domain, phi))
    ok &= np.logical_and.outer(many, many)
    np.fill_diagonal(ok, False)
    return ok


def build_graph(domain: Domain, mi: np.ndarray, phi: float,
                edges: Sequence[tuple[str, str]] | None = None) -> nx.Graph:
    """Graph over all attributes with an edge where MI >= tau (or the given ``edges``).

    References
    ----------
    Ren et al., IEEE TIFS 2018, Alg. 4, Eq. 26.
    """
    t = threshold_matrix(domain, phi)
    g = nx.Graph()
    g.add_nodes_from(domain.attrs)
    if edges is None:
        ok = passes_tau(domain, mi, phi)
        edges = [(domain.attrs[i], domain.attrs[j])
                 for i, j in itertools.combinations(range(len(domain)), 2) if ok[i, j]]
    for a, b in edges:
        i, j = domain.index(a), domain.index(b)
        m = mi[i, j]
        g.add_edge(a, b, mi=None if np.isnan(m) else float(m), tau=float(t[i, j]))
    return g


def dependency_graph(cache: MarginalCache, phi: float = 0.4, *,
                     progress: Progress | None = None) -> DependencyGraph:
    """LoPub Alg. 4: MI of every pair from estimated 2-way joints, edge iff MI >= tau.

    Parameters
    ----------
    cache : MarginalCache
        Shared estimates (wrap an estimator, a Dataset or an exact model).
    phi : float in (0, 1]
        Dependency degree of Eq. 26 (paper: 0.4 for Adult, 0.25 for Retail).
    progress : callable(stage, done, total), optional

    Returns
    -------
    DependencyGraph

    References
    ----------
    Ren et al., IEEE TIFS 2018, Alg. 4, Eq. 24, Eq. 26.
    """
    phi = check_phi(phi)
    cache = cache if isinstance(cache, MarginalCache) else MarginalCache(cache)
    domain = cache.domain
    mi = pairwise_mi(cache, progress=progress)
    g = build_graph(domain, mi, phi)
    d = len(domain)
    stats = {"variant": "all-pairs", "pairs_total": d * (d - 1) // 2,
             "pairs_computed": d * (d - 1) // 2, "edges": g.number_of_edges()}
    return DependencyGraph(domain, phi, mi, threshold_matrix(domain, phi), g, stats)



def rethreshold(dg: DependencyGraph, phi: float) -> nx.Graph:
    """Graph of ``dg``'s computed MI at tau(``phi``); pairs not computed keep dg's decision.

    Used to build the release on a denser (or sparser) graph than the
    reported one without estimating any pair again.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Alg. 4, Eq. 26.
    """
    ok = passes_tau(dg.domain, dg.mi, phi)
    attrs = dg.domain.attrs
    edges = []
    for i, j in itertools.combinations(range(len(attrs)), 2):
        m = dg.mi[i, j]
        if (np.isnan(m) and dg.graph.has_edge(attrs[i], attrs[j])) or ok[i, j]:
            edges.append((attrs[i], attrs[j]))
    return build_graph(dg.domain, dg.mi, phi, edges=edges)
