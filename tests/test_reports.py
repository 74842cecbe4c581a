import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lopub import CollectionSpec, Dataset, Domain, Reports
from lopub.client import encode
from lopub.errors import ReportsFormatError, SpecError


@pytest.fixture
def spec():
    d = Domain.from_categories({"a": [str(i) for i in range(5)], "b": ["x", "y"], "c": list("pqrstuvw")})
    return CollectionSpec.from_domain(d, f=0.5, m=[20, 9, 16], h=[2, 2, 3])  # 45 bits: not byte aligned


@pytest.fixture
def reports(spec):
    rng = np.random.default_rng(0)
    codes = np.column_stack([rng.integers(0, s, 70_001) for s in spec.domain.sizes])
    return encode(Dataset(codes, spec.domain), spec, rng=1)


def test_save_load_round_trip(reports, tmp_path):
    p = tmp_path / "r.parquet"
    reports.save(p)
    back = Reports.load(p)
    assert back.spec == reports.spec and back.n == 70_001
    np.testing.assert_array_equal(back.packed, reports.packed)
    assert not list(tmp_path.glob("*.tmp"))  # no temporary left behind


def test_packed_bits_round_trip(reports, spec):
    bits = reports.bits(0, 100)
    assert bits.shape == (100, 45)
    np.testing.assert_array_equal(np.packbits(bits, axis=1), reports.packed[:100])
    np.testing.assert_array_equal(reports.attribute_bits("b", 0, 100), bits[:, 20:29])
    np.testing.assert_array_equal(reports.attribute_bits("c", 5, 9), bits[5:9, 29:45])


def test_iter_chunks_and_file_stream(reports, tmp_path):
    starts, rows = [], []
    for start, bits in reports.iter_chunks(30_000):
        starts.append(start)
        rows.append(bits)
    assert starts == [0, 30_000, 60_000]
    np.testing.assert_array_equal(np.concatenate(rows), reports.bits())
    p = tmp_path / "r.parquet"
    reports.save(p)
    parts = list(Reports.iter_file(p, chunk_size=25_000))
    assert [len(x) for x in parts][0] <= 25_000 and sum(len(x) for x in parts) == reports.n
    np.testing.assert_array_equal(np.concatenate([x.packed for x in parts]), reports.packed)


def test_merge(reports, spec):
    a, b = reports.subset(slice(0, 10)), reports.subset(slice(10, 25))
    m = Reports.merge([a, b])
    np.testing.assert_array_equal(m.packed, reports.packed[:25])
    other = CollectionSpec.from_domain(spec.domain, f=0.3, m=[20, 9, 16], h=[2, 2, 3])
    with pytest.raises(SpecError, match="batch 1 was collected under a different spec"):
        Reports.merge([a, Reports(other, b.packed)])
    with pytest.raises(ValueError, match="at least one"):
        Reports.merge([])


def test_truncated_file(reports, tmp_path):
    p = tmp_path / "r.parquet"
    reports.save(p)
    data = p.read_bytes()
    (tmp_path / "t.parquet").write_bytes(data[: len(data) // 2])
    with pytest.raises(ReportsFormatError, match="truncated or not Parquet"):
        Reports.load(tmp_path / "t.parquet")


def test_other_spec_and_version(reports, spec, tmp_path):
    p = tmp_path / "r.parquet"
    reports.save(p)
    other = CollectionSpec.from_domain(spec.domain, f=0.1, m=[20, 9, 16], h=[2, 2, 3])
    with pytest.raises(ReportsFormatError, match="different spec"):
        Reports.load(p, spec=other)
    t = pq.read_table(p)
    meta = dict(t.schema.metadata)
    meta[b"lopub.version"] = b"7"
    pq.write_table(t.replace_schema_metadata(meta), tmp_path / "v.parquet")
    with pytest.raises(ReportsFormatError, match="version '7' is not supported"):
        Reports.load(tmp_path / "v.parquet")


def test_wrong_shape_and_foreign_files(reports, tmp_path):
    p = tmp_path / "r.parquet"
    reports.save(p)
    t = pq.read_table(p)
    meta = dict(t.schema.metadata)
    meta[b"lopub.n"] = b"5"
    pq.write_table(t.replace_schema_metadata(meta), tmp_path / "n.parquet")
    with pytest.raises(ReportsFormatError, match="metadata says 5 reports, file holds 70001"):
        Reports.load(tmp_path / "n.parquet")
    wide = pa.table({"report": pa.array([b"abcdefgh"], pa.binary(8))}).replace_schema_metadata(meta | {b"lopub.n": b"1"})
    pq.write_table(wide, tmp_path / "w.parquet")
    with pytest.raises(ReportsFormatError, match=r"fixed_size_binary\(6\) for 45 bits"):
        Reports.load(tmp_path / "w.parquet")
    pq.write_table(pa.table({"x": [1]}), tmp_path / "f.parquet")
    with pytest.raises(ReportsFormatError, match="not a lopub reports file"):
        Reports.load(tmp_path / "f.parquet")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Reports.load(tmp_path / "missing.parquet")


def test_failed_save_leaves_no_file(reports, tmp_path, monkeypatch):
    p = tmp_path / "r.parquet"

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", boom)
    with pytest.raises(OSError, match="disk full"):
        reports.save(p)
    assert os.listdir(tmp_path) == []


def test_failed_save_keeps_previous_file(reports, tmp_path, monkeypatch):
    p = tmp_path / "r.parquet"
    reports.subset(slice(0, 3)).save(p)
    before = p.read_bytes()
    monkeypatch.setattr(pq, "write_table", lambda *a, **k: (_ for _ in ()).throw(OSError("crash")))
    with pytest.raises(OSError):
        reports.save(p)
    assert p.read_bytes() == before


def test_bad_packed_shape(spec):
    with pytest.raises(ReportsFormatError, match=r"shape \(n, 6\)"):
        Reports(spec, np.zeros((3, 5), dtype=np.uint8))


def test_spec_in_file_is_readable_json(reports, tmp_path):
    p = tmp_path / "r.parquet"
    reports.save(p)
    meta = pq.read_schema(p).metadata
    assert json.loads(meta[b"lopub.spec"])["format"] == "lopub-spec"
    assert meta[b"lopub.format"] == b"lopub-reports"
