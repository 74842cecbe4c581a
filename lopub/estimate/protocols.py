"""Declared interfaces: what the pipeline, the caches and the model rely on.

- :class:`MarginalSource`: anything with a ``domain`` that answers
  ``marginal(attrs)`` with a :class:`~lopub.data.marginal.Marginal` -- a
  :class:`~lopub.data.dataset.Dataset` (exact counts), an estimator, a
  :class:`~lopub.dependency.MarginalCache`, a fitted
  :class:`~lopub.model.graphical.Model`.
- :class:`MarginalEstimator`: a source built on reports, whose answers are
  :class:`~lopub.estimate.measurement.Measurement` objects (table plus variance), with
  its registered ``method`` name, the number of reports ``n`` and a memory
  budget it can check *before* estimating (``max_cells()``, ``check(attrs)``).

Both are ``typing.Protocol`` classes, checkable with ``isinstance`` (which
tests the members' presence, not their signatures).
"""
from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from lopub.data.domain import Domain
from lopub.data.marginal import Marginal
from lopub.estimate.measurement import Measurement


@runtime_checkable
class MarginalSource(Protocol):
    """A domain and the joint distribution of any of its attribute sets."""

    @property
    def domain(self) -> Domain: ...

    def marginal(self, attrs: Sequence[str]) -> Marginal:
        """Joint distribution of ``attrs`` (axes in the given order)."""
        ...


@runtime_checkable
class MarginalEstimator(MarginalSource, Protocol):
    """A :class:`MarginalSource` estimating from reports, within a memory budget."""

    method: str

    @property
    def n(self) -> int:
        """Number of reports behind every estimate."""
        ...

    def marginal(self, attrs: Sequence[str]) -> Measurement:
        """Estimated joint of ``attrs`` with its per-cell variance and provenance."""
        ...

    def max_cells(self) -> int:
        """Largest number of cells of a table it can estimate within its memory budget."""
        ...

    def check(self, attrs: Sequence[str]) -> None:
        """Raise :class:`~lopub.errors.BudgetError` if ``attrs`` cannot be estimated within budget."""
        ...
