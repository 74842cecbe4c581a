"""LIP mechanisms with encoded reports: UE-LIP (bit vectors) and LH-LIP (hashed values).

See :mod:`lopub.oracles.lip` for the definition of LIP, the estimators and
the matrix mechanisms; both classes here satisfy
:class:`~lopub.oracles.protocol.FrequencyOracle`.  Their exact float
parameters (``ue_lip_bounds``, ``ue_lip_q``, ``lh_keep_threshold``) moved to
:mod:`lopub.oracles.lip_bounds` (importing them from here still works); LH-LIP's
hash family is :mod:`lopub.oracles.local_hashing`.

References
----------
Jiang, Li, Tandon, "Local Information Privacy and Its Application to
Privacy-Preserving Data Aggregation", IEEE TDSC 2022 (LIP paper), Thm. 4
(UE-LIP) and LH-LIP; PAPERS.md Sec. 4.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from lopub._util import check_int, resolve_rng
from lopub.oracles.base import (MAX_ENUM_K, UE_CHUNK_CELLS, check_counts, check_frequencies,
                                check_values, support_variance)
from lopub.oracles.lip_channel import (
    FrozenMechanism,
    bayes_variance,
    check_estimator,
    check_lip_epsilon,
    check_prior,
)
from lopub.oracles.lip_bounds import (
    lh_keep_threshold,
    ue_lip_bounds,
    ue_lip_q,
)
from lopub.oracles.lip_split import check_split_budget
from lopub.oracles.local_hashing import HASH_PRIME, check_hashed_reports, draw_hash_seeds, lh_hash
from lopub.oracles.measure import MeasureMixin
from lopub.oracles.oneshot import (
    aggregate_unary,
    check_bits,
    grr_probabilities,
    perturb_unary,
    ue_output_matrix,
)

#: the public names, with the exact-parameter helpers re-exported from :mod:`lopub.oracles.lip_bounds`
__all__ = ["UELIP", "LHLIP", "LH_LIP_G", "LH_VARIANCE_SEEDS", "sample_rows",
           "lh_keep_threshold", "ue_lip_bounds", "ue_lip_q"]

def _chunk(k: int) -> int:
    """Users per block when a block holds a few ``(users, k)`` arrays: at most
    :data:`~lopub.oracles.base.UE_CHUNK_CELLS` cells, whatever ``k``."""
    return max(1, UE_CHUNK_CELLS // k)

#: Valid hash seeds (fixed, drawn from seed 0) averaged over by :meth:`LHLIP.variance`.
LH_VARIANCE_SEEDS = 4096
#: buckets of LH-LIP's hash unless given (what ``lopub collect --protocol lh-lip`` uses)
LH_LIP_G = 2
_BAYES_NOTE = ("exact fixed-dataset variance of the posterior mean at the post-processed "
               "estimate (the estimate is biased toward the prior unless the data follow it)")


def sample_rows(matrix: np.ndarray, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw ``y ~ matrix[x]`` for every user (inverse CDF, chunked over users)."""
    cdf = np.cumsum(matrix, axis=1)
    cdf[:, -1] = 1.0
    out = np.empty(values.shape[0], dtype=np.int64)
    step = _chunk(matrix.shape[1])
    for start in range(0, values.shape[0], step):  # chunks over users
        x = values[start:start + step]
        u = rng.random((x.shape[0],))
        out[start:start + step] = np.count_nonzero(u[:, None] >= cdf[x], axis=1)
    return np.minimum(out, matrix.shape[1] - 1)


def _posterior_sums(logpost: np.ndarray) -> np.ndarray:
    """Sum over rows of the normalized ``exp(logpost)`` (one posterior per row)."""
    logpost = logpost - logpost.max(axis=1, keepdims=True)
    post = np.exp(logpost)
    return (post / post.sum(axis=1, keepdims=True)).sum(axis=0)


class UELIP(FrozenMechanism, MeasureMixin):
    """UE-LIP: unary encoding with ``P(1 -> 0) = 1/2`` and
    ``P(0 -> 1) = (1 - Pmin) / (e^eps - 2 Pmin + 1)``.

    ``estimator``: ``"bayes"`` (posterior mean; unbiased only if the data
    follow the prior) or ``"invert"`` (the unbiased UE estimator).

    References
    ----------
    LIP paper, Thm. 4 (verified exact on enumerated outputs).
    """

    name = "ue-lip"
    privacy = "lip"

    def __init__(self, prior: Any, epsilon: float, *, estimator: str = "bayes") -> None:
        self.estimator = check_estimator("estimator", estimator)
        self.prior = check_prior(prior)
        self.epsilon = check_lip_epsilon(epsilon)
        self.p, self.q = 0.5, ue_lip_q(self.prior, self.epsilon)
        self._freeze()

    @property
    def k(self) -> int:
        return self.prior.size

    @property  # the mixin's class attribute, computed here from the estimator
    def variance_note(self) -> str:  # type: ignore[override]
        return "exact fixed-dataset variance at the post-processed estimate" \
            if self.estimator == "invert" else _BAYES_NOTE

    def params(self) -> dict:
        """Public parameters (JSON-serializable); :func:`lopub.oracles.from_params` rebuilds
        the object from them."""
        return {"protocol": self.name, "epsilon": self.epsilon, "prior": self.prior.tolist(),
                "estimator": self.estimator}

    def perturb(self, values: Any, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Bits ``(n, k)`` of ``n`` users."""
        values = check_values(values, self.k)
        return perturb_unary(values, self.k, self.p, self.q, resolve_rng(rng))

    def transition_matrix(self) -> np.ndarray:
        """``k x 2^k`` channel over all bit vectors (k <= 12)."""
        return ue_output_matrix(self.k, self.p, self.q)

    def n_reports(self, reports: Any) -> int:
        """Number of reports."""
        return int(np.asarray(reports).shape[0])

    def aggregate(self, reports: Any, method: str | None = None) -> np.ndarray:
        """Support counts (``"invert"``) or summed posteriors (``"bayes"``)."""
        method = check_estimator("method", self.estimator if method is None else method)
        bits = check_bits(reports, self.k).astype(bool, copy=False)
        if method == "invert":
            return aggregate_unary(bits, self.k)
        lr1, lr0 = np.log(self.p / self.q), np.log((1 - self.p) / (1 - self.q))
        total, step = np.zeros(self.k), _chunk(self.k)
        for start in range(0, bits.shape[0], step):  # chunks over users
            # log P(Y | x) - sum_j log P(Y_j | 0): only bit x differs
            lik = np.where(bits[start:start + step], lr1, lr0)
            total += _posterior_sums(np.log(self.prior)[None, :] + lik)
        return total

    def estimate_from_counts(self, counts: Any, n: int, method: str | None = None) -> np.ndarray:
        """Frequencies from :meth:`aggregate`'s output of ``n`` reports."""
        method = check_estimator("method", self.estimator if method is None else method)
        counts, n = check_counts(counts, self.k, n)
        if method == "invert":
            return (counts - n * self.q) / (n * (self.p - self.q))
        return counts / n

    def estimate(self, reports: Any, method: str | None = None) -> np.ndarray:
        """Posterior mean (``"bayes"``; unbiased only if the data follow the
        prior) or the unbiased UE estimator (``"invert"``); ``method``
        overrides the ``estimator`` chosen at construction."""
        n = self.n_reports(reports)
        if n < 1:
            raise ValueError("reports (empty) must hold at least one report")
        return self.estimate_from_counts(self.aggregate(reports, method), n, method)

    def variance(self, n: int, f: Any = None, method: str | None = None) -> np.ndarray:
        """Per-value variance for ``n`` users with frequencies ``f`` (default the prior).

        ``"invert"``: the support-count variance; ``"bayes"``: exact by
        enumerating the ``2^k`` outputs (``k <= 12``, else ``ValueError``).
        """
        n = check_int("n", n, 1)
        method = check_estimator("method", self.estimator if method is None else method)
        f = self.prior if f is None else check_frequencies(f, self.k, scalar=False)
        if method == "invert":
            return np.asarray(support_variance(n, self.p, self.q, f))
        if self.k > MAX_ENUM_K:
            raise ValueError(f"k ({self.k}) must be <= {MAX_ENUM_K} for the variance of the "
                             f"Bayesian UE-LIP estimator (2^k outputs); use estimator='invert'")
        return bayes_variance(self.transition_matrix(), self.prior, f, n)


class LHLIP(FrozenMechanism, MeasureMixin):
    """LH-LIP: per-user universal hash to ``g`` buckets, then RR-LIP on the hashed prior.

    Output is ``h(x)`` w.p. ``1 - e^-eps``, else ``h(X')`` with ``X' ~ prior``
    (a draw from the hashed prior).  Each user's hash must give every bucket
    prior mass >= ``1/(e^eps + 1)``; seeds failing this are redrawn (the
    choice does not depend on the user's value).  Reports are int64
    ``(n, 3)`` rows ``(a, b, y)`` with the hash family of
    :mod:`lopub.oracles.local_hashing`.  The estimator is the posterior mean
    (``"bayes"``), unbiased only when the data follow the prior.

    References
    ----------
    LIP paper, LH-LIP; PAPERS.md Sec. 4.
    """

    name = "lh-lip"
    privacy = "lip"
    estimator = "bayes"
    variance_note = (_BAYES_NOTE + f"; averaged over {LH_VARIANCE_SEEDS} fixed valid hash "
                     f"seeds (numerical approximation of the average over all seeds)")

    def __init__(self, prior: Any, epsilon: float, g: int = LH_LIP_G, max_redraws: int = 200) -> None:
        self.prior = check_prior(prior)
        self.epsilon = check_lip_epsilon(epsilon)
        g = check_int("g", g, 2)
        if np.log(g - 1) > self.epsilon:  # g > e^eps + 1, without overflowing e^eps
            raise ValueError(f"g ({g}) must be <= e^eps + 1 = {np.exp(self.epsilon) + 1:.4g}: "
                             f"otherwise no bucket mass can reach 1/(e^eps + 1)")
        self.g, self.max_redraws = int(g), max_redraws
        check_split_budget(self.prior, self.epsilon, self.g, grr_probabilities(self.epsilon, 2)[1])
        self._variance_seeds: tuple | None = None  # a private cache, filled on first use
        self._freeze()

    @property
    def k(self) -> int:
        return self.prior.size

    def params(self) -> dict:
        """Public parameters (JSON-serializable); :func:`lopub.oracles.from_params` rebuilds
        the object from them."""
        return {"protocol": self.name, "epsilon": self.epsilon, "prior": self.prior.tolist(),
                "g": self.g, "estimator": self.estimator}

    def hashed_priors(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``(c, g)`` prior mass of each bucket under each user's hash (chunked over users)."""
        a, b = np.asarray(a), np.asarray(b)
        out = np.empty((a.shape[0], self.g))
        step = _chunk(self.k)
        for start in range(0, a.shape[0], step):  # chunks over users
            h = lh_hash(a[start:start + step], b[start:start + step], np.arange(self.k), self.g)
            rows = np.repeat(np.arange(h.shape[0]), self.k) * self.g + h.ravel()
            out[start:start + step] = np.bincount(
                rows, weights=np.tile(self.prior, h.shape[0]),
                minlength=h.shape[0] * self.g).reshape(-1, self.g)
        return out

    def _valid_seeds(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        a, b = draw_hash_seeds(n, rng=rng)
        bound = grr_probabilities(self.epsilon, 2)[1]  # 1 / (e^eps + 1)
        bad = self.hashed_priors(a, b).min(axis=1) < bound
        for _ in range(self.max_redraws):  # rejection rounds, each vectorized over users
            if not bad.any():
                return a, b
            a[bad], b[bad] = draw_hash_seeds(int(bad.sum()), rng=rng)
            bad[bad] = self.hashed_priors(a[bad], b[bad]).min(axis=1) < bound
        raise ValueError(f"no valid hash found in {self.max_redraws} redraws for g ({self.g}) "
                         f"and this prior at epsilon ({self.epsilon}): some split of the values "
                         f"gives every bucket mass >= 1/(e^eps + 1) = {bound:.6g}, but too few "
                         f"hashes find one; use a larger epsilon, "
                         + ("a smaller g, " if self.g > 2 else "") + "RR-LIP or UE-LIP")

    def perturb(self, values: Any, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Rows ``(a, b, y)`` for ``n`` users."""
        values = check_values(values, self.k)
        rng = resolve_rng(rng)
        a, b = self._valid_seeds(values.shape[0], rng)
        keep = rng.random(values.shape[0]) < lh_keep_threshold(self.epsilon)
        other = rng.choice(self.k, size=values.shape[0], p=self.prior)
        src = np.where(keep, values, other)
        y = ((a.astype(np.uint64) * src.astype(np.uint64) + b.astype(np.uint64))
             % np.uint64(HASH_PRIME) % np.uint64(self.g)).astype(np.int64)
        return np.column_stack([a, b, y])

    def transition_matrix(self, a: int | None = None, b: int | None = None) -> np.ndarray:
        """``k x g`` channel for the hash seed ``(a, b)``; eps-LIP under the prior.

        Default: the first of the fixed valid seeds :meth:`variance` averages
        over.  A seed the clients never use (one of its buckets has prior mass
        below ``1/(e^eps + 1)``, so :meth:`perturb` redraws it) raises
        ``ValueError``: its channel is not eps-LIP.
        """
        if a is None and b is None:
            seeds = self._seeds_for_variance()
            return self._channels(seeds[0][:1], seeds[1][:1])[0]
        if a is None or b is None:
            raise ValueError(f"a ({a!r}) and b ({b!r}) must be given together")
        a_arr, b_arr = np.array([a]), np.array([b])
        mass = self.hashed_priors(a_arr, b_arr)[0]
        bound = grr_probabilities(self.epsilon, 2)[1]  # 1 / (e^eps + 1)
        if mass.min() < bound:
            raise ValueError(
                f"hash seed (a={a}, b={b}) gives bucket {int(mass.argmin())} prior mass "
                f"{mass.min():.6g} < 1/(e^eps + 1) = {bound:.6g}: the clients never use it "
                f"(perturb redraws such seeds) and its channel is not {self.epsilon}-LIP")
        return self._channels(a_arr, b_arr)[0]

    def _seeds_for_variance(self) -> tuple:
        """:data:`LH_VARIANCE_SEEDS` fixed valid seeds (drawn once from seed 0)."""
        if self._variance_seeds is None:
            self._variance_seeds = self._valid_seeds(LH_VARIANCE_SEEDS, np.random.default_rng(0))
        return self._variance_seeds

    def _channels(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``(c, k, g)`` channels of ``c`` hash seeds."""
        h = lh_hash(a, b, np.arange(self.k), self.g)
        mass = self.hashed_priors(a, b)
        keep = np.exp(-self.epsilon)
        own = h[:, :, None] == np.arange(self.g)[None, None, :]
        return -np.expm1(-self.epsilon) * own + keep * mass[:, None, :]

    def n_reports(self, reports: Any) -> int:
        """Number of reports."""
        return int(np.asarray(reports).shape[0])

    def aggregate(self, reports: Any) -> np.ndarray:
        """Summed posteriors ``sum_i P(X_i = k | a_i, b_i, y_i)``."""
        reports = check_hashed_reports(reports, self.g).astype(np.int64, copy=False)
        if reports.shape[0] < 1:
            raise ValueError(f"reports (shape {reports.shape}) must be rows (a, b, y), n >= 1")
        keep, total, step = np.exp(-self.epsilon), np.zeros(self.k), _chunk(self.k)
        for start in range(0, reports.shape[0], step):  # chunks over users
            blk = reports[start:start + step]
            h = lh_hash(blk[:, 0], blk[:, 1], np.arange(self.k), self.g)
            mass_y = np.take_along_axis(self.hashed_priors(blk[:, 0], blk[:, 1]), blk[:, 2:3], 1)
            lik = np.where(h == blk[:, 2:3], 1 - (1 - mass_y) * keep, mass_y * keep)
            post = self.prior[None, :] * lik
            total += (post / post.sum(axis=1, keepdims=True)).sum(axis=0)
        return total

    def estimate_from_counts(self, counts: Any, n: int) -> np.ndarray:
        """Posterior mean from :meth:`aggregate`'s output of ``n`` reports."""
        counts, n = check_counts(counts, self.k, n)
        return counts / n

    def estimate(self, reports: Any) -> np.ndarray:
        """Posterior mean ``(1/n) sum_i P(X_i = k | a_i, b_i, y_i)``; unbiased
        only when the data follow the prior."""
        return self.estimate_from_counts(self.aggregate(reports), self.n_reports(reports))

    def variance(self, n: int, f: Any = None) -> np.ndarray:
        """Per-value variance of the posterior mean for ``n`` users with
        frequencies ``f`` (default the prior).

        Per user, ``Var = E[post_k^2] - E[post_k]^2`` over the hash seed and
        the output; the average over seeds is taken over
        :data:`LH_VARIANCE_SEEDS` fixed valid seeds (a numerical
        approximation, within about 2 % of the average over all seeds).
        """
        n = check_int("n", n, 1)
        f = self.prior if f is None else check_frequencies(f, self.k, scalar=False)
        mean, f_second = self._posterior_moments(f)
        return (f_second - f @ mean ** 2) / n

    def _posterior_moments(self, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``E[post_k | x]`` (``(k, k)``, rows ``x``) and ``sum_x f_x E[post_k^2 | x]``
        (``(k,)``), averaged over the variance seeds, in closed form.

        For one seed with bucket masses ``m`` (``lambda_y = m_y``), ``a = 1 - e^-eps``
        and ``c = e^-eps``: ``E[post_k | x] = P_k (a^2 [h(x) = h(k)] / m_h(k) + 2ac + c^2)``
        and ``E[post_k^2 | x] = P_k^2 ([h(x) = h(k)] (a^3 / m_h(k)^2 + 2 a^2 c / m_h(k))
        + a^2 c / m_h(k) + 3 a c^2 + c^3)``.  The collision term summed over seeds is one
        matrix product, in blocks of seeds (memory ``O(k x block)``, not ``seeds x k^2``).
        """
        a_s, b_s = self._seeds_for_variance()
        a, c = float(-np.expm1(-self.epsilon)), float(np.exp(-self.epsilon))
        k, g, seeds = self.k, self.g, a_s.shape[0]
        collide = np.zeros((k, k))  # sum over seeds of [h(x) = h(k)] / m_h(k)
        f_second = np.zeros(k)
        step = max(1, UE_CHUNK_CELLS // (k * g))
        for start in range(0, seeds, step):  # blocks of seeds, each a vectorized product
            h = lh_hash(a_s[start:start + step], b_s[start:start + step], np.arange(k), g)
            mass = self.hashed_priors(a_s[start:start + step], b_s[start:start + step])
            onehot = np.zeros((k, h.shape[0], g))
            onehot[np.arange(k)[:, None], np.arange(h.shape[0])[None, :], h.T] = 1.0
            inv = 1.0 / np.take_along_axis(mass, h, axis=1)  # (block, k): 1 / m_h(k)
            flat = onehot.reshape(k, -1)
            collide += flat @ (flat * (1.0 / mass).ravel()[None, :]).T
            f_bucket = np.einsum("x,xsb->sb", f, onehot)  # f-mass of each bucket
            f_same = np.take_along_axis(f_bucket, h, axis=1)  # (block, k): F_h(k)
            f_second += (f_same * (a ** 3 * inv ** 2 + 2 * a ** 2 * c * inv)
                         + f.sum() * (a ** 2 * c * inv + 3 * a * c ** 2 + c ** 3)).sum(axis=0)
        mean = self.prior[None, :] * (a ** 2 * collide / seeds + 2 * a * c + c ** 2)
        return mean, self.prior ** 2 * f_second / seeds
