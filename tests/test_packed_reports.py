"""Oracle reports files store unary (bit) reports packed, 8 bits a byte (version 4).

Version 1-3 files (one byte per bit) still read and give the same estimates; a packed
array whose padding bits are set or whose width does not fit the domain is refused."""
import json
import os
from contextlib import nullcontext

import numpy as np
import pandas as pd
import pytest

from lopub.cli import main
from lopub.cli.oracle_files import estimate_file_with_stderr, load_reports
from lopub.cli.oracle_npz import REPORT_KINDS, checksum
from lopub.io import unverified_reads

SIZES = {"sex": 2, "job": 9, "city": 40}  # 1 byte (6 padding bits), 2 bytes (7), 5 bytes (none)
BIT_PROTOCOLS = {"sue": [], "oue": [], "l-sue": ["--eps-1", "1.5"],
                 "l-osue": ["--eps-1", "1.5"], "l-oue": ["--eps-1", "1.5"],
                 "ue-lip": ["--prior", "{prior}"], "allomfree": ["--eps-1", "1.5"],
                 "oue-smp": ["--solution", "smp"]}


def _run(capsys, *argv):
    capsys.readouterr()
    try:
        code = main([str(x) for x in argv])
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code or 0, out.out, out.err


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("packed")
    rng = np.random.default_rng(0)
    n = 1500
    cats = {x: [f"{x}{i}" for i in range(k)] for x, k in SIZES.items()}
    pd.DataFrame({x: rng.choice(c, n) for x, c in cats.items()}).to_csv(tmp / "d.csv", index=False)
    dom = {"format": "lopub-domain", "version": 1,
           "attributes": [{"name": x, "categories": c} for x, c in cats.items()]}
    (tmp / "dom.json").write_text(json.dumps(dom))
    (tmp / "p.json").write_text(json.dumps({x: [1 / k] * k for x, k in SIZES.items()}))
    return tmp


def _collect(capsys, tmp, name):
    protocol = name.removesuffix("-smp")
    out = tmp / f"{name}.npz"
    extra = [x.format(prior=tmp / "p.json") for x in BIT_PROTOCOLS[name]]
    code, _, err = _run(capsys, "collect", tmp / "d.csv", "--domain", tmp / "dom.json",
                        "--protocol", protocol, "--epsilon", "3", "--seed", "5", "--out", out,
                        *extra)
    assert code == 0, err
    return str(out)


def _raw(path):
    with np.load(path) as z:
        return json.loads(str(z["meta"])), {k: z[k] for k in z.files if k != "meta"}


def _bit_keys(meta):
    """The ``reports_j`` entries that hold bits (ALLOMFREE: the attributes given L-OSUE)."""
    if meta["protocol"] != "allomfree":
        return [f"reports_{j}" for j in range(len(meta["attrs"]))]
    from lopub.oracles.allomfree import allomfree_choice

    return [f"reports_{j}" for j, k in enumerate(meta["sizes"])
            if REPORT_KINDS[allomfree_choice(meta["epsilon"], meta["eps_1"], k)] == "bits"]


def _write_old_layout(path, meta, arrays, version):
    """An oracle reports file as lopub wrote it before version 4: the bool arrays as they are,
    with a checksum from version 3 on."""
    meta = {k: v for k, v in meta.items() if k != "checksum"}
    meta["version"] = version
    if version >= 3:
        meta["checksum"] = checksum(meta, arrays)
    with open(path, "wb") as fh:
        np.savez(fh, meta=np.array(json.dumps(meta)), **arrays)


@pytest.mark.parametrize("name", list(BIT_PROTOCOLS))
def test_bits_are_stored_packed_and_read_back_as_before(inputs, capsys, name, tmp_path):
    path = _collect(capsys, inputs, name)
    raw_meta, stored = _raw(path)
    assert raw_meta["version"] == 4
    keys = _bit_keys(raw_meta)
    assert keys  # every protocol here reports bits for at least one attribute
    meta, arrays = load_reports(path)
    for key in keys:
        k = meta["sizes"][int(key.split("_")[1])]
        got = arrays[key]
        assert got.dtype == bool and got.shape[1] == k
        assert stored[key].dtype == np.uint8 and stored[key].shape == (got.shape[0], -(-k // 8))
        assert np.array_equal(np.unpackbits(stored[key], axis=1, count=k).astype(bool), got)
    new = estimate_file_with_stderr(path)
    for version in (3, 2):  # the layout older lopub wrote: one byte per bit
        old = tmp_path / f"v{version}.npz"
        _write_old_layout(old, meta, arrays, version)
        warns = pytest.warns(UserWarning, match="no checksum") if version < 3 else nullcontext()
        with unverified_reads(version < 3), warns:
            assert estimate_file_with_stderr(str(old)) == new
            _, old_arrays = load_reports(str(old))
        assert all(np.array_equal(old_arrays[k], v) for k, v in arrays.items())
    assert os.path.getsize(path) < os.path.getsize(tmp_path / "v3.npz")


def test_old_layout_files_through_the_commands(inputs, capsys, tmp_path):
    path = _collect(capsys, inputs, "oue")
    meta, arrays = load_reports(path)
    _write_old_layout(tmp_path / "v3.npz", meta, arrays, 3)
    _write_old_layout(tmp_path / "v2.npz", meta, arrays, 2)
    outs = []
    for argv in ([path], [tmp_path / "v3.npz"], [tmp_path / "v2.npz", "--no-verify"]):
        code, out, err = _run(capsys, "estimate-freq", *argv, "--json")
        assert code == 0, err
        outs.append(json.loads(out))
        code, _, err = _run(capsys, "inspect-reports", *argv)
        assert code == 0, err
    assert outs[0] == outs[1] == outs[2]
    code, _, err = _run(capsys, "estimate-freq", tmp_path / "v2.npz")
    assert code == 2 and "--no-verify" in err


def _resigned(src, dst, edit):
    """Copy ``src`` to ``dst`` after ``edit(stored arrays)``, with a checksum that fits (so that
    only the consistency checks can catch the edit)."""
    meta, stored = _raw(src)
    edit(stored)
    meta["checksum"] = checksum(meta, stored)
    with open(dst, "wb") as fh:
        np.savez(fh, meta=np.array(json.dumps(meta)), **stored)


def _padding(stored):
    stored["reports_1"][7, -1] |= 1  # job: 9 bits in 2 bytes; the last bit of byte 2 is padding


def _extra_byte(stored):  # the width of 10-16 bits for a 9-category attribute
    stored["reports_1"] = np.concatenate([stored["reports_1"], stored["reports_1"][:, :1] * 0], 1)


def _short_bits(stored):  # 8 bits (1 byte) for a 9-category attribute
    stored["reports_1"] = stored["reports_1"][:, :1].copy()


def _unpacked(stored):  # a bool array in a version 4 file
    stored["reports_1"] = np.unpackbits(stored["reports_1"], axis=1, count=9).astype(bool)


def _rows(stored):
    stored["reports_2"] = stored["reports_2"][:-1]


@pytest.mark.parametrize("edit, words", [
    (_padding, r"reports_1 \(attribute 'job'\).*padding bits.*1 row"),
    (_extra_byte, r"reports_1 \(attribute 'job'\) has shape \(1500, 3\); expected \(1500, 2\).*9 bits"),
    (_short_bits, r"reports_1 \(attribute 'job'\) has shape \(1500, 1\); expected \(1500, 2\)"),
    (_unpacked, r"reports_1 \(attribute 'job'\) has dtype bool.*expected uint8"),
    (_rows, r"reports_2 \(attribute 'city'\) has shape \(1499, 5\); expected \(1500, 5\)")])
def test_damaged_packed_bits_are_refused_naming_the_file(inputs, capsys, tmp_path, edit, words):
    path = _collect(capsys, inputs, "oue")
    bad = tmp_path / "bad-bits.npz"
    _resigned(path, bad, edit)
    with pytest.raises(ValueError, match="bad-bits.npz.*" + words):
        load_reports(str(bad))
    code, _, err = _run(capsys, "estimate-freq", bad)
    assert code == 2 and "bad-bits.npz" in err and "Traceback" not in err


def test_writer_refuses_bits_that_are_not_zero_or_one(inputs, capsys, tmp_path):
    from lopub.cli.oracle_files import save_reports

    meta, arrays = load_reports(_collect(capsys, inputs, "oue"))
    arrays["reports_0"] = arrays["reports_0"].astype(np.int64) * 3
    with pytest.raises(ValueError, match=r"reports_0 .*values in \[0, 3\]; expected bits 0 or 1"):
        save_reports(str(tmp_path / "w.npz"), meta, arrays)
    assert not (tmp_path / "w.npz").exists()
