"""What every Bloom-report estimator shares: queries, result cache, budget, Measurements.

A subclass declares ``method`` (its registered name), ``Options`` (a
:class:`~.options.Options` dataclass), ``variance_method`` and implements
``_fit(attrs) -> (raw table, meta, per-cell variance)`` and
``_table_bytes(sizes, bits)``; :class:`BloomEstimator` does the rest:
checks the attributes and the memory budget before any work, caches results by
attribute set (a permutation is a transpose), post-processes and wraps the
result in a :class:`~lopub.estimate.measurement.Measurement`.
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable, ClassVar, Sequence

import numpy as np

from lopub.data.domain import Domain
from lopub.errors import BudgetError
from lopub.estimate.measurement import Measurement
from lopub.estimate.postprocess import postprocess
from lopub.reports.bloom import Reports
from lopub.estimate.cache import AttributeCache
from lopub.estimate.em import KwayData
from lopub.estimate.options import Options
from lopub.estimate.parallel import likelihoods, map_sets, plan_rounds, resolve_jobs, single_thread_blas  # noqa: F401

#: Users per E-step chunk at most: a chunk's likelihood rows and temporaries
#: (a few MB) stay in the processor cache between the chunk's products, which
#: makes an EM E-step 1.5-2x faster at 10^6 users than one chunk of all users
#: (pipelines/bench_scale.py).  Results do not depend on it beyond rounding.
CACHE_ROWS = 16_384


class BloomEstimator:
    """Base class of the estimators of k-way joints from Bloom reports.

    Parameters
    ----------
    reports : Reports
    cache : AttributeCache, optional
        Per-attribute arrays shared with other estimators over the same
        reports (default: a new cache holding up to half of ``memory_budget``).
    progress : callable(evaluations, max_iter), optional
        Called after every EM-map evaluation (EM-based methods; not inside
        the worker processes of :meth:`marginals`).
    **options
        The method's options (``type(self).Options``; unknown names raise TypeError).
    """

    method: ClassVar[str] = ""
    Options: ClassVar[type[Options]] = Options
    variance_method: ClassVar[str] = ""
    estimates_many: ClassVar[bool] = True  # MarginalCache.prefetch hands it whole batches

    def __init__(self, reports: Reports, *, cache: AttributeCache | None = None,
                 progress: Callable[[int, int], Any] | None = None, **options: Any) -> None:
        if not isinstance(reports, Reports):
            raise TypeError(f"reports must be a lopub.reports.bloom.Reports, got {type(reports).__name__}")
        self.options = self.Options.create(**options)
        if cache is None:  # what the reports and the workers' chunks leave of the budget
            free = self.options.memory_budget - reports.nbytes
            work = resolve_jobs(self.options.jobs) * (self.options.memory_budget // 8)
            cache = AttributeCache(reports, max(1, free - work, free // 4))
        elif not isinstance(cache, AttributeCache) or cache.reports is not reports:
            raise ValueError(f"cache ({type(cache).__name__}) must be an AttributeCache built on "
                             "the same reports object as the estimator")
        if progress is not None and not callable(progress):
            raise TypeError(f"progress ({progress!r}) must be a callable(evaluations, max_iter) or None")
        self.reports, self.cache, self.progress = reports, cache, progress
        self._results: dict[tuple[str, ...], Measurement] = {}

    def __repr__(self) -> str:
        defaults = self.Options.defaults()
        changed = {k: v for k, v in vars(self.options).items() if repr(v) != repr(defaults[k])}
        args = "".join(f", {k}={v!r}" for k, v in changed.items())
        return f"{type(self).__name__}(<{self.n} reports>{args})"

    @property
    def domain(self) -> Domain:
        return self.reports.spec.domain

    @property
    def n(self) -> int:
        """Number of reports."""
        return self.reports.n

    # queries ---------------------------------------------------------------
    def marginal(self, attrs: Sequence[str]) -> Measurement:
        """Estimated joint distribution of ``attrs`` (axes in the given order).

        Raises
        ------
        DomainError
            Unknown or duplicate attributes.
        BudgetError
            The k-way table (with its working memory) exceeds ``memory_budget``.
        """
        attrs = [attrs] if isinstance(attrs, str) else list(attrs)
        canon = self._canon(attrs)
        hit = self._lookup(canon)
        if hit is None:
            self.check(attrs)
            hit = self._measure(canon)
            self._results[canon] = hit
        return hit.project(attrs)

    def one_way(self, attr: str) -> Measurement:
        """One-way marginal of ``attr``."""
        return self.marginal([attr])

    def marginals(self, attr_sets: Sequence[Sequence[str]], *, jobs: int | None = None,
                  progress: Callable[[str, int, int], Any] | None = None,
                  stage: str = "estimate") -> list[Measurement]:
        """Joints of many attribute sets at once, on ``jobs`` processes (default: option ``jobs``).

        Every result is the one :meth:`marginal` gives for the set (the same
        code runs in the workers); the per-attribute arrays are built once in
        this process and shared with the workers, in rounds that fit the
        cache's budget (:func:`~.parallel.plan_rounds`).  ``progress(stage,
        done, total)`` is called as sets finish.
        """
        sets = [[s] if isinstance(s, str) else list(s) for s in attr_sets]
        todo: list[tuple[str, ...]] = []
        for s in sets:
            canon = self._canon(s)
            if canon not in todo and self._lookup(canon) is None:
                self.check(canon)
                todo.append(canon)
        jobs = resolve_jobs(self.options.jobs if jobs is None else jobs)
        if todo:
            self._estimate_many(todo, jobs, progress, stage)
        return [self.marginal(s) for s in sets]

    def _canon(self, attrs: Sequence[str]) -> tuple[str, ...]:
        idx = self.domain.indices(list(attrs))  # rejects unknown / duplicate names
        return tuple(a for _, a in sorted(zip(idx, attrs)))

    def _estimate_many(self, keys: list[tuple[str, ...]], jobs: int, progress, stage: str) -> None:
        attrs = list(dict.fromkeys(a for k in keys for a in k))
        nbytes = {a: self._attr_bytes(a, keys) for a in attrs}
        work = getattr(progress, "work", None)
        cells, total_cells = 0, sum(math.prod(self.domain.size(a) for a in k) for k in keys)
        done = 0
        warm = self._stage_progress(progress, f"{stage}: per-attribute arrays")
        if progress is not None:
            progress(stage, 0, len(keys))
        for hold, part in plan_rounds(keys, nbytes, self.cache.memory_budget):
            self.cache.reserve(hold, sum(nbytes[a] for a in hold if not self.cache.holds(a)))
            with single_thread_blas():
                self._warm(hold, part, jobs, warm)
            workers = self._jobs_within_budget(jobs, part)
            if workers > 1:  # largest tables first: no big set left alone at the end of the round
                part = sorted(part, key=lambda k: -math.prod(self.domain.size(a) for a in k))
            try:
                for key, m in map_sets(self._measure, part, workers, worker=self._measure_in_worker):
                    self._results[key] = m
                    done += 1
                    cells += math.prod(self.domain.size(a) for a in key)
                    if work is not None:  # the time left follows the cells done: costs differ by the table size
                        work(stage, cells, total_cells)
                    if progress is not None:
                        progress(stage, done, len(keys))
            finally:
                self.cache.release()

    def _warm(self, attrs: Sequence[str], keys: Sequence[tuple[str, ...]], jobs: int = 1,
              progress: Callable[[int, int], Any] | None = None) -> None:
        """Build the per-attribute arrays the estimation of ``keys`` reads (shared with workers)."""

    @staticmethod
    def _stage_progress(progress, stage: str) -> Callable[[int, int], Any] | None:
        return None if progress is None else (lambda done, total: progress(stage, done, total))

    def _warm_likelihoods(self, attrs: Sequence[str], jobs: int, progress=None) -> None:
        """The likelihood matrices of ``attrs``, the missing ones built on ``jobs`` workers."""
        missing = [a for a in attrs if not self.cache.has("lik", a)]
        for a, lik in likelihoods(self.reports, missing, jobs, progress).items():
            self.cache.put("lik", a, lik)

    def _attr_bytes(self, attr: str, keys: Sequence[tuple[str, ...]]) -> int:
        """Bytes of the per-attribute arrays :meth:`_warm` builds for ``attr``."""
        return 0

    def _jobs_within_budget(self, jobs: int, keys: Sequence[tuple[str, ...]]) -> int:
        """At most ``jobs`` workers whose working memory fits beside the reports and the cache."""
        if jobs <= 1:
            return 1
        per_job = max(self._job_bytes(k) for k in keys)
        free = self.options.memory_budget - self.reports.nbytes - self.cache.nbytes
        return int(max(1, min(jobs, free // max(per_job, 1))))

    def _job_bytes(self, key: Sequence[str]) -> int:
        """Peak bytes of one worker estimating ``key``: its chunks as sized by :meth:`_chunk` and
        the Khatri-Rao blocks a k > 2 EM keeps (:class:`~.em.KwayData`)."""
        sizes = [self.domain.size(a) for a in key]
        cells, top = math.prod(sizes), max(sizes)
        chunk = min(self.n, self._chunk(key))
        kept = 8 * self.n * (cells // top)
        kept = kept if len(key) > 2 and kept <= self.options.memory_budget // 4 else 0
        return max(self.working_bytes(key), 8 * (12 * cells + 3 * chunk * (cells // top + top)) + kept)

    def _measure_in_worker(self, key: tuple[str, ...]) -> Measurement:
        self.progress = None  # a forked copy: EM steps are not shown from workers
        return self._measure(key)

    def _lookup(self, canon: tuple[str, ...]) -> Measurement | None:
        if canon in self._results:
            return self._results[canon]
        if self.options.reuse_subsets:
            for key, m in self._results.items():
                if set(canon) <= set(key):
                    return m.project(canon)
        return None

    # budget ----------------------------------------------------------------
    def working_bytes(self, attrs: Sequence[str]) -> int:
        """Estimated peak bytes of one estimation of ``attrs`` (beyond the caches)."""
        sizes = [self.domain.size(a) for a in attrs]
        bits = sum(self.reports.spec.m[self.domain.index(a)] for a in attrs)
        return self._table_bytes(sizes, bits)

    def check(self, attrs: Sequence[str]) -> None:
        """Raise :class:`BudgetError` if the joint of ``attrs`` exceeds the memory budget."""
        attrs = list(attrs)
        self.domain.indices(attrs)
        need = self.working_bytes(attrs)
        budget = self.options.memory_budget
        if need > budget:
            sizes = " x ".join(str(self.domain.size(a)) for a in attrs)
            raise BudgetError(
                f"the joint of {attrs} has {sizes} = {self.domain.cells(attrs):,} cells and needs "
                f"about {need / 2**20:,.0f} MiB with method {self.method!r}, above memory_budget "
                f"({budget / 2**20:,.0f} MiB); estimate fewer or smaller attributes "
                "(e.g. cliques of a junction tree) or raise memory_budget "
                "(`lopub estimate --memory-budget-mb`)")

    def max_cells(self) -> int:
        """Largest number of cells of a table this estimator accepts within its budget.

        A bound over every shape: any joint of at most this many cells passes
        :meth:`check` (whose answer for a given attribute set is exact).
        0 if not even one cell fits.
        """
        lo, hi = 0, 1
        while self._worst_bytes(hi) <= self.options.memory_budget and hi < 2**62:
            lo, hi = hi, hi * 2
        while hi - lo > 1:  # bisection on the monotone worst-case working memory
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if self._worst_bytes(mid) <= self.options.memory_budget else (lo, mid)
        return lo

    def _worst_bytes(self, cells: int) -> int:
        """Working bytes of the worst table of ``cells`` cells over this domain (a bound)."""
        return self._em_bytes(cells, self._span_bound(cells, max(self.domain.sizes)))

    @staticmethod
    def _span_bound(cells: int, largest: int) -> int:
        """Bound on ``cells / max(sizes) + max(sizes)`` of any table of ``cells`` cells.

        One attribute: ``1 + cells``; more: the largest axis has >= 2 and <=
        ``largest`` categories, so the rest has <= cells / 2.
        """
        return cells // 2 + min(cells, largest) + 1

    def _max_attrs(self, cells: int) -> int:
        """Most attributes with >= 2 categories a table of ``cells`` cells can have."""
        many = sum(1 for s in self.domain.sizes if s > 1)
        return min(many, max(0, int(np.floor(np.log2(max(cells, 1))))))

    def _max_bits(self, cells: int) -> int:
        """Most report bits a table of ``cells`` cells can involve (its attributes' m_j)."""
        spec = self.reports.spec
        m = sorted((spec.m[j] for j, s in enumerate(self.domain.sizes) if s > 1), reverse=True)
        ones = sum(spec.m[j] for j, s in enumerate(self.domain.sizes) if s == 1)
        return sum(m[:self._max_attrs(cells)]) + ones

    def _table_bytes(self, sizes: Sequence[int], bits: int) -> int:
        """EM-style E-step memory: the table plus one chunk of Khatri-Rao rows."""
        cells = math.prod(sizes)
        return self._em_bytes(cells, cells // max(sizes) + max(sizes))

    def _em_bytes(self, cells: int, span: int) -> int:
        chunk = min(self.n, self.options.chunk_size or 8192)
        return 8 * (12 * cells + 3 * chunk * span)

    # fitting ---------------------------------------------------------------
    def _fit(self, attrs: tuple[str, ...]) -> tuple[np.ndarray, dict, np.ndarray]:
        raise NotImplementedError

    def _measure(self, attrs: tuple[str, ...]) -> Measurement:
        t0 = time.perf_counter()
        with single_thread_blas():
            raw, meta, variance = self._fit(attrs)
        done = postprocess(raw, self.options.postprocess)
        variance_method = meta.pop("variance_method", self.variance_method)
        meta = {"method": self.method, "iterations": meta.pop("iterations", 0),
                "converged": meta.pop("converged", True), "seconds": time.perf_counter() - t0,
                "loglik": meta.pop("loglik", None), "postprocess": done.method, **meta}
        provenance = {"protocol": "bloom", "estimator": self.method, "postprocess": done.method,
                      "variance": variance_method}
        return Measurement(self.domain.project(list(attrs)), done.values, self.n, meta,
                           variance=variance, provenance=provenance,
                           raw=done.raw if done.changed else None)

    def _chunk(self, attrs: Sequence[str]) -> int:
        if self.options.chunk_size is not None:
            return self.options.chunk_size
        sizes = [self.domain.size(a) for a in attrs]
        per_user = 8 * 3 * (math.prod(sizes) // max(sizes) + max(sizes))
        fits = (self.options.memory_budget // 8) // per_user
        return int(max(1024, min(self.n, CACHE_ROWS, fits)))

    def _kway(self, mats: Sequence[np.ndarray], attrs: Sequence[str]) -> KwayData:
        return KwayData(mats, self._chunk(attrs), self.options.memory_budget // 4)

    def moment_variance(self, attrs: Sequence[str], design: str = "centered") -> tuple[np.ndarray, np.ndarray]:
        """Unconstrained moment estimate of ``attrs`` and its per-cell (sandwich) variance.

        ``P_ols = 1/n sum_u (x)_j z_{u,j}`` is a mean of independent per-user
        terms, so ``Var(P_ols[c]) = (1/n sum_u X_uc^2 - P_ols[c]^2) / n``.
        """
        zs = [self.cache.projected(a, design) for a in attrs]
        p_ols = self._kway(zs, attrs).moment()
        step = self._chunk(attrs)
        second = np.zeros_like(p_ols)
        for a in range(0, self.n, step):  # chunks of users: no n x |O_j| squares held
            part = [z[a:a + step] ** 2 for z in zs]
            second += KwayData(part, step, 0).moment() * len(part[0])
        second /= self.n
        return p_ols, np.maximum(second - p_ols**2, 0.0) / self.n
