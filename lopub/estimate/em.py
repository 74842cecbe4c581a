"""EM for a k-way joint distribution from Bloom reports (Alg. 1), SQUAREM-accelerated.

With per-attribute scaled likelihoods ``L_j`` (n, |O_j|) the E-step of the
k-way joint ``P`` needs, per user, ``denom_u = sum_w P[w] prod_j L_j[u, w_j]``
and the accumulated posterior ``G[w] = sum_u prod_j L_j[u, w_j] / denom_u``;
the M-step is ``P <- P * G / n``.  Both are computed by sequential tensor
contractions: the attributes are ordered by size, the row-wise Kronecker
(Khatri-Rao) product ``Z`` of the first k - 1 likelihoods is formed per chunk
of users (for k = 2 it is ``L_a`` itself), and then::

    denom = rowsum((Z @ P.reshape(rest, s_k)) * L_k)
    G    += (Z / denom[:, None]).T @ L_k

so no (n, |O_1|, ..., |O_k|) tensor is ever built.

Stopping in noise (stop rule ``"noise"``).  The rule ``tol`` bounds an
absolute change in probability (1e-6), a numerical tolerance.  When the
reports are noise-dominated the log-likelihood is nearly flat over the whole
simplex, EM contracts very slowly and thousands of E-steps move the table by
amounts that no statistic could detect (Bloom reports of 69 users at
f = 0.986: 4,000-10,000 E-steps per pair, the whole run gaining < 0.5 nats of
log-likelihood).  EM then also stops, with ``meta["stop_rule"] = "noise"``,
when both hold:

1. the table is noise-dominated: every cell's standard error from the Bloom
   noise alone (that of the unbiased moment estimator, known from f, the
   filters and n before EM: :func:`lopub.estimate.em_estimator.noise_se`;
   the true standard error is at least this) is >= :data:`NOISE_SE` =
   1 / :data:`NOISE_FRACTION` = 100.  Every cell lies in [0, 1], so every
   table of the simplex, the iterate included, is then within
   NOISE_FRACTION = 0.01 standard errors of EM's fixed point, cell by cell;
2. EM can gain at most :data:`NOISE_GAP` = 0.05 nats more: the
   log-likelihood ``l(p) = sum_u log(L_u . p)`` is concave, so
   ``l(p*) - l(p) <= max_c grad_c - grad . p = n (max_c F(p)_c / p_c - 1)``
   (the Frank-Wolfe duality gap over the cells with p_c > 0, the face EM
   stays on; ``F`` the EM map, computed anyway), a bound that holds however
   slowly EM contracts.  A likelihood-ratio statistic 2 x 0.05 = 0.1 is a
   tenth of the mean of even a one-degree-of-freedom chi-square: no test
   could tell the iterate from the fixed point.  (In the quadratic
   approximation it means at most sqrt(0.1) = 0.32 standard errors in any
   direction; at such noise the margins, whose standard errors are about
   the square root of a cell's, move by < 0.1 of theirs anyway: they lie in
   [0, 1] too.)  The gap keeps EM going while the data still pull it.

Condition 1 keeps every informative fit unchanged: the smallest such
standard error is 0.03 for an Adult pair at f = 0.9, 68 at the per-record
epsilon 0.5 (f = 0.998, h = 4, all 45,222 users), 140-150 for the demo's
69 users at epsilon 0.74 (docs/BENCHMARKS.md, "Inputs are sacred").  EM
options ``noise_stop=False`` turn the rule off.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 1; docs/ARCHITECTURE.md,
notes 1-3.  Varadhan and Roland, "Simple and globally convergent methods for
accelerating the convergence of any EM algorithm", Scand. J. Statist. 35
(2008) (SQUAREM, scheme S3).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

TINY = 1e-300
STOP_RULES = ("max_change", "paper")
NOISE_FRACTION = 0.01  # of a standard error: how close to the fixed point is close enough, per cell
NOISE_SE = 1.0 / NOISE_FRACTION  # smallest cell standard error at which every table is that close
NOISE_GAP = 0.05  # nats of log-likelihood left to gain: likelihood-ratio statistic 0.1


def khatri_rao(blocks: Sequence[np.ndarray]) -> np.ndarray:
    """Row-wise Kronecker product of (c, s_i) blocks -> (c, prod s_i); ones for no block."""
    if not blocks:
        raise ValueError("khatri_rao needs at least one block")
    z = blocks[0]
    for b in blocks[1:]:
        z = (z[:, :, None] * b[:, None, :]).reshape(z.shape[0], -1)
    return z


class KwayData:
    """The data side of a k-way E-step: likelihoods in size order, chunked over users.

    Parameters
    ----------
    mats : sequence of ndarray (n, s_j)
        Per-attribute scaled likelihoods (or any per-user factors), in the
        axis order of the table.
    chunk_size : int
        Users per chunk.
    cache_bytes : int
        The Khatri-Rao blocks ``Z`` are kept between iterations when they
        fit in this many bytes, else recomputed per chunk.
    """

    def __init__(self, mats: Sequence[np.ndarray], chunk_size: int, cache_bytes: int):
        self.shape = tuple(int(m.shape[1]) for m in mats)
        self.n = int(mats[0].shape[0])
        # contraction order: largest attribute last (biggest matmul, smallest Z)
        self.order = sorted(range(len(mats)), key=lambda i: self.shape[i])
        self.mats = [mats[i] for i in self.order]
        self.rest = math.prod(m.shape[1] for m in self.mats[:-1])
        self.chunk = int(chunk_size)
        self._z = None
        if len(self.mats) > 2 and self.n * self.rest * 8 <= cache_bytes:
            self._z = [self._kr(a, a + self.chunk) for a in range(0, self.n, self.chunk)]

    def _kr(self, a: int, b: int) -> np.ndarray:
        if len(self.mats) == 1:
            return np.ones((min(b, self.n) - a, 1))
        return khatri_rao([m[a:b] for m in self.mats[:-1]])

    def blocks(self):
        """``(Z, L_k)`` per chunk of users: Khatri-Rao rows of the first k - 1 factors and the last."""
        for i, a in enumerate(range(0, self.n, self.chunk)):  # chunks of users
            z = self._z[i] if self._z is not None else self._kr(a, a + self.chunk)
            yield z, self.mats[-1][a:a + self.chunk]

    def to_internal(self, p: np.ndarray) -> np.ndarray:
        return np.transpose(p, self.order).reshape(self.rest, -1)

    def from_internal(self, q: np.ndarray) -> np.ndarray:
        inner = tuple(self.shape[i] for i in self.order)
        return np.transpose(q.reshape(inner), np.argsort(self.order))

    def estep_sums(self, q: np.ndarray) -> tuple[np.ndarray, float]:
        """``G = sum_u posterior_u`` (internal layout) and ``sum_u log(L_u . p)`` at internal ``q``.

        Sums over users: partial sums of disjoint users add up (the E-step on
        a Dask cluster sums them over partitions).
        """
        g = np.zeros_like(q)
        ll = 0.0
        for z, last in self.blocks():
            denom = np.einsum("us,us->u", z @ q, last)
            np.maximum(denom, TINY, out=denom)
            ll += float(np.log(denom).sum())
            g += (z / denom[:, None]).T @ last
        return g, ll

    def estep(self, p: np.ndarray) -> tuple[np.ndarray, float]:
        """One EM map ``F(p)`` (table shape) and the scaled log-likelihood of ``p``."""
        q = self.to_internal(p)
        g, ll = self.estep_sums(q)
        new = q * g / self.n
        new /= new.sum()
        return self.from_internal(new), ll

    def moment(self) -> np.ndarray:
        """``sum_u prod_j mats_j[u, w_j] / n`` as a table (the k-th cross moment)."""
        g = np.zeros((self.rest, self.shape[self.order[-1]]))
        for z, last in self.blocks():
            g += z.T @ last
        return self.from_internal(g / self.n)


@dataclass
class EMResult:
    """Outcome of :func:`run_em` (table, E-steps, convergence, log-likelihood).

    ``loglik`` is the log-likelihood of the last point the EM map was evaluated
    at; the returned table ``p`` is the map's output there, one EM step further
    (EM never lowers the likelihood, and on convergence the two differ by at most
    ``tol`` per cell), so computing it again would cost one more E-step.
    """

    p: np.ndarray
    iterations: int
    converged: bool
    loglik: float
    change: float
    trace: list = field(default_factory=list)
    noise: bool = False  #: stopped by the noise rule (log-likelihood gap <= ``noise_gap``)
    gap: float = math.inf  #: the last log-likelihood gap computed (noise rule only)


def _change(rule: str, old: np.ndarray, new: np.ndarray, scale: np.ndarray | None = None) -> float:
    if rule == "paper":  # Alg. 1: |max P_t - max P_{t-1}|
        return abs(float(new.max()) - float(old.max()))
    if scale is not None:  # largest cell change in units of the cell's standard error
        return float(np.max(np.abs(new - old) / scale))
    return float(np.max(np.abs(new - old)))


def _remaining(prev: float | None, cur: float) -> float:
    """Geometric estimate of the distance to the fixed point, ``cur / (1 - rate)``.

    ``rate = cur / prev`` is the contraction of two consecutive plain EM steps;
    infinite when it cannot be estimated or is >= 1.
    """
    if prev is None or not prev > 0.0:
        return math.inf
    rate = cur / prev
    return cur / (1.0 - rate) if rate < 1.0 else math.inf


def run_em(
    step: Callable[[np.ndarray], tuple[np.ndarray, float]],
    start: np.ndarray,
    *,
    tol: float,
    max_iter: int,
    stop_rule: str = "max_change",
    accelerate: bool = True,
    progress: Callable | None = None,
    scale: np.ndarray | None = None,
    noise_gap: float | None = None,
    users: int = 0,
) -> EMResult:
    """Iterate the EM map ``step`` from ``start`` until the change is <= ``tol``.

    ``step(p)`` returns ``(F(p), loglik(p))``.  With ``accelerate`` each cycle
    takes two EM steps, extrapolates (SQUAREM S3, step length
    ``alpha = -|r| / |v|``), keeps the extrapolated point positive, takes one
    stabilizing EM step from it and accepts it only if its log-likelihood is
    at least that of the last plain EM iterate; so the log-likelihood of the
    accepted iterates never decreases and the fixed points are EM's.
    ``iterations`` counts EM-map evaluations.

    With ``scale`` (positive, table shape; e.g. the cells' standard errors) the
    ``"max_change"`` rule measures the largest cell change in units of
    ``scale`` and stops when the estimated remaining distance to the fixed
    point, ``change / (1 - rate)`` with ``rate`` the ratio of two consecutive
    plain EM steps' changes, is <= ``tol`` (a fraction of a standard error).

    With ``noise_gap`` (the noise rule, module docstring; ``users`` = n) EM
    also stops after a plain EM step from ``x`` when ``users * (max_c
    F(x)_c / x_c - 1)``, a bound on the log-likelihood still to gain, is
    <= ``noise_gap``; it returns ``F(x)`` with ``noise`` set.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Alg. 1; Varadhan and Roland 2008 (SQUAREM).
    """
    p, evals, trace = start, 0, []

    def ev(x):
        nonlocal evals
        evals += 1
        out = step(x)
        if progress is not None:
            progress(evals, max_iter)
        return out

    gap = math.inf

    def flat(x, fx) -> bool:  # the noise rule: at most noise_gap nats left to gain
        nonlocal gap
        if noise_gap is None:
            return False
        on = x > 0
        gap = users * (float(np.max(fx[on] / x[on])) - 1.0)
        return gap <= noise_gap

    change = math.inf
    prev = None  # with scale: the previous plain EM step's change (for the rate)
    while evals < max_iter:
        p1, ll0 = ev(p)
        trace.append(ll0)
        change = _change(stop_rule, p, p1, scale)
        if flat(p, p1):
            return EMResult(p1, evals, True, ll0, change, trace, True, gap)
        if scale is not None:
            # after an extrapolation the previous step is not a plain EM step
            prev, change = change, (math.inf if accelerate else _remaining(prev, change))
        if change <= tol or not accelerate or evals >= max_iter:
            p = p1
            if change <= tol:
                return EMResult(p, evals, True, ll0, change, trace, gap=gap)
            continue
        p2, ll1 = ev(p1)
        change = _change(stop_rule, p1, p2, scale)
        if flat(p1, p2):
            return EMResult(p2, evals, True, ll1, change, trace, True, gap)
        if scale is not None:
            change = _remaining(prev, change)
        if change <= tol or evals >= max_iter:
            return EMResult(p2, evals, change <= tol, ll1, change, trace, gap=gap)
        r, v = p1 - p, p2 - 2 * p1 + p
        nv = float(np.linalg.norm(v))
        if nv == 0.0:
            p = p2
            continue
        alpha = min(-1.0, -float(np.linalg.norm(r)) / nv)
        pq = np.maximum(p - 2 * alpha * r + alpha * alpha * v, 1e-2 * p2)
        pq /= pq.sum()
        p3, llq = ev(pq)
        p = p3 if llq >= ll1 else p2
    return EMResult(p, evals, False, trace[-1] if trace else float("nan"), change, trace, gap=gap)


def uniform(shape: tuple[int, ...]) -> np.ndarray:
    return np.full(shape, 1.0 / math.prod(shape))


def em_joint(data: KwayData, start: np.ndarray, *, offset: float, tol: float, max_iter: int,
             stop_rule: str, accelerate: bool = True, progress=None,
             scale: np.ndarray | None = None, noise_se: float | None = None) -> tuple[np.ndarray, dict]:
    """Fit the k-way joint by EM on ``data``; returns the table and its metadata.

    ``noise_se``: the smallest cell standard error from the Bloom noise; at
    >= :data:`NOISE_SE` the noise rule is on (module docstring).
    """
    t0 = time.perf_counter()
    noisy = noise_se is not None and noise_se >= NOISE_SE
    res = run_em(data.estep, start, tol=tol, max_iter=max_iter, stop_rule=stop_rule,
                 accelerate=accelerate, progress=progress, scale=scale,
                 noise_gap=NOISE_GAP if noisy else None, users=data.n)
    rule = stop_rule if scale is None else "max_change_se"
    meta = {
        "iterations": res.iterations,
        "converged": res.converged,
        "loglik": res.loglik + offset,
        "final_change": res.change,
        "stop_rule": "noise" if res.noise else rule,
        "tol": tol,
        "accelerate": "squarem" if accelerate else None,
        "loglik_trace": [x + offset for x in res.trace],
        "em_seconds": time.perf_counter() - t0,
    }
    if noisy:  # why EM may stop early: every cell's noise SE >= NOISE_SE
        meta.update(noise_se=noise_se, loglik_gap=res.gap,
                    noise_reason=(f"noise-dominated: every cell's standard error from the Bloom noise is "
                                  f">= {noise_se:.3g} (>= {NOISE_SE:g}); stopped when at most "
                                  f"{NOISE_GAP:g} nats of log-likelihood were left to gain"
                                  if res.noise else None))
    return res.p, meta
