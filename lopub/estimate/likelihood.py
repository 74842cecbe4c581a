"""Per-attribute likelihood matrices of Bloom reports (the corrected Alg. 1 line 4).

For attribute j, user u with report bits s (length m_j) and candidate value v
with Bloom filter H(v)::

    mism(u, v) = |s| + |H(v)| - 2 <s, H(v)>
    log P(s | v) = (m_j - mism) log(1 - f/2) + mism log(f/2)

One matrix product per chunk of users gives ``<s, H(v)>`` for all users and
values.  Each row is scaled by subtracting its maximum before ``exp`` (the raw
likelihoods of m = 128 bits are far below the float range); the subtracted
per-user log scale is kept as one scalar sum, which is all the total
log-likelihood needs::

    log P(s_u | v) = log L[u, v] + offset[u],   L[u, :].max() == 1.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 1 (line 4, with the missing w
restored) and Eq. 5; docs/ARCHITECTURE.md, note 1-2.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lopub.reports.bloom import Reports


@dataclass(frozen=True)
class AttributeLikelihood:
    """Scaled likelihoods of one attribute for all users.

    Attributes
    ----------
    values : ndarray, float64 (n, |O_j|)
        ``P(s_u | v) / max_v P(s_u | v)``; every row has maximum 1.
    offset : float
        ``sum_u log max_v P(s_u | v)``: add it to ``sum_u log(...)`` of scaled
        terms to obtain the true log-likelihood.
    """

    values: np.ndarray
    offset: float

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes)


def log_odds(f: float) -> tuple[float, float]:
    """``(log(1 - f/2), log(f/2) - log(1 - f/2))``: match term and mismatch penalty."""
    keep = float(np.log1p(-f / 2.0))
    return keep, float(np.log(f / 2.0)) - keep


def attribute_likelihood(reports: Reports, attr: str, *, chunk_size: int = 65536,
                         out: np.ndarray | None = None) -> AttributeLikelihood:
    """Scaled likelihood matrix of attribute ``attr`` for every user.

    Parameters
    ----------
    reports : Reports
    attr : str
        Attribute name (must be in ``reports.spec.domain``).
    chunk_size : int
        Users per chunk; memory O(chunk_size * m_j).
    out : ndarray, float64 (n, |O_j|), optional
        Write the matrix here (e.g. memory shared with other processes).

    Returns
    -------
    AttributeLikelihood

    References
    ----------
    Ren et al., IEEE TIFS 2018, Alg. 1 line 4 (corrected: P(s_j | w_j)).
    """
    spec = reports.spec
    j = spec.domain.index(attr)
    H = spec.bloom[j].astype(np.float32)  # (|O_j|, m_j)
    m = spec.m[j]
    keep, pen = log_odds(spec.f)
    hw = H.sum(axis=1).astype(np.float64)  # |H(v)|
    shape = (reports.n, H.shape[0])
    if out is None:
        out = np.empty(shape, dtype=np.float64)
    elif out.shape != shape or out.dtype != np.float64:
        raise ValueError(f"out ({out.dtype} {out.shape}) must be float64 of shape {shape}")
    offset = 0.0
    for start in range(0, reports.n, chunk_size):  # chunks of users, vectorized inside
        s = reports.attribute_bits(attr, start, start + chunk_size).astype(np.float32)
        overlap = (s @ H.T).astype(np.float64)  # exact small integers
        ones = s.sum(axis=1, dtype=np.float64)
        # log P = m keep + pen * mism; the per-user part pen*|s| goes into the scale
        raw = pen * (hw[None, :] - 2.0 * overlap)
        top = raw.max(axis=1)
        np.exp(raw - top[:, None], out=out[start:start + len(s)])
        offset += float(np.sum(m * keep + pen * ones + top))
    return AttributeLikelihood(out, offset)
