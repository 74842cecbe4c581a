"""Lasso regression of debiased Bloom bit counts (Alg. 2), faithful to the paper.

For the attributes 1..k of the requested joint:

1. per attribute, count the report bits ``y_j[b] = sum_u s_{u,j}[b]`` and
   debias them, ``(y_j / n - f/2) / (1 - f)`` = estimated share of users whose
   true Bloom filter has bit b (Eq. 5 inverted);
2. the candidate matrix has one column per cell ``w`` of the joint: the
   concatenation ``[H_1(w_1); ...; H_k(w_k)]`` (sum_j m_j rows);
3. scikit-learn ``Lasso(positive=True, fit_intercept=False)`` regresses the
   concatenated debiased counts on it; the coefficients are normalized to sum 1.

Limitation (docs/ARCHITECTURE.md, note 4): for k >= 2 the regressed
counts are per-attribute sums, so they depend on the one-way marginals only.
The joint is not identifiable from them; the Lasso returns *some* sparse table
with about the right one-way marginals, not the joint.  Use ``method="moment"``
or ``"em"`` for joints.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 2 and Eq. 5.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from lopub.reports.bloom import Reports

DEFAULT_ALPHA = 1e-6


def debiased_bit_shares(reports: Reports, attr: str, *, chunk_size: int = 65536) -> np.ndarray:
    """``(y_j / n - f/2) / (1 - f)`` for every bit of attribute ``attr`` (length m_j).

    References
    ----------
    Ren et al., IEEE TIFS 2018, Alg. 2 line 2 and Eq. 5.
    """
    f = reports.spec.f
    total = np.zeros(reports.spec.m[reports.spec.domain.index(attr)])
    for start in range(0, reports.n, chunk_size):  # chunks of users
        total += reports.attribute_bits(attr, start, start + chunk_size).sum(axis=0, dtype=np.int64)
    return (total / reports.n - f / 2.0) / (1.0 - f)


def debiased_bit_cov(reports: Reports, attr: str, *, chunk_size: int = 65536) -> np.ndarray:
    """Covariance of :func:`debiased_bit_shares` over the users, (m_j, m_j).

    The reports are independent across users, so the covariance of the mean
    bit vector is the users' sample covariance over ``n``, scaled by the
    debiasing ``1 / (1 - f)^2``; streamed in chunks of users.
    """
    f, n = reports.spec.f, reports.n
    m = reports.spec.m[reports.spec.domain.index(attr)]
    total, outer = np.zeros(m), np.zeros((m, m))
    for start in range(0, n, chunk_size):  # chunks of users
        s = reports.attribute_bits(attr, start, start + chunk_size).astype(np.float64)
        total += s.sum(axis=0)
        outer += s.T @ s
    mean = total / n
    cov = (outer - n * np.outer(mean, mean)) / max(n - 1, 1)
    return cov / (n * (1.0 - f) ** 2)


def normalized_variance(blooms: list[np.ndarray], cov: np.ndarray, table: np.ndarray,
                        raw_mass: float) -> np.ndarray:
    """Per-cell delta-method variance of the normalized least-squares coefficients.

    With a vanishing penalty and no active positivity constraint the
    coefficients are ``c = X^+ y`` (``X`` the candidate matrix), so
    ``Cov(c) = X^+ Cov(y) X^+^T``; the table is ``c / 1^T c``, whose Jacobian is
    ``(I - p 1^T) / 1^T c``.  The normalization removes the noise along the
    total, so this is smaller than the unnormalized (or centred-design
    moment) variance in some cells.
    """
    X = candidate_matrix(blooms)
    A = np.linalg.pinv(X)
    C = A @ cov @ A.T
    p = table.ravel()
    J = (np.eye(p.size) - np.outer(p, np.ones(p.size))) / (raw_mass if raw_mass > 0 else 1.0)
    return np.clip(np.einsum("ij,jk,ik->i", J, C, J), 0.0, None).reshape(table.shape)


def candidate_matrix(blooms: list[np.ndarray]) -> np.ndarray:
    """Concatenated Bloom filters of every joint cell: (sum_j m_j, prod_j |O_j|).

    Column ``c`` (C order over the cells) stacks ``H_j(w_j)`` of the cell's values.
    """
    sizes = [H.shape[0] for H in blooms]
    cells = math.prod(sizes)
    blocks = []
    for j, H in enumerate(blooms):
        shape = [1] * len(blooms)
        shape[j] = sizes[j]
        idx = np.broadcast_to(np.arange(sizes[j]).reshape(shape), sizes).ravel()
        blocks.append(H.T[:, idx].astype(np.float64))  # (m_j, cells)
    return np.vstack(blocks) if cells else np.zeros((sum(H.shape[1] for H in blooms), 0))


def lasso_joint(targets: list[np.ndarray], blooms: list[np.ndarray], *, alpha: float = DEFAULT_ALPHA,
                max_iter: int = 10000, tol: float = 1e-6) -> tuple[np.ndarray, dict]:
    """Alg. 2 regression; returns the normalized table (shape = sizes) and metadata.

    Parameters
    ----------
    targets : list of ndarray (m_j,)
        Debiased bit shares per attribute (:func:`debiased_bit_shares`).
    blooms : list of bool ndarray (|O_j|, m_j)
    alpha : float
        Lasso penalty (scikit-learn scaling: ``1/(2 sum m_j) ||y - X b||^2 + alpha |b|_1``).

    References
    ----------
    Ren et al., IEEE TIFS 2018, Alg. 2.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import Lasso

    X = candidate_matrix(blooms)
    y = np.concatenate(targets)
    model = Lasso(alpha=alpha, positive=True, fit_intercept=False, max_iter=max_iter, tol=tol)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(X, y)
    coef = np.clip(model.coef_, 0.0, None)
    total = coef.sum()
    sizes = tuple(H.shape[0] for H in blooms)
    table = coef / total if total > 0 else np.full(coef.size, 1.0 / coef.size)
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    meta = {"iterations": int(np.max(model.n_iter_)), "converged": converged, "alpha": alpha,
            "nonzero": int(np.count_nonzero(coef)), "raw_mass": float(total)}
    return table.reshape(sizes), meta
