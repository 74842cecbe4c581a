"""EM estimator (Alg. 1) and the variance of its estimate from the observed information.

Each report's likelihood under the joint ``p`` is ``L_u . p`` with ``L_u`` the
row-wise Kronecker product of the attributes' likelihood rows, so the
log-likelihood is ``l(p) = sum_u log(L_u . p)``, its score per user
``g_u = L_u / (L_u . p)`` and the observed (incomplete-data) information
``I = sum_u g_u g_u^T``.  On the simplex, ``p = p_hat + B t`` with ``B`` a
basis of the zero-sum directions; the asymptotic covariance of ``p_hat`` is
``B (B^T I B)^-1 B^T`` and its diagonal is the per-cell variance
(``provenance["variance"] = "observed-information"``).  Forming ``I`` costs
``n C^2`` for C cells, so beyond :data:`INFORMATION_USERS` users it is
summed over an evenly strided subset of them and scaled up (``meta
["variance_users"]`` says how many; relative error about 1/sqrt of that); above
``information_cells`` cells (option, default :data:`FULL_INFORMATION_CELLS`) the
variance is that of the unbiased moment estimator from the same reports
(``"moment-sandwich-bound"``): EM is the maximum-likelihood estimator and is
asymptotically at least as efficient, so this over-states its variance.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar, Sequence

import numpy as np

from lopub.data.marginal import Marginal
from lopub.estimate.sandwich import SandwichVariance
from lopub.estimate.em import STOP_RULES, TINY, KwayData, em_joint, khatri_rao, uniform
from lopub.estimate.likelihood import attribute_likelihood
from lopub.estimate.moment import design_matrix
from lopub.estimate.options import Options, anything, flag, integer, one_of, option, scheduler_options

FULL_INFORMATION_CELLS = 512
INFORMATION_USERS = 16384  # users summed for the information (a strided subset beyond)
DASK_JOINTS = 8  # joints estimated at once on a Dask cluster


@dataclasses.dataclass(frozen=True)
class EMCoreOptions(Options):
    """Options of every EM-based estimator (EM, hybrid)."""

    stop_rule: str = option("max_change", one_of(*STOP_RULES),
                            "'max_change' (largest cell change) or 'paper' (change of the maximum)")
    accelerate: bool = option(True, flag(), "SQUAREM acceleration")
    information_cells: int = option(FULL_INFORMATION_CELLS, integer(0),
                                    "largest table whose variance comes from the observed information "
                                    "(n C^2 work); larger ones get the moment-sandwich bound")
    noise_stop: bool = option(True, flag(), "also stop EM where the Bloom noise swamps every cell "
                              "(stop rule 'noise', lopub/estimate/em.py)")


@dataclasses.dataclass(frozen=True)
class EMOptions(EMCoreOptions):
    """Options of :class:`EMEstimator`."""

    start: object = option(None, anything(), "None/'uniform', 'independent', an array or a Marginal")
    scheduler: str | None = scheduler_options()[0]
    reports_path: str | None = scheduler_options()[1]


def observed_information(data: KwayData, p: np.ndarray, *,
                         max_users: int | None = None) -> tuple[np.ndarray, int]:
    """``sum_u g_u g_u^T`` with ``g_u = L_u / (L_u . p)``, cells in ``data``'s internal order.

    The log-likelihood ``sum_u log(L_u . p)`` has Hessian ``-sum_u g_u g_u^T``,
    so this is the observed (incomplete-data) information at ``p``.  With
    more than ``max_users`` users the sum runs over every s-th user (s the
    smallest stride leaving at most ``max_users``) and is scaled by n / used:
    an estimate of the sum whose relative error is about 1/sqrt(used).
    Returns the matrix and the number of users summed.
    """
    q = data.to_internal(p)
    stride = 1 if max_users is None or data.n <= max_users else -(-data.n // max_users)
    info = np.zeros((q.size, q.size))
    seen = used = 0
    for zb, lb in data.blocks():  # chunks of users
        first = (-seen) % stride  # keep users whose global index is a multiple of stride
        seen += len(zb)
        zb, lb = zb[first::stride], lb[first::stride]
        used += len(zb)
        for a in range(0, len(zb), 2048):  # bounded (users x cells) blocks
            z, last = zb[a:a + 2048], lb[a:a + 2048]
            denom = np.maximum(np.einsum("us,us->u", z @ q, last), TINY)
            g = khatri_rao([z, last]) / denom[:, None]
            info += g.T @ g
    return info * (data.n / used), used


def noise_se(reports, attrs: Sequence[str]) -> np.ndarray:
    """Per-cell standard error of the unbiased moment estimate (centred design) from the Bloom noise alone.

    Each reported bit is its filter's bit flipped with probability f/2, so it has variance
    ``v = f/2 (1 - f/2)`` whatever the value, independently of the other bits; the projected bits
    ``z = (s - f/2) pinv(A_j)`` of attribute j then have ``E[z_c^2 | w] >= v (G^T G)_cc`` with
    ``G = pinv(A_j)``, and attributes are flipped independently, so the cell's mean of n products
    has variance at least ``(prod_j v (G_j^T G_j)_(c_j c_j) - 1) / n`` (a cell's probability is at
    most 1).  Needs only the spec and n: known before EM, no pass over the reports.
    """
    f = reports.spec.f
    var = np.ones(())
    for a in attrs:
        g = np.linalg.pinv(design_matrix(reports, a, "centered"))
        var = np.multiply.outer(var, (f / 2.0) * (1.0 - f / 2.0) * np.einsum("mc,mc->c", g, g))
    return np.sqrt(np.maximum(var - 1.0, 0.0) / reports.n)


def simplex_covariance(info: np.ndarray) -> np.ndarray:
    """``B (B^T I B)^+ B^T`` for the zero-sum basis ``B = [I; -1^T]`` (per-cell variances)."""
    c = info.shape[0]
    if c == 1:
        return np.zeros(1)
    basis = np.vstack([np.eye(c - 1), -np.ones((1, c - 1))])
    inner = np.linalg.pinv(basis.T @ info @ basis, hermitian=True)
    return np.maximum(np.einsum("ij,jk,ik->i", basis, inner, basis), 0.0)


class EMEstimator(SandwichVariance):
    """Maximum likelihood by EM (corrected Alg. 1), SQUAREM-accelerated; any k.

    Options (:class:`EMOptions`): ``postprocess`` ("clip"), ``tol`` (1e-6),
    ``max_iter`` (10000 EM-map evaluations), ``start``, ``stop_rule``,
    ``accelerate``, ``noise_stop`` (True: the stop rule ``"noise"`` of
    :mod:`lopub.estimate.em` where the Bloom noise swamps every cell),
    ``information_cells`` (512), ``chunk_size``,
    ``memory_budget``, ``reuse_subsets``.

    References
    ----------
    Ren et al., "LoPub", IEEE TIFS 2018, Alg. 1.
    """

    method = "em"
    Options: ClassVar[type[EMCoreOptions]] = EMOptions
    options: EMOptions
    variance_method = "observed-information"

    def _em(self, attrs: Sequence[str], start: np.ndarray, *, tol: float | None = None,
            scale: np.ndarray | None = None) -> tuple[np.ndarray, dict, KwayData]:
        o = self.options
        if getattr(o, "scheduler", None) is not None:  # E-step sums on a Dask cluster
            data = self._dask().kway(attrs)
            offset = self._dask().offset(attrs)
        else:
            liks = [self.cache.likelihood(a) for a in attrs]
            data, offset = self._kway([x.values for x in liks], attrs), sum(x.offset for x in liks)
        floor = float(noise_se(self.reports, attrs).min()) if o.noise_stop else None
        p, meta = em_joint(data, start, offset=offset,
                           tol=o.tol if tol is None else tol, max_iter=o.max_iter,
                           stop_rule=o.stop_rule, accelerate=o.accelerate,
                           progress=self.progress, scale=scale, noise_se=floor)
        return p, meta, data

    def _big(self, keys: Sequence[tuple[str, ...]]) -> list[tuple[str, ...]]:
        """Sets whose variance is the moment-sandwich bound."""
        return [k for k in keys if self.domain.cells(list(k)) > self.options.information_cells]

    def _warm(self, attrs: Sequence[str], keys: Sequence[tuple[str, ...]], jobs: int = 1,
              progress=None) -> None:
        self._warm_likelihoods(attrs, jobs, progress)
        big = self._big(keys)
        if big:  # their sums over users, once, before the workers start
            self._companion().prepare(big, jobs=jobs)

    def _attr_bytes(self, attr: str, keys: Sequence[tuple[str, ...]]) -> int:
        return 8 * self.n * self.domain.size(attr)

    def _fit(self, attrs: tuple[str, ...]) -> tuple[np.ndarray, dict, np.ndarray]:
        p, meta, data = self._em(attrs, self._start(attrs))
        return p, meta, self._variance(attrs, p, data, meta)

    def _dask(self):
        if getattr(self, "_dask_liks", None) is None:
            from lopub.estimate.distributed import DaskLikelihoods

            self._dask_liks = DaskLikelihoods(self.reports, self.options.scheduler,
                                              self.options.reports_path, self._chunk_fixed(),
                                              workers=self.options.jobs)
        return self._dask_liks

    def _chunk_fixed(self) -> int:
        return self.options.chunk_size or 8192

    def _local_subset(self, attrs: Sequence[str]) -> tuple[KwayData, int]:
        """The users the observed information sums over, as local data (Dask runs).

        Read once per estimator (reports left on disk are read in one pass),
        not once per joint.
        """
        sub = self._information_users()
        mats = [attribute_likelihood(sub, a).values for a in attrs]
        return KwayData(mats, self._chunk_fixed(), 0), sub.n

    def _information_users(self):
        if getattr(self, "_info_subset", None) is None:
            stride = 1 if self.n <= INFORMATION_USERS else -(-self.n // INFORMATION_USERS)
            self._info_subset = self.reports.subset(slice(0, None, stride))
        return self._info_subset

    def _estimate_many(self, keys, jobs: int, progress, stage: str) -> None:
        if getattr(self.options, "scheduler", None) is None:
            return super()._estimate_many(keys, jobs, progress, stage)
        # Each EM step of a joint is a round trip to the cluster; DASK_JOINTS joints run at once
        # (client threads, each its own EM) so the workers are not idle between one joint's
        # steps.  Every joint's result is what it is alone: same steps, same sums, in key order.
        from concurrent.futures import ThreadPoolExecutor

        from lopub.estimate.parallel import single_thread_blas

        dask = self._dask()
        for a in dict.fromkeys(a for k in keys for a in k):
            dask.futures(a)  # the likelihoods, submitted before the threads share them
        big = self._big(keys)
        if big:
            self._companion().prepare(big)  # the sandwich bounds' sums, before the threads
        if len(big) < len(keys):
            self._information_users()  # the observed information's users, read once, before the threads
        shown, self.progress = self.progress, None  # EM steps of interleaved joints are not shown
        try:
            alone = isinstance(self.options.start, str) and self.options.start == "independent"
            threads = 1 if alone else min(DASK_JOINTS, max(1, len(keys)))  # 'independent': local fits
            with single_thread_blas(), ThreadPoolExecutor(threads) as pool:
                for i, (key, m) in enumerate(zip(keys, pool.map(self._measure, keys))):
                    self._results[key] = m
                    if progress is not None:
                        progress(stage, i + 1, len(keys))
        finally:
            self.progress = shown

    def _variance(self, attrs: Sequence[str], p: np.ndarray, data, meta: dict) -> np.ndarray:
        dask = not isinstance(data, KwayData)
        if p.size <= self.options.information_cells:
            if dask:
                sub, used = self._local_subset(attrs)
                info = observed_information(sub, p)[0] * (self.n / used)
                data = sub
            else:
                info, used = observed_information(data, p, max_users=INFORMATION_USERS)
            var = simplex_covariance(info)
            meta["variance_method"] = "observed-information"
            meta["variance_users"] = used
            return data.from_internal(var.reshape(data.to_internal(p).shape))
        meta["variance_method"] = "moment-sandwich-bound"
        return self.sandwich_variance(attrs)

    def _start(self, attrs: Sequence[str]) -> np.ndarray:
        shape = tuple(self.domain.size(a) for a in attrs)
        s = self.options.start
        if s is None or (isinstance(s, str) and s == "uniform"):
            return uniform(shape)
        if isinstance(s, str) and s == "independent":
            if len(attrs) == 1:
                return uniform(shape)
            one = EMEstimator(self.reports, cache=self.cache, tol=self.options.tol)
            ones = [one.marginal([a]).values for a in attrs]
            out = ones[0]
            for v in ones[1:]:
                out = np.multiply.outer(out, v)
            return out / out.sum()
        if isinstance(s, str):
            raise ValueError(f"start ({s!r}) must be None, 'uniform', 'independent', an array or a Marginal")
        arr = s.project(list(attrs)).values if isinstance(s, Marginal) else np.asarray(s, dtype=float)
        if arr.shape != shape or not np.all(np.isfinite(arr)) or arr.min() < 0 or arr.sum() <= 0:
            raise ValueError(f"start must be a non-negative finite table of shape {shape} with a "
                             f"positive sum; got shape {arr.shape}")
        return arr / arr.sum()
