"""How a marginal-reports file (:mod:`lopub.collect.reports`) stores its arrays, from version 3.

Version 3 stores every integer in the smallest unsigned dtype of its range
(:func:`~lopub.formats._io.smallest_uint`), as the oracle reports files do from their version 4:
``subset`` below the number of subsets; a GRR group's codes below its ``K`` cells; an OUE
group's bits packed 8 a byte (``numpy.packbits(bits, axis=1)``, ``uint8`` ``(n_i, ceil(K / 8))``,
big-endian bit order, padding bits zero); an OLH group split into ``seeds_<i>``, the hash seeds
``(a, b)`` as ``uint32`` ``(n_i, 2)`` (``a`` in ``[1, P)``, ``b`` in ``[0, P)``,
``P = 2^31 - 1``), and ``group_<i>``, the reported buckets ``y < g``.  Versions 1 and 2 stored
``subset`` as int32, codes and OLH rows as int64 and bits as bool.  The reader accepts exactly
the writer's dtypes, shapes and ranges and gives back the layout of versions 1 and 2.
"""
from __future__ import annotations

import numpy as np

from lopub.collect.plan import MarginalPlan
from lopub.errors import ReportsFormatError
from lopub.formats._io import smallest_uint
from lopub.oracles.local_hashing import HASH_PRIME

__all__ = ["narrowed", "widened"]


def _range(where: str, values: np.ndarray, lo: int, hi: int, what: str) -> None:
    if values.size and (values.min() < lo or values.max() >= hi):
        raise ReportsFormatError(f"{where} holds values in [{values.min()}, {values.max()}]; "
                                 f"expected {what} in [{lo}, {hi})")


def _buckets(plan: MarginalPlan, i: int) -> int:
    return int(plan.oracle(i).g)


def narrowed(plan: MarginalPlan, subset: np.ndarray, groups: tuple, name: str) -> dict:
    """The arrays version 3 stores (``subset`` included), each checked to be in its range."""
    out = {"subset": subset.astype(smallest_uint(max(plan.n_subsets, 1)))}
    for i, (kind, rep) in enumerate(zip(plan.oracles, groups)):  # loop over subsets
        where, k = f"{name}: group_{i} ({kind})", max(2, plan.cells(i))
        r = np.asarray(rep)
        if kind == "oue":
            _range(where, r.view(np.uint8) if r.dtype == bool else r, 0, 2, "bits")
            out[f"group_{i}"] = np.packbits(r.astype(bool, copy=False), axis=1)
        elif kind == "olh":
            _range(where + " seeds a", r[:, 0], 1, HASH_PRIME, "seeds a")
            _range(where + " seeds b", r[:, 1], 0, HASH_PRIME, "seeds b")
            g = _buckets(plan, i)
            _range(where, r[:, 2], 0, g, "buckets")
            out[f"seeds_{i}"] = r[:, :2].astype(np.uint32)
            out[f"group_{i}"] = r[:, 2].astype(smallest_uint(g))
        else:
            _range(where, r, 0, k, "codes")
            out[f"group_{i}"] = r.astype(smallest_uint(k))
    return out


def _dtype(where: str, r: np.ndarray, want: np.dtype, shape: tuple, what: str) -> None:
    if r.dtype != want:
        raise ReportsFormatError(f"{where} has dtype {r.dtype}; expected {want} ({what}, file "
                                 f"version >= 3)")
    if r.shape != shape:
        raise ReportsFormatError(f"{where} has shape {r.shape}; expected {shape}")


def widened(plan: MarginalPlan, arrays: dict, name: str) -> tuple[np.ndarray, tuple]:
    """``(subset, groups)`` of a version-3 file in the layout of versions 1 and 2, after checking
    every array's dtype, shape and range."""
    try:
        subset = arrays["subset"]
        stored = [arrays[f"group_{i}"] for i in range(plan.n_subsets)]
    except KeyError as exc:
        raise ReportsFormatError(f"{name} is not a readable marginal-reports file: it has no {exc}") from None
    g_count = max(plan.n_subsets, 1)
    _dtype(f"{name}: subset", subset, smallest_uint(g_count), subset.shape[:1], "subset ids")
    if subset.ndim != 1:
        raise ReportsFormatError(f"{name}: subset has shape {subset.shape}; expected (N,)")
    _range(f"{name}: subset", subset, 0, g_count, "subset ids")
    sizes = np.bincount(subset, minlength=plan.n_subsets)
    groups = []
    for i, (kind, r) in enumerate(zip(plan.oracles, stored)):  # loop over subsets
        where, k, rows = f"{name}: group_{i} ({kind})", max(2, plan.cells(i)), int(sizes[i])
        if kind == "oue":
            width = -(-k // 8)
            _dtype(where, r, np.dtype(np.uint8), (rows, width), f"{k} bits packed 8 a byte")
            pad = 8 * width - k
            if pad and r.size and np.count_nonzero(r[:, -1] & np.uint8((1 << pad) - 1)):
                raise ReportsFormatError(f"{where} has padding bits set beyond its {k} bits; the "
                                         f"file is damaged")
            groups.append(np.unpackbits(r, axis=1, count=k).view(bool))
        elif kind == "olh":
            g, seeds = _buckets(plan, i), arrays.get(f"seeds_{i}")
            _dtype(where, r, smallest_uint(g), (rows,), f"buckets in [0, {g})")
            _range(where, r, 0, g, "buckets")
            if seeds is None:
                raise ReportsFormatError(f"{name} has no 'seeds_{i}': the hash seeds of group {i}")
            _dtype(f"{name}: seeds_{i}", seeds, np.dtype(np.uint32), (rows, 2), "hash seeds a, b")
            _range(f"{name}: seeds_{i} a", seeds[:, 0], 1, HASH_PRIME, "seeds a")
            _range(f"{name}: seeds_{i} b", seeds[:, 1], 0, HASH_PRIME, "seeds b")
            groups.append(np.column_stack([seeds.astype(np.int64), r.astype(np.int64)]))
        else:
            _dtype(where, r, smallest_uint(k), (rows,), f"codes in [0, {k})")
            _range(where, r, 0, k, "codes")
            groups.append(r.astype(np.int64))
    return subset.astype(np.int32), tuple(groups)
