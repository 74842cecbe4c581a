"""Reports datasets: a folder of Parquet parts + manifest; append, stream, merge, crash safety."""
import json
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from lopub import CollectionSpec, Dataset, Domain, Reports, ReportsDataset
from lopub.client import encode
from lopub.errors import ReportsFormatError, SpecError
from lopub.reports import folder as fmt
from lopub.reports.dataset import merge_datasets


@pytest.fixture(scope="module")
def spec():
    d = Domain.from_categories({"a": [str(i) for i in range(5)], "b": ["x", "y"], "c": list("pqrstuvw")})
    return CollectionSpec.from_domain(d, f=0.5, m=[20, 9, 16], h=[2, 2, 3])  # 45 bits


@pytest.fixture(scope="module")
def reports(spec):
    rng = np.random.default_rng(0)
    codes = np.column_stack([rng.integers(0, s, 5_000) for s in spec.domain.sizes])
    return encode(Dataset(codes, spec.domain), spec, rng=1)


def _batches(reports, cuts):
    edges = [0, *cuts, reports.n]
    return [reports.subset(slice(a, b)) for a, b in zip(edges[:-1], edges[1:])]


def _dataset(tmp_path, reports, cuts=(1000, 1001, 3500), name="ds"):
    first, *rest = _batches(reports, cuts)
    first.save(tmp_path / name)
    ds = ReportsDataset.open(tmp_path / name)
    for b in rest:
        ds.append(b)
    return ds


def test_append_and_load_round_trip(reports, spec, tmp_path):
    ds = _dataset(tmp_path, reports)
    assert ds.n == reports.n == len(ds) and ds.spec == spec and ds.is_folder
    assert [p.file for p in ds.parts] == [f"part-{i:05d}.parquet" for i in range(4)]
    assert [p.n for p in ds.parts] == [1000, 1, 2499, 1500]
    back = ReportsDataset.open(tmp_path / "ds")  # a fresh reader sees every appended part
    np.testing.assert_array_equal(back.load().packed, reports.packed)
    np.testing.assert_array_equal(Reports.load(tmp_path / "ds").packed, reports.packed)
    streamed = list(Reports.iter_file(tmp_path / "ds", chunk_size=700))
    np.testing.assert_array_equal(np.concatenate([r.packed for r in streamed]), reports.packed)
    assert not [f for f in (tmp_path / "ds").iterdir() if f.name.endswith(".tmp")]


def test_manifest_lists_parts_with_checksums(reports, tmp_path):
    ds = _dataset(tmp_path, reports)
    man = json.loads((tmp_path / "ds" / fmt.MANIFEST).read_text())
    assert man["format"] == "lopub-reports-dataset" and man["version"] == 1 and man["n"] == reports.n
    assert man["spec"] == json.loads(reports.spec.to_json())
    for part in man["parts"]:
        path = tmp_path / "ds" / part["file"]
        assert part["sha256"] == fmt.sha256_file(path) and part["bytes"] == path.stat().st_size
        assert Reports.load(path).n == part["n"]  # every part is a reports file on its own
    ds.verify()


def test_single_file_opens_as_a_one_part_dataset(reports, tmp_path):
    reports.save(tmp_path / "r.parquet")
    ds = ReportsDataset.open(tmp_path / "r.parquet")
    assert not ds.is_folder and len(ds.parts) == 1 and ds.n == reports.n
    np.testing.assert_array_equal(ds.load().packed, reports.packed)
    with pytest.raises(ValueError, match="single reports file; only a dataset folder"):
        ds.append(reports)


@pytest.mark.parametrize("chunk", [1, 999, 1000, 1234, 10_000])
def test_iter_chunks_runs_across_parts(reports, tmp_path, chunk):
    ds = _dataset(tmp_path, reports, cuts=(3, 4, 5, 2000))
    got = list(ds.iter_chunks(chunk))
    sizes = [len(b) for _, b in got]
    assert all(s == chunk for s in sizes[:-1]) and 0 < sizes[-1] <= chunk
    assert [s for s, _ in got] == list(range(0, reports.n, chunk))
    np.testing.assert_array_equal(np.concatenate([b for _, b in got]), reports.bits())
    assert [s for s, _ in reports.iter_chunks(chunk)] == [s for s, _ in got]  # same contract


def test_iter_chunks_reads_parts_only_when_it_reaches_them(reports, tmp_path):
    ds = _dataset(tmp_path, reports, cuts=(1000, 2000))
    chunks = ds.iter_chunks(500)
    start, bits = next(chunks)
    (tmp_path / "ds" / "part-00002.parquet").unlink()  # not read yet: the stream is lazy
    np.testing.assert_array_equal(bits, reports.bits(0, 500))
    with pytest.raises(ReportsFormatError, match="listed part part-00002.parquet is missing"):
        list(chunks)


def test_iter_chunks_memory_is_bounded(spec, tmp_path):
    rng = np.random.default_rng(5)
    packed = rng.integers(0, 256, (20_000, spec.packed_bytes), dtype=np.uint8)
    packed[:, -1] &= 0xF8  # 45 bits: clear the padding
    ds = ReportsDataset.create(tmp_path / "big", spec)
    for i in range(10):
        ds.append(Reports(spec, packed))
    full_bits = ds.n * spec.total_bits  # bytes of all unpacked bits (200,000 x 45)
    tracemalloc.start()
    try:
        rows = sum(len(b) for _, b in ds.iter_chunks(2_000))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rows == 200_000
    assert peak < full_bits / 20  # a handful of 2,000-row chunks, not the 9 MB of the whole


def test_save_to_an_existing_folder_or_dataset_is_refused(reports, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileExistsError, match="existing folder, not a reports dataset"):
        reports.save(tmp_path / "empty")
    assert list((tmp_path / "empty").iterdir()) == []
    reports.save(tmp_path / "ds")
    with pytest.raises(FileExistsError, match="is a reports dataset already; append"):
        reports.save(tmp_path / "ds")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        reports.save(tmp_path / "no" / "ds")
    with pytest.raises(FileNotFoundError, match="not a lopub reports dataset"):
        ReportsDataset.open(tmp_path / "empty")


def test_append_refuses_another_spec_naming_the_field(reports, spec, tmp_path):
    ds = _dataset(tmp_path, reports, cuts=())
    other = CollectionSpec.from_domain(spec.domain, f=0.3, m=[20, 9, 16], h=[2, 2, 3])
    with pytest.raises(SpecError, match=r"f differs: 0.5 in the dataset .*ds', 0.3 in the batch"):
        ds.append(Reports(other, reports.packed))
    keyed = CollectionSpec.from_domain(spec.domain, f=0.5, m=[20, 9, 16], h=[2, 2, 3], key="k2")
    with pytest.raises(SpecError, match="key differs"):
        ds.append(Reports(keyed, reports.packed))
    with pytest.raises(TypeError, match="reports must be a Reports batch"):
        ds.append(reports.packed)
    assert ReportsDataset.open(tmp_path / "ds").n == reports.n


def test_failed_part_write_leaves_the_dataset_unchanged(reports, tmp_path, monkeypatch):
    import lopub.reports.folder as mod  # where parts and the manifest are written

    ds = _dataset(tmp_path, reports, cuts=(100,))
    before = (tmp_path / "ds" / fmt.MANIFEST).read_bytes()
    monkeypatch.setattr(mod, "write_reports", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        ds.append(reports)
    assert (tmp_path / "ds" / fmt.MANIFEST).read_bytes() == before
    assert sorted(f.name for f in (tmp_path / "ds").iterdir() if not f.name.startswith(".")) == [
        fmt.MANIFEST, "part-00000.parquet", "part-00001.parquet"]


def test_crash_between_part_and_manifest_leaves_an_ignored_unlisted_part(reports, tmp_path, monkeypatch):
    import lopub.reports.folder as mod  # where parts and the manifest are written

    ds = _dataset(tmp_path, reports, cuts=(100,))
    monkeypatch.setattr(mod, "write_manifest", lambda *a: (_ for _ in ()).throw(OSError("crash")))
    with pytest.raises(OSError, match="crash"):
        ds.append(reports.subset(slice(0, 7)))
    monkeypatch.undo()
    again = ReportsDataset.open(tmp_path / "ds")
    assert again.n == reports.n and again.unlisted_parts() == ["part-00002.parquet"]
    info = again.append(reports.subset(slice(0, 5)))
    assert info.file == "part-00003.parquet"  # the unlisted name is never reused
    assert ReportsDataset.open(tmp_path / "ds").n == reports.n + 5


def test_concurrent_appenders_keep_every_part(reports, tmp_path):
    ReportsDataset.create(tmp_path / "ds", reports.spec)
    batches = _batches(reports, range(500, 5000, 500))

    def append(batch):
        ReportsDataset.open(tmp_path / "ds").append(batch)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(append, batches))
    ds = ReportsDataset.open(tmp_path / "ds")
    assert ds.n == reports.n and len(ds.parts) == len(batches) and not ds.unlisted_parts()
    got = np.sort(ds.load().packed.view(f"V{reports.spec.packed_bytes}").ravel())
    np.testing.assert_array_equal(got, np.sort(reports.packed.view(f"V{reports.spec.packed_bytes}").ravel()))


def test_merge_datasets(reports, spec, tmp_path):
    a = _dataset(tmp_path, reports.subset(slice(0, 3000)), cuts=(1000,), name="a")
    reports.subset(slice(3000, None)).save(tmp_path / "b.parquet")
    m = merge_datasets(tmp_path / "m", a.path, tmp_path / "b.parquet")
    assert [p.n for p in m.parts] == [1000, 2000, 2000] and m.n == reports.n
    assert [p.sha256 for p in m.parts[:2]] == [p.sha256 for p in a.parts]
    np.testing.assert_array_equal(ReportsDataset.open(tmp_path / "m").load().packed, reports.packed)
    other = CollectionSpec.from_domain(spec.domain, f=0.25, m=[20, 9, 16], h=[2, 2, 3])
    Reports(other, reports.packed[:10]).save(tmp_path / "o.parquet")
    with pytest.raises(SpecError, match=r"'.*o.parquet' was collected under a different spec .*f differs"):
        merge_datasets(tmp_path / "m2", a.path, tmp_path / "o.parquet")
    assert not (tmp_path / "m2").exists()
    with pytest.raises(ValueError, match="at least one"):
        merge_datasets(tmp_path / "m3")


def test_corrupted_truncated_or_missing_parts_are_named(reports, tmp_path):
    _dataset(tmp_path, reports, cuts=(2000,))
    part = tmp_path / "ds" / "part-00001.parquet"
    data = bytearray(part.read_bytes())
    data[100] ^= 0xFF  # same size, other bytes
    part.write_bytes(bytes(data))
    with pytest.raises(ReportsFormatError, match="part-00001.parquet does not match its SHA-256"):
        ReportsDataset.open(tmp_path / "ds").verify()
    with pytest.raises(ReportsFormatError, match="SHA-256"):
        merge_datasets(tmp_path / "m", tmp_path / "ds")
    part.write_bytes(bytes(data[:-10]))
    with pytest.raises(ReportsFormatError, match=r"part-00001.parquet has \d+ bytes, the manifest says"):
        ReportsDataset.open(tmp_path / "ds")
    part.unlink()
    with pytest.raises(ReportsFormatError, match="listed part part-00001.parquet is missing"):
        Reports.load(tmp_path / "ds")


@pytest.mark.parametrize("change, message", [
    (lambda m: m.update(format="x"), "not a lopub reports dataset manifest"),
    (lambda m: m.update(version=2), "dataset version 2 is not supported"),
    (lambda m: m.update(n=m["n"] + 1), "must be the sum of the parts"),
    (lambda m: m["parts"][0].update(file="../x.parquet"), "a part must be"),
    (lambda m: m["parts"][0].pop("sha256"), "a part must be"),
    (lambda m: m["parts"].append(dict(m["parts"][0])) or m.update(n=2 * m["n"]), "listed twice"),
    (lambda m: m["spec"].update(f=2), "invalid spec"),
])
def test_broken_manifest_is_refused_by_schema_and_loader(reports, tmp_path, change, message):
    jsonschema = pytest.importorskip("jsonschema")
    from lopub import formats

    ds = _dataset(tmp_path, reports, cuts=())
    path = tmp_path / "ds" / fmt.MANIFEST
    man = json.loads(path.read_text())
    formats.validate(man, "reports-dataset")
    change(man)
    path.write_text(json.dumps(man))
    with pytest.raises(ReportsFormatError, match=message):
        ReportsDataset.open(ds.path)
    if "twice" not in message and "sum" not in message:  # (the schema cannot count)
        with pytest.raises(jsonschema.ValidationError):
            formats.validate(man, "reports-dataset")
    path.write_text("{not json")
    with pytest.raises(ReportsFormatError, match="not valid JSON"):
        ReportsDataset.open(ds.path)


def test_estimators_read_a_folder_like_a_file(reports, tmp_path):
    from lopub.estimate import estimate

    ds = _dataset(tmp_path, reports)
    a = estimate(reports, ["a", "b"], "moment")
    b = estimate(Reports.load(ds.path), ["a", "b"], "moment")
    np.testing.assert_array_equal(a.values, b.values)


def test_partitions_are_picklable_single_parts(reports, tmp_path):
    import pickle

    ds = _dataset(tmp_path, reports)
    parts = [pickle.loads(pickle.dumps(p)) for p in ds.partitions()]
    assert [p.n for p in parts] == [p.n for p in ds.parts] and all(p.spec == ds.spec for p in parts)
    sums = [sum(b.sum(axis=0, dtype=np.int64) for _, b in p.iter_chunks(300)) for p in parts]
    np.testing.assert_array_equal(np.sum(sums, axis=0), reports.bits().sum(axis=0, dtype=np.int64))


def test_reports_and_datasets_stream_alike(reports, tmp_path):
    ds = _dataset(tmp_path, reports, cuts=(10, 2500))
    for chunk in (7, 1000, 6000):
        mine = list(reports.iter_reports(chunk))
        theirs = list(ds.iter_reports(chunk))
        assert [b.n for b in mine] == [b.n for b in theirs]
        for x, y in zip(mine, theirs):
            np.testing.assert_array_equal(x.attribute_bits("c"), y.attribute_bits("c"))
    with pytest.raises(ValueError, match="chunk_size"):
        list(reports.iter_reports(0))
    with pytest.raises(ValueError, match="chunk_size"):
        list(ds.iter_reports(0))


@pytest.mark.parametrize("rows", [slice(0, None, 7), slice(990, 1010), slice(4000, 4001),
                                  np.array([4400, 3, 1000, 3, 2500])])
def test_on_disk_reports_read_the_rows_asked_for(reports, tmp_path, rows):
    ds = _dataset(tmp_path, reports)
    disk = ds.on_disk()
    assert disk.n == reports.n and disk.spec == reports.spec and disk.nbytes == 0
    sub = disk.subset(rows)
    assert np.array_equal(sub.packed, reports.packed[rows])
    attr = reports.spec.domain.attrs[1]
    assert np.array_equal(disk.bits(990, 1010), reports.bits(990, 1010))
    assert np.array_equal(disk.attribute_bits(attr, 5, 2000), reports.attribute_bits(attr, 5, 2000))
    got = list(disk.iter_chunks(2048))
    want = list(reports.iter_chunks(2048))
    assert [s for s, _ in got] == [s for s, _ in want]
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(got, want))


def test_on_disk_reports_refuse_what_needs_them_all_in_memory(reports, tmp_path):
    from lopub.reports.dataset import OnDiskReports

    disk = _dataset(tmp_path, reports).on_disk()
    with pytest.raises(ValueError, match="stay on disk"):
        disk.packed
    with pytest.raises(ValueError, match="already saved"):
        disk.save(tmp_path / "copy")
    with pytest.raises(TypeError, match="ReportsDataset"):
        OnDiskReports(reports)
    assert "n=" in repr(disk)
