"""Post-processing of estimated tables into probability distributions.

Estimates may have negative cells or not sum to 1.  All fixes are free of
privacy cost; :func:`postprocess` returns the table and the name of what was
applied, which the estimators record in ``Marginal.meta["postprocess"]``.

- ``"none"``: keep the estimate as it is.
- ``"clip"``: set negative cells to 0 and rescale to sum 1 (uniform if
  nothing is left).
- ``"simplex"``: Euclidean projection onto the probability simplex.
- ``"norm-sub"``: zero the negatives and subtract a common amount from the
  positive cells until the table sums to 1.

References
----------
Duchi, Shalev-Shwartz, Singer, Chandra, "Efficient projections onto the
l1-ball for learning in high dimensions", ICML 2008 (Fig. 1: simplex
projection); Wang et al., "Locally differentially private frequency
estimation with consistency", NDSS 2020 (Norm-Sub).
"""
from __future__ import annotations

import numpy as np

from ..oracles.postprocess import clip_normalize, norm_sub

POSTPROCESS = ("none", "clip", "simplex", "norm-sub")


def project_simplex(values: np.ndarray) -> np.ndarray:
    """Euclidean projection of a table (any shape) onto the probability simplex.

    References
    ----------
    Duchi et al., ICML 2008, Fig. 1.
    """
    v = np.asarray(values, dtype=float)
    flat = v.ravel()
    u = np.sort(flat)[::-1]
    css = np.cumsum(u) - 1.0
    idx = np.arange(1, flat.size + 1)
    rho = int(np.flatnonzero(u - css / idx > 0)[-1]) + 1
    theta = css[rho - 1] / rho
    return np.maximum(v - theta, 0.0)


def check_postprocess(method: object) -> str:
    if not isinstance(method, str):
        raise TypeError(f"postprocess ({method!r}) must be a string, one of {POSTPROCESS}")
    if method not in POSTPROCESS:
        raise ValueError(f"postprocess ({method!r}) must be one of {POSTPROCESS}")
    return method


def postprocess(values: np.ndarray, method: str = "clip") -> tuple[np.ndarray, str]:
    """Apply ``method`` to a table of any shape; returns ``(table, method)``.

    Parameters
    ----------
    values : array_like
        Raw estimate (finite).
    method : {"none", "clip", "simplex", "norm-sub"}

    References
    ----------
    Duchi et al., ICML 2008 (simplex projection); Wang et al., NDSS 2020 (Norm-Sub).
    """
    method = check_postprocess(method)
    v = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(v)):
        raise ValueError("the estimate holds NaN or infinite cells; cannot post-process it")
    if method == "none":
        return v.copy(), method
    if method == "simplex":
        return project_simplex(v), method
    flat = clip_normalize(v.ravel()) if method == "clip" else norm_sub(v.ravel())
    return flat.reshape(v.shape), method
