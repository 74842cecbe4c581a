"""The facades :func:`Estimator` and :func:`estimate` over the registered estimators.

``Estimator(reports, method, **options)`` returns the registered class's
estimator (:class:`~.em_estimator.EMEstimator`, ...).  It accepts every option
of every registered method, as the single ``Estimator`` class before it did:
an option that the chosen method does not use is checked and then ignored
(e.g. ``shrink`` for ``"hybrid"``); an unknown name raises ``TypeError``.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from lopub.estimate.measurement import Measurement
from lopub.reports.bloom import Reports
from lopub.estimate.base import BloomEstimator
from lopub.estimate.cache import AttributeCache
from lopub.estimate.options import DEFAULT_BUDGET
from lopub.estimate.registry import REGISTRY, all_options, check_method, create

__all__ = ["DEFAULT_BUDGET", "Estimator", "estimate"]


def _split(method: str, options: dict[str, Any]) -> dict[str, Any]:
    """The options ``method`` takes; the others are checked against their declaration and dropped."""
    if "max_iter" in options and options["max_iter"] is None:  # None: the method's default
        options = {k: v for k, v in options.items() if k != "max_iter"}
    unknown = sorted(set(options) - all_options())
    if unknown:
        raise TypeError(f"unknown option(s) {unknown}; expected some of {sorted(all_options())}")
    own = REGISTRY[method].cls.Options
    for name, value in options.items():
        if name not in own.names():
            owner = next(e.cls.Options for e in REGISTRY.values() if name in e.cls.Options.names())
            owner.check_one(name, value)
    return {k: v for k, v in options.items() if k in own.names()}


def Estimator(reports: Reports, method: str = "em", *, cache: AttributeCache | None = None,
              progress: Callable[[int, int], Any] | None = None, **options: Any) -> BloomEstimator:
    """An estimator session of ``method`` over ``reports`` (results and per-attribute work cached).

    Parameters
    ----------
    reports : Reports
    method : str
        A name of :data:`~.registry.METHODS`.
    cache : AttributeCache, optional
        Shared per-attribute arrays (several estimators over the same reports).
    progress : callable(evaluations, max_iter), optional
    **options
        Options of any registered method (see each class's ``Options``);
        those ``method`` does not use are ignored; ``max_iter=None`` means
        the method's default.

    Returns
    -------
    BloomEstimator
        ``marginal(attrs)`` returns a :class:`~lopub.estimate.measurement.Measurement`.
    """
    if not isinstance(reports, Reports):
        raise TypeError(f"reports must be a lopub.reports.bloom.Reports, got {type(reports).__name__}")
    check_method(method)
    return create(method, reports, cache=cache, progress=progress, **_split(method, options))


def estimate(reports: Reports, attrs: Sequence[str], method: str = "em", *,
             progress: Callable[[int, int], Any] | None = None, **options: Any) -> Measurement:
    """Estimate the joint distribution of ``attrs`` from ``reports`` with ``method``.

    ``Estimator(reports, method, **options).marginal(attrs)``.

    Returns
    -------
    Measurement
        Axes in the order of ``attrs``; ``n = reports.n``; ``meta`` holds
        method, iterations, converged, seconds, loglik (None where undefined),
        postprocess and method-specific entries; ``variance`` per cell and
        ``provenance`` (protocol, estimator, postprocess, variance method).
    """
    return Estimator(reports, method, progress=progress, **options).marginal(attrs)
