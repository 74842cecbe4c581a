"""Structure selection: which attribute pairs the model joins, by one of three rules.

``structure_graph(cache, structure)`` returns a :class:`~.graph.DependencyGraph`
whose ``tests`` and ``decisions()`` say what the rule computed for every pair.

``"phi"``
    The paper's rule (Eq. 26, Alg. 4, or Alg. 5 with ``prune=True``): an edge
    where the estimated MI reaches tau(phi).  Kept to reproduce the paper.
``"auto"`` (default)
    An edge where the estimated dependence is significantly above what the
    measurement noise alone produces, not explained by a path of stronger
    edges, and affordable for the data (docs/ARCHITECTURE.md, note 10):

    1. *Test.*  With ``p`` the pair's table (a Measurement's unbiased ``raw``
       when kept), ``r = p - p_A p_B`` the departure from independence (its
       own margins) and ``v`` the per-cell variance, ``T = sum r^2 / v``.  The
       variance is the Measurement's; for a plain table (exact data
       marginals, e.g. a ``Dataset``) it is the multinomial variance under
       independence ``p0 (1 - p0) / n`` with ``p0 = p_A p_B``.  ``T`` is
       mean-matched to a chi-square with ``df = (|A| - 1)(|B| - 1)``:
       ``T df / E0[T]`` where ``E0[T] = sum Var0(r) / v`` and ``Var0(r)`` is
       the variance of the linearised residual ``e_ab - p_B e_a. - p_A e_.b``
       for independent cell errors ``e`` of variance ``v``.  (Multinomial
       cells: ``E0[T]`` is about ``df``, the test is Pearson's.  Cells with
       correlated errors, as Bloom estimates have, make the tail heavier than
       the mean-matched chi-square; the family-wise level below absorbs it in
       the tests.)  Pairs are rejected at family-wise level ``alpha`` (default
       0.05) over all ``d (d - 1) / 2`` pairs by Holm's step-down rule
       (``correction="holm"``) or Bonferroni.  Exact tables (no ``n``, no
       variance) make every non-zero dependence significant.
    2. *Explained pairs.*  Significant pairs are taken in order of strength,
       the noise-corrected MI ``MI - 1/2 sum Var0(r) / (p_A p_B)`` (the plug-in
       MI minus its noise bias).  A pair already joined by a path of accepted
       edges is skipped when the chain through that path,
       ``q = P(A, X_1) P(X_2 | X_1) ... P(B | X_k)`` from the estimated pair
       tables, reproduces its table within the noise: the same test with
       ``r = p - q`` and the chain's own noise (first order, from its first
       and last tables) added to ``v``, at the per-pair Bonferroni level
       ``alpha / #pairs``, over the ``paths`` (default 3) shortest paths.  A
       pair that is only dependent through others (a ⊥ b | path) is then
       left to the path, which reproduces it; a direct dependence that also
       has an indirect path (a v-structure's parents and child) is kept.
       Limit: a pair dependent through two paths at once (two common causes)
       is reproduced by no single chain and is kept once the noise is small
       enough to see it (embedded network, 15 true edges: 1 such extra edge
       from Bloom reports at f = 0.5 with 20,000 records, 3 with 45,222; 6
       with exact marginals plus the noise of 20,000 multinomial records).
    3. *Size.*  An edge is skipped when the triangulated model
       (:func:`~.junction.junction_tree`) would hold more than ``max_cells``
       cells in all.  Default: the noise-equivalent number of records
       ``N_eff`` (``n`` for plain tables; for Measurements the median over
       pairs of ``sum p (1 - p) / sum v``, the sample size whose multinomial
       noise equals the measured noise).  So the model has at least one
       noise-equivalent record per cell: a cell of probability ``1 / K`` in a
       clique of ``K <= N_eff`` cells has signal-to-noise ratio
       ``p^2 / (p (1 - p) / N_eff) ~ N_eff / K >= 1``.  With huge ``N`` every
       tiny dependence is significant; this bound keeps the model's size to
       what the data support, the strongest edges first.  ``min_cells``
       (default 0) raises the bound: the fitted-model release passes twice
       its clique budget, because its cliques are not estimated but
       completed from the one- and two-way measurements (maximum entropy),
       so a bigger model costs compute, not noise.
``"tree"``
    A maximum spanning tree on the noise-corrected MI (Chow-Liu) over the
    pairs the test of step 1 finds: ``d - 1`` edges when all pairs are
    dependent, a forest otherwise.  For tiny budgets.

Every rule: an attribute with a single category gets no edge (notes 11).

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 4, Eq. 24, Eq. 26.  Chow and Liu,
IEEE Trans. Inf. Theory 14 (1968).  Holm, Scand. J. Stat. 6 (1979).
"""
from __future__ import annotations

import itertools
import math
import numbers
from typing import Any

import networkx as nx
import numpy as np

from lopub.dependency.cache import MarginalCache, Progress
from lopub.dependency.graph import (STRUCTURES, TEST_KEYS, DependencyGraph, build_graph, check_phi, dependency_graph,
                    threshold_matrix)
from lopub.dependency.junction import junction_tree
from lopub.dependency.mi import null_residual_variance, pair_tests, pairwise_mi, residual_test, table_variance
from lopub.dependency.pruning import pruned_dependency_graph

CORRECTIONS = ("holm", "bonferroni")
_OPTIONS = {"phi": {"prune": False, "variant": "auto", "rank": "entropy", "rounding": "floor"},
            "auto": {"alpha": 0.05, "correction": "holm", "max_cells": None, "min_cells": 0, "explain": True,
                     "paths": 3},
            "tree": {"alpha": 0.05, "correction": "holm"}}


def structure_graph(cache: Any, structure: str = "auto", *, phi: float = 0.4, n: int | None = None,
                    progress: Progress | None = None, **options: Any) -> DependencyGraph:
    """Dependency graph by the rule ``structure`` (see the module docstring).

    Parameters
    ----------
    cache : MarginalCache or object with ``.domain`` and ``.marginal(attrs)``
        Source of the one-way and pairwise tables (Measurements carry their
        variance; plain Marginals fall back to multinomial sampling variance).
    structure : {"auto", "phi", "tree"}
    phi : float in (0, 1]
        Dependency degree of Eq. 26: the rule for ``"phi"``; for the other
        rules only the recorded tau (plots, ``at_phi``).
    n : int, optional
        Records behind plain (variance-free) tables; default their ``n``.
        Without either, plain tables are taken as exact.
    progress : callable(stage, done, total), optional
    **options
        ``"phi"``: ``prune`` (Alg. 5) and its ``variant``, ``rank``,
        ``rounding``.  ``"auto"``: ``alpha``, ``correction``, ``max_cells``, ``min_cells``,
        ``explain`` (step 2), ``paths``.  ``"tree"``: ``alpha``, ``correction``.

    Returns
    -------
    DependencyGraph
        ``structure`` set, ``tests`` per pair, ``stats`` with the rule's
        parameters, ``n_eff``, ``max_cells`` and ``model_cells``.

    Raises
    ------
    ValueError
        Unknown ``structure`` or a bad option value.
    TypeError
        An option the rule does not take.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Alg. 4, Eq. 26; Chow and Liu 1968; Holm 1979.
    """
    if not isinstance(structure, str) or structure not in STRUCTURES:
        raise ValueError(f"structure ({structure!r}) must be one of {STRUCTURES}")
    phi = check_phi(phi)
    opts = _check_options(structure, options)
    cache = cache if isinstance(cache, MarginalCache) else MarginalCache(cache)
    if cache.domain is None:
        raise TypeError(f"cache ({type(cache.source).__name__}) must expose its domain (.domain)")
    if structure == "phi":
        if opts.pop("prune"):
            return pruned_dependency_graph(cache, phi, progress=progress, **opts)
        return dependency_graph(cache, phi, progress=progress)
    if n is not None and (isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1):
        raise ValueError(f"n ({n!r}) must be a positive integer or None")
    mi = pairwise_mi(cache, progress=progress)
    tests = pair_tests(cache, n, progress=progress)
    _mark_significant(tests, opts["alpha"], opts["correction"])
    if structure == "tree":
        edges = _chow_liu(cache.domain, tests)
        stats: dict[str, Any] = {}
    else:
        edges, stats = _forward(cache, tests, opts, n)
    return _result(cache.domain, phi, mi, tests, edges, structure, opts, stats)


def _check_options(structure: str, options: dict[str, Any]) -> dict[str, Any]:
    allowed = _OPTIONS[structure]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise TypeError(f"structure {structure!r} got unknown option(s) {unknown}; "
                        f"expected some of {sorted(allowed)}")
    opts = {**allowed, **options}
    if "alpha" in opts:
        a = opts["alpha"]
        if isinstance(a, bool) or not isinstance(a, numbers.Real) or not 0 < float(a) < 1:
            raise ValueError(f"alpha ({a!r}) must be a number in (0, 1)")
        if opts["correction"] not in CORRECTIONS:
            raise ValueError(f"correction ({opts['correction']!r}) must be one of {CORRECTIONS}")
    if structure == "auto":
        mc = opts["max_cells"]
        if mc is not None and (isinstance(mc, bool) or not isinstance(mc, numbers.Real) or not float(mc) >= 1):
            raise ValueError(f"max_cells ({mc!r}) must be a number >= 1 or None (from N and the noise)")
        lo = opts["min_cells"]
        if isinstance(lo, bool) or not isinstance(lo, numbers.Real) or not float(lo) >= 0:
            raise ValueError(f"min_cells ({lo!r}) must be a number >= 0")
        if not isinstance(opts["explain"], bool):
            raise TypeError(f"explain ({opts['explain']!r}) must be True or False")
        p = opts["paths"]
        if isinstance(p, bool) or not isinstance(p, numbers.Integral) or p < 1:
            raise ValueError(f"paths ({p!r}) must be an integer >= 1")
    return opts


def _mark_significant(tests: dict, alpha: float, correction: str) -> None:
    """Set ``significant`` and ``level`` per pair: Holm step-down or Bonferroni at ``alpha``."""
    keys = [k for k, t in tests.items() if t["df"] > 0]
    m = max(len(keys), 1)
    for t in tests.values():
        t["significant"], t["level"] = False, alpha / m
    order = sorted(keys, key=lambda k: (tests[k]["pvalue"], -tests[k]["statistic"]))
    for i, k in enumerate(order):
        level = alpha / (m - i) if correction == "holm" else alpha / m
        if tests[k]["pvalue"] > level:
            tests[k]["level"] = level
            break  # Holm stops at the first acceptance; Bonferroni's levels are all equal
        tests[k]["significant"], tests[k]["level"] = True, level


def _ranked(domain, tests: dict) -> list[tuple[str, str]]:
    pos = {a: i for i, a in enumerate(domain.attrs)}
    keys = [k for k, t in tests.items() if t["significant"]]
    pairs = [tuple(sorted(k, key=pos.__getitem__)) for k in keys]
    return sorted(pairs, key=lambda e: (-tests[frozenset(e)]["strength"],
                                        -tests[frozenset(e)]["statistic"], pos[e[0]], pos[e[1]]))


def _chow_liu(domain, tests: dict) -> list[tuple[str, str]]:
    """Maximum spanning forest on the corrected MI of the significant pairs (Chow-Liu)."""
    g = nx.Graph()
    g.add_nodes_from(domain.attrs)
    for rank, (a, b) in enumerate(_ranked(domain, tests)):
        if not tests[frozenset((a, b))]["strength"] > 0:
            tests[frozenset((a, b))]["reason"] = "no positive MI after the noise correction"
            continue
        g.add_edge(a, b, weight=-rank)  # rank order = strength order, ties broken stably
        tests[frozenset((a, b))]["reason"] = "not in the spanning tree"
    tree = nx.maximum_spanning_tree(g, weight="weight", algorithm="kruskal")
    for a, b in tree.edges():
        tests[frozenset((a, b))]["reason"] = "edge"
    return list(tree.edges())


def _forward(cache: MarginalCache, tests: dict, opts: dict, n: int | None) -> tuple[list, dict]:
    """Steps 2 and 3 of ``"auto"``: strongest first, skip explained or unaffordable pairs."""
    dom = cache.domain
    n_eff = _median([t["n_eff"] for t in tests.values() if t["df"] > 0 and t["variance"] != "not measured"])
    bound = opts["max_cells"] if opts["max_cells"] is not None else max(n_eff, opts["min_cells"])
    g = nx.Graph()
    g.add_nodes_from(dom.attrs)
    cells = _model_cells(g, dom)
    level = min((t["level"] for t in tests.values()), default=opts["alpha"])
    for a, b in _ranked(dom, tests):
        t = tests[frozenset((a, b))]
        if opts["explain"] and nx.has_path(g, a, b):
            path, pval = _best_path(cache, g, a, b, opts["paths"], n)
            if pval > level:
                t.update(reason="explained by a path", explained_by=list(path))
                continue
        g.add_edge(a, b)
        new = _model_cells(g, dom)
        if new > bound:
            g.remove_edge(a, b)
            t["reason"] = "model size"
            continue
        cells = new
        t["reason"] = "edge"
    stats = {"n_eff": None if math.isinf(n_eff) else n_eff,
             "max_cells": None if math.isinf(bound) else float(bound), "model_cells": cells,
             "explain_level": level}
    return list(g.edges()), stats


def _median(xs: list[float]) -> float:
    return float(np.median(xs)) if xs else math.inf


def _model_cells(g: nx.Graph, domain) -> int:
    """Total cells of the cliques of the triangulated graph."""
    return sum(domain.cells(list(c)) for c in junction_tree(g, domain).cliques)


def _best_path(cache: MarginalCache, g: nx.Graph, a: str, b: str, k: int, n: int | None
               ) -> tuple[list, float]:
    """Of the ``k`` shortest paths, the one whose chain best reproduces the pair: (path, p-value).

    The residual ``p - q`` is tested with the pair's variance plus the
    chain's own noise, propagated linearly from its first and last tables.
    """
    m = cache.marginal([a, b])
    df = (m.values.shape[0] - 1) * (m.values.shape[1] - 1)
    best: tuple[list, float] = ([], -1.0)
    for path in itertools.islice(nx.shortest_simple_paths(g, a, b), k):
        q, var_q = _chain(cache, path, n)
        p, v, _ = table_variance(m, n, null=q)
        if v is not None:
            v = v + var_q
        var0 = None if v is None else null_residual_variance(v, q.sum(1), q.sum(0))
        pval = residual_test(p - q, v, var0, df)[1]
        if pval > best[1]:
            best = (path, pval)
    return best


def _chain(cache: MarginalCache, path: list[str], n: int | None) -> tuple[np.ndarray, np.ndarray]:
    """P(A, B) implied by the Markov chain A - X_1 - ... - B of estimated pair tables, and its variance.

    The variance is the first table's noise through the rest of the chain
    plus the last table's noise weighted by the chain up to it (first-order;
    middle tables' noise is left out).
    """
    tables = [cache.marginal([x, y]) for x, y in zip(path[:-1], path[1:])]
    conds = []
    for t in tables[1:]:
        c = _clean(t.values)
        row = c.sum(1, keepdims=True)
        conds.append(np.divide(c, row, out=np.full_like(c, 1.0 / c.shape[1]), where=row > 0))
    first = _clean(tables[0].values)
    rest = np.eye(first.shape[1])
    for c in conds:
        rest = rest @ c
    upto = first
    for c in conds[:-1]:
        upto = upto @ c
    q = first @ rest
    v_first = table_variance(tables[0], n)[1]
    v_last = table_variance(tables[-1], n)[1] if conds else None
    if v_first is None:
        return q, np.zeros_like(q)
    var = v_first @ rest ** 2
    if v_last is not None:
        px = upto.sum(0)
        w = np.divide(upto, px, out=np.zeros_like(upto), where=px > 0)
        var = var + w ** 2 @ v_last
    return q, var


def _clean(p: np.ndarray) -> np.ndarray:
    q = np.clip(np.asarray(p, dtype=float), 0.0, None)
    s = q.sum()
    return q / s if s > 0 else np.full_like(q, 1.0 / q.size)


def _result(domain, phi: float, mi: np.ndarray, tests: dict, edges: list, structure: str,
            opts: dict, stats: dict) -> DependencyGraph:
    for t in tests.values():
        t.setdefault("reason", "no edge (single category)" if t["df"] == 0 else "not significant")
        for key in ("statistic", "strength", "n_eff"):
            if isinstance(t.get(key), float) and math.isinf(t[key]):
                t[key] = None  # JSON has no infinity: exact tables
    g = build_graph(domain, mi, phi, edges=edges)
    for a, b in g.edges():
        t = tests[frozenset((a, b))]
        g.edges[a, b].update(statistic=t["statistic"], pvalue=t["pvalue"], strength=t["strength"])
    d = len(domain)
    stats = {"variant": "all-pairs", "structure": structure, "pairs_total": d * (d - 1) // 2,
             "pairs_computed": d * (d - 1) // 2, "edges": g.number_of_edges(),
             "significant": sum(bool(t["significant"]) for t in tests.values()),
             "variance": sorted({t["variance"] for t in tests.values()}),
             **{k: opts[k] for k in ("alpha", "correction", "explain", "paths") if k in opts}, **stats}
    rows = {k: {f: t[f] for f in TEST_KEYS if f in t} for k, t in tests.items()}
    return DependencyGraph(domain, phi, mi, threshold_matrix(domain, phi), g, stats, structure, rows)
