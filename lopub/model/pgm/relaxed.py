"""Measured attribute sets that lie in no model clique: kept by relaxed marginal consistency.

The exact fit (:func:`lopub.model.pgm.fit_mrf`) needs every measurement
inside a junction-tree clique, and the tree's cliques are bounded by the
clique budget, so some measured sets (e.g. most pairs of an all-pairs
collection over 20 or more attributes) lie outside every clique.  They are
not dropped.  The model becomes a region graph: the junction tree (exact
consistency inside) plus one region per outside set ``S``, consistent with
the tree on every maximal subset ``T`` of ``S`` that a clique holds (the local
consistency of Private-PGM's relaxed marginal consistency, McKenna et al.
NeurIPS 2021, with the tree as one big exact region).  The weighted loss over
this region graph separates:

* a region's table only enters through ``||mu_S - y_S||^2 / (2 sigma_S^2)``
  under the constraint that its ``T``-marginals equal the tree's.  For a
  pair ``S = (a, b)`` (``T`` = ``{a}``, ``{b}``), minimising over ``mu_S`` with
  its margins fixed leaves exactly
  ``||r_a||^2 / (2 |b| sigma_S^2) + ||r_b||^2 / (2 |a| sigma_S^2)`` with ``r``
  the margins' residuals (the tables sum to 1): a measurement of each margin
  with variance ``|other| sigma_S^2`` per cell, which is what
  :meth:`Measurement.project` gives (the per-cell variances summed).  So
  :func:`derived` replaces ``S`` by its projections on the ``T``, the tree is
  fitted exactly to everything, and :func:`region_table` then returns the
  table of ``S`` closest to ``y_S`` with the tree's margins.  Exact for pairs
  (up to the non-negativity of the region table); for larger ``S`` whose
  ``T`` overlap it counts the overlap's information more than once
  (documented approximation).
* queries of ``S`` (and its subsets outside every clique) come from the
  region table; the release samples the tree (:mod:`lopub.model.graphical`).

References
----------
McKenna, Pradhan, Sheldon, Miklau, "Relaxed marginal consistency for
differentially private query answering", NeurIPS 2021.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Sequence

import numpy as np

from lopub.data.domain import Domain
from lopub.data.marginal import Marginal
from lopub.errors import BudgetError
from lopub.estimate.measurement import Measurement

#: rounds of iterative proportional fitting of a region table to the tree's margins
IPF_ROUNDS = 200
IPF_ATOL = 1e-12


def split(measurements: Sequence[Measurement], cliques: Sequence[Sequence[str]]
          ) -> tuple[list[Measurement], list[Measurement]]:
    """(inside some clique, outside every clique)."""
    sets = [set(c) for c in cliques]
    inside = [m for m in measurements if any(set(m.attrs) <= c for c in sets)]
    outside = [m for m in measurements if not any(set(m.attrs) <= c for c in sets)]
    return inside, outside


def overlaps(attrs: Sequence[str], cliques: Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
    """Maximal subsets of ``attrs`` that some clique holds (attribute order of ``attrs``)."""
    sub = {tuple(a for a in attrs if a in c) for c in cliques}
    sub.discard(())
    return sorted((t for t in sub if not any(set(t) < set(u) for u in sub)), key=lambda t: (len(t), t))


def derived(outside: Sequence[Measurement], cliques: Sequence[Sequence[str]]) -> list[Measurement]:
    """Each outside measurement projected on its maximal in-clique subsets (variances summed)."""
    out = []
    for m in outside:
        for t in overlaps(m.attrs, cliques):
            d = m.project(list(t))
            out.append(dataclasses.replace(d, provenance=dict(d.provenance, derived_from=list(m.attrs))))
    return out


def region_table(m: Measurement, margins: Callable[[list[str]], np.ndarray],
                 cliques: Sequence[Sequence[str]]) -> np.ndarray:
    """The table of ``m.attrs`` nearest ``m.estimate`` whose in-clique margins are the model's.

    Least-squares consistency (each margin's residual spread evenly over
    the other cells) then, for non-negativity, iterative proportional
    fitting of the clipped table to the same margins.

    Parameters
    ----------
    m : Measurement
    margins : callable(attrs) -> ndarray
        The fitted model's table of ``attrs`` (axes in the given order).
    cliques : sequence of attribute sets
    """
    attrs = list(m.attrs)
    t = np.array(m.estimate, dtype=float)
    t = t + (1.0 - t.sum()) / t.size
    subs = overlaps(attrs, cliques)
    targets = [(tuple(attrs.index(a) for a in s), margins(list(s))) for s in subs]
    axes_of = [tuple(k for k in range(len(attrs)) if k not in ax) for ax, _ in targets]
    for _ in range(len(subs) * 4):
        for (ax, want), other in zip(targets, axes_of):
            have = t.sum(axis=other, keepdims=True)
            t = t + (_expand(want, ax, t.ndim) - have) / (t.size / have.size)
    return _ipf(np.maximum(t, 0.0) + 1e-15, targets, axes_of)


def _ipf(t: np.ndarray, targets: list, axes_of: list) -> np.ndarray:
    """Iterative proportional fitting of the positive table ``t`` to the margins ``targets``
    (``(axes, table)`` pairs; ``axes_of``: the axes each one sums out); normalized."""
    for _ in range(IPF_ROUNDS):
        worst = 0.0
        for (ax, want), other in zip(targets, axes_of):
            have = t.sum(axis=other, keepdims=True)
            w = _expand(want, ax, t.ndim)
            worst = max(worst, float(np.abs(have - w).max()))
            with np.errstate(divide="ignore", invalid="ignore"):
                t = t * np.where(have > 0, w / have, 0.0)
        if worst <= IPF_ATOL:
            break
    return t / t.sum()


def _expand(table: np.ndarray, axes: tuple[int, ...], ndim: int) -> np.ndarray:
    """``table`` over ``axes`` (in that order) reshaped to broadcast against an ``ndim`` table."""
    order = sorted(range(len(axes)), key=lambda i: axes[i])
    t = np.transpose(np.asarray(table), order)
    shape = [1] * ndim
    for i, k in enumerate(sorted(axes)):
        shape[k] = t.shape[i]
    return t.reshape(shape)


def regions(outside: Sequence[Measurement], model_project: Callable[[list[str]], Marginal],
            cliques: Sequence[Sequence[str]], domain: Domain, *, shrink: bool = True) -> list[Marginal]:
    """Fitted region tables of the outside measurements (one per distinct attribute set).

    Each set's table is fitted to the inverse-variance pool of its own
    measurements and the projections of every outside measurement of a
    superset (a projection carries its cells' summed variances:
    conservative), so no measurement of the set is left out of its answer.

    With ``shrink`` (default) each region's interaction -- its consistent
    table minus the tree model's answer for the same set, which has the same
    margins -- is shrunk by its empirical-Bayes factor under a two-group prior
    fitted over all regions, or a pooled one where it keeps more (:func:`region_factors`; ``k_S``, the
    region's interactions in no clique, :func:`free_dof`): a region whose
    measured dependence is within its noise leans on the tree, a strong one
    keeps its measurement, even where most regions have no interaction.

    References
    ----------
    Efron & Morris, "Stein's estimation rule and its competitors -- an
    empirical Bayes approach", JASA 1973; Efron, "Microarrays, empirical Bayes
    and the two-groups model", Statistical Science 2008.
    """
    pooled = []
    holding: dict[str, set[int]] = {}  # attribute -> indices of the outside measurements holding it
    for i, m in enumerate(outside):
        for a in m.attrs:
            holding.setdefault(a, set()).add(i)
    for key in dict.fromkeys(frozenset(m.attrs) for m in outside):
        # the set's own measurements first, then the projections of every outside superset:
        # a pair measured by a few users and inside a triple measured by many gets both
        holders = sorted(set.intersection(*(holding[a] for a in key)))
        same = [outside[i] for i in holders if frozenset(outside[i].attrs) == key]
        same += [outside[i] for i in holders if frozenset(outside[i].attrs) != key]
        pooled.append(_pool(same) if len(same) > 1 else same[0])
    fits = [region_table(m, lambda s: model_project(s).values, cliques) for m in pooled]
    base = [_tree_answer(list(m.attrs), model_project, cliques) for m in pooled]
    if shrink and pooled:
        ks = np.array([float(free_dof(m.attrs, cliques, domain)) for m in pooled])
        s2 = np.array([m.sigma2 for m in pooled])
        d2 = np.array([float(((f - b) ** 2).sum()) for f, b in zip(fits, base)])
        live = ks > 0  # a set with a one-category attribute has no interaction to estimate
        lam = np.zeros(len(pooled))
        lam[live] = region_factors(d2[live], ks[live], s2[live])
        fits = [b + lm * (f - b) for f, b, lm in zip(fits, base, lam)]
    # a table that is not finite (degenerate margins) falls back to the tree model's own answer
    fits = [f if np.isfinite(f).all() and f.sum() > 0 else b for f, b in zip(fits, base)]
    return [Marginal(domain.project(list(m.attrs)), f / f.sum(), m.n, {"method": "pgm-region"})
            for m, f in zip(pooled, fits)]


def region_factors(d2: np.ndarray, ks: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """Each region's factor: the larger of one pooled prior's and the two-group prior's.

    The pooled prior (one ``tau^2 = mean (d2 - k s2) / k`` over all regions, the rule before
    session 42) keeps every region where the regions are alike or all strong (exact tables:
    the test of a pgm release on exact marginals); the two-group prior
    (:func:`interaction_factors`) keeps the strong regions that a small pooled ``tau^2``
    erases where most regions have no interaction.  No region is shrunk more than the pooled
    rule alone would shrink it.

    Known cost (session 45): where most regions are noise the maximum keeps the pooled factor on
    them and the two-group one elsewhere, more than either rule alone keeps.  bn-andes at 10^6
    records, epsilon 8, seed 0 (8,763 regions, 7,441 within two noise variances per dimension of
    the tree: pooled 0.13-0.14, two-group 0.01-0.04): 0.00852 against 0.00789 pooled and 0.00756
    two-group alone; epsilon 4: 0.00870 against 0.00832 and 0.00826 (docs/BENCHMARKS.md, "The
    relaxed-region rule costs bn-andes 5-8 %").
    """
    d, k, s = (np.asarray(x, dtype=float) for x in (d2, ks, s2))
    tau2 = max(float(np.mean((d - k * s) / k)), 0.0) if d.size else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        pooled = np.where(tau2 + s > 0, tau2 / (tau2 + s), 0.0) if tau2 > 0 else np.zeros(d.size)
    return np.maximum(pooled, interaction_factors(d, k, s))


#: EM rounds (and relative tolerance) of :func:`interaction_factors`'s two-group prior
EM_ROUNDS, EM_TOL = 200, 1e-6


def interaction_factors(d2: np.ndarray, ks: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """Each region's shrinkage factor of its interaction, under a two-group empirical-Bayes prior.

    ``d2``: each region's squared deviation from the tree's answer, ``ks``: its free dimensions
    (:func:`free_dof`, all > 0), ``s2``: its noise variance per dimension.  The prior: a region's
    interaction is none with probability ``1 - pi`` and ``N(0, tau^2)`` per dimension otherwise
    (Efron's two-groups model), so ``d2`` is ``s2`` or ``tau^2 + s2`` times a chi-square on ``k``
    degrees of freedom.  ``(pi, tau^2)`` maximize the regions' likelihood (EM: the posterior
    probability ``r`` of the second group, ``pi`` its mean, ``tau^2`` a one-dimensional weighted
    maximum); the factor is the posterior mean's, ``r tau^2 / (tau^2 + s2)``.

    Why not one pooled ``tau^2`` for all regions (the rule before session 42): a few strong
    interactions among many none average to a small ``tau^2`` that erases the strong ones.
    bn-asia at 10^6 records, epsilon 0.5, a screen of all 28 pairs plus 10 pairs in the main phase:
    the pooled ``tau^2`` was 0, so (dysp, either), measured 22 noise variances from the tree's
    answer, was released as the tree's independence (TVD 0.065 against its measurement's 0.028;
    release 0.0205, 0.0179 with this rule).  Where every region is alike it comes back to one
    pooled prior (``r`` near 1).
    """
    from scipy.optimize import minimize_scalar

    d = np.maximum(np.asarray(d2, dtype=float), 1e-300)
    k = np.asarray(ks, dtype=float)
    s = np.maximum(np.asarray(s2, dtype=float), 1e-300)
    if d.size == 0:
        return np.zeros(0)

    def log_density(var: np.ndarray | float) -> np.ndarray:
        # of d2 when it is var times a chi-square on k, less the terms in d and k alone (they cancel)
        return -0.5 * k * np.log(var) - 0.5 * d / var

    none = log_density(s)

    def second_group(pi: float, tau2: float) -> np.ndarray:
        a, b = np.log(pi) + log_density(tau2 + s), np.log1p(-pi) + none
        top = np.maximum(a, b)
        return np.exp(a - top) / (np.exp(a - top) + np.exp(b - top))

    pi, tau2 = 0.5, max(float(np.mean(np.maximum(d / k - s, 0.0))), 1e-12)
    bounds = (math.log(1e-12), math.log(max(float(np.max(d / k)), 1e-10)))
    for _ in range(EM_ROUNDS):
        r = second_group(pi, tau2)
        if r.sum() <= 1e-9:  # no region's interaction is told from none
            return np.zeros(d.size)
        new_pi = float(np.clip(r.mean(), 1e-6, 1.0 - 1e-6))
        best = minimize_scalar(lambda t: -float(np.sum(r * log_density(math.exp(t) + s))), bounds=bounds,
                               method="bounded")
        new_tau2 = math.exp(float(best.x))
        done = abs(new_pi - pi) <= EM_TOL and abs(new_tau2 - tau2) <= EM_TOL * tau2
        pi, tau2 = new_pi, new_tau2
        if done:
            break
    return second_group(pi, tau2) * tau2 / (tau2 + s)


def _tree_answer(attrs: list[str], model_project: Callable[[list[str]], Marginal],
                 cliques: Sequence[Sequence[str]]) -> np.ndarray:
    """The tree model's table of ``attrs`` (the region's shrinkage target and fallback).

    Exact inference over the Steiner subtree when it fits the model's query
    budget; beyond it (bn-mildew at 10^6 users, epsilon 16: a measured triple
    whose exact answer passes through a 30.8-million-cell table), the
    maximum-entropy table with the margins the tree holds (iterative
    proportional fitting from uniform to the in-clique margins), which agrees
    with the exact answer on those margins and adds no dependence of its own.
    """
    try:
        return model_project(attrs).values
    except BudgetError:
        subs = overlaps(attrs, cliques)
        targets = [(tuple(attrs.index(a) for a in s), model_project(list(s)).values) for s in subs]
        sizes = [0] * len(attrs)
        for ax, want in targets:
            for k, n in zip(ax, np.shape(want)):
                sizes[k] = n
        if 0 in sizes:  # an attribute in no clique: no margin to keep (cannot happen in a junction tree)
            raise
        axes_of = [tuple(k for k in range(len(attrs)) if k not in ax) for ax, _ in targets]
        return _ipf(np.full(sizes, 1.0 / float(np.prod(sizes))), targets, axes_of)


def free_dof(attrs: Sequence[str], cliques: Sequence[Sequence[str]], domain: Domain) -> int:
    """Dimensions of a region's table left free by the tree: its interactions in no clique.

    Every subset ``U`` of ``attrs`` that no clique holds contributes
    ``prod_{a in U} (|a| - 1)``: for a pair, its interaction; for a triple
    whose pairs the tree does not hold, its three pair interactions and the
    three-way one.  The region's deviation from the tree lives in these
    dimensions, and so does the part of its noise that the shrinkage weighs.
    """
    import itertools

    held = [set(c) for c in cliques]
    out = 0
    for r in range(2, len(attrs) + 1):
        for u in itertools.combinations(attrs, r):
            if not any(set(u) <= c for c in held):
                out += int(np.prod([domain.size(a) - 1 for a in u]))
    return out


def _pool(ms: Sequence[Measurement]) -> Measurement:
    """Inverse-variance weighted mean of measurements of one attribute set."""
    attrs = list(ms[0].attrs)
    tabs = [x.project(attrs) if list(x.attrs) != attrs else x for x in ms]
    w = np.array([1.0 / max(x.sigma2, 1e-300) for x in tabs])
    est = sum(wi * x.estimate for wi, x in zip(w, tabs)) / w.sum()
    return Measurement(tabs[0].domain, est, tabs[0].n, variance=1.0 / w.sum())

