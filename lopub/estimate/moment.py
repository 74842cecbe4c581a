"""Moment regression: the k-way joint from k-th order co-occurrences of report bits.

Flips are independent across attributes, so for attributes 1..k the
co-occurrence tensor of report bits ``C[b_1..b_k] = sum_u prod_j s_{u,j}[b_j]``
has expectation ``n * P x_1 A_1 x_2 ... x_k A_k`` with
``A_j = (1 - f) H_j + f/2`` (|O_j|, m_j): a regression of C on a
Kronecker-structured design.  Its least-squares solution never needs C nor the
Kronecker design::

    P_ols = C x_1 pinv(A_1)^T ... x_k pinv(A_k)^T = 1/n sum_u (x)_j z_{u,j},
    z_{u,j} = s_{u,j} @ pinv(A_j)   (one matrix product per attribute, cached)

i.e. the k-th cross moment of per-user projected bits.  ``design="centered"``
(default) regresses the centred bits ``s - f/2`` on ``(1 - f) H_j`` instead:
the same model with the known constant removed (a linear combination of the
co-occurrence counts of order <= k), whose bit noise is homoscedastic
(variance f/2 (1 - f/2)) and whose Gram matrices are well conditioned.
The non-negative solution minimizes the same least-squares objective,
``(p - P_ols)^T (Q_1 (x) ... (x) Q_k) (p - P_ols)`` with ``Q_j`` the Gram
matrix of the design, over the probability simplex: accelerated projected
gradient (FISTA with adaptive restart), the Kronecker Hessian applied mode by
mode.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 2 (the regression this replaces) and
Eq. 5; ARCHITECTURE.md "Algorithm notes" 4.  Beck and Teboulle, SIAM J.
Imaging Sci. 2 (2009) (FISTA); O'Donoghue and Candes, Found. Comput. Math. 15
(2015) (restart); Duchi et al., ICML 2008 (simplex projection).
"""
from __future__ import annotations

import math

import numpy as np

from ..reports import Reports
from .postprocess import project_simplex

DESIGNS = ("centered", "raw")


def design_matrix(reports: Reports, attr: str, design: str) -> np.ndarray:
    """Per-value expected bits of attribute ``attr``: (|O_j|, m_j)."""
    spec = reports.spec
    H = spec.bloom[spec.domain.index(attr)].astype(np.float64)
    if design == "raw":
        return (1.0 - spec.f) * H + spec.f / 2.0
    return (1.0 - spec.f) * H


def projected_bits(reports: Reports, attr: str, *, design: str = "centered",
                   chunk_size: int = 65536) -> np.ndarray:
    """Per-user least-squares value indicators ``z_u = s_u @ pinv(A_j)``: (n, |O_j|).

    ``E[z_u | w_u] = e_{w_u}`` when ``A_j`` has full row rank (m_j >= |O_j|
    and distinct Bloom filters).

    References
    ----------
    Ren et al., IEEE TIFS 2018, Eq. 5; ARCHITECTURE.md "Algorithm notes" 4.
    """
    if design not in DESIGNS:
        raise ValueError(f"design ({design!r}) must be one of {DESIGNS}")
    A = design_matrix(reports, attr, design)
    G = np.linalg.pinv(A).astype(np.float64)  # (m_j, |O_j|)
    shift = reports.spec.f / 2.0 if design == "centered" else 0.0
    out = np.empty((reports.n, A.shape[0]))
    for start in range(0, reports.n, chunk_size):  # chunks of users
        s = reports.attribute_bits(attr, start, start + chunk_size).astype(np.float64)
        out[start:start + len(s)] = (s - shift) @ G
    return out


def gram(reports: Reports, attr: str, design: str) -> np.ndarray:
    """Gram matrix ``A_j A_j^T`` of one attribute's design: (|O_j|, |O_j|)."""
    A = design_matrix(reports, attr, design)
    return A @ A.T


def kron_apply(mats: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    """``(M_1 (x) ... (x) M_k) vec(x)`` for a table ``x``, mode by mode."""
    for axis, M in enumerate(mats):
        x = np.moveaxis(np.tensordot(M, x, axes=([1], [axis])), 0, axis)
    return x


def nn_least_squares(p_ols: np.ndarray, grams: list[np.ndarray], *, tol: float = 1e-9,
                     max_iter: int = 20000) -> tuple[np.ndarray, int, bool]:
    """Minimize ``(p - p_ols)^T (x)Q (p - p_ols)`` over the simplex (FISTA + restart).

    Returns the table, the iterations and whether the largest cell change
    fell below ``tol``.

    References
    ----------
    Beck and Teboulle 2009 (FISTA); O'Donoghue and Candes 2015 (restart).
    """
    lip = math.prod(float(np.linalg.eigvalsh(Q)[-1]) for Q in grams)
    step = 1.0 / lip
    x = project_simplex(p_ols)
    y, t = x.copy(), 1.0
    for it in range(1, max_iter + 1):  # optimizer iterations on a small table
        grad = kron_apply(grams, y - p_ols)
        x_new = project_simplex(y - step * grad)
        change = float(np.max(np.abs(x_new - x)))
        if change <= tol:
            return x_new, it, True
        if np.sum((y - x_new) * (x_new - x)) > 0:  # gradient restart
            t = 1.0
            y = x_new
        else:
            t_new = (1.0 + math.sqrt(1.0 + 4.0 * t * t)) / 2.0
            y = x_new + ((t - 1.0) / t_new) * (x_new - x)
            t = t_new
        x = x_new
    return x, max_iter, False
