"""Which marginals a release model is fitted to, taken from the shared estimate cache.

By default: every one-way marginal and every pairwise marginal that lies
inside a model clique and was already estimated for the dependency graph,
plus the pair of every graph edge (estimated if a pruned graph skipped it).
Optionally (``triples``) three-way marginals inside the cliques: triangles of
graph edges, strongest first by the sum of their estimated mutual
information.  Nothing larger is ever estimated directly.

An estimate that is a plain :class:`~lopub.data.marginal.Marginal` (no variance:
an estimator that predates measurements, or exact marginals of a dataset)
becomes a :class:`~lopub.estimate.measurement.Measurement` with the multinomial
variance ``p (1 - p) / n`` of ``n`` records -- a documented fallback that
under-states LDP noise but weighs tables of one set of reports consistently
-- or, with no record count at all (exact tables), that of ``EXACT_N``
(10^6) records.

Known defect, measured (docs/BENCHMARKS.md "More budget never hurts, checked", item 3): for
marginal sampling these tables are pooled over the measured sets, so one user's answer enters
several terms of the fit (an attribute's one-way table, each in-clique pair holding it, and the
projections of the sets in no clique); the one-way variances the shrinkage priors see are then
understated (squared error over reported variance 2.7 on retail's top 20 items at epsilon 8).
Entering each measured set once, and taking the priors from the measured sets alone, were both
measured and not kept (each better on some shapes by up to 13 %, worse on others by up to 26 %:
retail's top 100 items at epsilon 4, where the correct, larger variances let the mixture prior pull harder).
"""
from __future__ import annotations

import itertools
from typing import Any, Sequence

import numpy as np

from lopub.dependency.cache import MarginalCache, Progress
from lopub.dependency.junction import JunctionTree
from lopub.data.marginal import Marginal
from lopub.estimate.measurement import Measurement, multinomial_variance

EXACT_N = 10**6
FALLBACK_VARIANCE = "multinomial p(1-p)/n (fallback: the estimate carried no variance)"


def as_measurement(m: Marginal, n: int | None) -> Measurement:
    """``m`` itself if it is a Measurement, else ``m`` with the fallback variance."""
    if isinstance(m, Measurement):
        return m
    n = n if n is not None else m.n
    if n:
        return Measurement.from_marginal(m, multinomial_variance(m.values, n),
                                         {"variance": FALLBACK_VARIANCE})
    return Measurement.from_marginal(m, multinomial_variance(m.values, EXACT_N),
                                     {"variance": f"multinomial of {EXACT_N} records (exact table, no record count)"})


def release_measurements(cache: MarginalCache, tree: JunctionTree, *, n: int | None = None,
                         graph: Any = None, triples: bool | int = False,
                         progress: Progress | None = None) -> list[Measurement]:
    """Measurements for :func:`lopub.model.pgm.fit_mrf` on ``tree`` (see the module docstring).

    Parameters
    ----------
    cache : MarginalCache
        The estimates shared with the graph stage.
    tree : JunctionTree
    n : int, optional
        Record count for the fallback variance.
    graph : DependencyGraph, optional
        Its edges are always measured; its MI ranks the triples.
    triples : bool or int
        False: none; True: every triangle of graph edges inside a clique; an
        int: at most that many, strongest first.
    progress : callable(stage, done, total), optional
    """
    dom = cache.domain
    edges = set() if graph is None else {frozenset(e) for e in graph.edges}
    sets: list[tuple[str, ...]] = [(a,) for a in dom.attrs]
    seen = set()
    for c in tree.cliques:
        for p in itertools.combinations(c, 2):
            if frozenset(p) not in seen and (cache.cached(p) or frozenset(p) in edges):
                seen.add(frozenset(p))
                sets.append(p)
    sets += _triples(tree, graph, edges, triples)
    cache.prefetch([list(s) for s in sets], stage="measurements", progress=progress)
    tables = [cache.marginal(list(s)) for s in sets]
    return [as_measurement(t, n) for t in tables  # a set nobody measured carries no information
            if not (isinstance(t, Measurement) and t.provenance.get("protocol") == "not measured")]


def outside_measurements(cache: MarginalCache, tree: JunctionTree, *, n: int | None = None
                         ) -> list[Measurement]:
    """Every measured attribute set of two or more attributes that lies in no clique of ``tree``.

    Marginal sampling: the plan's measurements.  Other sources: the sets the
    cache already estimated (e.g. the pairs the dependency graph tested).
    Sets answered as "not measured" carry no information and are left out.
    """
    cliques = [set(c) for c in tree.cliques]
    own = getattr(cache.source, "measurements", None)
    tables = list(own()) if callable(own) else list(getattr(cache, "_store", {}).values())
    out = []
    for t in tables:
        if len(t.attrs) < 2 or any(set(t.attrs) <= c for c in cliques):
            continue
        if isinstance(t, Measurement) and t.provenance.get("protocol") == "not measured":
            continue
        out.append(as_measurement(t, n))
    return out


def _triples(tree: JunctionTree, graph: Any, edges: set, triples: bool | int) -> list[tuple[str, ...]]:
    if triples is False or triples is None or graph is None:
        return []
    limit = None if triples is True else int(triples)
    mi = graph.mi
    idx = graph.domain.index
    found: dict[frozenset[str], tuple[float, tuple[str, ...]]] = {}
    for c in tree.cliques:
        for t in itertools.combinations(c, 3):
            if all(frozenset(p) in edges for p in itertools.combinations(t, 2)):
                score = sum(float(np.nan_to_num(mi[idx(a), idx(b)])) for a, b in itertools.combinations(t, 2))
                found.setdefault(frozenset(t), (score, t))
    ranked = sorted(found.values(), key=lambda st: (-st[0], st[1]))
    return [t for _, t in ranked[:limit]]


def measured_sets(measurements: Sequence[Measurement]) -> list[list[str]]:
    """Attribute sets of ``measurements`` (for a fit report)."""
    return [list(m.attrs) for m in measurements]
