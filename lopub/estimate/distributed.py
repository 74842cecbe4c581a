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
reused.  A scheduler that does not answer within :data:`CONNECT_TIMEOUT`
seconds is a ConnectionError naming the address; a worker that does not see
the folder (or one of its parts) at the client's absolute path is an error
naming the worker and the path.
"""
from __future__ import annotations

import atexit
import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

from lopub.estimate.moment_stats import add_sums

_CLIENTS: dict[str, Any] = {}
#: seconds to wait for a scheduler to answer (Dask's own default, 30 s, retries a refused port)
CONNECT_TIMEOUT = 10.0


def _import_distributed():
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("scheduler needs Dask: pip install 'lopub[dask]' "
                          "(dask[distributed])") from exc
    return distributed


def client(scheduler: str, workers: int | None = None) -> Any:
    """A ``distributed.Client`` for ``scheduler`` ("local" or an address), opened once.

    ``workers``: for "local", the number of single-threaded worker processes
    (the estimator's ``jobs``; None: one per core); a running scheduler's
    workers are its own, so it is ignored there.
    """
    if not isinstance(scheduler, str) or not scheduler:
        raise ValueError(f"scheduler ({scheduler!r}) must be 'local' or a Dask scheduler address")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers ({workers!r}) must be an integer >= 1 or None (one per core)")
    n = (workers or max(1, os.cpu_count() or 1)) if scheduler == "local" else None
    key = scheduler if n is None else f"local/{n}"
    if key in _CLIENTS:
        return _CLIENTS[key]
    distributed = _import_distributed()
    if n is not None:
        cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1,
                                           processes=True, dashboard_address=None)
        c = distributed.Client(cluster)
    else:
        c = _connect(distributed, scheduler)
    _CLIENTS[key] = c
    return c


def _connect(distributed: Any, scheduler: str) -> Any:
    """A client of the scheduler at ``scheduler``; a clear error within CONNECT_TIMEOUT when none answers."""
    from distributed.comm import get_address_host_port

    try:  # no port, unknown scheme: checked before a client (and its event loop) is started
        if not scheduler.startswith("inproc://"):  # an in-process cluster's address has no port
            get_address_host_port(scheduler)
        return distributed.Client(scheduler, timeout=CONNECT_TIMEOUT)
    except ValueError as exc:  # the address itself is wrong
        raise ValueError(f"scheduler ({scheduler!r}) is not a Dask scheduler address ({exc}); expected "
                         f"'local' or an address such as tcp://host:8786") from None
    except OSError as exc:  # refused, unknown host, timed out (TimeoutError is an OSError)
        raise ConnectionError(f"no Dask scheduler answered at {scheduler!r} within {CONNECT_TIMEOUT:g} s "
                              f"({exc}); is `dask scheduler` running there, and its port reachable "
                              f"from this machine?") from None


def _workers(c: Any, scheduler: str) -> int:
    """How many workers the cluster has; one at least, waited for up to CONNECT_TIMEOUT seconds
    (a scheduler without workers would otherwise hold the fit forever)."""
    n = len(c.scheduler_info().get("workers", {}))
    if n == 0:
        try:
            c.wait_for_workers(1, timeout=CONNECT_TIMEOUT)
        except OSError:  # TimeoutError
            raise ConnectionError(f"the Dask scheduler at {scheduler!r} has no workers (none joined within "
                                  f"{CONNECT_TIMEOUT:g} s): start `dask worker {scheduler} --nthreads 1` "
                                  f"on machines that see the reports folder") from None
        n = len(c.scheduler_info().get("workers", {}))
    return max(1, n)


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
    """Units of work: parts of the dataset at ``path``, or slices of ``reports`` (whole chunks).

    The parts carry the folder's absolute path: the workers run in other
    directories (on other machines), where a relative path means another
    folder.  For reports left on disk (:class:`~lopub.reports.dataset.OnDiskReports`)
    the parts are those listed when they were opened: parts appended since
    (``lopub encode --append`` during the fit) are not theirs and are left out.
    """
    if path is not None and os.path.isdir(path):  # a dataset folder: its parts
        from lopub.reports.dataset import OnDiskReports, ReportsDataset

        folder = os.path.abspath(path)
        ds = ReportsDataset.open(folder, spec=reports.spec)
        if isinstance(reports, OnDiskReports):
            mine = reports.dataset.parts
            if ds.parts[:len(mine)] != mine:
                raise ValueError(f"reports_path {folder!r} does not list the parts of the estimator's "
                                 f"reports ({os.fspath(reports.dataset.path)!r}, {len(mine)} parts) "
                                 f"first; it is another folder, or was rewritten since they were opened")
            return ds.partitions()[:len(mine)]
        if ds.n != reports.n:
            raise ValueError(f"reports_path {folder!r} holds {ds.n} reports, the estimator's reports "
                             f"{reports.n} (another folder, or one appended to since the reports were "
                             f"loaded)")
        return ds.partitions()
    per = max(chunk, -(-reports.n // max(1, 4 * workers)))
    per = -(-per // chunk) * chunk
    return [reports.subset(slice(a, a + per)) for a in range(0, reports.n, per)]


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return f"Dask worker {get_worker().address}"
    except (ImportError, ValueError):  # not in a worker (a task run in this process)
        return "this process"


@contextlib.contextmanager
def _reading(part: Any) -> Iterator[None]:
    """Around a worker's reading of ``part``: a folder it cannot read is an error naming the worker."""
    from lopub.errors import ReportsFormatError

    if not getattr(part, "is_folder", False):  # a slice sent by the client
        yield
        return
    where = os.fspath(part.path)
    if not os.path.isdir(where):
        raise FileNotFoundError(f"{_worker_name()} does not see the reports folder {where!r}: the workers "
                                f"read its parts themselves, so it must be at that path on every worker "
                                f"(shared storage: NFS, a shared volume, an object store mounted there)")
    try:
        yield
    except ReportsFormatError as exc:  # a part missing, truncated or not the listed one
        raise ReportsFormatError(f"{_worker_name()}: {exc}; every worker must see the client's folder, "
                                 f"unchanged, at this path") from None


def _partition_sum(part: Any, fn: Callable, chunk: int) -> dict:
    from lopub.estimate.parallel import single_thread_blas

    with _reading(part), single_thread_blas():
        return add_sums(fn(bits) for _, bits in part.iter_chunks(chunk))


def dask_chunk_sums(reports: Any, fn: Callable, chunk: int, scheduler: str, *,
                    path: str | os.PathLike | None = None, workers: int | None = None) -> dict:
    """``fn`` summed over every chunk of users, one Dask task per partition, added in order
    (``workers``: the local cluster's size, see :func:`client`)."""
    c = client(scheduler, workers)
    workers = _workers(c, scheduler)
    parts = partitions(reports, path, chunk, workers)
    futures = c.map(_partition_sum, parts, fn=fn, chunk=chunk, pure=False)
    return add_sums(c.gather(futures))


# EM: per-partition likelihoods kept on the workers, E-step sums gathered per step ---------
def _load_part(part: Any) -> Any:
    with _reading(part):
        return part.load() if hasattr(part, "load") and not hasattr(part, "packed") else part


def _part_likelihood(reports: Any, attr: str) -> Any:
    from lopub.estimate.likelihood import attribute_likelihood

    return attribute_likelihood(reports, attr)


def _offset(lik: Any) -> float:
    return lik.offset


def _part_estep(p: Any, chunk: int, *liks: Any) -> tuple:
    from lopub.estimate.em import KwayData
    from lopub.estimate.parallel import single_thread_blas

    data = KwayData([x.values for x in liks], chunk, 0)
    with single_thread_blas():
        g, ll = data.estep_sums(data.to_internal(p))
    return data.from_internal(g), ll


class DaskLikelihoods:
    """Per-attribute likelihood matrices of every partition, held in the Dask workers' memory.

    Built once per (partition, attribute) on the worker holding the partition
    and reused by every joint; :meth:`kway` gives the E-step of a joint over them.
    """

    def __init__(self, reports: Any, scheduler: str, path: str | os.PathLike | None, chunk: int,
                 workers: int | None = None) -> None:
        self.client = client(scheduler, workers)
        workers = _workers(self.client, scheduler)
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

    def kway(self, attrs) -> DaskKway:
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
