"""The one registry of Bloom-report estimators: name -> class and fixed options.

The command line, :func:`lopub.pipeline.steps.fit`, the :class:`~.api.Estimator`
facade and the docs all list :data:`METHODS` and read defaults from here.
``"hybrid-lasso"`` is a registered alias: :class:`HybridEstimator` with
``support="lasso"``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lopub.reports.bloom import Reports
from lopub.estimate.base import BloomEstimator
from lopub.estimate.em_estimator import EMEstimator
from lopub.estimate.hybrid_estimator import HybridEstimator
from lopub.estimate.lasso_estimator import LassoEstimator
from lopub.estimate.moment_estimator import MomentEstimator


@dataclass(frozen=True)
class Entry:
    """A registered method: its class and the options the name fixes."""

    cls: type[BloomEstimator]
    fixed: dict[str, Any] = field(default_factory=dict)


REGISTRY: dict[str, Entry] = {}


def register(name: str, cls: type[BloomEstimator], **fixed: Any) -> None:
    """Register ``cls`` under ``name`` (``fixed`` options override the caller's)."""
    if not (isinstance(cls, type) and issubclass(cls, BloomEstimator)):
        raise TypeError(f"cls ({cls!r}) must be a BloomEstimator subclass")
    unknown = sorted(set(fixed) - set(cls.Options.names()))
    if unknown:
        raise TypeError(f"fixed option(s) {unknown} are not options of {cls.__name__}")
    REGISTRY[name] = Entry(cls, dict(fixed))


register("em", EMEstimator)
register("lasso", LassoEstimator)
register("moment", MomentEstimator)
register("hybrid", HybridEstimator)
register("hybrid-lasso", HybridEstimator, support="lasso")

METHODS: tuple[str, ...] = tuple(REGISTRY)


def check_method(method: object) -> Entry:
    """The registry entry of ``method``; ValueError naming the registered methods."""
    if not isinstance(method, str) or method not in REGISTRY:
        raise ValueError(f"method ({method!r}) must be one of {tuple(REGISTRY)}")
    return REGISTRY[method]


def defaults(method: str) -> dict[str, Any]:
    """``{option: default}`` of ``method`` (with the options its name fixes)."""
    entry = check_method(method)
    return {**entry.cls.Options.defaults(), **entry.fixed}


def describe(method: str) -> dict[str, tuple[Any, str]]:
    """``{option: (default, description)}`` of ``method`` (for help texts and docs)."""
    entry = check_method(method)
    docs = entry.cls.Options.describe()
    return {name: (value, docs[name]) for name, value in defaults(method).items()}


def all_options() -> set[str]:
    """Every option name of any registered method."""
    return {n for e in REGISTRY.values() for n in e.cls.Options.names()}


def create(method: str, reports: Reports, *, cache=None, progress=None, **options: Any) -> BloomEstimator:
    """An estimator of ``method`` over ``reports`` (its own options only; see :func:`.api.Estimator`)."""
    entry = check_method(method)
    est = entry.cls(reports, cache=cache, progress=progress, **{**options, **entry.fixed})
    est.method = method  # type: ignore[misc]  # an alias's own name on this instance
    return est
