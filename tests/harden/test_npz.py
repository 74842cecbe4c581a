"""Items 3, 4 and 11 of issue 15 for the oracle reports ``.npz``: damage and
inconsistent contents are clear errors naming the file; the file gets the umask mode."""
import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lopub.cli.oracle_files import load_reports, save_reports
from lopub.io import unverified_reads

from .conftest import run_cli


def rewrite(src, dst, edit, old_layout=False):
    """Copy the npz ``src`` to ``dst`` after ``edit(meta, arrays)`` (no new checksum); with
    ``old_layout`` the arrays are edited and stored as read (bits one byte each, as files of
    versions 1-3 hold them) and ``meta["version"]`` is 3."""
    if old_layout:
        meta, arrays = load_reports(src)
        meta["version"] = 3
    else:
        with np.load(src) as z:
            meta = json.loads(str(z["meta"]))
            arrays = {k: z[k] for k in z.files if k != "meta"}
    edit(meta, arrays)
    np.savez(dst, meta=np.array(json.dumps(meta)), **arrays)


def test_npz_written_with_checksum_and_umask_mode(files):
    meta, _ = load_reports(files["o.npz"])
    assert len(meta["checksum"]) == 64
    mask = os.umask(0o022)
    os.umask(mask)
    assert os.stat(files["o.npz"]).st_mode & 0o777 == 0o666 & ~mask


@pytest.mark.parametrize("cut", [10, 100, 1000, -200, -22, -1])
def test_truncated_npz_is_a_clear_error(files, tmp_path, capsys, cut):
    data = Path(files["o.npz"]).read_bytes()
    bad = tmp_path / "t.npz"
    bad.write_bytes(data[:cut])
    code, err = run_cli(["estimate-freq", bad, "--quiet"], capsys)
    assert code == 2 and "Traceback" not in err and str(bad) in err
    assert len(err.strip().splitlines()) == 1


def _check_all_bit_flips(src, tmp_path, positions):
    """A flip is a clear error naming the file, or it hit a redundant zip header field
    (local header dates, sizes, extra field) and the contents load unchanged."""
    data = bytearray(Path(src).read_bytes())
    meta, arrays = load_reports(src)
    bad = tmp_path / "flip.npz"
    for pos in positions:
        flipped = bytearray(data)
        flipped[pos] ^= 1 << (pos % 8)
        bad.write_bytes(bytes(flipped))
        try:
            got, got_arrays = load_reports(str(bad))
        except ValueError as exc:
            assert "flip.npz" in str(exc) and "\n" not in str(exc)
            continue
        assert got == meta and got_arrays.keys() == arrays.keys()
        for k, v in arrays.items():
            assert got_arrays[k].dtype == v.dtype and np.array_equal(got_arrays[k], v)


def test_every_sampled_bit_flip_is_detected(files, tmp_path):
    size = os.path.getsize(files["o.npz"])
    rng = np.random.default_rng()
    _check_all_bit_flips(files["o.npz"], tmp_path, rng.choice(size, 60, replace=False))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pos=st.integers(0, 10**9))
def test_any_single_bit_flip_is_detected(files, tmp_path, pos):
    _check_all_bit_flips(files["o.npz"], tmp_path, [pos % os.path.getsize(files["o.npz"])])


def _wrong_n(meta, arrays):
    meta["n"] += 5


def _short_array(meta, arrays):
    arrays["reports_1"] = arrays["reports_1"][:-3]


def _seven(meta, arrays):
    r = arrays["reports_0"].astype(np.int64)
    r[0, 0] = 7
    arrays["reports_0"] = r


def _bool_seven(meta, arrays):
    arrays["reports_2"].view(np.uint8)[4, 1] = 7


def _missing(meta, arrays):
    del arrays["reports_2"]


def _float(meta, arrays):
    arrays["reports_0"] = arrays["reports_0"].astype(float)


@pytest.mark.parametrize("edit, words", [
    (_wrong_n, "expected (605, 3)"), (_short_array, "has shape (597, 2); expected (600, 2)"),
    (_seven, "values in [0, 7]"), (_bool_seven, "values in [0, 7]"),
    (_missing, "has no 'reports_2'"), (_float, "dtype float64")])
@pytest.mark.parametrize("keep_checksum", [False, True])
def test_contents_checked_against_metadata(files, tmp_path, edit, words, keep_checksum):
    """Files of the layout of versions 1-3 (one byte per bit): version 2 without a checksum,
    version 3 re-signed (the packed bits of version 4: tests/test_packed_reports.py)."""
    bad = tmp_path / "edited.npz"

    def edit_and_resign(meta, arrays):
        edit(meta, arrays)
        if keep_checksum:  # a forger who recomputes the checksum still fails the consistency check
            from lopub.cli.oracle_npz import checksum
            meta["checksum"] = checksum(meta, arrays)
        else:
            meta.pop("checksum")
            meta["version"] = 2

    rewrite(files["o.npz"], bad, edit_and_resign, old_layout=True)
    with unverified_reads(not keep_checksum), pytest.raises(ValueError, match="edited.npz") as info:
        load_reports(str(bad))  # a version 2 file (no checksum) is read only with --no-verify
    assert words in str(info.value)


@pytest.mark.parametrize("edit, words", [
    (_wrong_n, "reports_0 (attribute 'a') has shape (600, 1); expected (605, 1) (3 bits packed"),
    (_short_array, "reports_1 (attribute 'b') has shape (597, 1); expected (600, 1)"),
    (_missing, "has no 'reports_2'"), (_float, "dtype float64; expected uint8")])
def test_packed_contents_checked_against_metadata(files, tmp_path, edit, words):
    """Version 4 (bits packed 8 a byte), re-signed: the consistency checks still apply."""
    from lopub.cli.oracle_npz import checksum

    bad = tmp_path / "edited.npz"

    def edit_and_resign(meta, arrays):
        edit(meta, arrays)
        meta["checksum"] = checksum(meta, arrays)

    rewrite(files["o.npz"], bad, edit_and_resign)
    with pytest.raises(ValueError, match="edited.npz") as info:
        load_reports(str(bad))
    assert words in str(info.value)


def test_edited_metadata_fails_the_checksum(files, tmp_path):
    bad = tmp_path / "meta.npz"
    rewrite(files["o.npz"], bad, lambda meta, arrays: meta.update(epsilon=4.0))
    with pytest.raises(ValueError, match="meta.npz.*fails its checksum"):
        load_reports(str(bad))


def test_version_3_without_checksum_is_refused(files, tmp_path):
    bad = tmp_path / "nock.npz"
    rewrite(files["o.npz"], bad, lambda meta, arrays: meta.pop("checksum"))
    with pytest.raises(ValueError, match="nock.npz.*has no checksum"):
        load_reports(str(bad))


def test_save_load_round_trip_sampled(tmp_path):
    meta = {"format": "lopub-oracle-reports", "version": 3, "protocol": "grr", "solution": "smp",
            "attrs": ["a", "b"], "sizes": [3, 2], "labels": [["x", "y", "z"], ["u", "v"]], "n": 4}
    arrays = {"attributes": np.array([[0], [1], [1], [0]]), "reports_0": np.array([2, 0]),
              "reports_1": np.array([1, 1])}
    save_reports(str(tmp_path / "s.npz"), meta, arrays)
    got, arr = load_reports(str(tmp_path / "s.npz"))
    assert got["n"] == 4 and arr["reports_0"].tolist() == [2, 0]
    arrays["attributes"][0, 0] = 2
    save_reports(str(tmp_path / "s.npz"), meta, arrays)
    with pytest.raises(ValueError, match="'attributes'.*attribute indices in \\[0, 2\\)"):
        load_reports(str(tmp_path / "s.npz"))
