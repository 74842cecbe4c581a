"""Sums over users on a Dask cluster (optional extra ``lopub[dask]``).

The sufficient statistics of moment regression are sums over users
(:mod:`lopub.estimate.moment_stats`); here each partition of the reports is
summed by one Dask task and the client adds the partition sums in partition
order and fits the model.  EM's E-step is a sum over users too: the
per-attribute likelihood matrices of each partition are built once on the
workers and stay in their memory (:class:`DaskLikelihoods`); every EM step
sends the current table, each partition returns its posterior sums and
log-likelihood, and the client takes the M-step.  Partitions are

* the parts of the reports dataset folder ``path``: each worker reads its own
  part, so the folder must be on storage every worker sees (a shared file
  system; for an object store, mount it, e.g. with s3fs or gcsfuse, at the
  same path on every machine);
* otherwise (no folder: one reports file, or reports built in memory) slices
  of the in-memory reports, sent to the workers by the client.

``scheduler`` is ``"local"`` (a ``LocalCluster`` on this machine, one
single-threaded worker process per core) or the address of a running
scheduler (``tcp://host:8786``); clients are opened once per address and
reused.
"""
from __future__ import annotations

import atexit
import os
from typing import Any, Callable

from lopub.estimate.moment_stats import add_sums

_CLIENTS: dict[str, Any] = {}


def _import_distributed():
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("scheduler needs Dask: pip install 'lopub[dask]' "
                          "(dask[distributed])") from exc
    return distributed


def client(scheduler: str) -> Any:
    """A ``distributed.Client`` for ``scheduler`` ("local" or an address), opened once."""
    if not isinstance(scheduler, str) or not scheduler:
        raise ValueError(f"scheduler ({scheduler!r}) must be 'local' or a Dask scheduler address")
    if scheduler in _CLIENTS:
        return _CLIENTS[scheduler]
    distributed = _import_distributed()
    if scheduler == "local":
        cluster = distributed.LocalCluster(n_workers=max(1, os.cpu_count() or 1), threads_per_worker=1,
                                           processes=True, dashboard_address=None)
        c = distributed.Client(cluster)
    else:
        c = distributed.Client(scheduler)
    _CLIENTS[scheduler] = c
    return c


@atexit.register
def close_clients() -> None:
    """Close the clients (and local clusters) this process opened."""
    while _CLIENTS:
        _, c = _CLIENTS.popitem()
        cluster = getattr(c, "cluster", None)
        c.close()
        if cluster is not None:
            cluster.close()


def partitions(reports: Any, path: str | os.PathLike | None, chunk: int, workers: int) -> list:
    """Units of work: parts of the dataset at ``path``, or slices of ``reports`` (whole chunks)."""
    if path is not None and os.path.isdir(path):  # a dataset folder: its parts
        try:
            from lopub.reports.dataset import ReportsDataset
        except ImportError:  # pragma: no cover - before reports datasets existed
            ReportsDataset = None  # type: ignore[assignment,misc]
        if ReportsDataset is not None:
            ds = ReportsDataset.open(path, spec=reports.spec)
            if ds.n != reports.n:
                raise ValueError(f"reports_path {os.fspath(path)!r} holds {ds.n} reports, "
                                 f"the estimator's reports {reports.n}")
            return ds.partitions()
    per = max(chunk, -(-reports.n // max(1, 4 * workers)))
    per = -(-per // chunk) * chunk
    return [reports.subset(slice(a, a + per)) for a in range(0, reports.n, per)]


def _partition_sum(part: Any, fn: Callable, chunk: int) -> dict:
    from lopub.estimate.parallel import single_thread_blas

    with single_thread_blas():
        return add_sums(fn(bits) for _, bits in part.iter_chunks(chunk))


def dask_chunk_sums(reports: Any, fn: Callable, chunk: int, scheduler: str, *,
                    path: str | os.PathLike | None = None) -> dict:
    """``fn`` summed over every chunk of users, one Dask task per partition, added in order."""
    c = client(scheduler)
    workers = max(1, len(c.scheduler_info().get("workers", {})))
    parts = partitions(reports, path, chunk, workers)
    futures = c.map(_partition_sum, parts, fn=fn, chunk=chunk, pure=False)
    return add_sums(c.gather(futures))


# EM: per-partition likelihoods kept on the workers, E-step sums gathered per step ---------
def _load_part(part: Any) -> Any:
    return part.load() if hasattr(part, "load") and not hasattr(part, "packed") else part


def _part_likelihood(reports: Any, attr: str) -> Any:
    from lopub.estimate.likelihood import attribute_likelihood

    return attribute_likelihood(reports, attr)


def _offset(lik: Any) -> float:
    return lik.offset


def _part_estep(p: Any, chunk: int, *liks: Any) -> tuple:
    from lopub.estimate.parallel import single_thread_blas
    from lopub.estimate.em import KwayData

    data = KwayData([x.values for x in liks], chunk, 0)
    with single_thread_blas():
        g, ll = data.estep_sums(data.to_internal(p))
    return data.from_internal(g), ll


class DaskLikelihoods:
    """Per-attribute likelihood matrices of every partition, held in the Dask workers' memory.

    Built once per (partition, attribute) on the worker holding the partition
    and reused by every joint; :meth:`kway` gives the E-step of a joint over them.
    """

    def __init__(self, reports: Any, scheduler: str, path: str | os.PathLike | None, chunk: int) -> None:
        self.client = client(scheduler)
        workers = max(1, len(self.client.scheduler_info().get("workers", {})))
        parts = partitions(reports, path, chunk, workers)
        self.parts = self.client.map(_load_part, parts, pure=False)
        self.chunk, self.n = chunk, reports.n
        self._liks: dict[str, list] = {}
        self._offsets: dict[str, float] = {}

    def futures(self, attr: str) -> list:
        if attr not in self._liks:
            self._liks[attr] = self.client.map(_part_likelihood, self.parts, attr=attr, pure=False)
            offs = self.client.gather(self.client.map(_offset, self._liks[attr], pure=False))
            self._offsets[attr] = float(sum(offs))
        return self._liks[attr]

    def offset(self, attrs) -> float:
        return sum(self._offsets[a] for a in attrs)

    def kway(self, attrs) -> "DaskKway":
        return DaskKway(self, [self.futures(a) for a in attrs])


class DaskKway:
    """The E-step of one joint summed over partitions on the cluster (``estep`` as :class:`KwayData`)."""

    def __init__(self, liks: DaskLikelihoods, futures: list[list]) -> None:
        self.liks, self.futures, self.n = liks, futures, liks.n

    def estep(self, p: Any) -> tuple:
        c = self.liks.client
        tasks = [c.submit(_part_estep, p, self.liks.chunk, *fs, pure=False) for fs in zip(*self.futures)]
        parts = c.gather(tasks)  # in partition order
        g = parts[0][0]
        ll = parts[0][1]
        for gi, li in parts[1:]:
            g = g + gi
            ll += li
        new = p * g / self.n
        return new / new.sum(), ll
