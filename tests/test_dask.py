"""Moment sums over users on a Dask LocalCluster: the same estimates as the local run."""
import itertools

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from lopub.estimate import distributed as lopub_dask  # noqa: E402
from lopub.client import encode  # noqa: E402
from lopub.datasets import embedded_model  # noqa: E402
from lopub.estimate import Estimator  # noqa: E402
from lopub.reports.spec import CollectionSpec  # noqa: E402


@pytest.fixture(scope="module")
def reports():
    bn = embedded_model()
    return encode(bn.sample(4000, rng=7), CollectionSpec.from_domain(bn.domain, f=0.5), rng=8)


@pytest.fixture(scope="module")
def address():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        yield cluster.scheduler_address
        lopub_dask.close_clients()


def _sets(reports):
    attrs = list(reports.spec.domain.attrs)[:4]
    return [list(p) for p in itertools.combinations(attrs, 2)] + [attrs[:3], attrs[:1]]


def _check_same(reports, opts):
    sets = _sets(reports)
    local = Estimator(reports, "moment", jobs=1).marginals(sets)
    remote = Estimator(reports, "moment", chunk_size=900, **opts).marginals(sets)
    for x, y in zip(local, remote):
        assert x.attrs == y.attrs
        assert np.allclose(x.values, y.values, atol=1e-9, rtol=0)
        assert np.allclose(x.variance, y.variance, atol=1e-12, rtol=0)


def test_dask_in_memory_partitions_match_local(reports, address):
    _check_same(reports, {"scheduler": address})


def test_dask_dataset_parts_match_local(reports, address, tmp_path):
    ds_mod = pytest.importorskip("lopub.reports.dataset")
    ds = ds_mod.ReportsDataset.create(tmp_path / "reports", reports.spec)
    for a in range(0, reports.n, 1500):  # three appended batches = three partitions
        ds.append(reports.subset(slice(a, a + 1500)))
    _check_same(reports, {"scheduler": address, "reports_path": str(tmp_path / "reports")})


def test_dask_dataset_of_other_reports_is_rejected(reports, address, tmp_path):
    ds_mod = pytest.importorskip("lopub.reports.dataset")
    ds = ds_mod.ReportsDataset.create(tmp_path / "few", reports.spec)
    ds.append(reports.subset(slice(0, 10)))
    est = Estimator(reports, "moment", scheduler=address, reports_path=str(tmp_path / "few"))
    with pytest.raises(ValueError, match="holds 10 reports"):
        est.marginal(list(reports.spec.domain.attrs)[:2])


def test_bad_scheduler_option_is_rejected(reports):
    with pytest.raises(ValueError, match="scheduler"):
        Estimator(reports, "moment", scheduler="")


def test_cli_fit_with_scheduler_matches_local(reports, address, tmp_path):
    import json

    from lopub.cli import main

    folder = tmp_path / "reports"
    ds_mod = pytest.importorskip("lopub.reports.dataset")
    ds = ds_mod.ReportsDataset.create(folder, reports.spec)
    for a in range(0, reports.n, 2000):
        ds.append(reports.subset(slice(a, a + 2000)))
    tables = []
    for extra in ([], ["--scheduler", address]):
        out = tmp_path / f"m{len(extra)}.json"
        assert main(["fit", str(folder), "--method", "moment", "--jobs", "1", "--out", str(out),
                     "--quiet"] + extra) == 0
        tables.append([np.asarray(c["p"]) for c in json.loads(out.read_text())["cliques"]])
    assert len(tables[0]) == len(tables[1])
    for x, y in zip(*tables):
        assert np.allclose(x, y, atol=1e-9, rtol=0)


def test_dask_em_estep_matches_local(reports, address):
    attrs = list(reports.spec.domain.attrs)
    sets = [attrs[:2], [attrs[1], attrs[3]], attrs[:3], [attrs[3], attrs[5]]]  # the last: 640 cells
    local = Estimator(reports, "em", jobs=1).marginals(sets)
    remote = Estimator(reports, "em", scheduler=address, chunk_size=900).marginals(sets)
    for x, y in zip(local, remote):
        assert x.meta["iterations"] == y.meta["iterations"]
        assert np.allclose(x.values, y.values, atol=1e-9, rtol=0)
        assert np.isclose(x.meta["loglik"], y.meta["loglik"], rtol=1e-12)
        assert np.allclose(x.variance, y.variance, rtol=1e-6, atol=1e-15)
        assert x.provenance["variance"] == y.provenance["variance"]


def test_on_disk_reports_give_the_in_memory_estimates(reports, address, tmp_path):
    """A Dask client over a dataset folder keeps only spec and N: same moment and EM estimates."""
    ds_mod = pytest.importorskip("lopub.reports.dataset")
    folder = tmp_path / "reports"
    ds = ds_mod.ReportsDataset.create(folder, reports.spec)
    for a in range(0, reports.n, 1500):
        ds.append(reports.subset(slice(a, a + 1500)))
    on_disk = ds_mod.ReportsDataset.open(folder).on_disk()
    attrs = list(reports.spec.domain.attrs)
    sets = [attrs[:2], [attrs[1], attrs[3]], attrs[:3], [attrs[3], attrs[5]]]
    for method in ("moment", "em"):
        opts = {"scheduler": address, "reports_path": str(folder), "chunk_size": 900}
        mem = Estimator(reports, method, **opts).marginals(sets)
        disk = Estimator(on_disk, method, **opts).marginals(sets)
        for x, y in zip(mem, disk):
            assert np.allclose(x.values, y.values, atol=1e-12, rtol=0)
            assert np.allclose(x.variance, y.variance, atol=1e-15, rtol=1e-9)


def test_cli_fit_with_scheduler_leaves_a_folder_on_disk(reports, address, tmp_path, monkeypatch):
    from lopub.cli import main

    ds_mod = pytest.importorskip("lopub.reports.dataset")
    folder = tmp_path / "reports"
    ds = ds_mod.ReportsDataset.create(folder, reports.spec)
    ds.append(reports)

    def refuse(self):
        raise AssertionError("the client loaded every report")

    import lopub.reports.bloom as bloom_mod

    monkeypatch.setattr(ds_mod.ReportsDataset, "load", refuse)
    monkeypatch.setattr(bloom_mod, "read_folder", lambda *a: refuse(None))  # Reports.load of a folder
    out = tmp_path / "m.json"
    assert main(["fit", str(folder), "--method", "moment", "--out", str(out), "--quiet",
                 "--scheduler", address]) == 0
    assert out.exists()
    with pytest.raises(AssertionError, match="loaded every report"):  # the check itself bites
        main(["fit", str(folder), "--method", "moment", "--out", str(tmp_path / "x.json"), "--quiet"])
