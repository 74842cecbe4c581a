"""Sandwich variances for estimators that are not moment estimators (EM, Lasso).

Their per-cell variances are those of the moment estimate of the same
reports, from streaming sums over users (:mod:`.moment_stats`), computed by a
companion :class:`~.moment_estimator.MomentEstimator` that shares the
estimator's attribute cache.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from lopub.estimate.base import BloomEstimator
from lopub.estimate.moment_estimator import MomentEstimator


class SandwichVariance(BloomEstimator):
    """A Bloom estimator whose variances come from a companion moment estimator."""

    def sandwich_variance(self, attrs: Sequence[str]) -> np.ndarray:
        """Per-cell sandwich variance of the moment estimate of ``attrs``, from streaming sums.

        The same quantity as ``moment_variance(attrs)[1]`` computed without
        any ``n x |O_j|`` array (:mod:`.moment_stats`), shared by the sets of
        one session (one pass over the reports for all pairs).
        """
        return self._companion().moment_variance(attrs)[1]

    def _companion(self):
        """The moment estimator whose sums over users give the sandwich variances."""
        if getattr(self, "_moment", None) is None:
            o = self.options
            self._moment = MomentEstimator(
                self.reports, cache=self.cache, jobs=o.jobs, memory_budget=o.memory_budget,
                chunk_size=o.chunk_size, scheduler=getattr(o, "scheduler", None),
                reports_path=getattr(o, "reports_path", None))
        return self._moment
