"""Shared marginal cache: every (1-, 2-, k-way) estimate is computed once.

The pipeline asks for one-way marginals (entropy, pruning), every pairwise
joint (mutual information) and the clique joints (model).  A
:class:`MarginalCache` wraps any *source* -- an ``Estimator`` session, a
:class:`~lopub.dataset.Dataset`, an exact model -- and memoizes by attribute
set, so no estimator runs twice on the same attributes; a request in another
attribute order is a transpose of the cached table.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 4 (pairwise joints feed the
dependency graph) and Sec. V (clique joints).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from ..marginal import Marginal

Progress = Callable[[str, int, int], None]


def query_source(source: Any, attrs: Sequence[str]) -> Marginal:
    """Ask ``source`` for the joint of ``attrs`` via ``.marginal`` or ``.project``.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Alg. 4 and Sec. V-B.
    """
    for name in ("marginal", "project"):
        fn = getattr(source, name, None)
        if callable(fn):
            return fn(list(attrs))
    raise TypeError(
        f"source ({type(source).__name__}) must have a .marginal(attrs) or .project(attrs) method"
    )


class MarginalCache:
    """Memoizing front of an estimator (or of any projectable source).

    Parameters
    ----------
    source : object
        Anything with ``.marginal(attrs)`` or ``.project(attrs)`` returning a
        :class:`~lopub.marginal.Marginal`.
    domain : Domain, optional
        Defaults to ``source.domain``, ``source.reports.spec.domain`` or
        ``source.spec.domain``.

    Attributes
    ----------
    calls : int
        How many times the source was actually asked (cache misses).
    seconds : float
        Time spent inside the source.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Alg. 4 (pairwise joints) and Sec. V-B (clique joints).
    """

    def __init__(self, source: Any, domain=None) -> None:
        if isinstance(source, MarginalCache):
            source = source.source
        self.source = source
        self.domain = domain if domain is not None else _find_domain(source)
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
            hit = query_source(self.source, attrs)
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
                 progress: Progress | None = None) -> None:
        """Estimate every set in ``attr_sets`` (skipping cached ones), reporting progress."""
        todo = [list(s) for s in attr_sets if not self.cached(s)]
        for i, s in enumerate(todo):
            if progress is not None:
                progress(stage, i, len(todo))
            self.marginal(s)
        if progress is not None and todo:
            progress(stage, len(todo), len(todo))


def _find_domain(source: Any):
    for path in (("domain",), ("reports", "spec", "domain"), ("spec", "domain")):
        obj = source
        try:
            for p in path:
                obj = getattr(obj, p)
        except AttributeError:
            continue
        return obj
    return None
