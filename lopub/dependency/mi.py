"""Entropy and mutual information from (estimated) marginals, and the noise-aware
independence test of every pair (:func:`pair_tests`, used by
:mod:`lopub.dependency.structure`).

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Eq. 24 (mutual information, nats) and
Alg. 5 (entropy ranking); docs/ARCHITECTURE.md, note 10.
"""
from __future__ import annotations

import itertools
import math
import warnings
from typing import Any, Sequence

import numpy as np
from scipy.stats import chi2

from lopub.data.marginal import Marginal
from lopub.estimate.measurement import Measurement
from lopub.dependency.cache import MarginalCache, Progress


def entropy(p: Marginal | np.ndarray) -> float:
    """Shannon entropy in nats of a (normalized) table; zero cells contribute 0.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Alg. 5 (entropy-based pruning).
    """
    v = np.asarray(p.values if isinstance(p, Marginal) else p, dtype=float).ravel()
    v = np.clip(v, 0.0, None)
    s = v.sum()
    if s <= 0:
        return 0.0
    v = v[v > 0] / s
    return float(-(v * np.log(v)).sum())


def mutual_information(joint: Marginal | np.ndarray) -> float:
    """I(A; B) = sum p_ab ln(p_ab / (p_a p_b)) in nats of a 2-way table (>= 0).

    Negative or unnormalized estimates are clipped at 0 and renormalized first.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Eq. 24.
    """
    p = np.asarray(joint.values if isinstance(joint, Marginal) else joint, dtype=float)
    if p.ndim != 2:
        raise ValueError(f"joint must be a 2-way table; got {p.ndim} axes")
    p = np.clip(p, 0.0, None)
    s = p.sum()
    if s <= 0:
        return 0.0
    p = p / s
    outer = p.sum(1, keepdims=True) * p.sum(0, keepdims=True)
    nz = p > 0
    return max(float((p[nz] * np.log(p[nz] / outer[nz])).sum()), 0.0)


def pairwise_mi(cache: MarginalCache, attrs: Sequence[str] | None = None,
                pairs: Sequence[tuple[str, str]] | None = None, *,
                progress: Progress | None = None) -> np.ndarray:
    """MI matrix over ``attrs`` (domain order by default) from estimated 2-way joints.

    Only ``pairs`` are estimated when given (pruning); other off-diagonal
    entries are NaN ("not computed").  The diagonal holds each attribute's
    entropy from its one-way marginal.  Every joint goes through ``cache``, so
    it is estimated once and reused by later steps.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Eq. 24, Alg. 4 lines 1-4.
    """
    attrs = list(cache.domain.attrs if attrs is None else attrs)
    pos = {a: i for i, a in enumerate(attrs)}
    pairs = list(itertools.combinations(attrs, 2) if pairs is None else pairs)
    d = len(attrs)
    mi = np.full((d, d), np.nan)
    cache.prefetch([[a] for a in attrs], stage="one-way marginals", progress=progress)
    for a in attrs:
        mi[pos[a], pos[a]] = entropy(cache.marginal([a]))
    cache.prefetch([list(p) for p in pairs], stage="pairwise joints", progress=progress)
    for a, b in pairs:
        mi[pos[a], pos[b]] = mi[pos[b], pos[a]] = mutual_information(cache.marginal([a, b]))
    return mi


def table_variance(m: Any, n: int | None, null: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray | None, str]:
    """(table, per-cell variance or None if exact, variance source) of a marginal.

    A :class:`~lopub.estimate.measurement.Measurement` gives its unbiased ``estimate``
    and its ``variance`` (source ``"measurement"``).  A plain table with a
    record count (``n``, else its own ``n``) gets the multinomial sampling
    variance ``p0 (1 - p0) / n`` of the null table ``null`` (default: the
    product of the table's margins; source ``"multinomial"``).  Without a
    count the table is taken as exact (variance None, source ``"exact"``).
    """
    if isinstance(m, Measurement):
        return np.asarray(m.estimate, dtype=float), m.variance, "measurement"
    p = np.asarray(m.values, dtype=float)
    size = n if n is not None else m.n
    if size is None:
        return p, None, "exact"
    p0 = np.clip(np.outer(p.sum(1), p.sum(0)) if null is None else null, 0.0, 1.0)
    return p, p0 * (1.0 - p0) / float(size), "multinomial"


def null_residual_variance(v: np.ndarray, pa: np.ndarray, pb: np.ndarray) -> np.ndarray:
    """Var of the linearised residual e_ab - p_b e_a. - p_a e_.b for independent cell errors."""
    row = v.sum(1, keepdims=True)
    col = v.sum(0, keepdims=True)
    a, b = pa[:, None], pb[None, :]
    return v * (1.0 - a - b) ** 2 + b ** 2 * (row - v) + a ** 2 * (col - v)


def residual_test(r: np.ndarray, v: np.ndarray | None, var0: np.ndarray | None, df: int
                  ) -> tuple[float, float]:
    """(mean-matched statistic, p-value) of residual ``r`` with cell variance ``v``.

    ``T = sum r^2 / v`` scaled by ``df / sum(var0 / v)`` and referred to
    chi-square(df); cells with zero variance carry no information.  Exact
    tables (``v`` None): statistic inf and p-value 0 when ``r`` is not zero.

    References
    ----------
    Pearson's chi-square test of independence; docs/ARCHITECTURE.md, note 10.
    """
    if df < 1:
        return 0.0, 1.0
    if v is None:
        big = float(np.max(np.abs(r))) > 1e-12
        return (math.inf, 0.0) if big else (0.0, 1.0)
    live = v > 0
    t = float(np.sum(r[live] ** 2 / v[live]))
    e0 = float(np.sum(var0[live] / v[live])) if var0 is not None else df
    stat = t * df / e0 if e0 > 0 else (math.inf if t > 0 else 0.0)
    return stat, float(chi2.sf(stat, df))


def pair_tests(cache: MarginalCache, n: int | None = None, *,
               progress: Progress | None = None) -> dict[frozenset, dict[str, Any]]:
    """Independence test and noise-corrected MI of every pair (step 1 of ``"auto"``).

    Returns per pair: ``statistic``, ``df``, ``pvalue``, ``strength``
    (noise-corrected MI, nats), ``n_eff`` and ``variance`` (its source).

    References
    ----------
    docs/ARCHITECTURE.md, note 10 and 11; Ren et al., IEEE TIFS 2018, Eq. 24.
    """
    dom = cache.domain
    pairs = list(itertools.combinations(dom.attrs, 2))
    out = {}
    for k, (a, b) in enumerate(pairs):
        if progress is not None:
            progress("edge tests", k, len(pairs))
        m = cache.marginal([a, b])
        if k == 0:
            _warn_if_estimate_without_variance(m)
        df = (dom.size(a) - 1) * (dom.size(b) - 1)
        if isinstance(m, Measurement) and m.provenance.get("protocol") == "not measured":
            out[frozenset((a, b))] = {"statistic": 0.0, "df": df, "pvalue": 1.0, "strength": 0.0,
                                      "n_eff": math.inf, "variance": "not measured"}
            continue
        p, v, source = table_variance(m, n)
        pa, pb = p.sum(1), p.sum(0)
        var0 = None if v is None else null_residual_variance(v, pa, pb)
        stat, pval = residual_test(p - np.outer(pa, pb), v, var0, df)
        out[frozenset((a, b))] = {"statistic": stat, "df": df, "pvalue": pval,
                                  "strength": _corrected_mi(p, var0) if df else 0.0,
                                  "n_eff": _n_eff(p, v), "variance": source}
    if progress is not None and pairs:
        progress("edge tests", len(pairs), len(pairs))
    return out


def _warn_if_estimate_without_variance(m: Any) -> None:
    method = m.meta.get("method") if isinstance(m.meta, dict) else None
    if not isinstance(m, Measurement) and method not in (None, "exact", "exact-bn"):
        warnings.warn(f"the pairwise tables are {method!r} estimates without a variance; the "
                      f"independence test falls back to the multinomial sampling variance, which "
                      f"under-states the noise of randomized reports (expect spurious edges); pass "
                      f"lopub Measurements", stacklevel=4)


def _corrected_mi(p: np.ndarray, var0: np.ndarray | None) -> float:
    """Plug-in MI of the clipped table minus its noise bias 1/2 sum Var0(r) / (p_a p_b)."""
    q = np.clip(p, 0.0, None)
    s = q.sum()
    if s <= 0:
        return 0.0
    q = q / s
    outer = np.outer(q.sum(1), q.sum(0))
    nz = q > 0
    mi = float(np.sum(q[nz] * np.log(q[nz] / outer[nz])))
    if var0 is not None:
        live = outer > 0
        mi -= 0.5 * float(np.sum(var0[live] / outer[live]))
    return max(mi, 0.0)


def _n_eff(p: np.ndarray, v: np.ndarray | None) -> float:
    """Sample size whose multinomial noise equals ``v``: sum p (1 - p) / sum v."""
    if v is None or float(v.sum()) <= 0:
        return math.inf
    q = np.clip(p, 0.0, 1.0)
    return float(np.sum(q * (1 - q)) / v.sum())
