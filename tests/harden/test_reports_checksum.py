"""Item 4 of issue 15 for Parquet reports: a checksum over spec, count and reports,
verified on every read; damage and edits are errors naming the file."""
import json
import os
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lopub.errors import ReportsFormatError
from lopub.io import unverified_reads
from lopub.reports.bloom import Reports
from lopub.reports.parquet import read_metadata

from .conftest import run_cli


def test_reports_file_has_a_checksum(files):
    assert len(read_metadata(files["r.parquet"])["lopub.sha256"]) == 64


def _edit_metadata(src, dst, edit):
    table = pq.read_table(src)
    meta = {k.decode(): v.decode() for k, v in table.schema.metadata.items()}
    edit(meta)
    pq.write_table(table.replace_schema_metadata(meta), dst)


@pytest.mark.parametrize("field, value", [("f", 0.25), ("key", "another key")])
def test_edited_spec_fails_the_checksum(files, tmp_path, field, value):
    bad = tmp_path / "edited.parquet"

    def edit(meta):
        spec = json.loads(meta["lopub.spec"])
        spec[field] = value
        meta["lopub.spec"] = json.dumps(spec)

    _edit_metadata(files["r.parquet"], bad, edit)
    with pytest.raises(ReportsFormatError, match="edited.parquet: fails its checksum"):
        Reports.load(bad)


def test_edited_reports_fail_the_checksum(files, tmp_path):
    table = pq.read_table(files["r.parquet"])
    r = Reports.load(files["r.parquet"])
    packed = r.packed.copy()
    packed[7, 0] ^= 0x80
    bad = tmp_path / "data.parquet"
    Reports(r.spec, packed).save(bad)
    meta = read_metadata(bad)
    meta["lopub.sha256"] = table.schema.metadata[b"lopub.sha256"].decode()  # the old checksum
    _edit_metadata(bad, bad, lambda m: m.update(meta))
    with pytest.raises(ReportsFormatError, match="data.parquet: fails its checksum"):
        Reports.load(bad)
    with pytest.raises(ReportsFormatError, match="fails its checksum"):
        list(Reports.iter_file(bad, chunk_size=100))


def _flip_is_caught_or_harmless(src, dst, pos, original):
    data = bytearray(Path(src).read_bytes())
    data[pos] ^= 1 << (pos % 8)
    dst.write_bytes(bytes(data))
    try:
        got = Reports.load(dst)
    except (ReportsFormatError, ValueError) as exc:  # ReportsFormatError, SpecError
        assert str(dst) in str(exc) or dst.name in str(exc), exc
        return
    # a flip in Parquet bookkeeping that changes nothing lopub reads
    assert got.spec == original.spec and np.array_equal(got.packed, original.packed)


def test_sampled_single_bit_flips(files, tmp_path):
    original = Reports.load(files["r.parquet"])
    size = os.path.getsize(files["r.parquet"])
    for pos in np.random.default_rng().choice(size, 80, replace=False):
        _flip_is_caught_or_harmless(files["r.parquet"], tmp_path / "flip.parquet", int(pos), original)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pos=st.integers(0, 10**9))
def test_any_single_bit_flip(files, tmp_path, pos):
    original = Reports.load(files["r.parquet"])
    size = os.path.getsize(files["r.parquet"])
    _flip_is_caught_or_harmless(files["r.parquet"], tmp_path / "flip.parquet", pos % size, original)


@pytest.mark.parametrize("cut", [4, 100, 1000, -100, -10])
def test_truncated_reports_file_names_it(files, tmp_path, capsys, cut):
    bad = tmp_path / "cut.parquet"
    bad.write_bytes(Path(files["r.parquet"]).read_bytes()[:cut])
    code, err = run_cli(["estimate", bad, "--attrs", "a"], capsys)
    assert code == 2 and str(bad) in err and "Traceback" not in err


def test_files_without_checksum_load_only_unverified(files, tmp_path):
    """Issue 25: refused unless --no-verify (then a warning)."""
    old = tmp_path / "old.parquet"
    _edit_metadata(files["r.parquet"], old, lambda m: m.pop("lopub.sha256"))
    with pytest.raises(ReportsFormatError, match="old.parquet.*no checksum.*--no-verify"):
        Reports.load(old)
    with unverified_reads(), pytest.warns(UserWarning, match="WITHOUT any integrity check"):
        assert Reports.load(old).n == Reports.load(files["r.parquet"]).n
