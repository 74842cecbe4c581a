"""Bloom reports after a screen (``collect(..., protocol="auto")`` whose marginal-sampling screen picks
Bloom reports for the other users): the reports count the screen's users (``screened``), the
reports file and dataset folder keep the count, ``fit`` records the users and a release has one
record per user by default, as for marginal reports after a detection screen
(tests/test_screened_users.py)."""
import dataclasses
import hashlib
import itertools
import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from lopub.cli import main
from lopub.collect import collect, plan
from lopub.errors import ReportsFormatError
from lopub.model.graphical import Model
from lopub.pipeline.steps import fit
from lopub.publish.synthesize import synthesize
from lopub.reports.bloom import Reports
from lopub.reports.dataset import ReportsDataset, merge_datasets
from lopub.reports.folder import MANIFEST
from lopub.reports.parquet import read_metadata
from test_collect_twophase import chain_data

N, EPS = 2000, 16.0  # five binary attributes: the plan screens 10 % of the users, the screen picks Bloom


@pytest.fixture(scope="module")
def data():
    return chain_data(N, sizes=(2, 2, 2, 2, 2))


@pytest.fixture(scope="module")
def collected(data):
    tp = plan(data.domain, data.n, EPS).two_phase
    reports, report = collect(data, EPS, rng=0)
    assert report.recommended == "bloom" and isinstance(reports, Reports)  # the case of this file
    return tp, reports


def test_bloom_reports_after_the_screen_count_its_users(collected):
    tp, reports = collected
    assert reports.n == tp.n_main < N
    assert (reports.screened, reports.users) == (tp.n_screen, N)


def test_fit_records_the_users_and_synthesize_defaults_to_them(collected, tmp_path):
    tp, reports = collected
    model = fit(reports, warn=False).model
    assert model.n == tp.n_main and model.collection["users"] == N and model.users == N
    model.save(tmp_path / "m.json")
    back = Model.load(tmp_path / "m.json")
    assert back.users == N and len(synthesize(back, rng=0)) == N and len(synthesize(back, 9, rng=0)) == 9
    plain = fit(dataclasses.replace(reports, screened=0), warn=False).model  # no screen: the reports
    assert plain.collection["users"] == plain.users == tp.n_main and len(synthesize(plain, rng=0)) == tp.n_main


def test_cli_collect_fit_synthesize_writes_one_record_per_user(data, collected, tmp_path, capsys):
    tp, _ = collected
    data.to_pandas().to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "dom.json").write_text(json.dumps(data.domain.to_dict()))
    assert main(["collect", str(tmp_path / "d.csv"), "--domain", str(tmp_path / "dom.json"), "--protocol", "auto",
                 "--epsilon", "16", "--out", str(tmp_path / "r.parquet"), "--seed", "0"]) in (0, None)
    assert f"{tp.n_main:,} written: the {tp.n_screen:,} reports of the screen" in capsys.readouterr().out
    assert read_metadata(tmp_path / "r.parquet")["lopub.screened"] == str(tp.n_screen)
    assert main(["inspect-reports", str(tmp_path / "r.parquet"), "--json"]) in (0, None)
    seen = json.loads(capsys.readouterr().out)
    assert (seen["n"], seen["users"], seen["screened_not_released"]) == (tp.n_main, N, tp.n_screen)
    assert main(["fit", str(tmp_path / "r.parquet"), "--out", str(tmp_path / "m.json"), "--quiet"]) in (0, None)
    assert f"reports: {tp.n_main} of {N} users (the {tp.n_screen} reports of the screen" in capsys.readouterr().out
    assert main(["synthesize", str(tmp_path / "m.json"), "--out", str(tmp_path / "s.csv"), "--seed", "0"]) in (0, None)
    assert f"{N} synthetic records" in capsys.readouterr().out
    assert len(pd.read_csv(tmp_path / "s.csv")) == N


def test_file_and_folder_round_trip_the_count(collected, tmp_path):
    _, reports = collected
    s = reports.screened
    reports.save(tmp_path / "r.parquet")
    back = Reports.load(tmp_path / "r.parquet")
    assert (back.n, back.screened, back.users) == (reports.n, s, N)
    assert np.array_equal(back.packed, reports.packed)
    assert sum(b.screened for b in Reports.iter_file(tmp_path / "r.parquet", chunk_size=500)) == 0  # batches
    assert reports.subset(slice(0, 10)).screened == 0
    reports.save(tmp_path / "folder")
    assert json.loads((tmp_path / "folder" / MANIFEST).read_text())["screened"] == s
    assert "lopub.screened" not in read_metadata(tmp_path / "folder" / "part-00000.parquet")  # the manifest counts
    ds = ReportsDataset.open(tmp_path / "folder")
    assert (ds.screened, ds.users, ds.load().screened, ds.on_disk().users) == (s, N, s, N)
    assert Reports.load(tmp_path / "folder").users == N
    assert ReportsDataset.open(tmp_path / "r.parquet").users == N
    assert ds.summary()["users"] == N and all(p.screened == 0 for p in ds.partitions())


def test_merged_and_appended_reports_add_the_counts(collected, tmp_path):
    _, reports = collected
    s, half = reports.screened, reports.subset(slice(0, 100))
    assert Reports.merge([reports, half, reports]).screened == 2 * s
    reports.save(tmp_path / "a.parquet")
    half.save(tmp_path / "b.parquet")
    reports.save(tmp_path / "c")
    merged = merge_datasets(tmp_path / "m", tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "c")
    assert merged.screened == 2 * s and ReportsDataset.open(tmp_path / "m").users == 2 * reports.n + 100 + 2 * s
    assert Reports.load(tmp_path / "m").screened == 2 * s  # the copied part's own key is not counted again
    ds = ReportsDataset.create(tmp_path / "grow", reports.spec)
    ds.append(half)
    ds.append(reports)
    assert ds.screened == s and ReportsDataset.open(tmp_path / "grow").users == 100 + reports.n + s
    assert all("lopub.screened" not in read_metadata(p) for p in ds.part_paths())


def _old_checksum(meta, packed):
    """``lopub.sha256`` as lopub wrote it before the screened count (format, version, n, spec)."""
    h = hashlib.sha256()
    for key in ("lopub.format", "lopub.version", "lopub.n", "lopub.spec"):
        h.update(f"{key}={meta[key]}\0".encode())
    h.update(np.ascontiguousarray(packed).data)
    return h.hexdigest()


def test_files_without_the_count_are_the_old_format_and_read_as_no_screen(collected, tmp_path):
    _, reports = collected
    plain = dataclasses.replace(reports, screened=0)
    plain.save(tmp_path / "r.parquet")
    meta = read_metadata(tmp_path / "r.parquet")
    assert set(meta) == {"lopub.format", "lopub.version", "lopub.n", "lopub.spec", "lopub.sha256"}
    assert meta["lopub.sha256"] == _old_checksum(meta, reports.packed)  # what older lopub verifies
    old = Reports.load(tmp_path / "r.parquet")
    assert (old.screened, old.users) == (0, reports.n)
    plain.save(tmp_path / "f")
    manifest = json.loads((tmp_path / "f" / MANIFEST).read_text())
    assert "screened" not in manifest and ReportsDataset.open(tmp_path / "f").users == reports.n
    reports.save(tmp_path / "s.parquet")  # a screened file: its count is under the checksum
    table = pq.read_table(tmp_path / "s.parquet")
    edited = {**table.schema.metadata, b"lopub.screened": b"5"}
    pq.write_table(table.replace_schema_metadata(edited), tmp_path / "edited.parquet")
    with pytest.raises(ReportsFormatError, match=r"edited\.parquet: fails its checksum"):
        Reports.load(tmp_path / "edited.parquet")


@pytest.mark.parametrize("value", ["-1", "x", "01", "1.5", ""])
def test_a_bad_count_in_a_file_is_refused_naming_it(collected, tmp_path, value):
    _, reports = collected
    reports.save(tmp_path / "r.parquet")
    table = pq.read_table(tmp_path / "r.parquet")
    meta = {**table.schema.metadata, b"lopub.screened": value.encode()}
    pq.write_table(table.replace_schema_metadata(meta), tmp_path / "bad.parquet")
    with pytest.raises(ReportsFormatError, match=r"bad\.parquet: metadata 'lopub.screened' \(.*\) must be an "
                                                 r"integer >= 0"):
        ReportsDataset.open(tmp_path / "bad.parquet")


@pytest.mark.parametrize("value", [-1, "3", 2.0, True, None])
def test_a_bad_count_in_a_manifest_is_refused_naming_it(collected, tmp_path, value):
    _, reports = collected
    reports.save(tmp_path / "f")
    path = tmp_path / "f" / MANIFEST
    path.write_text(json.dumps({**json.loads(path.read_text()), "screened": value}))
    with pytest.raises(ReportsFormatError, match=r"_lopub_dataset\.json: \"screened\" \(.*\) must be an integer >= 0"):
        Reports.load(tmp_path / "f")


def test_a_bad_count_is_refused_by_the_constructor(collected):
    _, reports = collected
    with pytest.raises(ValueError, match=r"screened \(-2\) must be an integer >= 0"):
        dataclasses.replace(reports, screened=-2)
    for bad in (2.0, True, "3"):
        with pytest.raises(TypeError, match=r"screened \(.*\) must be an integer >= 0"):
            dataclasses.replace(reports, screened=bad)
    assert dataclasses.replace(reports, screened=np.int64(5)).users == reports.n + 5


def test_synthesizer_fit_reports_samples_the_users(collected, tmp_path):
    """Synthesizer.fit_reports took the reports' n: 1,800 records of 2,000 users (Bloom after the
    screen, and marginal reports after a detection screen alike)."""
    from lopub import Synthesizer
    from lopub.collect import MarginalPlan, collect_records

    tp, reports = collected
    with pytest.warns(UserWarning):  # epsilon 16: a weak guarantee
        syn = Synthesizer(epsilon=EPS).fit_reports(reports)
    assert syn.fit_report_.collection.n == N and len(syn.sample(seed=1)) == N
    syn.save(tmp_path / "syn.json")
    assert len(Synthesizer.load(tmp_path / "syn.json").sample(seed=1)) == N
    data = chain_data(N, sizes=(2, 2, 2, 2, 2))
    mplan = MarginalPlan(data.domain, tuple(itertools.combinations(data.domain.attrs, 2)), 4.0)
    marg = dataclasses.replace(collect_records(data, mplan, rng=1), screened=123)
    syn = Synthesizer(epsilon=4.0).fit_reports(marg)
    assert syn.fit_report_.collection.n == N + 123 and len(syn.sample(seed=1)) == N + 123


def test_cli_merge_reports_adds_up_the_screens(collected, tmp_path, capsys):
    _, reports = collected
    reports.save(tmp_path / "a.parquet")
    reports.subset(slice(0, 50)).save(tmp_path / "b.parquet")
    assert main(["merge-reports", str(tmp_path / "m"), str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")]) in (0, None)
    n = reports.n + 50
    assert (f"{n} reports of {n + reports.screened} users (the {reports.screened} reports of the screens"
            in capsys.readouterr().out)
    assert main(["inspect-reports", str(tmp_path / "m"), "--json"]) in (0, None)
    assert json.loads(capsys.readouterr().out)["users"] == n + reports.screened
