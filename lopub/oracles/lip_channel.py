"""Channels for local information privacy: checks, the LP, and the full-rank fallback.

A channel ``Q[x, y] = P(Y = y | X = x)`` is eps-LIP for a prior ``P`` when
``e^-eps <= lambda_y / Q[x, y] <= e^eps`` for all x, y, with
``lambda_y = sum_x P_x Q[x, y]``.  For a fixed prior these constraints are
linear in ``Q``, so the eps-LIP channels form a convex polytope; it contains
GRR at eps (eps-LDP implies eps-LIP for every prior), which is full rank.

References
----------
Jiang, Li, Tandon, "Local Information Privacy and Its Application to
Privacy-Preserving Data Aggregation", IEEE TDSC 2022 (LIP paper), Def. 1
and Thm. 3; PAPERS.md Sec. 4 (RR-LIP validity, the linear program).
"""
from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass
from typing import Any

import numpy as np
from scipy import sparse
from scipy.optimize import brentq, linprog, minimize_scalar

from lopub.oracles.base import check_epsilon

#: Channels whose condition number exceeds this are treated as singular.
MAX_CONDITION = 1e10
#: Largest domain of the eps-LIP linear program (:func:`optimal_lip_matrix`): about 20 s
#: on one core at k = 120; the sparse program has k^2 variables and 2 k^3 coefficients
#: per prior.
MAX_LP_K = 128
#: Grid points of the 1-D search on the segment LP optimum -> GRR.
SEGMENT_GRID = 201
#: Server estimators of the LIP mechanisms: posterior mean or channel inversion.
ESTIMATORS = ("bayes", "invert")


#: Largest LIP budget: beyond it the randomized outputs have probability about
#: ``e^-eps < 1e-13``, within 1e-3 relative of the float64 sampling resolution
#: (``2^-53``), so the sampled channel would no longer be the stated one.
LIP_MAX_EPSILON = 30.0


class FrozenMechanism:
    """Parameters fixed once built, as the frozen dataclass oracles' are: assigning or deleting
    a public attribute after ``__init__`` (which ends with :meth:`_freeze`) raises
    :class:`dataclasses.FrozenInstanceError`, and the arrays (prior, channel) are read-only
    copies, so the channel the clients run is always the one ``params()`` describes."""

    _frozen: bool = False

    def __setattr__(self, name: str, value: Any) -> None:
        if self._frozen and not name.startswith("_"):  # private caches may still be filled
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if self._frozen and not name.startswith("_"):
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)

    def _freeze(self) -> None:
        for name, value in list(vars(self).items()):  # a few attributes
            if isinstance(value, np.ndarray):
                value = value.copy()  # never the caller's array
                value.flags.writeable = False
                object.__setattr__(self, name, value)
        object.__setattr__(self, "_frozen", True)


def check_lip_epsilon(value: Any) -> float:
    """Check a LIP budget: finite, > 0 and at most :data:`LIP_MAX_EPSILON`."""
    eps = check_epsilon("epsilon", value)
    if eps > LIP_MAX_EPSILON:
        raise ValueError(f"epsilon ({eps!r}) must be <= {LIP_MAX_EPSILON} for a LIP mechanism: "
                         f"its randomized outputs would have probabilities near e^-epsilon, "
                         f"below what float64 sampling can realize")
    return eps


def check_estimator(name: str, value: Any, allowed: tuple = ESTIMATORS) -> str:
    """Check an estimator name (``"bayes"`` or ``"invert"``)."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} ({value!r}) must be one of {allowed}")
    return value


def bayes_variance(matrix: Any, prior: Any, f: Any, n: int) -> np.ndarray:
    """Variance of the posterior-mean estimate ``(1/n) sum_i P(X = k | Y_i)``.

    For a fixed dataset of ``n`` users with frequencies ``f``, the reports
    are independent, so ``Var_k = (1/n) sum_x f_x (E[post_k^2 | x] -
    E[post_k | x]^2)`` with ``post[k, y] = P_k Q[k, y] / lambda_y`` and the
    expectations over ``y ~ Q[x]``.  (The estimate's mean is
    ``f Q post^T``, equal to ``f`` only when ``f`` is the prior.)
    """
    q = np.asarray(matrix, dtype=float)
    p = np.asarray(prior, dtype=float)
    lam = p @ q
    post = p[:, None] * q / np.where(lam > 0, lam, 1.0)[None, :]
    mean = q @ post.T  # (x, k)
    second = q @ (post ** 2).T
    return np.asarray(f, dtype=float) @ (second - mean ** 2) / n


def check_prior(prior: Any) -> np.ndarray:
    """A prior: 1-D, at least 2 entries, all > 0, summing to 1 (within 1e-9)."""
    arr = np.asarray(prior, dtype=float)
    if arr.ndim != 1 or arr.size < 2:
        raise ValueError(f"prior (shape {arr.shape}) must be a 1-D array of >= 2 probabilities")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0) or abs(arr.sum() - 1) > 1e-9:
        raise ValueError(f"prior ({arr.tolist()}) must be positive and sum to 1")
    return arr / arr.sum()


def lip_level(matrix: Any, prior: Any) -> float:
    """Exact LIP level ``max_{x,y} |ln(lambda_y / Q[x, y])|`` of a channel under a prior."""
    q = np.asarray(matrix, dtype=float)
    lam = np.asarray(prior, dtype=float) @ q
    used = lam > 0
    if np.any(q[:, used] <= 0):
        return float("inf")
    return float(np.max(np.abs(np.log(lam[used][None, :] / q[:, used]))))


def grr_matrix(k: int, epsilon: float) -> np.ndarray:
    """``k x k`` GRR channel at ``epsilon`` (keep w.p. ``e^eps / (e^eps + k - 1)``)."""
    tail = np.exp(-epsilon)  # (e^eps - 1) / (e^eps + k - 1) and 1 / (e^eps + k - 1), no overflow
    den = 1 + (k - 1) * tail
    return -np.expm1(-epsilon) / den * np.eye(k) + tail / den


def inversion_variance(matrix: Any, prior: Any) -> float:
    """Total variance (n = 1) of the inversion estimator when data follow ``prior``.

    With ``lambda = P Q`` and counts multinomial, ``f_hat = Q^-T N / n`` has
    covariance ``(Q^-T diag(lambda) Q^-1 - P P^T) / n``; this returns its
    trace times ``n``.  ``inf`` for a singular channel.

    References
    ----------
    LIP paper, Sec. on estimation (inversion of the channel); PAPERS.md Sec. 4.
    """
    q = np.asarray(matrix, dtype=float)
    p = np.asarray(prior, dtype=float)
    if not np.linalg.cond(q) < MAX_CONDITION:
        return float("inf")
    inv = np.linalg.inv(q)
    return float((p @ q) @ np.sum(inv ** 2, axis=1) - p @ p)


def optimal_lip_matrix(priors: Any, epsilon: float, weights: Any = None) -> np.ndarray:
    """Square channel maximizing ``sum_x w_x Q[x, x]``, eps-LIP for every given prior.

    A linear program: ``Q >= 0``, rows sum to 1, and for each prior
    ``lambda_y <= e^eps Q[x, y]`` and ``Q[x, y] <= e^eps lambda_y``.  With
    the interval's two end priors it is eps-LIP for every prior in between
    (the constraints are affine in the prior).  ``weights`` default to the
    first prior (expected probability of a truthful report).  The optimum is
    not unique and is often rank deficient (an output never used, or a
    constant channel); use :func:`lip_fallback_channel` for a channel to
    collect with.
    """
    priors = np.atleast_2d(np.asarray(priors, dtype=float))
    eps = check_epsilon("epsilon", epsilon)
    k = priors.shape[1]
    if k > MAX_LP_K:
        raise ValueError(
            f"k ({k}) must be <= {MAX_LP_K} for the eps-LIP linear program (k^2 = {k * k:,} "
            f"variables, 2 k^3 = {2 * k ** 3:,} constraint coefficients per prior); for a large "
            f"domain use UE-LIP or LH-LIP, or a prior whose every probability is >= "
            f"1/(e^eps + 1), for which RR-LIP needs no linear program")
    w = priors[0] if weights is None else np.asarray(weights, dtype=float)
    e = np.exp(min(eps, 700.0))  # beyond e^700 the constraints only forbid Q = 0
    # variable x k + y is Q[x, y]; constraint row x k + y involves Q[x, y] and
    # lambda_y = sum_z P_z Q[z, y] (columns z k + y): k + 1 coefficients, sparse
    x, y, z = np.meshgrid(np.arange(k), np.arange(k), np.arange(k), indexing="ij")
    rows, cols = (x * k + y).ravel(), (z * k + y).ravel()
    own = sparse.identity(k * k, format="csr")
    blocks = []
    for prior in priors:  # one or two priors; each adds 2 k^2 constraints
        lam = sparse.csr_matrix((np.tile(prior, k * k), (rows, cols)), shape=(k * k, k * k))
        blocks += [lam - e * own, own - e * lam]
    a_ub = sparse.vstack(blocks, format="csr")
    a_eq = sparse.kron(sparse.identity(k), np.ones((1, k)), format="csr")
    cost = -(np.eye(k) * w[:, None]).ravel()
    res = linprog(cost, A_ub=a_ub, b_ub=np.zeros(a_ub.shape[0]),
                  A_eq=a_eq, b_eq=np.ones(k), bounds=(0, 1), method="highs")
    if not res.success:
        raise ValueError(f"no eps-LIP channel found for epsilon ({eps}): {res.message}")
    q = np.clip(res.x.reshape(k, k), 0.0, None)
    return q / q.sum(axis=1, keepdims=True)


def max_grr_epsilon(priors: Any, epsilon: float) -> float:
    """Largest ``e`` such that GRR at ``e`` is eps-LIP for every prior in ``priors``.

    GRR at ``e`` has LIP level ``max_y max(ln(1 + P_y (e^e - 1)),
    -ln(P_y + (1 - P_y) e^-e))``, increasing in ``e``; it is at most ``e``
    (so the root is >= eps) and eps-LIP implies 2 eps-LDP (so it is <= 2 eps).
    """
    priors = np.atleast_2d(np.asarray(priors, dtype=float))
    eps = check_epsilon("epsilon", epsilon)

    def gap(e: float) -> float:
        return max(lip_level(grr_matrix(priors.shape[1], e), p) for p in priors) - eps

    if gap(2 * eps) <= 0:
        return 2 * eps
    # a hair inside the boundary, so the floating-point level stays <= eps
    return float(brentq(gap, eps, 2 * eps, xtol=1e-14, rtol=1e-14)) * (1 - 1e-10)


@dataclass(frozen=True)
class Fallback:
    """A full-rank eps-LIP channel from :func:`lip_fallback_channel`.

    ``matrix = (1 - t) lp + t grr``, ``grr`` is GRR at ``grr_epsilon``;
    ``variance`` is :func:`inversion_variance` under the variance prior.
    """

    matrix: np.ndarray
    t: float
    grr_epsilon: float
    variance: float


def _segment_cost(lp: np.ndarray, grr: np.ndarray, priors: np.ndarray, eps: float,
                  var_prior: np.ndarray, t: float) -> float:
    q = (1 - t) * lp + t * grr
    if any(lip_level(q, p) > eps for p in priors):  # exact check, no tolerance
        return float("inf")
    return inversion_variance(q, var_prior)


def lip_fallback_channel(priors: Any, epsilon: float, var_prior: Any = None,
                         weights: Any = None) -> Fallback:
    """Full-rank eps-LIP channel: best point of the segment LP optimum -> GRR.

    The rule: take the LP optimum ``L`` (:func:`optimal_lip_matrix`) and
    ``G`` = GRR at the largest budget that is still eps-LIP for every prior
    (:func:`max_grr_epsilon`, >= eps).  Every ``(1 - t) L + t G`` is eps-LIP
    (the eps-LIP channels of a prior are convex).  Choose the ``t`` in
    [0, 1] minimizing :func:`inversion_variance` under ``var_prior``
    (default the first prior): a grid of ``SEGMENT_GRID`` points, refined by
    bounded Brent search next to the best grid point.  Points whose exact LIP
    level exceeds eps in floating point, or with condition number above
    ``MAX_CONDITION``, are excluded; GRR at eps itself (strictly inside the
    set) is the last resort.  So the channel is full rank and its variance
    is never above GRR's at eps.

    References
    ----------
    LIP paper, Def. 1 and Thm. 3; PAPERS.md Sec. 4.
    """
    priors = np.atleast_2d(np.asarray(priors, dtype=float))
    eps = check_epsilon("epsilon", epsilon)
    var_prior = priors[0] if var_prior is None else np.asarray(var_prior, dtype=float)
    lp = optimal_lip_matrix(priors, eps, weights)
    e_grr = max_grr_epsilon(priors, eps)
    grr = grr_matrix(priors.shape[1], e_grr)
    grid = np.linspace(0.0, 1.0, SEGMENT_GRID)
    cost = [_segment_cost(lp, grr, priors, eps, var_prior, t) for t in grid]  # 1-D search
    best = int(np.argmin(cost))
    t_best, c_best = float(grid[best]), cost[best]
    if np.isfinite(c_best):
        lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
        res = minimize_scalar(lambda t: _segment_cost(lp, grr, priors, eps, var_prior, t),
                              bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
        if res.fun < c_best:
            t_best, c_best = float(res.x), float(res.fun)
        return Fallback((1 - t_best) * lp + t_best * grr, t_best, e_grr, c_best)
    base = grr_matrix(priors.shape[1], eps)  # G at eps: strictly eps-LIP
    return Fallback(base, 1.0, eps, inversion_variance(base, var_prior))


def check_channel(matrix: Any, prior: np.ndarray, epsilon: float, name: str = "matrix",
                  rtol: float = 1e-9) -> np.ndarray:
    """Validate a stored channel: ``(k, k)``, finite, ``>= 0``, rows sum to 1,
    exact LIP level under ``prior`` at most ``epsilon (1 + rtol)``."""
    k = prior.size
    try:
        q = np.asarray(matrix, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a {k} x {k} array of probabilities") from None
    if q.shape != (k, k):
        raise ValueError(f"{name} (shape {q.shape}) must have shape ({k}, {k}) for a "
                         f"prior of {k} categories")
    if not np.all(np.isfinite(q)) or np.any(q < 0):
        raise ValueError(f"{name} must hold finite probabilities >= 0")
    worst = float(np.max(np.abs(q.sum(axis=1) - 1)))
    if worst > 1e-9:
        raise ValueError(f"{name} rows must sum to 1 (largest deviation {worst:.3g})")
    level = lip_level(q, prior)
    if level > epsilon * (1 + rtol):
        raise ValueError(f"{name} has LIP level {level:.6g} under its prior, above "
                         f"epsilon ({epsilon:.6g})")
    return q
