"""Declared, validated options of the Bloom-report estimators (scikit-learn style).

Each estimator declares its options once, as a frozen dataclass whose fields
carry a default, a constraint and a one-line description::

    tol: float = option(1e-6, positive(), "stop when no cell changes by more than this")

:meth:`Options.create` rejects unknown names (``TypeError``) and
:meth:`Options.__post_init__` checks every value against its constraint in
one place, raising :class:`InvalidOptionError` (a ``ValueError`` *and* a
``TypeError``, as scikit-learn's ``InvalidParameterError``) with a message
naming the option, its value and what was expected.
"""
from __future__ import annotations

import dataclasses
import numbers
from typing import Any, Callable

import numpy as np

from lopub.estimate.postprocess import POSTPROCESS


DEFAULT_BUDGET = 2 * 1024**3


class InvalidOptionError(ValueError, TypeError):
    """An estimator option has the wrong kind or a bad value."""


Check = Callable[[str, Any], Any]  # (name, value) -> normalized value, or raises


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def one_of(*choices: Any) -> Check:
    """The value must be one of ``choices``."""
    def check(name: str, value: Any) -> Any:
        if not isinstance(value, type(choices[0])) or value not in choices:
            raise InvalidOptionError(f"{name} ({value!r}) must be one of {choices}")
        return value
    return check


def real(low: float = -np.inf, high: float = np.inf, *, low_open: bool = False,
         high_open: bool = False, optional: bool = False) -> Check:
    """A finite real number in ``[low, high]`` (ends open as asked); None if ``optional``."""
    lo, hi = "(" if low_open else "[", ")" if high_open else "]"
    if np.isinf(high):
        expected = "a finite number" + ("" if np.isinf(low) else f" {'>' if low_open else '>='} {low:g}")
    else:
        expected = f"a number in {lo}{low:g}, {high:g}{hi}"
    expected += " or None" if optional else ""

    def check(name: str, value: Any) -> Any:
        if value is None and optional:
            return None
        ok = _is_real(value) and np.isfinite(float(value))
        if ok:
            v = float(value)
            ok = (v > low if low_open else v >= low) and (v < high if high_open else v <= high)
        if not ok:
            raise InvalidOptionError(f"{name} ({value!r}) must be {expected}")
        return float(value)
    return check


def positive(optional: bool = False) -> Check:
    """A finite real number > 0 (None allowed if ``optional``)."""
    return real(0.0, low_open=True, optional=optional)


def integer(minimum: int = 1, optional: bool = False) -> Check:
    """An integer >= ``minimum`` (None allowed if ``optional``)."""
    def check(name: str, value: Any) -> Any:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
            raise InvalidOptionError(f"{name} ({value!r}) must be an integer >= {minimum}"
                                     + (" or None" if optional else ""))
        return int(value)
    return check


def flag() -> Check:
    """True or False."""
    def check(name: str, value: Any) -> Any:
        if not isinstance(value, (bool, np.bool_)):
            raise InvalidOptionError(f"{name} ({value!r}) must be True or False")
        return bool(value)
    return check


def text(optional: bool = False) -> Check:
    """A non-empty string (None allowed if ``optional``)."""
    def check(name: str, value: Any) -> Any:
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value:
            raise InvalidOptionError(f"{name} ({value!r}) must be a non-empty string"
                                     + (" or None" if optional else ""))
        return value
    return check


def scheduler_options() -> tuple[Any, Any]:
    """The ``scheduler`` and ``reports_path`` option fields (methods that run on Dask)."""
    return (option(None, text(optional=True), "compute the sums over users on a Dask cluster: "
                   "'local' or a scheduler address (default: local processes)"),
            option(None, text(optional=True), "reports dataset folder the Dask workers read "
                   "(shared storage); default: the in-memory reports are sent to them"))


def anything() -> Check:
    """Any value (checked where it is used, e.g. an EM start that needs the table shape)."""
    return lambda name, value: value


def option(default: Any, check: Check, doc: str) -> Any:
    """A dataclass field with its constraint and description in the metadata."""
    return dataclasses.field(default=default, metadata={"check": check, "doc": doc})


@dataclasses.dataclass(frozen=True)
class Options:
    """Options every Bloom-report estimator takes (subclassed per method)."""

    postprocess: str = option("clip", one_of(*POSTPROCESS), "post-processing of every result")
    tol: float = option(1e-6, positive(), "convergence tolerance (largest cell change)")
    max_iter: int = option(10000, integer(1), "maximum iterations of the solver")
    chunk_size: int | None = option(None, integer(1, optional=True),
                                    "users per chunk (default: as large as the budget allows)")
    memory_budget: int = option(DEFAULT_BUDGET, integer(1), "bytes for caches plus one estimation")
    reuse_subsets: bool = option(False, flag(), "answer a subset of a cached joint by projection")
    jobs: int | None = option(None, integer(1, optional=True),
                              "worker processes for many joints at once (default: every core)")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = f.metadata["check"](f.name, getattr(self, f.name))
            object.__setattr__(self, f.name, value)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """``{name: default}`` of every option."""
        return {f.name: f.default for f in dataclasses.fields(cls)}

    @classmethod
    def describe(cls) -> dict[str, str]:
        """``{name: description}`` of every option (for docs and help texts)."""
        return {f.name: f.metadata["doc"] for f in dataclasses.fields(cls)}

    @classmethod
    def create(cls, **kwargs: Any) -> "Options":
        """Build from keyword options; ``TypeError`` naming any unknown one."""
        unknown = sorted(set(kwargs) - set(cls.names()))
        if unknown:
            raise TypeError(f"unknown option(s) {unknown} for this estimator; "
                            f"expected some of {sorted(cls.names())}")
        return cls(**kwargs)

    @classmethod
    def check_one(cls, name: str, value: Any) -> Any:
        """Check one option against its declared constraint."""
        field = {f.name: f for f in dataclasses.fields(cls)}[name]
        return field.metadata["check"](name, value)

    def replace(self, **changes: Any) -> "Options":
        return dataclasses.replace(self, **changes)
