"""What a user of the Dask path runs into: a folder given by a relative path, a worker that does not
see the folder, a scheduler that is down or misspelt, a folder appended to during the fit."""
import functools
import itertools
import os
import re
import socket
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from lopub.client import encode
from lopub.datasets import embedded_model
from lopub.errors import ReportsFormatError
from lopub.estimate import Estimator, moment_stats
from lopub.estimate import distributed as lopub_dask
from lopub.reports.dataset import ReportsDataset
from lopub.reports.spec import CollectionSpec


@pytest.fixture(scope="module")
def reports():
    bn = embedded_model()
    return encode(bn.sample(3000, rng=3), CollectionSpec.from_domain(bn.domain, f=0.5), rng=4)


@pytest.fixture(scope="module")
def address():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        yield cluster.scheduler_address
        lopub_dask.close_clients()


def _folder(path, reports, batch=1000):
    ds = ReportsDataset.create(path, reports.spec)
    for a in range(0, reports.n, batch):
        ds.append(reports.subset(slice(a, a + batch)))
    return ds


def _one_way_sums(reports):
    """A sum over users the workers compute: the bit counts of the first attribute."""
    m0 = reports.spec.m[0]
    return functools.partial(_bit_counts, m0=m0)


def _bit_counts(bits, m0):
    return {"counts": bits[:, :m0].sum(axis=0, dtype=np.int64)}


def test_parts_carry_the_folders_absolute_path(reports, tmp_path, monkeypatch):
    """Workers run in other directories: a relative REPORTS_FOLDER must not reach them as such."""
    _folder(tmp_path / "reports", reports)
    monkeypatch.chdir(tmp_path)
    parts = lopub_dask.partitions(reports, "reports", 900, 2)
    assert len(parts) == 3
    for part in parts:
        assert part.path.is_absolute()
        assert os.path.samefile(part.path, tmp_path / "reports")


def test_a_worker_that_does_not_see_the_folder_says_so(reports, address, tmp_path):
    _folder(tmp_path / "reports", reports)
    parts = lopub_dask.partitions(reports, tmp_path / "reports", 900, 2)
    os.rename(tmp_path / "reports", tmp_path / "elsewhere")  # what a worker without the mount sees
    c = lopub_dask.client(address)
    for task in (functools.partial(lopub_dask._partition_sum, fn=_one_way_sums(reports), chunk=900),
                 lopub_dask._load_part):  # moment's sums, EM's parts
        with pytest.raises(FileNotFoundError) as err:
            c.gather(c.map(task, parts, pure=False))
        msg = str(err.value)
        assert re.search(r"Dask worker (tcp|inproc)://\S+ does not see the reports folder", msg)
        assert repr(str(tmp_path / "reports")) in msg


def test_a_worker_that_misses_a_part_names_itself(reports, address, tmp_path):
    ds = _folder(tmp_path / "reports", reports)
    parts = lopub_dask.partitions(reports, tmp_path / "reports", 900, 2)
    os.remove(ds.part_paths()[1])
    c = lopub_dask.client(address)
    with pytest.raises(ReportsFormatError, match=r"Dask worker (tcp|inproc)://.*part-00001\.parquet is missing"):
        c.gather(c.map(lopub_dask._partition_sum, parts, fn=_one_way_sums(reports), chunk=900,
                       pure=False))


def test_worker_sums_of_the_parts_are_the_local_sums(reports, address, tmp_path):
    """The check above wraps the reading, not replaces it: the sums are still every user's."""
    _folder(tmp_path / "reports", reports)
    fn = _one_way_sums(reports)
    got = lopub_dask.dask_chunk_sums(reports, fn, 700, address, path=tmp_path / "reports")
    want = moment_stats.add_sums(fn(bits) for _, bits in reports.iter_chunks(700))
    assert np.array_equal(got["counts"], want["counts"])


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_scheduler_that_is_down_is_a_clear_error_in_seconds(monkeypatch):
    monkeypatch.setattr(lopub_dask, "CONNECT_TIMEOUT", 1.0)
    where = f"tcp://127.0.0.1:{_free_port()}"  # nothing listens there
    t0 = time.perf_counter()
    with pytest.raises(ConnectionError, match=r"no Dask scheduler answered at 'tcp://127\.0\.0\.1:\d+' "
                                              r"within 1 s .*dask scheduler"):
        lopub_dask.client(where)
    assert time.perf_counter() - t0 < 20  # Dask's own default waits 30 s; slack for a busy machine
    assert where not in lopub_dask._CLIENTS


@pytest.mark.parametrize("where", ["localhost", "http://127.0.0.1:1"])
def test_a_misspelt_scheduler_address_is_named(where):
    with pytest.raises(ValueError, match=rf"scheduler \({where!r}\) is not a Dask scheduler address"):
        lopub_dask.client(where)


def test_a_folder_appended_to_during_the_fit_gives_the_opened_reports_estimates(reports, address, tmp_path):
    """``lopub encode --append`` while ``lopub fit --scheduler`` runs: the fit keeps the parts it opened."""
    first = reports.subset(slice(0, 2000))
    ds = _folder(tmp_path / "reports", first)
    on_disk = ReportsDataset.open(tmp_path / "reports").on_disk()
    ds.append(reports.subset(slice(2000, 3000)))  # appended after the client opened the folder
    attrs = list(reports.spec.domain.attrs)
    sets = [attrs[:2], [attrs[1], attrs[3]], attrs[:3]]
    opts = {"scheduler": address, "reports_path": str(tmp_path / "reports"), "chunk_size": 900}
    got = Estimator(on_disk, "moment", **opts).marginals(sets)
    want = Estimator(first, "moment", jobs=1).marginals(sets)
    for x, y in zip(got, want):
        assert np.allclose(x.values, y.values, atol=1e-9, rtol=0)  # summation order only
        assert np.allclose(x.variance, y.variance, atol=1e-12, rtol=0)


def test_reports_path_of_another_folder_is_refused(reports, address, tmp_path):
    _folder(tmp_path / "a", reports.subset(slice(0, 2000)))
    _folder(tmp_path / "b", reports.subset(slice(1000, 3000)))
    on_disk = ReportsDataset.open(tmp_path / "a").on_disk()
    est = Estimator(on_disk, "moment", scheduler=address, reports_path=str(tmp_path / "b"))
    with pytest.raises(ValueError, match="does not list the parts of the estimator's reports"):
        est.marginal(list(reports.spec.domain.attrs)[:2])


def test_scheduler_local_starts_jobs_workers(reports, monkeypatch):
    """``--scheduler local --jobs N`` (option ``jobs``): a local cluster of N workers, not one per core."""
    made = []
    real = distributed.LocalCluster

    def local_cluster(**kw):  # the same cluster, in this process (fast)
        made.append(kw["n_workers"])
        return real(**{**kw, "processes": False})

    monkeypatch.setattr(distributed, "LocalCluster", local_cluster)
    attrs = list(reports.spec.domain.attrs)
    sets = [attrs[:2], attrs[1:4]]
    want = {m: Estimator(reports, m, jobs=1).marginals(sets) for m in ("moment", "em")}
    try:
        for jobs, method in ((3, "moment"), (1, "moment"), (3, "em")):
            got = Estimator(reports, method, scheduler="local", jobs=jobs, chunk_size=900).marginals(sets)
            for x, y in zip(got, want[method]):
                assert np.allclose(x.values, y.values, atol=1e-9, rtol=0)
    finally:
        lopub_dask.close_clients()
    assert made == [3, 1]  # one cluster per size, reused


def test_cli_jobs_with_a_scheduler_address_is_said_to_be_ignored(reports, address, tmp_path, capsys):
    from lopub.cli import main

    _folder(tmp_path / "reports", reports)
    out = tmp_path / "m.json"
    assert main(["fit", str(tmp_path / "reports"), "--method", "moment", "--out", str(out),
                 "--scheduler", address, "--jobs", "2"]) == 0
    assert f"--jobs (2) is ignored with --scheduler {address}" in capsys.readouterr().err
    assert out.exists()


def test_dask_em_runs_joints_at_once_and_reads_the_information_users_once(reports, address, tmp_path,
                                                                             monkeypatch):
    """Each EM step is a round trip to the cluster: joints overlap (DASK_JOINTS at once), and the
    client reads the observed information's users from the folder once, not once per joint."""
    import threading

    from lopub.estimate import em_estimator

    folder = tmp_path / "reports"
    _folder(folder, reports)
    on_disk = ReportsDataset.open(folder).on_disk()
    active, most, lock = [0], [0], threading.Lock()
    estep = lopub_dask.DaskKway.estep

    def counting_estep(self, p):
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
        try:
            time.sleep(0.002)  # a cluster round trip's latency
            return estep(self, p)
        finally:
            with lock:
                active[0] -= 1

    reads = []
    subset = type(on_disk).subset
    monkeypatch.setattr(lopub_dask.DaskKway, "estep", counting_estep)
    monkeypatch.setattr(type(on_disk), "subset", lambda self, rows: reads.append(rows) or subset(self, rows))
    attrs = list(reports.spec.domain.attrs)
    sets = [list(pair) for pair in itertools.pairwise(attrs[:5])]
    got = Estimator(on_disk, "em", scheduler=address, reports_path=str(folder), chunk_size=900).marginals(sets)
    want = Estimator(reports, "em", jobs=1, chunk_size=900).marginals(sets)
    assert len(reads) == 1
    assert 1 < most[0] <= em_estimator.DASK_JOINTS  # 1 before: one joint after the other
    for x, y in zip(got, want):  # in key order, each joint as if alone
        assert x.attrs == y.attrs
        assert np.allclose(x.values, y.values, atol=1e-9, rtol=0)


def test_a_scheduler_without_workers_is_a_clear_error_not_a_hang(reports, monkeypatch):
    monkeypatch.setattr(lopub_dask, "CONNECT_TIMEOUT", 1.0)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        where = cluster.scheduler_address
        try:
            est = Estimator(reports, "moment", scheduler=where)
            t0 = time.perf_counter()
            with pytest.raises(ConnectionError, match=r"has no workers \(none joined within 1 s\)"):
                est.marginal(list(reports.spec.domain.attrs)[:2])
            assert time.perf_counter() - t0 < 20  # before: no end
            with pytest.raises(ConnectionError, match="has no workers"):  # EM's path too
                Estimator(reports, "em", scheduler=where).marginal(list(reports.spec.domain.attrs)[:2])
        finally:
            lopub_dask.close_clients()
