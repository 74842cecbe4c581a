"""Process pools for many joints at once: both cores, per-attribute work computed once.

Two kinds of parallel work, both giving results identical to the serial run:

* :func:`map_sets` -- one task per attribute set (EM, hybrid, Lasso).  The
  parent builds the per-attribute arrays (likelihood matrices, projected
  bits) in its :class:`~.cache.AttributeCache` first; the workers are forked
  from it (``multiprocessing`` ``"fork"`` context), so they read those arrays
  from the parent's memory pages instead of recomputing or copying them, and
  each runs exactly the serial code on its set.
* :func:`map_chunks` -- one task per chunk of users (moment sufficient
  statistics): each returns a small sum; the sums are added in chunk order
  by the caller, so the result does not depend on the number of workers.

Each worker keeps linear algebra to one thread (see
:func:`single_thread_blas`), so ``jobs`` processes use ``jobs`` cores.
Where ``fork`` is unavailable (Windows, macOS default) everything runs
serially.
"""
from __future__ import annotations

import contextlib
import mmap
import multiprocessing
import os
from typing import Any, Callable, Iterator, Sequence

_STATE: dict[str, Any] = {}
_IN_WORKER = False


def resolve_jobs(jobs: object, name: str = "jobs") -> int:
    """``jobs`` as a positive int (None: every core; inside a worker always 1)."""
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f"{name} ({jobs!r}) must be an integer >= 1 or None (all cores)")
    if _IN_WORKER:
        return 1
    return int(jobs) if jobs is not None else max(1, os.cpu_count() or 1)


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def _init_worker() -> None:
    global _IN_WORKER
    _IN_WORKER = True
    from lopub.io import release_inherited_locks

    release_inherited_locks()  # the parent's output lock must die with the parent


def _pool(jobs: int):
    return multiprocessing.get_context("fork").Pool(jobs, initializer=_init_worker)


def _run_set(key: tuple[str, ...]):
    return key, _STATE["measure"](key)


def map_sets(measure: Callable[[tuple[str, ...]], Any], keys: Sequence[tuple[str, ...]],
             jobs: int, *, worker: Callable | None = None) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Yield ``(key, measure(key))`` for every key, on ``jobs`` forked workers (any order).

    ``worker`` (default ``measure``) is what the workers call instead.
    """
    keys = list(keys)
    if jobs <= 1 or len(keys) <= 1 or not can_fork():
        for key in keys:
            yield key, measure(key)
        return
    _STATE["measure"] = worker or measure
    try:
        with _pool(min(jobs, len(keys))) as pool:
            yield from pool.imap_unordered(_run_set, keys)
    finally:
        _STATE.pop("measure", None)


def _run_chunk(bounds: tuple[int, int]):

    a, b = bounds
    with single_thread_blas():
        return _STATE["chunk_fn"](_STATE["reports"].bits(a, b))


def map_chunks(reports: Any, fn: Callable, chunk: int, jobs: int,
               progress: Callable[[int, int], Any] | None = None) -> list:
    """``[fn(bits of users a:b)]`` for consecutive chunks of ``chunk`` users, in chunk order."""
    return list(iter_chunks(reports, fn, chunk, jobs, progress))


def iter_chunks(reports: Any, fn: Callable, chunk: int, jobs: int,
                progress: Callable[[int, int], Any] | None = None) -> Iterator[Any]:
    """:func:`map_chunks` one result at a time, in chunk order: a caller that adds them up as
    they come holds one chunk's result, not all of them (a moment pass's Gram matrices are
    K x K per chunk)."""
    bounds = [(a, min(a + chunk, reports.n)) for a in range(0, reports.n, chunk)]
    if jobs <= 1 or len(bounds) <= 1 or not can_fork():

        with single_thread_blas():
            for i, (a, b) in enumerate(bounds):  # chunks of users
                yield fn(reports.bits(a, b))
                if progress is not None:
                    progress(i + 1, len(bounds))
        return
    _STATE.update(chunk_fn=fn, reports=reports)
    try:
        with _pool(min(jobs, len(bounds))) as pool:
            for i, part in enumerate(pool.imap(_run_chunk, bounds)):  # keeps chunk order
                yield part
                if progress is not None:
                    progress(i + 1, len(bounds))
    finally:
        _STATE.pop("chunk_fn", None)
        _STATE.pop("reports", None)


def shared_array(shape: tuple[int, ...]) -> Any:
    """A float64 array in anonymous shared memory: what forked workers write, the parent sees."""
    import numpy as np

    nbytes = max(8, 8 * int(np.prod(shape)))
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype=np.float64, count=int(np.prod(shape))).reshape(shape)


def _run_likelihood(attr: str):
    from lopub.estimate.likelihood import attribute_likelihood

    with single_thread_blas():
        lik = attribute_likelihood(_STATE["reports"], attr, out=_STATE["buffers"][attr])
    return attr, lik.offset


def likelihoods(reports: Any, attrs: Sequence[str], jobs: int,
                progress: Callable[[int, int], Any] | None = None) -> dict:
    """Likelihood matrices of ``attrs`` built on ``jobs`` forked workers into shared memory.

    Each matrix is exactly :func:`~.likelihood.attribute_likelihood`'s (the
    same code fills it), written by a worker straight into memory the parent
    keeps; nothing is copied back.
    """
    from lopub.estimate.likelihood import AttributeLikelihood, attribute_likelihood

    if jobs <= 1 or len(attrs) <= 1 or not can_fork():
        out = {}
        for i, a in enumerate(attrs):
            out[a] = attribute_likelihood(reports, a)
            if progress is not None:
                progress(i + 1, len(attrs))
        return out
    dom = reports.spec.domain
    buffers = {a: shared_array((reports.n, dom.size(a))) for a in attrs}
    _STATE.update(reports=reports, buffers=buffers)
    offsets = {}
    try:
        with _pool(min(jobs, len(attrs))) as pool:
            for a, off in pool.imap_unordered(_run_likelihood, list(attrs)):
                offsets[a] = off
                if progress is not None:
                    progress(len(offsets), len(attrs))
    finally:
        _STATE.pop("reports", None)
        _STATE.pop("buffers", None)
    return {a: AttributeLikelihood(buffers[a], offsets[a]) for a in attrs}


def plan_rounds(keys: Sequence[tuple[str, ...]], attr_bytes: dict[str, int],
                capacity: int) -> list[tuple[list[str], list[tuple[str, ...]]]]:
    """Group attribute sets into rounds whose attributes' arrays fit in ``capacity`` bytes.

    Returns ``[(attributes to hold, sets to estimate)]``.  A *resident* block
    of attributes (the largest first) fills the capacity but room for the
    largest other attribute; the sets inside it are estimated, then every other
    attribute is streamed past it, one at a time, with the sets inside the
    block plus that attribute.  The block's attributes are then done with and
    the next block starts.  For pairs each attribute's arrays are built about
    ``1 + (d - r) / r / 2`` times (``r`` attributes per block) instead of
    nearly once per pair (least-recently-used eviction over pairs in
    lexicographic order).  A larger set not covered this way gets a round of
    its own (its attributes fit: the estimator's budget check).
    """
    todo = list(dict.fromkeys(keys))
    order = list(dict.fromkeys(a for k in todo for a in k))
    if sum(attr_bytes[a] for a in order) <= capacity:
        return [(order, todo)] if todo else []
    rounds: list = []

    def take(hold: list[str]) -> None:
        inside = [k for k in todo if set(k) <= set(hold)]
        if inside:
            rounds.append((list(hold), inside))
            for k in inside:
                todo.remove(k)

    while todo:
        live = [a for a in order if any(a in k for k in todo)]
        big = sorted(live, key=lambda a: -attr_bytes[a])
        block, used = [big[0]], attr_bytes[big[0]]
        for a, nxt in zip(big[1:], big[2:] + [None]):  # the resident block: largest first
            if used + attr_bytes[a] + (attr_bytes[nxt] if nxt else 0) > capacity:
                break
            block.append(a)
            used += attr_bytes[a]
        block = [a for a in live if a in set(block)]
        take(block)
        for b in [a for a in live if a not in set(block)]:  # stream the others past it
            take(block + [b])
        for k in [k for k in todo if set(k) & set(block)]:  # wider sets: alone
            take(list(k))
    return rounds


_CONTROLLER = None


def single_thread_blas():
    """One BLAS thread: the E-step's tall-skinny products are 5-50x slower multithreaded."""
    global _CONTROLLER
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - shipped with scikit-learn
        return contextlib.nullcontext()
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")
