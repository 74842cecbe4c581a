"""Post-processing of unbiased frequency estimates into distributions.

Unbiased estimates can be negative and need not sum to 1.  Three standard
fixes, all free of privacy cost; the result records which one was used.

References
----------
Wang, Lopuhaä-Zwakenberg, Chen, Li, Jha, Li, "Locally differentially private
frequency estimation with consistency", NDSS 2020 (Norm-Sub, Sec. 4);
Wang, Carreira-Perpinan, "Projection onto the probability simplex", 2013
(Algorithm 1); ALLOMFREE paper, Sec. 6 (clip-and-renormalize).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

METHODS = ("none", "clip", "norm-sub", "simplex")


@dataclass(frozen=True)
class Estimate:
    """A frequency estimate and the post-processing that produced it.

    Attributes
    ----------
    freq : ndarray
        The estimate after post-processing.
    method : str
        One of ``"none"``, ``"clip"``, ``"norm-sub"``, ``"simplex"``.
    raw : ndarray
        The unbiased estimate before post-processing.
    """

    freq: np.ndarray
    method: str
    raw: np.ndarray


def _check_raw(raw: Any) -> np.ndarray:
    arr = np.asarray(raw, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"estimate (shape {arr.shape}) must be a non-empty 1-D array")
    if not np.all(np.isfinite(arr)):
        raise ValueError("estimate contains NaN or infinite entries")
    return arr


def clip_normalize(raw: Any) -> np.ndarray:
    """Set negative entries to 0 and rescale to sum 1 (uniform if nothing is left).

    References
    ----------
    ALLOMFREE paper, Sec. 6 (and multi-freq-ldpy's MI estimator).
    """
    est = np.clip(_check_raw(raw), 0.0, None)
    total = est.sum()
    return est / total if total > 0 else np.full(est.size, 1.0 / est.size)


def norm_sub(raw: Any, max_iter: int = 10_000) -> np.ndarray:
    """Norm-Sub: zero the negatives, subtract a common delta from the rest, repeat.

    Converges in at most ``k`` rounds (each round either stops or zeroes at
    least one more entry).  An estimate whose positive part sums to less
    than 1 gets the missing mass spread over its positive entries.

    References
    ----------
    Wang et al., NDSS 2020, Sec. 4.2 (Norm-Sub).
    """
    est = _check_raw(raw).copy()
    for _ in range(min(max_iter, est.size + 1)):  # at most k + 1 rounds, not users
        positive = est > 0
        if not positive.any():
            return np.full(est.size, 1.0 / est.size)
        est[~positive] = 0.0
        delta = (est.sum() - 1.0) / positive.sum()
        est[positive] -= delta
        if np.all(est >= 0):
            return est
    return np.clip(est, 0.0, None) / np.clip(est, 0.0, None).sum()


def project_simplex(raw: Any) -> np.ndarray:
    """Euclidean projection onto the probability simplex.

    References
    ----------
    Wang and Carreira-Perpinan 2013, Algorithm 1.
    """
    est = _check_raw(raw)
    u = np.sort(est)[::-1]
    css = np.cumsum(u) - 1.0
    idx = np.arange(1, est.size + 1)
    rho = idx[u - css / idx > 0][-1]
    theta = css[rho - 1] / rho
    return np.clip(est - theta, 0.0, None)


def postprocess(raw: Any, method: str = "norm-sub") -> Estimate:
    """Turn a raw estimate into an :class:`Estimate` with ``method`` applied."""
    if not isinstance(method, str):
        raise TypeError(f"method ({method!r}) must be a string")
    if method not in METHODS:
        raise ValueError(f"method ({method!r}) must be one of {METHODS}")
    arr = _check_raw(raw)
    funcs = {"none": np.copy, "clip": clip_normalize, "norm-sub": norm_sub,
             "simplex": project_simplex}
    return Estimate(freq=funcs[method](arr), method=method, raw=arr)
