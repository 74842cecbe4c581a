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
from lopub.oracles.base import check_counts, check_frequencies, check_values
from lopub.oracles.lip_channel import (
    check_lip_epsilon,
    MAX_CONDITION,
    FrozenMechanism,
    bayes_variance,
    check_channel,
    check_estimator,
    check_prior,
    lip_fallback_channel,
    lip_level,
    optimal_lip_matrix,
)
from lopub.oracles.lip_encoded import LHLIP, UELIP, sample_rows as _sample_rows
from lopub.oracles.measure import MeasureMixin
from lopub.oracles.oneshot import grr_probabilities

__all__ = ["ChannelLIP", "RRLIP", "BinaryBoundedLIP", "UELIP", "LHLIP", "check_prior",
           "lip_level", "optimal_lip_matrix"]

ON_INVALID = ("raise", "lp")


class _MatrixLIP(FrozenMechanism, MeasureMixin):
    """A finite channel with Bayesian and inversion estimators.

    ``estimator`` (set at construction) is what :meth:`estimate`,
    :meth:`variance` and :meth:`measure` use: ``"bayes"`` (posterior mean,
    unbiased only if the data follow the prior) or ``"invert"`` (unbiased
    for any data).
    """

    name = "matrix-lip"
    privacy = "lip"
    prior: np.ndarray
    epsilon: float
    matrix: np.ndarray
    estimator: str = "bayes"

    @property
    def k(self) -> int:
        return self.prior.size

    @property  # the mixin's class attribute, computed here from the estimator
    def variance_note(self) -> str:  # type: ignore[override]
        if self.estimator == "invert":
            return "exact fixed-dataset variance of the inversion at the post-processed estimate"
        return ("exact fixed-dataset variance of the posterior mean at the post-processed "
                "estimate (the estimate is biased toward the prior unless the data follow it)")

    def params(self) -> dict:
        """Public parameters (JSON-serializable): the channel the clients use.

        Rebuild the mechanism with :func:`lopub.oracles.from_params` (the bounded binary
        channel adds its interval, ``lower`` and ``upper``).
        """
        return {"protocol": self.name, "epsilon": self.epsilon, "prior": self.prior.tolist(),
                "estimator": self.estimator, "mechanism": getattr(self, "mechanism", None),
                "matrix": self.matrix.tolist()}

    def transition_matrix(self) -> np.ndarray:
        """The channel ``Q[x, y]``."""
        return self.matrix.copy()

    def perturb(self, values: Any, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Perturb codes of ``n`` users; int64 ``(n,)``."""
        values = check_values(values, self.k)
        return _sample_rows(self.matrix, values, resolve_rng(rng))

    def aggregate(self, reports: Any) -> np.ndarray:
        """How often each output was reported (sufficient for both estimators)."""
        reports = check_values(reports, self.matrix.shape[1], "reports")
        return np.bincount(reports, minlength=self.matrix.shape[1]).astype(float)

    def n_reports(self, reports: Any) -> int:
        """Number of reports."""
        return int(np.asarray(reports).shape[0])

    def estimate(self, reports: Any, method: str | None = None) -> np.ndarray:
        """Frequencies: posterior mean (``"bayes"``, unbiased only if the data
        follow the prior) or matrix inversion (``"invert"``, unbiased for any
        data; ``ValueError`` if the channel is singular).  ``method``
        overrides the ``estimator`` chosen at construction."""
        counts = self.aggregate(reports)
        return self.estimate_from_counts(counts, int(counts.sum()), method)

    def estimate_from_counts(self, counts: Any, n: int, method: str | None = None) -> np.ndarray:
        """Estimate from output counts; see :meth:`estimate`."""
        counts, n = check_counts(counts, self.matrix.shape[1], n)  # one count per output
        method = self.estimator if method is None else method
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

    def variance(self, n: int, f: Any = None, method: str | None = None) -> np.ndarray:
        """Variance of each estimate for a fixed dataset of ``n`` users with
        frequencies ``f`` (default the prior).

        ``"invert"``: the diagonal of ``Q^-T (diag(f Q) - Q^T diag(f) Q) Q^-1 / n``;
        ``"bayes"``: :func:`~lopub.oracles.lip_channel.bayes_variance`.
        ``method`` defaults to the ``estimator`` chosen at construction.
        """
        n = check_int("n", n, 1)
        f = self.prior if f is None else check_frequencies(f, self.k, scalar=False)
        method = check_estimator("method", self.estimator if method is None else method)
        if method == "bayes":
            return bayes_variance(self.matrix, self.prior, f, n)
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

    name = "channel-lip"

    def __init__(self, prior: Any, epsilon: float, matrix: Any, *, rtol: float = 1e-9,
                 name: str = "matrix", estimator: str = "bayes") -> None:
        self.estimator = check_estimator("estimator", estimator)
        self.prior = check_prior(prior)
        self.epsilon = check_lip_epsilon(epsilon)
        self.matrix = check_channel(matrix, self.prior, self.epsilon, name, rtol)
        self.mechanism = "given"
        self._freeze()


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

    name = "rr-lip"

    def __init__(self, prior: Any, epsilon: float, on_invalid: str = "raise", *,
                 estimator: str = "bayes") -> None:
        self.estimator = check_estimator("estimator", estimator)
        self.prior = check_prior(prior)
        self.epsilon = check_lip_epsilon(epsilon)
        _check_on_invalid(on_invalid)
        keep = np.exp(-self.epsilon)
        rr = (1 - keep) * np.eye(self.k) + keep * self.prior[None, :]
        bound = grr_probabilities(self.epsilon, 2)[1]  # 1 / (e^eps + 1), no overflow
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
        self._freeze()


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

    name = "binary-lip"

    def __init__(self, lower: float, upper: float, epsilon: float, *,
                 prior: float | None = None, on_invalid: str = "raise",
                 estimator: str = "bayes") -> None:
        self.estimator = check_estimator("estimator", estimator)
        lower, upper = check_open_unit("lower", lower), check_open_unit("upper", upper)
        if not lower <= upper:
            raise ValueError(f"lower ({lower}) must be <= upper ({upper})")
        self.lower, self.upper = lower, upper
        self.epsilon = check_lip_epsilon(epsilon)
        _check_on_invalid(on_invalid)
        p1 = (lower + upper) / 2 if prior is None else check_open_unit("prior", prior)
        self.prior = np.array([1 - p1, p1])
        tail = np.exp(-self.epsilon)  # q = x / (upper - lower + e^eps), times e^-eps
        den = 1 + (upper - lower) * tail
        q01, q10 = upper * tail / den, (1 - lower) * tail / den
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
        self._freeze()

    def params(self) -> dict:
        """Public parameters (JSON-serializable): the channel and its interval of priors
        ``lower``, ``upper`` (what :func:`lopub.oracles.from_params` needs to rebuild it)."""
        return {**super().params(), "lower": self.lower, "upper": self.upper}

    def worst_case_level(self) -> float:
        """Largest LIP level over priors in ``[lower, upper]`` (end points and a grid)."""
        grid = np.linspace(self.lower, self.upper, 65)
        return max(lip_level(self.matrix, [1 - p, p]) for p in grid)  # 65 priors, not users
