"""Public entry points: :class:`Estimator` (a caching session) and :func:`estimate`.

Methods (``METHODS``):

- ``"em"``: maximum likelihood by EM (Alg. 1, corrected likelihood),
  SQUAREM-accelerated; any k.
- ``"lasso"``: Alg. 2 as published.  For k >= 2 it only sees the one-way
  marginals (the regressed counts are per-attribute sums), so its joint is a
  sparse table with about the right one-way marginals, not the joint.
- ``"moment"``: non-negative least squares on the k-th order co-occurrences of
  report bits (Kronecker design); fast and sees the joint.  Option ``shrink``:
  ``"js"`` (default) shrinks each interaction of the unconstrained estimate
  towards the product of the one-way estimates by its own James-Stein factor
  (after a chi-square test at level ``shrink_alpha``), ``"global"`` by one
  pooled factor, ``"none"`` not at all (see :mod:`.moment`).
- ``"hybrid"``: Alg. 3, EM on the support of a fast estimate; ``support``
  ``"moment"`` (default) or ``"lasso"`` (the paper's variant);
  ``"hybrid-lasso"`` is a shortcut for the latter.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 1-3; ARCHITECTURE.md "Algorithm notes" 1-5.
"""
from __future__ import annotations

import contextlib
import math
import time
from collections import OrderedDict
from typing import Any, Callable, Sequence

import numpy as np

from .._util import check_int, check_positive
from ..errors import BudgetError
from ..marginal import Marginal
from ..reports import Reports
from . import hybrid as _hybrid
from . import lasso as _lasso
from . import moment as _moment
from .em import STOP_RULES, KwayData, em_joint, uniform
from .likelihood import attribute_likelihood
from .postprocess import check_postprocess, postprocess as _post

METHODS = ("em", "lasso", "moment", "hybrid", "hybrid-lasso")
DEFAULT_BUDGET = 2 * 1024**3
DEFAULT_MAX_ITER = {"em": 10000, "hybrid": 10000, "hybrid-lasso": 10000, "lasso": 10000, "moment": 20000}
_OPTS = {"accelerate": True, "alpha": _lasso.DEFAULT_ALPHA, "design": "centered", "solver": "nnls",
         "support": "moment", "threshold": 0.0, "support_z": 2.0, "mix": 0.05, "stop_se": None,
         "reuse_subsets": False, "shrink": "js", "shrink_alpha": _moment.DEFAULT_SHRINK_ALPHA}


class Estimator:
    """Estimate k-way marginals from one set of reports, caching per-attribute work.

    Parameters
    ----------
    reports : Reports
    method : {"em", "lasso", "moment", "hybrid", "hybrid-lasso"}
    postprocess : {"clip", "simplex", "norm-sub", "none"}
        Applied to every result and recorded in ``meta["postprocess"]``.
    tol : float
        Stop when the largest absolute cell change of one EM step (or of the
        maximum cell, ``stop_rule="paper"``) is <= tol.
    max_iter : int, optional
        Maximum EM-map evaluations (solver iterations for lasso/moment).
    start : None, "uniform", "independent", ndarray or Marginal
        EM start (None = uniform; "independent" = product of one-way EM estimates).
    stop_rule : {"max_change", "paper"}
    chunk_size : int, optional
        Users per chunk in the E-step (default: as large as the budget allows).
    memory_budget : int
        Bytes for caches plus one estimation; larger requests raise BudgetError.
    progress : callable(evaluations, max_iter) or None
    **opts
        accelerate (bool, SQUAREM, default True), alpha (Lasso penalty),
        design ("centered"/"raw"), solver ("nnls"/"ols"), shrink ("js"/"global"/"none",
        default "js") and shrink_alpha (level of the test an interaction must pass
        to be kept, default 0.05) for moment; ``meta`` records ``shrink``,
        ``shrink_factor`` (1 = no shrinkage, 0 = the independence product; for "js"
        the mean of the per-interaction factors weighted by the interactions'
        squared norms) and, for "js", ``shrink_alpha`` and ``shrink_factors``
        (per interaction, attribute names joined by "*"); solver "ols" returns the
        shrunk target without the simplex constraint,
        support ("moment"/"lasso"), threshold, mix, support_z and stop_se for hybrid
        (``stop_se``: stop EM when no supported cell changes by more than this
        fraction of its moment-estimate standard error; default None = ``tol``),
        reuse_subsets (answer a subset of a cached joint by projection).

    Notes
    -----
    Per attribute, the scaled likelihood matrix (n, |O_j|) for EM, the projected
    bits (n, |O_j|) for moment regression and the debiased bit shares for the
    Lasso are computed once and reused by every joint involving the attribute
    (evicted least-recently-used beyond half the memory budget).  Results are
    cached by attribute set; a permutation of a cached request is a transpose.

    References
    ----------
    Ren et al., "LoPub", IEEE TIFS 2018, Alg. 1-3.
    """

    def __init__(self, reports: Reports, method: str = "em", *, postprocess: str = "clip",
                 tol: float = 1e-6, max_iter: int | None = None, start: Any = None,
                 stop_rule: str = "max_change", chunk_size: int | None = None,
                 memory_budget: int = DEFAULT_BUDGET, progress: Callable | None = None, **opts: Any):
        if not isinstance(reports, Reports):
            raise TypeError(f"reports must be a lopub.reports.Reports, got {type(reports).__name__}")
        if not isinstance(method, str) or method not in METHODS:
            raise ValueError(f"method ({method!r}) must be one of {METHODS}")
        if stop_rule not in STOP_RULES:
            raise ValueError(f"stop_rule ({stop_rule!r}) must be one of {STOP_RULES}")
        unknown = sorted(set(opts) - set(_OPTS))
        if unknown:
            raise TypeError(f"unknown option(s) {unknown}; expected some of {sorted(_OPTS)}")
        self.reports, self.method = reports, method
        self.postprocess = check_postprocess(postprocess)
        self.tol = check_positive("tol", tol)
        self.max_iter = check_int("max_iter", DEFAULT_MAX_ITER[method] if max_iter is None else max_iter, 1)
        self.start, self.stop_rule, self.progress = start, stop_rule, progress
        self.chunk_size = None if chunk_size is None else check_int("chunk_size", chunk_size, 1)
        self.memory_budget = check_int("memory_budget", memory_budget, 1)
        self.opts = {**_OPTS, **opts}
        if self.opts["design"] not in _moment.DESIGNS:
            raise ValueError(f"design ({self.opts['design']!r}) must be one of {_moment.DESIGNS}")
        if self.opts["solver"] not in ("nnls", "ols"):
            raise ValueError(f"solver ({self.opts['solver']!r}) must be 'nnls' or 'ols'")
        if self.opts["support"] not in _hybrid.SUPPORTS:
            raise ValueError(f"support ({self.opts['support']!r}) must be one of {_hybrid.SUPPORTS}")
        if self.opts["shrink"] not in _moment.SHRINKS:
            raise ValueError(f"shrink ({self.opts['shrink']!r}) must be one of {_moment.SHRINKS}")
        alpha = self.opts["shrink_alpha"]
        if (isinstance(alpha, bool) or not isinstance(alpha, (int, float))
                or not (0.0 < float(alpha) <= 1.0)):
            raise ValueError(f"shrink_alpha ({alpha!r}) must be a number in (0, 1]")
        if self.opts["stop_se"] is not None:
            self.opts["stop_se"] = check_positive("stop_se", self.opts["stop_se"])
        self._attr_cache: OrderedDict = OrderedDict()
        self._results: dict[tuple[str, ...], Marginal] = {}

    @property
    def domain(self):
        return self.reports.spec.domain

    # per-attribute caches ------------------------------------------------
    def _cached(self, kind: str, attr: str, build: Callable[[], Any]) -> Any:
        key = (kind, attr)
        if key in self._attr_cache:
            self._attr_cache.move_to_end(key)
            return self._attr_cache[key]
        value = build()
        self._attr_cache[key] = value
        limit = self.memory_budget // 2
        while len(self._attr_cache) > 1 and sum(_nbytes(v) for v in self._attr_cache.values()) > limit:
            self._attr_cache.popitem(last=False)
        return value

    def likelihood(self, attr: str):
        """Scaled likelihood matrix of ``attr`` (cached); see :mod:`.likelihood`."""
        return self._cached("lik", attr, lambda: attribute_likelihood(self.reports, attr))

    def projected(self, attr: str) -> np.ndarray:
        """Projected bits of ``attr`` for moment regression (cached)."""
        design = self.opts["design"]
        return self._cached("z" + design, attr,
                            lambda: _moment.projected_bits(self.reports, attr, design=design))

    def projected_stats(self, attr: str) -> dict:
        """Mean, covariance trace and effective dimension of the projected bits (cached)."""
        design = self.opts["design"]
        return self._cached("zstat" + design, attr,
                            lambda: _moment.attribute_moments(self.projected(attr)))

    def centered(self, attr: str) -> np.ndarray:
        """Centred projected bits of ``attr`` with a constant row, (|O| + 1, n) (cached)."""
        design = self.opts["design"]
        return self._cached("zc" + design, attr, lambda: _moment.augmented_central(
            self.projected(attr), self.projected_stats(attr)["mean"]))

    def bit_shares(self, attr: str) -> np.ndarray:
        """Debiased bit shares of ``attr`` for the Lasso (cached)."""
        return self._cached("bits", attr, lambda: _lasso.debiased_bit_shares(self.reports, attr))

    # public queries ------------------------------------------------------
    def one_way(self, attr: str) -> Marginal:
        """One-way marginal of ``attr`` with this session's method."""
        return self.marginal([attr])

    def marginal(self, attrs: Sequence[str]) -> Marginal:
        """Estimated joint distribution of ``attrs`` (axes in the given order).

        Raises
        ------
        DomainError
            Unknown or duplicate attributes.
        BudgetError
            The k-way table (with its working memory) exceeds ``memory_budget``.
        """
        attrs = [attrs] if isinstance(attrs, str) else list(attrs)
        idx = self.domain.indices(attrs)  # rejects unknown / duplicate names
        canon = tuple(a for _, a in sorted(zip(idx, attrs)))
        hit = self._lookup(canon)
        if hit is None:
            self._check_budget(attrs)
            hit = self._fit(canon)
            self._results[canon] = hit
        return hit.project(attrs)

    def _lookup(self, canon: tuple[str, ...]) -> Marginal | None:
        if canon in self._results:
            return self._results[canon]
        if self.opts["reuse_subsets"]:
            for key, m in self._results.items():
                if set(canon) <= set(key):
                    return m.project(canon)
        return None

    def working_bytes(self, attrs: Sequence[str]) -> int:
        """Estimated peak bytes of one estimation of ``attrs`` (beyond the caches)."""
        sizes = [self.domain.size(a) for a in attrs]
        if self.method == "moment" and self.opts["shrink"] == "js" and len(sizes) > 1:
            sizes = [s + 1 for s in sizes]  # augmented central moments
        cells = math.prod(sizes)
        if self.method == "lasso" or (self.method == "hybrid-lasso"):
            bits = sum(self.reports.spec.m[self.domain.index(a)] for a in attrs)
            return 8 * cells * (3 * bits + 12)
        rest = cells // max(sizes)
        chunk = min(self.reports.n, self.chunk_size or 8192)
        return 8 * (12 * cells + 3 * chunk * (rest + max(sizes)))

    def _check_budget(self, attrs: Sequence[str]) -> None:
        need = self.working_bytes(attrs)
        if need > self.memory_budget:
            sizes = " x ".join(str(self.domain.size(a)) for a in attrs)
            cells = self.domain.cells(attrs)
            raise BudgetError(
                f"the joint of {list(attrs)} has {sizes} = {cells:,} cells and needs about "
                f"{need / 2**20:,.0f} MiB with method {self.method!r}, above memory_budget "
                f"({self.memory_budget / 2**20:,.0f} MiB); estimate fewer or smaller attributes "
                "(e.g. cliques of a junction tree) or raise memory_budget "
                "(`lopub estimate --memory-budget-mb`)"
            )

    # fitting -------------------------------------------------------------
    def _fit(self, attrs: tuple[str, ...]) -> Marginal:
        t0 = time.perf_counter()
        fit = {"em": self._fit_em, "lasso": self._fit_lasso, "moment": self._fit_moment,
               "hybrid": self._fit_hybrid, "hybrid-lasso": self._fit_hybrid}[self.method]
        with _single_thread_blas():
            raw, meta = fit(attrs)
        table, applied = _post(raw, self.postprocess)
        meta = {"method": self.method, "iterations": meta.pop("iterations", 0),
                "converged": meta.pop("converged", True), "seconds": time.perf_counter() - t0,
                "loglik": meta.pop("loglik", None), "postprocess": applied, **meta}
        return Marginal(self.domain.project(list(attrs)), table, self.reports.n, meta)

    def _chunk(self, attrs: Sequence[str]) -> int:
        if self.chunk_size is not None:
            return self.chunk_size
        sizes = [self.domain.size(a) for a in attrs]
        per_user = 8 * 3 * (math.prod(sizes) // max(sizes) + max(sizes))
        return int(max(1024, min(self.reports.n, (self.memory_budget // 8) // per_user)))

    def _em(self, attrs: Sequence[str], start: np.ndarray, *, tol: float | None = None,
            scale: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
        liks = [self.likelihood(a) for a in attrs]
        data = KwayData([x.values for x in liks], self._chunk(attrs), self.memory_budget // 4)
        return em_joint(data, start, offset=sum(x.offset for x in liks),
                        tol=self.tol if tol is None else tol,
                        max_iter=self.max_iter, stop_rule=self.stop_rule,
                        accelerate=bool(self.opts["accelerate"]), progress=self.progress, scale=scale)

    def _fit_em(self, attrs: tuple[str, ...]) -> tuple[np.ndarray, dict]:
        p, meta = self._em(attrs, self._start(attrs))
        return p, meta

    def _start(self, attrs: Sequence[str]) -> np.ndarray:
        shape = tuple(self.domain.size(a) for a in attrs)
        s = self.start
        if s is None or (isinstance(s, str) and s == "uniform"):
            return uniform(shape)
        if isinstance(s, str) and s == "independent":
            if len(attrs) == 1:
                return uniform(shape)
            ones = [Estimator(self.reports, "em", tol=self.tol)._share(self).one_way(a).values
                    for a in attrs]
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

    def _share(self, other: "Estimator") -> "Estimator":
        self._attr_cache = other._attr_cache  # share per-attribute caches (same reports)
        return self

    def _fit_moment(self, attrs: tuple[str, ...], p_ols: np.ndarray | None = None,
                    shrink: str | None = None) -> tuple[np.ndarray, dict]:
        shrink = self.opts["shrink"] if shrink is None else shrink
        design = self.opts["design"]
        meta = {"design": design, "solver": self.opts["solver"], "loglik": None, "shrink": shrink,
                "shrink_factor": 1.0}
        grams = [_moment.gram(self.reports, a, design) for a in attrs]
        if shrink == "none" or len(attrs) == 1:
            if p_ols is None:
                zs = [self.projected(a) for a in attrs]
                p_ols = KwayData(zs, self._chunk(attrs), self.memory_budget // 4).moment()
            target = p_ols
        else:
            st = [self.projected_stats(a) for a in attrs]
            ones = [self._one_way_fit(a, g) for a, g in zip(attrs, grams)]
            if shrink == "global":
                p_ols, se = self._moment_se(attrs)
                ind = _moment.outer_product(ones)
                dev = p_ols - ind
                energy, noise = float(np.sum(dev * dev)), float(np.sum(se * se))
                lam = max(0.0, 1.0 - noise / energy) if energy > 0 else 1.0
                target = ind + lam * dev
                meta["shrink_factor"] = lam
            else:
                moment = _moment.cross_moment([self.centered(a) for a in attrs])
                alpha = float(self.opts["shrink_alpha"])
                target, factors, overall = _moment.shrink_interactions(moment, st, ones, self.reports.n, alpha)
                meta["shrink_factor"] = overall
                meta["shrink_alpha"] = alpha
                meta["shrink_factors"] = {"*".join(attrs[j] for j in S): lam for S, lam in factors.items()}
        if self.opts["solver"] == "ols":
            return target, {**meta, "iterations": 0, "converged": True}
        p, it, ok = _moment.nn_least_squares(target, grams, tol=min(self.tol, 1e-8), max_iter=self.max_iter)
        return p, {**meta, "iterations": it, "converged": ok}

    def _one_way_fit(self, attr: str, gram: np.ndarray) -> np.ndarray:
        """Simplex-constrained moment estimate of one attribute's marginal (cached)."""
        key = "q" + self.opts["design"]

        def build() -> np.ndarray:
            p, _, _ = _moment.nn_least_squares(self.projected_stats(attr)["mean"], [gram],
                                               tol=min(self.tol, 1e-8), max_iter=self.max_iter)
            return p
        return self._cached(key, attr, build)

    def _fit_lasso(self, attrs: tuple[str, ...]) -> tuple[np.ndarray, dict]:
        targets = [self.bit_shares(a) for a in attrs]
        blooms = [self.reports.spec.bloom[self.domain.index(a)] for a in attrs]
        p, meta = _lasso.lasso_joint(targets, blooms, alpha=float(self.opts["alpha"]), max_iter=self.max_iter)
        return p, {**meta, "loglik": None}

    def _moment_se(self, attrs: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Unconstrained moment estimate and its per-cell standard error."""
        zs = [self.projected(a) for a in attrs]
        chunk = self._chunk(attrs)
        p_ols = KwayData(zs, chunk, self.memory_budget // 4).moment()
        second = KwayData([x * x for x in zs], chunk, self.memory_budget // 4).moment()
        return p_ols, np.sqrt(np.maximum(second - p_ols**2, 0.0) / self.reports.n)

    def _plausible(self, attrs: tuple[str, ...], z: float) -> np.ndarray:
        """Cells whose unconstrained moment estimate is not ``z`` standard errors below 0."""
        p_ols, se = self._moment_se(attrs)
        return p_ols > -z * se

    def _fit_hybrid(self, attrs: tuple[str, ...]) -> tuple[np.ndarray, dict]:
        t0 = time.perf_counter()
        support = "lasso" if self.method == "hybrid-lasso" else self.opts["support"]
        keep = p_ols = se = None
        stop_se = self.opts["stop_se"]
        if (support == "moment" and self.opts["support_z"] is not None) or stop_se is not None:
            p_ols, se = self._moment_se(attrs)  # computed once, shared with the moment fit
            if support == "moment" and self.opts["support_z"] is not None:
                keep = p_ols > -float(self.opts["support_z"]) * se
        # the moment start is unshrunk (shrink="none"), as before the shrink option existed
        fast, fmeta = (self._fit_lasso(attrs) if support == "lasso"
                       else self._fit_moment(attrs, p_ols, shrink="none"))
        fast, _ = _post(fast, "clip")
        mask, start = _hybrid.support_start(fast, threshold=float(self.opts["threshold"]),
                                            mix=float(self.opts["mix"]), keep=keep)
        fast_seconds = time.perf_counter() - t0
        if stop_se is None:
            p, meta = self._em(attrs, start)
        else:
            scale = np.maximum(se, 1e-12)
            p, meta = self._em(attrs, start, tol=stop_se, scale=scale)
        meta.update(support_method=support, support_size=int(mask.sum()), cells=int(mask.size),
                    support_seconds=fast_seconds, support_iterations=fmeta["iterations"])
        return p, meta


_CONTROLLER = None


def _single_thread_blas():
    """One BLAS thread: the E-step's tall-skinny products are 5-50x slower multithreaded."""
    global _CONTROLLER
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - shipped with scikit-learn
        return contextlib.nullcontext()
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


def _nbytes(value: Any) -> int:
    return int(getattr(value, "nbytes", 0))


def estimate(reports: Reports, attrs: Sequence[str], method: str = "em", *, postprocess: str = "clip",
             tol: float = 1e-6, max_iter: int | None = None, start: Any = None,
             stop_rule: str = "max_change", chunk_size: int | None = None,
             memory_budget: int = DEFAULT_BUDGET, progress: Callable | None = None,
             **opts: Any) -> Marginal:
    """Estimate the joint distribution of ``attrs`` from ``reports`` with ``method``.

    A thin wrapper around ``Estimator(reports, method, ...).marginal(attrs)``;
    see :class:`Estimator` for the parameters.

    Returns
    -------
    Marginal
        Axes in the order of ``attrs``; ``n = reports.n``; ``meta`` holds
        method, iterations, converged, seconds, loglik (None where undefined),
        postprocess and method-specific entries.

    References
    ----------
    Ren et al., "LoPub", IEEE TIFS 2018, Alg. 1 (EM), Alg. 2 (Lasso), Alg. 3 (Lasso+EM).
    """
    est = Estimator(reports, method, postprocess=postprocess, tol=tol, max_iter=max_iter, start=start,
                    stop_rule=stop_rule, chunk_size=chunk_size, memory_budget=memory_budget,
                    progress=progress, **opts)
    return est.marginal(attrs)
