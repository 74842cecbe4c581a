"""Oracle reports files store unary (bit) reports packed, 8 bits a byte, and integer reports
(codes, hashed rows, sampled attribute indices) in the smallest unsigned dtype their range
needs (version 4).

Version 1-3 files (one byte per bit, int64 integers) still read and give the same estimates; a
packed array whose padding bits are set or whose width does not fit the domain, an integer array
of another dtype than the writer's or with a value out of range is refused."""
import json
import os
from contextlib import nullcontext

import numpy as np
import pandas as pd
import pytest

from cli_run import run as _run
from lopub.cli.oracle_files import estimate_file_with_stderr, load_reports
from lopub.cli.oracle_npz import REPORT_KINDS, checksum
from lopub.io import unverified_reads
from lopub.oracles.oneshot import HASH_PRIME

SIZES = {"sex": 2, "job": 9, "city": 40}  # 1 byte (6 padding bits), 2 bytes (7), 5 bytes (none)
BIT_PROTOCOLS = {"sue": [], "oue": [], "l-sue": ["--eps-1", "1.5"],
                 "l-osue": ["--eps-1", "1.5"], "l-oue": ["--eps-1", "1.5"],
                 "ue-lip": ["--prior", "{prior}"], "allomfree": ["--eps-1", "1.5"],
                 "oue-smp": ["--solution", "smp"]}


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


def _collect(capsys, tmp, name, options=None, prefix=""):
    """``lopub collect`` of protocol ``name`` (``-smp``: with its options) into ``tmp/<prefix><name>.npz``."""
    protocol = name.removesuffix("-smp")
    out = tmp / f"{prefix}{name}.npz"
    extra = [x.format(prior=tmp / "p.json") for x in (BIT_PROTOCOLS if options is None else options)[name]]
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


# ---- integer reports: codes and hashed rows in the smallest unsigned dtype (version 4) ----

INT_PROTOCOLS = {"grr": [], "l-grr": ["--eps-1", "1.5"], "rr-lip": ["--prior", "{prior}"],
                 "olh": [], "blh": [], "lh-lip": ["--prior", "{prior}"],
                 "allomfree": ["--eps-1", "1.5"], "grr-smp": ["--solution", "smp"],
                 "olh-smp": ["--solution", "smp"], "oue-smp": ["--solution", "smp"]}


def _collect_int(capsys, tmp, name):
    return _collect(capsys, tmp, name, INT_PROTOCOLS, "int-")


def _int_kinds(meta):
    """``{j: "codes" | "hashed"}`` of the attributes whose reports are integers."""
    if meta["protocol"] != "allomfree":
        kind = REPORT_KINDS[meta["protocol"]]
        return {} if kind == "bits" else dict.fromkeys(range(len(meta["attrs"])), kind)
    from lopub.oracles.allomfree import allomfree_choice

    kinds = {j: REPORT_KINDS[allomfree_choice(meta["epsilon"], meta["eps_1"], k)]
             for j, k in enumerate(meta["sizes"])}
    return {j: kind for j, kind in kinds.items() if kind == "codes"}


@pytest.mark.parametrize("name", list(INT_PROTOCOLS))
def test_integer_reports_are_stored_narrow_and_read_back_as_before(inputs, capsys, name, tmp_path):
    path = _collect_int(capsys, inputs, name)
    raw_meta, stored = _raw(path)
    assert raw_meta["version"] == 4
    meta, arrays = load_reports(path)
    kinds = _int_kinds(meta)
    assert kinds or name == "oue-smp"
    for j, kind in kinds.items():  # every size here is < 256 and every g (2 to 21) too
        key, got = f"reports_{j}", arrays[f"reports_{j}"]
        assert got.dtype == np.int64
        assert stored[key].dtype == np.uint8
        if kind == "codes":
            assert f"seeds_{j}" not in stored and np.array_equal(stored[key], got)
        else:  # (a, b) seeds as uint32, the hashed value y as uint8
            assert stored[f"seeds_{j}"].dtype == np.uint32 and got.shape[1] == 3
            assert np.array_equal(stored[f"seeds_{j}"], got[:, :2])
            assert np.array_equal(stored[key], got[:, 2])
    if "attributes" in arrays:  # indices of 3 attributes
        assert stored["attributes"].dtype == np.uint8 and arrays["attributes"].dtype == np.int64
        assert np.array_equal(stored["attributes"], arrays["attributes"])
    assert not any(k.startswith("seeds_") for k in arrays)  # callers see the layout of versions 1-3
    new = estimate_file_with_stderr(path)
    for version in (3, 2):  # the layout older lopub wrote: int64 codes and (n, 3) rows
        old = tmp_path / f"v{version}.npz"
        _write_old_layout(old, meta, arrays, version)
        warns = pytest.warns(UserWarning, match="no checksum") if version < 3 else nullcontext()
        with unverified_reads(version < 3), warns:
            assert estimate_file_with_stderr(str(old)) == new
            _, old_arrays = load_reports(str(old))
        assert old_arrays.keys() == arrays.keys()
        assert all(old_arrays[k].dtype == v.dtype and np.array_equal(old_arrays[k], v)
                   for k, v in arrays.items())
    assert os.path.getsize(path) < os.path.getsize(tmp_path / "v3.npz")


@pytest.mark.parametrize("name", ["grr", "olh", "grr-smp"])
def test_narrow_and_int64_files_print_the_same_estimates(inputs, capsys, tmp_path, name):
    path = _collect_int(capsys, inputs, name)
    meta, arrays = load_reports(path)
    _write_old_layout(tmp_path / "v3.npz", meta, arrays, 3)
    outs = []
    for src in (path, tmp_path / "v3.npz"):
        code, out, err = _run(capsys, "estimate-freq", src, "--json")
        assert code == 0, err
        outs.append(out)
        code, _, err = _run(capsys, "inspect-reports", src)
        assert code == 0, err
    assert outs[0] == outs[1]


def _meta(protocol, sizes, epsilon=1.0, solution="spl", **extra):
    return {"format": "lopub-oracle-reports", "version": 4, "protocol": protocol,
            "solution": solution, "epsilon": epsilon, "eps_1": None, "r": 1,
            "lgrr_variant": "paper", "attrs": [f"x{j}" for j in range(len(sizes))],
            "sizes": list(sizes), "labels": [[str(i) for i in range(k)] for k in sizes],
            "n": 0, **extra}


@pytest.mark.parametrize("k, dtype", [(2, np.uint8), (256, np.uint8), (257, np.uint16),
                                      (65536, np.uint16), (65537, np.uint32)])
def test_codes_take_the_smallest_unsigned_dtype_of_their_domain(tmp_path, k, dtype):
    from lopub.cli.oracle_files import save_reports
    from lopub.oracles import GRR

    rng = np.random.default_rng(1)
    values = np.r_[0, k - 1, rng.integers(0, k, 40)]
    reports = GRR(2.0, k).perturb(values, rng=rng)
    reports[:2] = [0, k - 1]  # the extremes of the range
    meta = _meta("grr", [k], epsilon=2.0) | {"n": len(values)}
    save_reports(str(tmp_path / "c.npz"), meta, {"reports_0": reports})
    assert _raw(tmp_path / "c.npz")[1]["reports_0"].dtype == dtype
    _, arrays = load_reports(str(tmp_path / "c.npz"))
    assert arrays["reports_0"].dtype == np.int64 and np.array_equal(arrays["reports_0"], reports)


@pytest.mark.parametrize("epsilon, g, dtype", [(1.0, 4, np.uint8), (5.5, 246, np.uint8),
                                               (5.6, 271, np.uint16), (12.0, 162756, np.uint32)])
def test_hashed_values_take_the_smallest_dtype_of_g(tmp_path, epsilon, g, dtype):
    from lopub.cli.oracle_files import estimate_file, save_reports
    from lopub.oracles import OLH

    oracle = OLH(epsilon, 30)
    assert oracle.g == g
    reports = oracle.perturb(np.arange(200) % 30, rng=7)
    reports[0] = [HASH_PRIME - 1, HASH_PRIME - 1, g - 1]  # the largest seeds and value
    meta = _meta("olh", [30], epsilon=epsilon) | {"n": 200}
    save_reports(str(tmp_path / "h.npz"), meta, {"reports_0": reports})
    stored = _raw(tmp_path / "h.npz")[1]
    assert stored["reports_0"].dtype == dtype and stored["seeds_0"].dtype == np.uint32
    _, arrays = load_reports(str(tmp_path / "h.npz"))
    assert arrays["reports_0"].dtype == np.int64 and np.array_equal(arrays["reports_0"], reports)
    old_meta = {k: v for k, v in meta.items()}
    _write_old_layout(tmp_path / "v3.npz", old_meta, {"reports_0": reports}, 3)
    assert estimate_file(str(tmp_path / "h.npz")) == estimate_file(str(tmp_path / "v3.npz"))


def _int64_codes(stored):  # the dtype versions 1-3 used, in a version 4 file
    stored["reports_1"] = stored["reports_1"].astype(np.int64)


def _uint16_codes(stored):  # wider than the writer writes for 9 categories
    stored["reports_1"] = stored["reports_1"].astype(np.uint16)


def _code_nine(stored):  # 'job' has 9 categories: codes 0-8
    stored["reports_1"][3] = 9


def _int64_attributes(stored):
    stored["attributes"] = stored["attributes"].astype(np.int64)


def _attribute_three(stored):
    stored["attributes"][5] = 3


@pytest.mark.parametrize("name, edit, words", [
    ("grr", _int64_codes, r"reports_1 \(attribute 'job'\) has dtype int64; expected uint8"),
    ("grr", _uint16_codes, r"reports_1 \(attribute 'job'\) has dtype uint16; expected uint8"),
    ("grr", _code_nine, (r"reports_1 \(attribute 'job'\) holds values in \[0, 9\]; expected codes "
                         r"in \[0, 9\)")),
    ("l-grr", _int64_codes, r"reports_1 \(attribute 'job'\) has dtype int64; expected uint8"),
    ("rr-lip", _code_nine, r"reports_1 \(attribute 'job'\) holds values in \[0, 9\]"),
    ("allomfree", _int64_codes, r"reports_1 \(attribute 'job'\) has dtype int64; expected uint8"),
    ("grr-smp", _int64_attributes, r"'attributes' has dtype int64; expected uint8"),
    ("grr-smp", _attribute_three, r"'attributes' .*attribute indices in \[0, 3\)")])
def test_wide_or_out_of_range_codes_are_refused_naming_the_file(inputs, capsys, tmp_path, name,
                                                               edit, words):
    path = _collect_int(capsys, inputs, name)
    bad = tmp_path / "bad-codes.npz"
    _resigned(path, bad, edit)
    with pytest.raises(ValueError, match="bad-codes.npz.*" + words):
        load_reports(str(bad))
    code, _, err = _run(capsys, "estimate-freq", bad)
    assert code == 2 and "bad-codes.npz" in err and "Traceback" not in err


def _int64_rows(stored):  # the (n, 3) int64 rows of versions 1-3, in a version 4 file
    stored["reports_1"] = np.column_stack([stored.pop("seeds_1"), stored["reports_1"]]).astype(np.int64)


def _int64_seeds(stored):
    stored["seeds_1"] = stored["seeds_1"].astype(np.int64)


def _no_seeds(stored):
    del stored["seeds_1"]


def _seed_zero(stored):  # a in [1, P)
    stored["seeds_1"][2, 0] = 0


def _seed_prime(stored):  # b in [0, P)
    stored["seeds_1"][2, 1] = HASH_PRIME


def _y_out_of_range(stored):  # g = round(e^(3/3)) + 1 = 4 buckets
    stored["reports_1"][2] = 4


def _short_seeds(stored):
    stored["seeds_1"] = stored["seeds_1"][:-1]


@pytest.mark.parametrize("edit, words", [
    (_int64_rows, r"reports_1 \(attribute 'job'\) has dtype int64; expected uint8"),
    (_int64_seeds, r"seeds_1 \(attribute 'job'\) has dtype int64; expected uint32"),
    (_no_seeds, r"has no 'seeds_1' \(attribute 'job'\)"),
    (_seed_zero, (r"seeds_1 \(attribute 'job'\) holds seeds a in \[0, \d+\]; expected seeds a in "
                  r"\[1, 2147483647\)")),
    (_seed_prime, (r"seeds_1 \(attribute 'job'\) holds seeds b in \[\d+, 2147483647\]; expected "
                   r"seeds b in \[0, 2147483647\)")),
    (_y_out_of_range, (r"reports_1 \(attribute 'job'\) holds values in \[0, 4\]; expected hashed "
                       r"values in \[0, 4\)")),
    (_short_seeds, r"seeds_1 \(attribute 'job'\) has shape \(1499, 2\); expected \(1500, 2\)")])
def test_wide_or_out_of_range_hashed_rows_are_refused_naming_the_file(inputs, capsys, tmp_path,
                                                                     edit, words):
    path = _collect_int(capsys, inputs, "olh")
    bad = tmp_path / "bad-hashed.npz"
    _resigned(path, bad, edit)
    with pytest.raises(ValueError, match="bad-hashed.npz.*" + words):
        load_reports(str(bad))
    code, _, err = _run(capsys, "estimate-freq", bad)
    assert code == 2 and "bad-hashed.npz" in err and "Traceback" not in err


@pytest.mark.parametrize("name, key, value, words", [
    ("grr", "reports_1", 9, (r"reports_1 \(attribute 'job'\) holds values in \[0, 9\]; expected codes "
                             r"in \[0, 9\)")),
    ("grr", "reports_1", -1, r"reports_1 \(attribute 'job'\) holds values in \[-1, 8\]"),
    ("olh", "reports_1", 4, (r"reports_1 \(attribute 'job'\) holds values in \[0, 4\]; expected "
                             r"hashed values in \[0, 4\)")),
    ("grr-smp", "attributes", 3, r"'attributes' .*attribute indices in \[0, 3\)")])
def test_writer_refuses_integers_out_of_range(inputs, capsys, tmp_path, name, key, value, words):
    """Narrowing would wrap them (9 -> 9 fits uint8 but is no code of 'job'; -1 -> 255)."""
    from lopub.cli.oracle_files import save_reports

    meta, arrays = load_reports(_collect_int(capsys, inputs, name))
    r = arrays[key]
    if r.ndim == 2 and key != "attributes":
        r[0, 2] = value
    elif r.ndim == 2:
        r[0, 0] = value
    else:
        r[0] = value
    with pytest.raises(ValueError, match="w.npz.*" + words):
        save_reports(str(tmp_path / "w.npz"), meta, arrays)
    assert not (tmp_path / "w.npz").exists()


@pytest.mark.parametrize("name", ["oue", "l-osue"])
def test_metadata_reads_back_as_plain_strings(capsys, inputs, name):
    """The metadata is one JSON text (a 0-d unicode entry): protocol, attribute names and labels
    come back as plain str, not numpy.str_, and the format is read from it (the CLI's own
    npz_format decoded it as UTF-8 bytes and found no format in any oracle reports file)."""
    from lopub.cli.oracle_files import FORMAT, npz_format

    path = _collect(capsys, inputs, name, prefix="meta-")
    meta, _ = load_reports(str(path))
    strings = [meta["protocol"], meta["solution"], *meta["attrs"], *sum(meta["labels"], [])]
    assert {type(s) for s in strings} == {str} and meta["attrs"] == list(SIZES)
    assert npz_format(str(path)) == FORMAT
    code, out, _ = _run(capsys, "estimate-freq", path, "--json")
    assert code == 0 and "np.str_" not in out
    assert list(json.loads(out)["marginals"]) == list(SIZES)
