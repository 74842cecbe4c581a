"""Hybrid estimator (Alg. 3): EM on the support of a fast estimate.

Variance (``provenance["variance"]``): as for EM, the observed information of
the multinomial likelihood at the returned estimate, every cell treated as
free (the support keeps nearly every cell; cells cut by it are 0 with
variance taken from the information as if they were free), or, above
``information_cells`` cells, the moment-sandwich
bound.  With ``stop_se`` EM stops a fraction of a standard error from its
fixed point; the extra spread is not included.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Sequence, cast

import numpy as np

from lopub.estimate.postprocess import postprocess
from lopub.estimate import hybrid as _hybrid
from lopub.estimate import lasso as _lasso
from lopub.estimate import moment as _moment
from lopub.estimate.em_estimator import EMCoreOptions, EMEstimator
from lopub.estimate.lasso_estimator import LassoEstimator, lasso_bytes
from lopub.estimate.moment_estimator import MomentEstimator
from lopub.estimate.options import one_of, option, positive, real


@dataclasses.dataclass(frozen=True)
class HybridOptions(EMCoreOptions):
    """Options of :class:`HybridEstimator`."""

    support: str = option("moment", one_of(*_hybrid.SUPPORTS),
                          "fast estimator proposing the support: 'moment' or 'lasso' (the paper's)")
    threshold: float = option(0.0, real(), "cells of the fast estimate above this are kept")
    support_z: float | None = option(2.0, real(optional=True),
                                     "also keep cells not this many standard errors below 0 (moment)")
    mix: float = option(0.05, real(0.0, 1.0, high_open=True), "share of uniform mass in the EM start")
    stop_se: float | None = option(None, positive(optional=True),
                                   "stop EM this fraction of a standard error from its fixed point")
    design: str = option("centered", one_of(*_moment.DESIGNS), "design of the moment support")
    solver: str = option("nnls", one_of("nnls", "ols"), "solver of the moment support")
    alpha: float = option(_lasso.DEFAULT_ALPHA, real(0.0), "Lasso penalty of the lasso support")


class HybridEstimator(EMEstimator):
    """Alg. 3: EM started from, and restricted to the support of, a fast estimate.

    ``support="moment"`` (default) proposes the support by moment regression,
    ``"lasso"`` by Alg. 2 (the paper's variant, registered as ``"hybrid-lasso"``).

    References
    ----------
    Ren et al., "LoPub", IEEE TIFS 2018, Alg. 3.
    """

    method = "hybrid"
    Options = HybridOptions
    options: HybridOptions  # type: ignore[assignment]  # not an EMOptions: EM's own options unused

    def _table_bytes(self, sizes: Sequence[int], bits: int) -> int:
        em = super()._table_bytes(sizes, bits)
        if self.options.support == "lasso":
            return max(em, lasso_bytes(int(np.prod(sizes)), bits))
        return em

    def _worst_bytes(self, cells: int) -> int:
        em = super()._worst_bytes(cells)
        if self.options.support == "lasso":
            return max(em, lasso_bytes(cells, self._max_bits(cells)))
        return em

    def _warm(self, attrs: Sequence[str], keys: Sequence[tuple[str, ...]], jobs: int = 1,
              progress=None) -> None:
        self._warm_likelihoods(attrs, jobs, progress)
        for a in attrs:
            self.cache.projected(a, self.options.design)
            if self.options.support == "lasso":
                self.cache.bit_shares(a)

    def _attr_bytes(self, attr: str, keys: Sequence[tuple[str, ...]]) -> int:
        return 2 * 8 * self.n * self.domain.size(attr)

    def _fast(self, attrs: tuple[str, ...], p_ols: np.ndarray | None) -> tuple[np.ndarray, dict]:
        o = self.options
        common: dict[str, Any] = {"tol": o.tol, "max_iter": o.max_iter, "chunk_size": o.chunk_size,
                  "memory_budget": o.memory_budget}
        if o.support == "lasso":
            return LassoEstimator(self.reports, cache=self.cache, alpha=o.alpha, **common).fit_table(attrs)
        # the moment start is unshrunk (shrink="none"), as before the shrink option existed
        fast = MomentEstimator(self.reports, cache=self.cache, design=o.design, solver=o.solver,
                               shrink="none", **common)
        return fast.fit_table(attrs, p_ols, shrink="none")

    def _fit(self, attrs: tuple[str, ...]) -> tuple[np.ndarray, dict, np.ndarray]:
        t0 = time.perf_counter()
        o = self.options
        keep = p_ols = se = None
        use_z = o.support == "moment" and o.support_z is not None
        if use_z or o.stop_se is not None:
            p_ols, var = self.moment_variance(attrs, o.design)  # shared with the moment fit
            se = np.sqrt(var)
            if use_z:
                keep = p_ols > -cast(float, o.support_z) * se
        if p_ols is None and o.support == "moment":  # the moment start from the shared projected bits
            p_ols = self._kway([self.cache.projected(a, o.design) for a in attrs], attrs).moment()
        fast, fmeta = self._fast(attrs, p_ols)
        fast = postprocess(fast, "clip").values
        mask, start = _hybrid.support_start(fast, threshold=o.threshold, mix=o.mix, keep=keep)
        fast_seconds = time.perf_counter() - t0
        if o.stop_se is None:
            p, meta, data = self._em(attrs, start)
        else:
            p, meta, data = self._em(attrs, start, tol=o.stop_se, scale=np.maximum(cast(np.ndarray, se), 1e-12))
        meta.update(support_method=o.support, support_size=int(mask.sum()), cells=int(mask.size),
                    support_seconds=fast_seconds, support_iterations=fmeta["iterations"])
        return p, meta, self._variance(attrs, p, data, meta)
