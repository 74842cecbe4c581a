"""Shared marginal cache: every (1-, 2-, k-way) estimate is computed once.

The pipeline asks for one-way marginals (entropy, pruning), every pairwise
joint (mutual information) and the clique joints (model).  A
:class:`MarginalCache` wraps any *source* -- an ``Estimator`` session, a
:class:`~lopub.data.dataset.Dataset`, an exact model -- and memoizes by attribute
set, so no estimator runs twice on the same attributes; a request in another
attribute order is a transpose of the cached table.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 4 (pairwise joints feed the
dependency graph) and Sec. V (clique joints).
"""
from __future__ import annotations

import time
from typing import Callable, Sequence

from lopub.data.domain import Domain
from lopub.data.marginal import Marginal
from lopub.estimate.protocols import MarginalSource

Progress = Callable[[str, int, int], None]


def as_source(source: object, name: str = "source") -> MarginalSource:
    """``source`` as a :class:`~lopub.estimate.protocols.MarginalSource`.

    A :class:`~lopub.data.marginal.Marginal` table is accepted too (its
    sub-marginals are projections); anything else without ``domain`` and
    ``marginal(attrs)`` raises ``TypeError``.
    """
    if isinstance(source, MarginalSource):
        return source
    if isinstance(source, Marginal):
        return _TableSource(source)
    raise TypeError(f"{name} ({type(source).__name__}) must be a MarginalSource: an object with a "
                    "domain and .marginal(attrs) (a Dataset, an estimator, a MarginalCache, a Model)")


class _TableSource:
    """A marginal table as a source of its own sub-marginals."""

    def __init__(self, table: Marginal) -> None:
        self.table = table
        self.domain = table.domain

    def marginal(self, attrs: Sequence[str]) -> Marginal:
        return self.table.project(list(attrs))


def query_source(source: MarginalSource, attrs: Sequence[str]) -> Marginal:
    """The joint of ``attrs`` from ``source`` (see :func:`as_source`)."""
    return as_source(source).marginal(list(attrs))


class MarginalCache:
    """Memoizing front of an estimator (or of any projectable source).

    Parameters
    ----------
    source : MarginalSource
        Anything with a ``domain`` and ``.marginal(attrs)`` returning a
        :class:`~lopub.data.marginal.Marginal` (a Dataset, an estimator, a Model).
    domain : Domain, optional
        Defaults to ``source.domain``.
    jobs : int, optional
        Worker processes of :meth:`prefetch` when the source estimates many
        sets at once (``.marginals(sets, jobs=...)``, the Bloom estimators);
        default: the source's own ``jobs`` option, else every core.

    Attributes
    ----------
    calls : int
        How many times the source was actually asked (cache misses).
    seconds : float
        Time spent inside the source.
    """

    def __init__(self, source: MarginalSource, domain: Domain | None = None, *,
                 jobs: int | None = None) -> None:
        if isinstance(source, MarginalCache):
            source = source.source  # type: ignore[has-type]  # set by its own __init__
        if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
            raise ValueError(f"jobs ({jobs!r}) must be an integer >= 1 or None (all cores)")
        self.jobs = jobs
        self.source = as_source(source)
        self.domain = domain if domain is not None else self.source.domain
        self._store: dict[frozenset, Marginal] = {}
        self.calls = 0
        self.seconds = 0.0

    def marginal(self, attrs: Sequence[str]) -> Marginal:
        """Joint of ``attrs`` (axes in the given order), computed at most once per set."""
        attrs = list(attrs)
        if self.domain is not None:
            self.domain.indices(attrs)
        key = frozenset(attrs)
        hit = self._store.get(key)
        if hit is None:
            t0 = time.perf_counter()
            hit = self.source.marginal(attrs)
            self.seconds += time.perf_counter() - t0
            self.calls += 1
            self._store[key] = hit
        return hit if list(hit.attrs) == attrs else hit.project(attrs)

    project = marginal

    def one_way(self, attr: str) -> Marginal:
        return self.marginal([attr])

    def cached(self, attrs: Sequence[str]) -> bool:
        return frozenset(attrs) in self._store

    def prefetch(self, attr_sets: Sequence[Sequence[str]], *, stage: str = "estimate",
                 progress: Progress | None = None, jobs: int | None = None) -> None:
        """Estimate every set in ``attr_sets`` (skipping cached ones), reporting progress.

        A source with ``estimates_many = True`` and ``marginals(sets, jobs=,
        progress=, stage=)`` (the Bloom estimators) estimates them together on ``jobs`` processes (default:
        this cache's ``jobs``, then the source's own); the results are those of
        the serial run.  Otherwise one after another.
        """
        todo, seen = [], set()
        for s in attr_sets:
            key = frozenset(s)
            if key not in self._store and key not in seen:
                seen.add(key)
                todo.append(list(s))
        if not todo:
            return
        many = getattr(self.source, "estimates_many", False)
        batch = getattr(self.source, "marginals", None) if many else None
        if callable(batch):
            t0 = time.perf_counter()
            tables = batch(todo, jobs=self.jobs if jobs is None else jobs, progress=progress, stage=stage)
            self.seconds += time.perf_counter() - t0
            self.calls += len(todo)
            self._store.update({frozenset(s): m for s, m in zip(todo, tables)})
            return
        for i, s in enumerate(todo):
            if progress is not None:
                progress(stage, i, len(todo))
            self.marginal(s)
        if progress is not None:
            progress(stage, len(todo), len(todo))
