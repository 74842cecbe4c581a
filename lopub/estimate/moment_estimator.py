"""Moment-regression estimator and the variance of its estimate.

The unconstrained least-squares solution is the k-th cross moment of the
per-user projected bits, ``P_ols = 1/n sum_u (x)_j z_{u,j}`` (see
:mod:`.moment`).  Users are independent, so each cell is a mean of ``n``
independent terms and ``Var(P_ols[c]) = Var_u((x)_j z_{u,j}[c]) / n``,
estimated by the empirical second moment (the sandwich / heteroscedasticity-
consistent least-squares covariance).  That is the variance recorded for the
returned table (``provenance["variance"] = "sandwich"``); it is exact for
``solver="ols", shrink="none"`` and over-states the variance of the shrunk,
simplex-constrained fit (shrinkage and the constraint only reduce spread).

Everything is computed from sums over users (:mod:`.moment_stats`) in
streaming passes over chunks of reports -- one pass gives every one-way and
pairwise statistic -- on ``jobs`` processes or, with ``scheduler``, on a Dask
cluster (:mod:`lopub.estimate.distributed`).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable, Sequence

import numpy as np

from lopub.estimate import moment as _moment
from lopub.estimate import moment_stats as _stats
from lopub.estimate.base import BloomEstimator
from lopub.estimate.options import Options, integer, one_of, option, real, scheduler_options
from lopub.estimate.parallel import iter_chunks, map_sets, resolve_jobs


@dataclasses.dataclass(frozen=True)
class MomentOptions(Options):
    """Options of :class:`MomentEstimator`."""

    max_iter: int = option(20000, integer(1), "maximum iterations of the simplex-constrained solver")
    design: str = option("centered", one_of(*_moment.DESIGNS), "regress centred ('centered') or raw bits")
    solver: str = option("nnls", one_of("nnls", "ols"),
                         "'nnls': fit on the simplex; 'ols': the (shrunk) unconstrained target")
    shrink: str = option("js", one_of(*_moment.SHRINKS),
                         "shrink interactions towards independence: per term ('js'), pooled, none")
    shrink_alpha: float = option(_moment.DEFAULT_SHRINK_ALPHA, real(0.0, 1.0, low_open=True),
                                 "level of the test an interaction must pass to be kept ('js')")
    scheduler: str | None = scheduler_options()[0]
    reports_path: str | None = scheduler_options()[1]


class MomentEstimator(BloomEstimator):
    """Non-negative least squares on k-th order bit co-occurrences (Kronecker design).

    Options (:class:`MomentOptions`): ``design``, ``solver``, ``shrink``,
    ``shrink_alpha`` plus the common ones; ``max_iter`` defaults to 20000.
    ``meta`` records ``shrink``, ``shrink_factor`` (1 = no shrinkage, 0 = the
    independence product) and, for ``"js"``, ``shrink_alpha`` and
    ``shrink_factors`` (per interaction, attribute names joined by "*").

    References
    ----------
    Ren et al., "LoPub", IEEE TIFS 2018, Alg. 2 (the regression this replaces) and Eq. 5.
    """

    method = "moment"
    Options = MomentOptions
    options: MomentOptions
    variance_method = "sandwich"

    def __init__(self, reports, **kwargs: Any) -> None:
        super().__init__(reports, **kwargs)
        self.stats = _stats.MomentStatistics()

    # sufficient statistics ---------------------------------------------------
    def prepare(self, keys: Sequence[Sequence[str]], *, jobs: int | None = None,
                progress: Callable[[str, int, int], Any] | None = None,
                stage: str = "sums over users") -> None:
        """Compute the sums over users every set of ``keys`` needs, in as few passes as possible.

        One pass over the reports for every one-way and pairwise set (its
        attributes' Gram matrices), one more for all the larger sets.
        """
        keys = [self._canon(k) for k in keys]
        jobs = resolve_jobs(self.options.jobs if jobs is None else jobs)
        low = [k for k in keys if len(k) <= 2 and not self.stats.has(k)]
        high = [k for k in dict.fromkeys(keys) if len(k) > 2 and not self.stats.has(k)]
        low += [(a,) for k in high for a in k if not self.stats.has((a,))]
        if low:
            attrs = self._canon(list(dict.fromkeys(a for k in low for a in k)))
            proj = _stats.Projector(self.reports.spec, attrs, self.options.design)
            fn = functools.partial(_stats.pair_sums, proj=proj, mats=proj.matrices())
            cols = sum(proj.sizes()) + 1
            chunk = self.options.chunk_size or _stats.PAIR_CHUNK
            total = self._sum(fn, chunk, jobs, 8 * chunk * (3 * cols + 2 * self.reports.spec.total_bits),
                              progress, stage)
            self.stats.add_pair_pass(attrs, proj.sizes(), total)
        if high:
            attrs = self._canon(list(dict.fromkeys(a for k in high for a in k)))
            proj = _stats.Projector(self.reports.spec, attrs, self.options.design)
            sets = [[attrs.index(a) for a in k] for k in high]
            sizes = [[self.domain.size(a) + 1 for a in k] for k in high]
            chunk = self.options.chunk_size or _stats.kway_chunk(sizes, self.options.memory_budget // 8)
            fn = functools.partial(_stats.kway_sums, proj=proj, mats=proj.matrices(), sets=sets)
            self.stats.add_sets(high, self._sum(fn, chunk, jobs, self.options.memory_budget // 8,
                                                progress, stage))

    def _sum(self, fn, chunk: int, jobs: int, per_job: int, progress, stage: str) -> dict:
        if self.options.scheduler is not None:
            from lopub.estimate.distributed import dask_chunk_sums

            return dask_chunk_sums(self.reports, fn, chunk, self.options.scheduler,
                                   path=self.options.reports_path, workers=self.options.jobs)
        free = self.options.memory_budget - self.reports.nbytes
        jobs = int(max(1, min(jobs, free // max(per_job, 1))))
        shown = None if progress is None else (lambda d, t: progress(stage, d, t))
        return _stats.add_sums(iter_chunks(self.reports, fn, chunk, jobs, progress=shown))  # as they come

    def _estimate_many(self, keys: list[tuple[str, ...]], jobs: int, progress, stage: str) -> None:
        self.prepare(keys, jobs=jobs, progress=progress, stage=f"{stage}: sums over users")
        workers = 1 if self.options.scheduler is not None else jobs
        work = getattr(progress, "work", None)
        cells, total_cells = 0, sum(math.prod(self.domain.size(a) for a in k) for k in keys)
        done = 0  # the fits on the tables, on workers forked with the sums
        for key, m in map_sets(self._measure, keys, workers, worker=self._measure_in_worker):
            self._results[key] = m
            done += 1
            cells += math.prod(self.domain.size(a) for a in key)
            if work is not None:  # the time left follows the cells done: costs differ by the table size
                work(stage, cells, total_cells)
            if progress is not None:
                progress(stage, done, len(keys))

    def moment_variance(self, attrs: Sequence[str], design: str = "centered") -> tuple[np.ndarray, np.ndarray]:
        """Unconstrained moment estimate of ``attrs`` and its per-cell sandwich variance (from the sums)."""
        if design != self.options.design:
            return super().moment_variance(attrs, design)
        canon = self._canon(attrs)
        self.prepare([canon])
        p, var = self.stats.variance(canon)
        order = [canon.index(a) for a in attrs]
        return np.transpose(p, order), np.transpose(var, order)

    def _table_bytes(self, sizes: Sequence[int], bits: int) -> int:
        if self.options.shrink == "js" and len(sizes) > 1:
            sizes = [s + 1 for s in sizes]  # augmented central moments
        return super()._table_bytes(sizes, bits)

    def _worst_bytes(self, cells: int) -> int:
        if self.options.shrink != "js":
            return super()._worst_bytes(cells)
        # augmenting each axis by one multiplies the cells by prod(1 + 1/s_j):
        # at most 3/2 per attribute with >= 2 categories and 2 per single-category one
        ones = sum(1 for s in self.domain.sizes if s == 1)
        aug = math.ceil(cells * 1.5 ** self._max_attrs(cells)) * 2**ones
        return self._em_bytes(aug, self._span_bound(aug, max(self.domain.sizes) + 1))

    def _fit(self, attrs: tuple[str, ...]) -> tuple[np.ndarray, dict, np.ndarray]:
        self.prepare([attrs])
        p, meta = self.fit_table(attrs)
        return p, meta, self.stats.variance(attrs)[1]

    def fit_table(self, attrs: tuple[str, ...], p_ols: np.ndarray | None = None,
                  shrink: str | None = None) -> tuple[np.ndarray, dict]:
        """The moment estimate of ``attrs`` and its metadata (``p_ols`` if already computed)."""
        o = self.options
        shrink = o.shrink if shrink is None else shrink
        meta = {"design": o.design, "solver": o.solver, "loglik": None, "shrink": shrink,
                "shrink_factor": 1.0}
        grams = [_moment.gram(self.reports, a, o.design) for a in attrs]
        if shrink == "none" or len(attrs) == 1:
            if p_ols is None:
                self.prepare([attrs])
                p_ols = self.stats.p_ols(attrs)
            target = p_ols
        elif shrink == "global":
            target = self._shrink_global(attrs, grams, meta)
        else:
            target = self._shrink_js(attrs, grams, meta)
        if o.solver == "ols":
            return target, {**meta, "iterations": 0, "converged": True}
        p, it, ok = _moment.nn_least_squares(target, grams, tol=min(o.tol, 1e-8), max_iter=o.max_iter)
        return p, {**meta, "iterations": it, "converged": ok}

    def _shrink_global(self, attrs: tuple[str, ...], grams: list, meta: dict) -> np.ndarray:
        ones = [self._one_way_fit(a, g) for a, g in zip(attrs, grams)]
        p_ols, var = self.moment_variance(attrs, self.options.design)
        se = np.sqrt(var)
        ind = _moment.outer_product(ones)
        dev = p_ols - ind
        energy, noise = float(np.sum(dev * dev)), float(np.sum(se * se))
        lam = max(0.0, 1.0 - noise / energy) if energy > 0 else 1.0
        meta["shrink_factor"] = lam
        return ind + lam * dev

    def _shrink_js(self, attrs: tuple[str, ...], grams: list, meta: dict) -> np.ndarray:
        alpha = self.options.shrink_alpha
        self.prepare([attrs])
        st = [self.stats.attribute_stats(a) for a in attrs]
        ones = [self._one_way_fit(a, g) for a, g in zip(attrs, grams)]
        moment = self.stats.central(attrs)
        target, factors, overall = _moment.shrink_interactions(moment, st, ones, self.n, alpha)
        meta["shrink_factor"] = overall
        meta["shrink_alpha"] = alpha
        meta["shrink_factors"] = {"*".join(attrs[j] for j in S): lam for S, lam in factors.items()}
        return target

    def _one_way_fit(self, attr: str, gram: np.ndarray) -> np.ndarray:
        """Simplex-constrained moment estimate of one attribute's marginal (cached)."""
        o = self.options

        def build() -> np.ndarray:
            self.prepare([(attr,)])
            p, _, _ = _moment.nn_least_squares(self.stats.attribute_stats(attr)["mean"], [gram],
                                               tol=min(o.tol, 1e-8), max_iter=o.max_iter)
            return p
        return self.cache.get(f"q{o.design}:{o.tol!r}:{o.max_iter}", attr, build)
