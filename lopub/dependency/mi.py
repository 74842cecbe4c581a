"""Entropy and mutual information from (estimated) marginals.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Eq. 24 (mutual information, nats) and
Alg. 5 (entropy ranking).
"""
from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from ..marginal import Marginal
from .cache import MarginalCache, Progress


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
