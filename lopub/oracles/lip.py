"""Local information privacy (LIP): prior-aware perturbation and Bayesian estimation.

A channel ``Q[x, y] = P(Y = y | X = x)`` is eps-LIP for a prior ``P`` on X
when ``e^-eps <= lambda_y / Q[x, y] <= e^eps`` for all x, y, with
``lambda_y = sum_x P_x Q[x, y]``.  eps-LDP implies eps-LIP and eps-LIP
implies 2 eps-LDP.  The prior must be public knowledge supplied by the user
(e.g. last year's census); it must not be estimated from the data being
collected.

Estimators.  ``method="bayes"`` is the paper's posterior mean
``f_k = (1/n) sum_i P(X_i = k | Y_i)``: it is unbiased **only when the data
follow the prior** (otherwise it is pulled toward the prior).
``method="invert"`` solves ``Q^T f = E[counts] / n``: unbiased for any data
when the channel is invertible (every channel lopub builds is; a singular or
numerically rank-deficient channel raises ``ValueError``).  The channel
checks, the linear program and the full-rank fallback live in
:mod:`lopub.oracles.lip_channel`.

References
----------
Jiang, Li, Tandon, "Local Information Privacy and Its Application to
Privacy-Preserving Data Aggregation", IEEE TDSC 2022 (LIP paper): Def. 1,
Thm. 3 (RR-LIP), Thm. 4 (UE-LIP), Sec. on LH-LIP, Prop. 2 (bounded priors).
PAPERS.md Sec. 4 for the corrections (validity of RR-LIP, worst case of
Prop. 2).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from lopub._util import check_int, check_open_unit, resolve_rng
from lopub.oracles.base import check_epsilon, check_values
from lopub.oracles.lip_channel import (
    MAX_CONDITION,
    check_channel,
    check_prior,
    lip_fallback_channel,
    lip_level,
    optimal_lip_matrix,
)
from lopub.oracles.oneshot import (
    aggregate_unary,
    draw_hash_seeds,
    lh_hash,
    perturb_unary,
    ue_output_matrix,
)

__all__ = ["ChannelLIP", "RRLIP", "BinaryBoundedLIP", "UELIP", "LHLIP", "check_prior",
           "lip_level", "optimal_lip_matrix"]

ON_INVALID = ("raise", "lp")
_CHUNK = 1 << 16


def _sample_rows(matrix: np.ndarray, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw ``y ~ matrix[x]`` for every user (inverse CDF, chunked over users)."""
    cdf = np.cumsum(matrix, axis=1)
    cdf[:, -1] = 1.0
    out = np.empty(values.shape[0], dtype=np.int64)
    for start in range(0, values.shape[0], _CHUNK):  # chunks over users
        x = values[start:start + _CHUNK]
        u = rng.random(x.shape[0])
        out[start:start + _CHUNK] = np.count_nonzero(u[:, None] >= cdf[x], axis=1)
    return np.minimum(out, matrix.shape[1] - 1)


class _MatrixLIP:
    """A finite channel with Bayesian and inversion estimators."""

    prior: np.ndarray
    epsilon: float
    matrix: np.ndarray

    @property
    def k(self) -> int:
        return self.prior.size

    def transition_matrix(self) -> np.ndarray:
        """The channel ``Q[x, y]``."""
        return self.matrix.copy()

    def perturb(self, values: Any, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Perturb codes of ``n`` users; int64 ``(n,)``."""
        values = check_values(values, self.k)
        return _sample_rows(self.matrix, values, resolve_rng(rng))

    def aggregate(self, reports: Any) -> np.ndarray:
        """How often each output was reported."""
        reports = check_values(reports, self.matrix.shape[1], "reports")
        return np.bincount(reports, minlength=self.matrix.shape[1]).astype(float)

    def estimate(self, reports: Any, method: str = "bayes") -> np.ndarray:
        """Frequencies: posterior mean (``"bayes"``, unbiased only if the data
        follow the prior) or matrix inversion (``"invert"``, unbiased for any
        data; ``ValueError`` if the channel is singular)."""
        counts = self.aggregate(reports)
        return self.estimate_from_counts(counts, int(counts.sum()), method)

    def estimate_from_counts(self, counts: Any, n: int, method: str = "bayes") -> np.ndarray:
        """Estimate from output counts; see :meth:`estimate`."""
        counts = np.asarray(counts, dtype=float)
        if n < 1:
            raise ValueError(f"n ({n}) must be >= 1 (no reports to estimate from)")
        if method == "bayes":
            lam = self.prior @ self.matrix
            post = (self.prior[:, None] * self.matrix) / np.where(lam > 0, lam, 1.0)[None, :]
            return post @ counts / n
        if method == "invert":
            self._check_invertible()
            return np.linalg.solve(self.matrix.T, counts / n)
        raise ValueError(f"method ({method!r}) must be 'bayes' or 'invert'")

    def _check_invertible(self) -> None:
        cond = np.linalg.cond(self.matrix)
        if not cond <= MAX_CONDITION:
            raise ValueError(
                f"method ('invert') needs an invertible channel: its condition number "
                f"({cond:.3g}) exceeds {MAX_CONDITION:.0e}, so Q^T f = counts / n has no "
                f"unique solution; use method='bayes'")

    def lip_level(self) -> float:
        """Exact LIP level of the channel under the prior."""
        return lip_level(self.matrix, self.prior)

    def variance(self, n: int, f: Any = None) -> np.ndarray:
        """Variance of each ``method="invert"`` estimate for a fixed dataset of
        ``n`` users with frequencies ``f`` (default the prior): the diagonal of
        ``Q^-T (diag(f Q) - Q^T diag(f) Q) Q^-1 / n``."""
        n = check_int("n", n, 1)
        f = self.prior if f is None else np.asarray(f, dtype=float)
        self._check_invertible()
        inv = np.linalg.inv(self.matrix)
        cov = np.diag(f @ self.matrix) - self.matrix.T @ (f[:, None] * self.matrix)
        return np.einsum("yi,yz,zi->i", inv, cov, inv) / n


class ChannelLIP(_MatrixLIP):
    """A given square channel, checked to be eps-LIP under ``prior``.

    The server side of a collection whose clients used ``matrix`` (e.g. the
    channel stored in a reports file): ``matrix`` must be ``(k, k)`` with
    ``k = len(prior)``, finite, non-negative, rows summing to 1 (within
    1e-9), and its exact LIP level under ``prior`` at most
    ``epsilon (1 + rtol)``; otherwise ``ValueError``.

    References
    ----------
    LIP paper, Def. 1.
    """

    def __init__(self, prior: Any, epsilon: float, matrix: Any, *, rtol: float = 1e-9,
                 name: str = "matrix") -> None:
        self.prior = check_prior(prior)
        self.epsilon = check_epsilon("epsilon", epsilon)
        self.matrix = check_channel(matrix, self.prior, self.epsilon, name, rtol)
        self.mechanism = "given"


def _check_on_invalid(on_invalid: str) -> str:
    if on_invalid not in ON_INVALID:
        raise ValueError(f"on_invalid ({on_invalid!r}) must be one of {ON_INVALID}")
    return on_invalid


class RRLIP(_MatrixLIP):
    """RR-LIP: report ``x`` w.p. ``1 - e^-eps``, else a draw from the prior.

    Valid only when ``min_k P_k >= 1 / (e^eps + 1)`` (the paper omits this:
    at ``P = (0.1, 0.2, 0.7)``, ``eps = 1`` the true level is 1.90).  With
    ``on_invalid="raise"`` an invalid prior raises ``ValueError``; with
    ``"lp"`` the full-rank eps-LIP channel of
    :func:`~lopub.oracles.lip_channel.lip_fallback_channel` is used: the
    point of the segment from the LP optimum to GRR that minimizes the
    inversion variance under the prior (never worse than GRR at eps).
    ``self.mechanism`` says which (``"rr"`` or ``"lp"``); ``self.fallback``
    holds the fallback's details (``None`` for ``"rr"``).  The LP optimum is
    not unique across solvers and versions: a server must use the channel
    the clients used (stored with the reports), never re-solve.

    References
    ----------
    LIP paper, Thm. 3; PAPERS.md Sec. 4 (validity condition).
    """

    def __init__(self, prior: Any, epsilon: float, on_invalid: str = "raise") -> None:
        self.prior = check_prior(prior)
        self.epsilon = check_epsilon("epsilon", epsilon)
        _check_on_invalid(on_invalid)
        keep = np.exp(-self.epsilon)
        rr = (1 - keep) * np.eye(self.k) + keep * self.prior[None, :]
        bound = 1 / (np.exp(self.epsilon) + 1)
        self.fallback = None
        if self.prior.min() >= bound:
            self.matrix, self.mechanism = rr, "rr"
        elif on_invalid == "raise":
            raise ValueError(
                f"prior minimum ({self.prior.min():.6g}) must be >= 1/(e^eps + 1) = {bound:.6g} "
                f"for RR-LIP at epsilon ({self.epsilon}); its true LIP level would be "
                f"{lip_level(rr, self.prior):.4g}. Use on_invalid='lp' for a fallback channel")
        else:
            self.fallback = lip_fallback_channel(self.prior, self.epsilon)
            self.matrix, self.mechanism = self.fallback.matrix, "lp"


class BinaryBoundedLIP(_MatrixLIP):
    """Binary channel that is eps-LIP for every prior ``P(X = 1)`` in ``[lower, upper]``.

    Prop. 2's ``q01 = upper / (upper - lower + e^eps)``,
    ``q10 = (1 - lower) / (upper - lower + e^eps)`` is checked on the whole
    interval (the constraints are affine in the prior, so the end points are
    the worst case); the paper does not guarantee it.  If the check fails,
    ``on_invalid="raise"`` raises and ``"lp"`` uses the full-rank fallback of
    :func:`~lopub.oracles.lip_channel.lip_fallback_channel` with the LIP
    constraints at both end points (LP optimum with unit weights, segment to
    GRR, variance under ``prior``).  ``prior`` (``P(X = 1)``, default the
    midpoint) is what the Bayesian estimator assumes.

    References
    ----------
    LIP paper, Prop. 2; PAPERS.md Sec. 4.
    """

    def __init__(self, lower: float, upper: float, epsilon: float, *,
                 prior: float | None = None, on_invalid: str = "raise") -> None:
        lower, upper = check_open_unit("lower", lower), check_open_unit("upper", upper)
        if not lower <= upper:
            raise ValueError(f"lower ({lower}) must be <= upper ({upper})")
        self.lower, self.upper = lower, upper
        self.epsilon = check_epsilon("epsilon", epsilon)
        _check_on_invalid(on_invalid)
        p1 = (lower + upper) / 2 if prior is None else check_open_unit("prior", prior)
        self.prior = np.array([1 - p1, p1])
        den = upper - lower + np.exp(self.epsilon)
        q01, q10 = upper / den, (1 - lower) / den
        self.matrix, self.mechanism = np.array([[1 - q01, q01], [q10, 1 - q10]]), "prop2"
        self.fallback = None
        worst = self.worst_case_level()
        if worst > self.epsilon * (1 + 1e-9):
            if on_invalid == "raise":
                raise ValueError(
                    f"Prop. 2 channel has worst-case LIP level {worst:.6g} > epsilon "
                    f"({self.epsilon}) over priors [{lower}, {upper}]; use on_invalid='lp'")
            ends = [[1 - lower, lower], [1 - upper, upper]]
            self.fallback = lip_fallback_channel(ends, self.epsilon, self.prior, [1.0, 1.0])
            self.matrix, self.mechanism = self.fallback.matrix, "lp"

    def worst_case_level(self) -> float:
        """Largest LIP level over priors in ``[lower, upper]`` (end points and a grid)."""
        grid = np.linspace(self.lower, self.upper, 65)
        return max(lip_level(self.matrix, [1 - p, p]) for p in grid)  # 65 priors, not users


class UELIP:
    """UE-LIP: unary encoding with ``P(1 -> 0) = 1/2`` and
    ``P(0 -> 1) = (1 - Pmin) / (e^eps - 2 Pmin + 1)``.

    References
    ----------
    LIP paper, Thm. 4 (verified exact on enumerated outputs).
    """

    def __init__(self, prior: Any, epsilon: float) -> None:
        self.prior = check_prior(prior)
        self.epsilon = check_epsilon("epsilon", epsilon)
        pmin = self.prior.min()
        self.p, self.q = 0.5, float((1 - pmin) / (np.exp(self.epsilon) - 2 * pmin + 1))

    @property
    def k(self) -> int:
        return self.prior.size

    def perturb(self, values: Any, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Bits ``(n, k)`` of ``n`` users."""
        values = check_values(values, self.k)
        return perturb_unary(values, self.k, self.p, self.q, resolve_rng(rng))

    def transition_matrix(self) -> np.ndarray:
        """``k x 2^k`` channel over all bit vectors (k <= 12)."""
        return ue_output_matrix(self.k, self.p, self.q)

    def estimate(self, reports: Any, method: str = "bayes") -> np.ndarray:
        """Posterior mean (``"bayes"``; unbiased only if the data follow the
        prior) or the unbiased UE estimator (``"invert"``)."""
        bits = np.asarray(reports).astype(bool)
        n = bits.shape[0]
        if n < 1:
            raise ValueError("reports (empty) must hold at least one report")
        if method == "invert":
            return (aggregate_unary(bits, self.k) - n * self.q) / (n * (self.p - self.q))
        if method != "bayes":
            raise ValueError(f"method ({method!r}) must be 'bayes' or 'invert'")
        lr1, lr0 = np.log(self.p / self.q), np.log((1 - self.p) / (1 - self.q))
        total = np.zeros(self.k)
        for start in range(0, n, _CHUNK):  # chunks over users
            # log P(Y | x) - sum_j log P(Y_j | 0): only bit x differs
            logpost = np.log(self.prior)[None, :] + np.where(bits[start:start + _CHUNK], lr1, lr0)
            logpost -= logpost.max(axis=1, keepdims=True)
            post = np.exp(logpost)
            total += (post / post.sum(axis=1, keepdims=True)).sum(axis=0)
        return total / n


class LHLIP:
    """LH-LIP: per-user universal hash to ``g`` buckets, then RR-LIP on the hashed prior.

    Output is ``h(x)`` w.p. ``1 - e^-eps``, else ``h(X')`` with ``X' ~ prior``
    (a draw from the hashed prior).  Each user's hash must give every bucket
    prior mass >= ``1/(e^eps + 1)``; seeds failing this are redrawn (the
    choice does not depend on the user's value).  Reports are int64
    ``(n, 3)`` rows ``(a, b, y)`` with the hash family of
    :mod:`lopub.oracles.oneshot`.

    References
    ----------
    LIP paper, LH-LIP; PAPERS.md Sec. 4.
    """

    def __init__(self, prior: Any, epsilon: float, g: int = 2, max_redraws: int = 200) -> None:
        self.prior = check_prior(prior)
        self.epsilon = check_epsilon("epsilon", epsilon)
        g = check_int("g", g, 2)
        if g / (np.exp(self.epsilon) + 1) > 1:
            raise ValueError(f"g ({g}) must be <= e^eps + 1 = {np.exp(self.epsilon) + 1:.4g}: "
                             f"otherwise no bucket mass can reach 1/(e^eps + 1)")
        self.g, self.max_redraws = int(g), max_redraws

    @property
    def k(self) -> int:
        return self.prior.size

    def hashed_priors(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``(c, g)`` prior mass of each bucket under each user's hash."""
        h = lh_hash(a, b, np.arange(self.k), self.g)
        rows = np.repeat(np.arange(h.shape[0]), self.k) * self.g + h.ravel()
        mass = np.bincount(rows, weights=np.tile(self.prior, h.shape[0]),
                           minlength=h.shape[0] * self.g)
        return mass.reshape(-1, self.g)

    def _valid_seeds(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        a, b = draw_hash_seeds(n, rng=rng)
        bound = 1 / (np.exp(self.epsilon) + 1)
        bad = self.hashed_priors(a, b).min(axis=1) < bound
        for _ in range(self.max_redraws):  # rejection rounds, each vectorized over users
            if not bad.any():
                return a, b
            a[bad], b[bad] = draw_hash_seeds(int(bad.sum()), rng=rng)
            bad[bad] = self.hashed_priors(a[bad], b[bad]).min(axis=1) < bound
        raise ValueError(f"no valid hash found for g ({self.g}) and this prior at epsilon "
                         f"({self.epsilon}); use a smaller g or RR-LIP")

    def perturb(self, values: Any, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Rows ``(a, b, y)`` for ``n`` users."""
        values = check_values(values, self.k)
        rng = resolve_rng(rng)
        a, b = self._valid_seeds(values.shape[0], rng)
        keep = rng.random(values.shape[0]) < 1 - np.exp(-self.epsilon)
        other = rng.choice(self.k, size=values.shape[0], p=self.prior)
        src = np.where(keep, values, other)
        y = ((a.astype(np.uint64) * src.astype(np.uint64) + b.astype(np.uint64))
             % np.uint64((1 << 31) - 1) % np.uint64(self.g)).astype(np.int64)
        return np.column_stack([a, b, y])

    def transition_matrix(self, a: int, b: int) -> np.ndarray:
        """``k x g`` channel for the fixed hash seed ``(a, b)``."""
        h = lh_hash(np.array([a]), np.array([b]), np.arange(self.k), self.g)[0]
        mass = np.bincount(h, weights=self.prior, minlength=self.g)
        keep = np.exp(-self.epsilon)
        rr = (1 - keep) * np.eye(self.g) + keep * mass[None, :]
        return rr[h]

    def estimate(self, reports: Any) -> np.ndarray:
        """Posterior mean ``(1/n) sum_i P(X_i = k | a_i, b_i, y_i)``; unbiased
        only when the data follow the prior."""
        reports = np.asarray(reports, dtype=np.int64)
        if reports.ndim != 2 or reports.shape[1] != 3 or reports.shape[0] < 1:
            raise ValueError(f"reports (shape {reports.shape}) must be rows (a, b, y), n >= 1")
        keep, total = np.exp(-self.epsilon), np.zeros(self.k)
        for start in range(0, reports.shape[0], _CHUNK):  # chunks over users
            blk = reports[start:start + _CHUNK]
            h = lh_hash(blk[:, 0], blk[:, 1], np.arange(self.k), self.g)
            mass_y = np.take_along_axis(self.hashed_priors(blk[:, 0], blk[:, 1]), blk[:, 2:3], 1)
            lik = np.where(h == blk[:, 2:3], 1 - (1 - mass_y) * keep, mass_y * keep)
            post = self.prior[None, :] * lik
            total += (post / post.sum(axis=1, keepdims=True)).sum(axis=0)
        return total / reports.shape[0]
