"""Post-processing of unbiased estimates into probability distributions (one module for lopub).

Unbiased estimates (frequency oracles, Bloom-report estimators) can have
negative cells and need not sum to 1.  All fixes below are free of privacy
cost; :func:`postprocess` applies one to a table of any shape and returns a
:class:`Postprocessed` (the table, the method and the raw estimate).  Every
caller names its method: the Bloom-report estimators default to ``"clip"``,
the frequency-oracle command line to its ``--postprocess`` choice.

- ``"none"``: keep the estimate as it is.
- ``"clip"``: set negative cells to 0 and rescale to sum 1 (uniform if
  nothing is left).
- ``"simplex"``: Euclidean projection onto the probability simplex.
- ``"norm-sub"``: zero the negatives and subtract a common amount from the
  positive cells until the table sums to 1.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

POSTPROCESS = ("none", "clip", "simplex", "norm-sub")


@dataclass(frozen=True)
class Postprocessed:
    """A post-processed estimate.

    Attributes
    ----------
    values : ndarray
        The estimate after post-processing (shape of ``raw``).
    method : str
        One of :data:`POSTPROCESS`.
    raw : ndarray
        The estimate before post-processing.
    """

    values: np.ndarray
    method: str
    raw: np.ndarray

    @property
    def freq(self) -> np.ndarray:
        """``values`` (the name the frequency oracles use)."""
        return self.values

    @property
    def changed(self) -> bool:
        """Whether post-processing moved any cell by more than 1e-12."""
        return not np.allclose(self.values, self.raw, rtol=0.0, atol=1e-12)


def _check_raw(raw: Any) -> np.ndarray:
    arr = np.asarray(raw, dtype=float)
    if arr.size == 0:
        raise ValueError(f"estimate (shape {arr.shape}) must have at least one cell")
    if not np.all(np.isfinite(arr)):
        raise ValueError("the estimate holds NaN or infinite cells; cannot post-process it")
    return arr


def clip_normalize(raw: Any) -> np.ndarray:
    """Set negative cells to 0 and rescale to sum 1 (uniform if nothing is left).

    References
    ----------
    ALLOMFREE paper (Arcolezi et al. 2022), Sec. 6.
    """
    arr = _check_raw(raw)
    est = np.clip(arr.ravel(), 0.0, None)
    total = est.sum()
    out = est / total if total > 0 else np.full(est.size, 1.0 / est.size)
    return out.reshape(arr.shape)


def norm_sub(raw: Any, max_iter: int = 10_000) -> np.ndarray:
    """Norm-Sub: zero the negatives, subtract a common delta from the rest, repeat.

    Converges in at most ``k`` rounds (each round either stops or zeroes at
    least one more cell).  An estimate whose positive part sums to less than 1
    gets the missing mass spread over its positive cells.

    References
    ----------
    Wang, Lopuhaa-Zwakenberg, Chen, Li, Jha, Li, "Locally differentially
    private frequency estimation with consistency", NDSS 2020, Sec. 4.2.
    """
    arr = _check_raw(raw)
    est = arr.ravel().copy()
    for _ in range(min(max_iter, est.size + 1)):  # at most k + 1 rounds, not users
        positive = est > 0
        if not positive.any():
            return np.full(arr.shape, 1.0 / est.size)
        est[~positive] = 0.0
        delta = (est.sum() - 1.0) / positive.sum()
        est[positive] -= delta
        if np.all(est >= 0):
            return est.reshape(arr.shape)
    est = np.clip(est, 0.0, None)
    return (est / est.sum()).reshape(arr.shape)


def project_simplex(raw: Any) -> np.ndarray:
    """Euclidean projection of a table (any shape) onto the probability simplex.

    References
    ----------
    Duchi, Shalev-Shwartz, Singer, Chandra, ICML 2008, Fig. 1; Wang and
    Carreira-Perpinan 2013, Algorithm 1.
    """
    v = _check_raw(raw)
    u = np.sort(v.ravel())[::-1]
    css = np.cumsum(u) - 1.0
    idx = np.arange(1, u.size + 1)
    hits = np.flatnonzero(u - css / idx > 0)
    if hits.size:
        theta = css[hits[-1]] / (hits[-1] + 1)
        out = np.maximum(v - theta, 0.0)
        if out.sum() > 0:
            return out
    # |v| so large (e.g. 1e22, from f near 1) that u_1 - (u_1 - 1) rounds to 0: the exact
    # projection is then the vertex at the largest cell (the gap to the next one exceeds 1)
    out = np.zeros_like(v, dtype=float)
    out.flat[int(np.argmax(v))] = 1.0
    return out


def check_postprocess(method: object, name: str = "postprocess") -> str:
    """Check a post-processing method name; TypeError/ValueError naming ``name``."""
    if not isinstance(method, str):
        raise TypeError(f"{name} ({method!r}) must be a string, one of {POSTPROCESS}")
    if method not in POSTPROCESS:
        raise ValueError(f"{name} ({method!r}) must be one of {POSTPROCESS}")
    return method


_FUNCS = {"clip": clip_normalize, "simplex": project_simplex, "norm-sub": norm_sub}


def postprocess(raw: Any, method: str) -> Postprocessed:
    """Apply ``method`` to an estimate of any shape.

    Parameters
    ----------
    raw : array_like
        The estimate (finite, at least one cell).
    method : {"none", "clip", "simplex", "norm-sub"}

    Returns
    -------
    Postprocessed
    """
    method = check_postprocess(method, "method")
    arr = _check_raw(raw)
    values = arr.copy() if method == "none" else _FUNCS[method](arr)
    return Postprocessed(values, method, arr)
