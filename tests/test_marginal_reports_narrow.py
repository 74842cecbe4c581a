"""Marginal-sampling reports files (``lopub collect``'s and ``lopub serve-export``'s) store every
integer in the smallest unsigned dtype of its range and OUE bits packed (version 3), as the
oracle reports files do; version 2 files (int64 codes and hashed rows, bool bits) still read,
and a stored array of another dtype, with a value out of range or padding bits set is refused."""
import json

import numpy as np
import pytest

from lopub.collect import MarginalReports
from lopub.collect.plan import MarginalPlan
from lopub.data.domain import Domain
from lopub.errors import ReportsFormatError
from lopub.formats._io import npz_checksum

DOMAIN = Domain.from_categories({"a": list("xyz"), "b": [str(i) for i in range(7)],
                                 "c": [str(i) for i in range(300)]})
# grr on 3 cells (uint8), oue on 21 cells (3 bytes, 3 padding bits), olh on 300 cells (g = 3
# buckets at epsilon 1: uint8, seeds uint32), grr on 900 (uint16)
PLAN = MarginalPlan(DOMAIN, (("a",), ("a", "b"), ("c",), ("a", "c")), 1.0, ("grr", "oue", "olh", "grr"))


def _reports(n=400, seed=0):
    rng = np.random.default_rng(seed)
    subset = np.sort(rng.integers(0, PLAN.n_subsets, n)).astype(np.int32)
    sizes = np.bincount(subset, minlength=PLAN.n_subsets)
    groups = tuple(PLAN.oracle(i).perturb(rng.integers(0, PLAN.cells(i), sizes[i]), rng=rng)
                   for i in range(PLAN.n_subsets))
    return MarginalReports(PLAN, subset, groups)


def _raw(path):
    with np.load(path) as z:
        return json.loads(bytes(z["meta"]).decode()), {k: z[k] for k in z.files if k != "meta"}


def _write(path, meta, arrays):
    """A file as a writer would make it: ``arrays`` stored as given, under a valid checksum."""
    meta = {**meta, "checksum": npz_checksum(meta, arrays)}
    blob = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez_compressed(path, meta=blob, **arrays)


def test_narrow_dtypes_round_trip(tmp_path):
    rep = _reports()
    rep.save(tmp_path / "r.npz")
    meta, stored = _raw(tmp_path / "r.npz")
    assert meta["version"] == 3
    assert {k: v.dtype.name for k, v in stored.items()} == {
        "subset": "uint8", "group_0": "uint8", "group_1": "uint8", "group_2": "uint8",
        "seeds_2": "uint32", "group_3": "uint16"}
    assert stored["group_1"].shape == (rep.groups[1].shape[0], 3)  # 21 bits in 3 bytes
    back = MarginalReports.load(tmp_path / "r.npz")
    np.testing.assert_array_equal(back.subset, rep.subset)
    assert back.subset.dtype == np.int32
    for got, want in zip(back.groups, rep.groups):  # the in-memory layout of before, exactly
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_version_2_files_read_unchanged(tmp_path):
    rep = _reports(seed=1)
    meta = {"format": "lopub-marginal-reports", "version": 2, "plan": PLAN.to_dict(),
            "plan_id": PLAN.plan_id, "n": rep.n, "group_sizes": rep.group_sizes().tolist(),
            "report_kinds": list(PLAN.oracles)}
    arrays = {"subset": rep.subset, **{f"group_{i}": g for i, g in enumerate(rep.groups)}}
    assert {a.dtype.name for a in arrays.values()} == {"int32", "int64", "bool"}
    _write(tmp_path / "v2.npz", meta, arrays)
    back = MarginalReports.load(tmp_path / "v2.npz")
    for got, want in zip(back.groups, rep.groups):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("edit, words", [
    (lambda s: {**s, "group_0": s["group_0"].astype(np.int64)}, r"group_0 \(grr\) has dtype int64; expected uint8"),
    (lambda s: {**s, "group_3": np.full_like(s["group_3"], 900)},
     r"group_3 \(grr\) holds values in \[900, 900\]; expected codes in \[0, 900\)"),
    (lambda s: {**s, "group_2": np.full_like(s["group_2"], 255)}, r"group_2 \(olh\) holds values .*expected buckets"),
    (lambda s: {**s, "seeds_2": s["seeds_2"].astype(np.int64)}, r"seeds_2 has dtype int64; expected uint32"),
    (lambda s: {k: v for k, v in s.items() if k != "seeds_2"}, r"has no 'seeds_2'"),
    (lambda s: {**s, "group_1": s["group_1"] | np.uint8(1)}, r"group_1 \(oue\) has padding bits set"),
    (lambda s: {**s, "group_1": s["group_1"][:, :2]}, r"group_1 \(oue\) has shape .*expected"),
    (lambda s: {**s, "subset": s["subset"].astype(np.int32)}, r"subset has dtype int32; expected uint8"),
])
def test_wrong_dtype_or_range_is_refused(tmp_path, edit, words):
    _reports(seed=2).save(tmp_path / "r.npz")
    meta, stored = _raw(tmp_path / "r.npz")
    _write(tmp_path / "bad.npz", meta, edit(stored))
    with pytest.raises(ReportsFormatError, match=words):
        MarginalReports.load(tmp_path / "bad.npz")
