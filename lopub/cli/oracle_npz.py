"""Reading and writing the oracle reports ``.npz`` file, with its integrity checks.

Writing: atomically (temporary file, fsync, rename; the mode a plain
``open`` would give), with ``meta["checksum"]``: the SHA-256 of the
metadata (without the checksum) and of every array's name, dtype, shape and
bytes as stored.  From version 4 (:data:`PACKED_FROM`) the bit reports of the
unary protocols (``"bits"`` in :data:`REPORT_KINDS`; ALLOMFREE's L-OSUE
attributes) are stored packed: ``numpy.packbits(bits, axis=1)``, a ``uint8``
array of shape ``(rows, ceil(k / 8))``, bit ``v`` of a report in byte ``v // 8``
at bit ``7 - v % 8`` (big-endian bit order); the ``8 ceil(k / 8) - k`` padding
bits of the last byte are zero.  Versions 1 to 3 stored one ``bool`` per bit.
The reader returns unpacked ``bool`` arrays ``(rows, k)`` whatever the version.
Integer arrays are stored, from version 4, in the smallest unsigned dtype that holds
their range given the metadata (:func:`smallest_uint`: ``uint8`` up to 256 values,
then ``uint16``, ``uint32``, ``uint64``): codes (``"codes"``; ALLOMFREE's L-GRR attributes)
``< k``, the sampled ``attributes`` ``< d``; a hashed report (``"hashed"``) is split into
``seeds_<j>``, the hash seeds ``(a, b)`` as ``uint32`` ``(rows, 2)`` (``a`` in ``[1, P)``,
``b`` in ``[0, P)``, ``P = 2^31 - 1``), and ``reports_<j>``, the reported bucket ``y < g``
``(rows,)`` (``g`` of the attribute's hash: :func:`hash_ranges`).  The reader accepts exactly
these dtypes and returns ``int64`` arrays of the layout of versions 1 to 3 (codes ``(rows,)``,
hashed rows ``(a, b, y)`` ``(rows, 3)``, ``attributes``), which stored them as ``int64``.

Reading: any damage (truncated, not a zip, a bit flip, edited
metadata) and any array that does not fit its metadata (row counts against
``n`` and the sampled attributes, shapes against the domain sizes, values
outside the protocol's report range, packed bits of another width or with a
padding bit set, integers of another dtype than the writer's) is a ``ValueError`` naming the file
and what failed.  Files of versions 1 and 2 (no checksum) are refused unless
read with ``--no-verify`` (:func:`lopub.io.unverified_reads`), then checked for
consistency only.
"""
from __future__ import annotations

import json

import numpy as np

from lopub.formats._io import npz_checksum, npz_meta_text, parse_json, smallest_uint
from lopub.io import atomic_path, missing_checksum
from lopub.oracles.local_hashing import HASH_PRIME

__all__ = ["PACKED_FROM", "REPORT_KINDS", "checksum", "hash_ranges", "load_npz", "save_npz",
           "smallest_uint"]

#: the report array of each protocol: codes (n,), bits (n, k) or hashed rows (n, 3)
REPORT_KINDS = {**dict.fromkeys(("grr", "l-grr", "rr-lip"), "codes"),
                **dict.fromkeys(("sue", "oue", "l-sue", "l-osue", "l-oue", "ue-lip"), "bits"),
                **dict.fromkeys(("olh", "blh", "lh-lip"), "hashed")}
#: the first file version whose bit reports are stored packed (8 bits a byte) and whose integer
#: arrays are stored in the smallest unsigned dtype of their range
PACKED_FROM = 4
_META_KEYS = {"protocol": str, "solution": str, "attrs": list, "sizes": list, "labels": list,
              "n": int}


def checksum(meta: dict, arrays: dict) -> str:
    """SHA-256 (hex) of ``meta`` without its ``checksum`` and of every array."""
    return npz_checksum(meta, arrays)


def save_npz(path: str, meta: dict, arrays: dict) -> None:
    """Write ``meta`` (with its checksum) and ``arrays`` to ``path`` atomically.

    ``arrays`` holds the reports as the oracles give them (bits as ``bool`` or 0/1
    integers, codes and hashed rows as integers); from version :data:`PACKED_FROM` on
    (``meta["version"]``) the bit reports are packed and the integer arrays narrowed (checked
    to be in range first) before they are stored, and the checksum covers what is stored.
    """
    if meta.get("version", 0) >= PACKED_FROM:
        arrays = _stored(path, meta, arrays)
    meta = {**meta, "checksum": checksum(meta, arrays)}
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, meta=np.array(json.dumps(meta)), **arrays)


def _read(path: str) -> tuple[dict, dict]:
    try:
        with np.load(path, allow_pickle=False) as z:
            if "meta" not in z.files:
                raise ValueError("it has no 'meta' entry")
            meta = parse_json(npz_meta_text(z["meta"]), ValueError, "its 'meta' entry")
            arrays = {k: z[k] for k in z.files if k != "meta"}
    except FileNotFoundError:
        raise FileNotFoundError(f"reports file {path!r} does not exist") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"reports file {path!r} is a folder") from None
    except Exception as exc:  # zipfile, numpy's header parser, json, a huge claimed shape (MemoryError)
        why = " ".join(str(exc).split())[:200]
        raise ValueError(f"reports file {path!r} is damaged or not a lopub oracle reports "
                         f"file ({type(exc).__name__}: {why})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"reports file {path!r}: its metadata is not a JSON object")
    return meta, arrays


def _check_meta(path: str, meta: dict) -> None:
    for key, kind in _META_KEYS.items():
        value = meta.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"reports file {path!r}: metadata {key!r} ({value!r}) must be a "
                             f"{kind.__name__}")
    d = len(meta["attrs"])
    if meta["n"] < 0 or len(meta["sizes"]) != d or len(meta["labels"]) != d:
        raise ValueError(f"reports file {path!r}: metadata n ({meta['n']}), sizes and labels "
                         f"must be >= 0 and list one entry per attribute ({d})")
    for x, k, lab in zip(meta["attrs"], meta["sizes"], meta["labels"]):  # loop over attributes
        if not isinstance(k, int) or k < 1 or not isinstance(lab, list) or len(lab) != k:
            raise ValueError(f"reports file {path!r}: attribute {x!r} has size {k!r} and "
                             f"{len(lab) if isinstance(lab, list) else lab!r} labels; expected "
                             f"a positive size equal to the number of labels")


def _rows_per_attribute(path: str, meta: dict, arrays: dict) -> list[int]:
    """The number of reports each attribute must have (SMP: from ``attributes``)."""
    d, n = len(meta["attrs"]), meta["n"]
    if "attributes" not in arrays:
        return [n] * d
    att = arrays["attributes"]
    if (att.ndim not in (1, 2) or att.shape[0] != n or not np.issubdtype(att.dtype, np.integer)
            or (att.size and (att.min() < 0 or att.max() >= d))):
        raise ValueError(f"reports file {path!r}: 'attributes' (shape {att.shape}, dtype "
                         f"{att.dtype}) must hold n ({n}) rows of attribute indices in [0, {d})")
    return np.bincount(att.ravel(), minlength=d).tolist()


def _report_kinds(path: str, meta: dict) -> list[str | None]:
    """The report array kind of each attribute.  ALLOMFREE's clients pick L-GRR (codes) or
    L-OSUE (bits) per attribute from the public budgets and domain size; the same choice
    is recomputed here."""
    d = len(meta["attrs"])
    if meta["protocol"] != "allomfree":
        return [REPORT_KINDS.get(meta["protocol"])] * d
    from lopub.oracles.allomfree import allomfree_choice

    try:
        return [REPORT_KINDS[allomfree_choice(meta["epsilon"], meta["eps_1"], k,
                                              meta.get("lgrr_variant", "paper"))]
                for k in meta["sizes"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"reports file {path!r}: its ALLOMFREE parameters are invalid "
                         f"({exc})") from None


def hash_ranges(path: str, meta: dict) -> list[int]:
    """The number of buckets ``g`` of each attribute's hash, from the metadata: OLH/BLH at the
    budget the scheme (SPL/SMP) gives each attribute, LH-LIP with the mechanism's ``g``."""
    from lopub.oracles.lip_encoded import LH_LIP_G
    from lopub.oracles.multidim import SMP, SPL

    if meta["protocol"] == "lh-lip":
        return [LH_LIP_G] * len(meta["attrs"])
    try:
        sizes, variant = tuple(meta["sizes"]), meta.get("lgrr_variant", "paper")
        scheme = (SMP(meta["protocol"], meta["epsilon"], sizes, r=meta["r"], eps_1=meta["eps_1"],
                      lgrr_variant=variant) if meta["solution"] == "smp" else
                  SPL(meta["protocol"], meta["epsilon"], sizes, eps_1=meta["eps_1"],
                      lgrr_variant=variant))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"reports file {path!r}: its {meta['protocol']} parameters are invalid "
                         f"({exc})") from None
    return [int(o.g) for o in scheme.oracles]


def _in_range(where: str, values: np.ndarray, lo: int, hi: int, what: str,
              held: str | None = None) -> None:
    """Refuse ``values`` outside ``[lo, hi)`` (``what`` they are expected to be)."""
    if values.size and (values.min() < lo or values.max() >= hi):
        raise ValueError(f"{where} holds {held or what} in [{values.min()}, {values.max()}]; "
                         f"expected {what} in [{lo}, {hi})")


def _integers(where: str, r: np.ndarray, ndim: int, width: int | None = None) -> None:
    if (r.ndim != ndim or (width is not None and r.shape[1] != width)
            or not np.issubdtype(r.dtype, np.integer)):
        shape = "(rows,)" if ndim == 1 else f"(rows, {width or 'r'})"
        raise ValueError(f"{where} has shape {r.shape} and dtype {r.dtype}; expected integers of "
                         f"shape {shape}")


def _stored(path: str, meta: dict, arrays: dict) -> dict:
    """``arrays`` as version :data:`PACKED_FROM` stores them: every bit report packed along its
    bit axis (checked to hold 0 or 1), every integer array checked to be in its range and
    narrowed to :func:`smallest_uint` of it, hashed rows split into seeds and values."""
    out = dict(arrays)
    d = len(meta["attrs"])
    if "attributes" in arrays:
        att, where = np.asarray(arrays["attributes"]), f"reports file {path!r}: 'attributes'"
        _integers(where, att, 1 if att.ndim == 1 else 2)
        _in_range(where, att, 0, d, "attribute indices")
        out["attributes"] = att.astype(smallest_uint(d))
    kinds = _report_kinds(path, meta)
    g = hash_ranges(path, meta) if "hashed" in kinds else None
    for j, kind in enumerate(kinds):  # loop over attributes
        key, k = f"reports_{j}", meta["sizes"][j]
        if key not in arrays:
            continue
        r, where = np.asarray(arrays[key]), f"reports file {path!r}: {key} (attribute {meta['attrs'][j]!r})"
        if kind == "codes":
            _integers(where, r, 1)
            _in_range(where, r, 0, k, "codes", "values")
            out[key] = r.astype(smallest_uint(k))
        elif kind == "hashed" and g is not None:
            _integers(where, r, 2, 3)
            _in_range(where, r[:, 0], 1, HASH_PRIME, "seeds a")
            _in_range(where, r[:, 1], 0, HASH_PRIME, "seeds b")
            _in_range(where, r[:, 2], 0, g[j], "hashed values", "values")
            out[f"seeds_{j}"] = r[:, :2].astype(np.uint32)
            out[key] = r[:, 2].astype(smallest_uint(g[j]))
        elif kind == "bits":
            if r.ndim != 2 or not (r.dtype == bool or np.issubdtype(r.dtype, np.integer)):
                raise ValueError(f"{where} has shape {r.shape} and dtype {r.dtype}; expected a 2-d "
                                 f"array of bits (bool or 0/1)")
            if r.dtype != bool and r.size and (r.min() < 0 or r.max() > 1):
                raise ValueError(f"{where} holds values in [{r.min()}, {r.max()}]; expected bits 0 or 1")
            out[key] = np.packbits(r.astype(bool, copy=False), axis=1)
    return out


def _narrow(where: str, r: np.ndarray, shape: tuple, bound: int, what: str) -> np.ndarray:
    """A stored integer array of version >= :data:`PACKED_FROM`, checked to have the writer's
    dtype for ``bound``, its ``shape`` and values in ``[0, bound)``, widened to int64."""
    want = smallest_uint(bound)
    if r.dtype != want:
        raise ValueError(f"{where} has dtype {r.dtype}; expected {want} (the smallest unsigned "
                         f"dtype of {what} in [0, {bound}), file version >= {PACKED_FROM})")
    if r.shape != shape:
        raise ValueError(f"{where} has shape {r.shape}; expected {shape}")
    _in_range(where, r, 0, bound, what, "values")
    return r.astype(np.int64)


def _hashed_rows(path: str, meta: dict, arrays: dict, j: int, rows: int, g: int) -> np.ndarray:
    """The ``(rows, 3)`` int64 rows ``(a, b, y)`` of attribute ``j`` from the stored ``seeds_j``
    (uint32 ``(rows, 2)``) and ``reports_j`` (the values ``y < g``); ``seeds_j`` is dropped."""
    x, key = meta["attrs"][j], f"reports_{j}"
    y = _narrow(f"reports file {path!r}: {key} (attribute {x!r})", arrays[key], (rows,), g,
                "hashed values")
    seeds = arrays.pop(f"seeds_{j}", None)
    where = f"reports file {path!r}: seeds_{j} (attribute {x!r})"
    if seeds is None:
        raise ValueError(f"reports file {path!r} has no 'seeds_{j}' (attribute {x!r}): the hash "
                         f"seeds of its reports")
    if seeds.dtype != np.uint32:
        raise ValueError(f"{where} has dtype {seeds.dtype}; expected uint32 (hash seeds below "
                         f"{HASH_PRIME}, file version >= {PACKED_FROM})")
    if seeds.shape != (rows, 2):
        raise ValueError(f"{where} has shape {seeds.shape}; expected {(rows, 2)} (seeds a, b)")
    _in_range(where, seeds[:, 0], 1, HASH_PRIME, "seeds a")
    _in_range(where, seeds[:, 1], 0, HASH_PRIME, "seeds b")
    return np.column_stack([seeds.astype(np.int64), y])


def _unpacked(where: str, r: np.ndarray, rows: int, k: int) -> np.ndarray:
    """The ``(rows, k)`` bool array of a packed bit report, after checking its width and that
    its padding bits are zero."""
    width = -(-k // 8)
    if r.dtype != np.uint8:
        raise ValueError(f"{where} has dtype {r.dtype}; expected uint8 (bits packed 8 a byte, "
                         f"file version >= {PACKED_FROM})")
    if r.shape != (rows, width):
        raise ValueError(f"{where} has shape {r.shape}; expected {(rows, width)} ({k} bits "
                         f"packed 8 a byte, one row per report)")
    pad = 8 * width - k
    if pad and r.size:
        bad = np.count_nonzero(r[:, -1] & np.uint8((1 << pad) - 1))
        if bad:
            raise ValueError(f"{where} has padding bits set beyond its {k} bits in {bad} "
                             f"row{'s' if bad != 1 else ''}; the file is damaged")
    return np.unpackbits(r, axis=1, count=k).view(bool)


def _check_array(where: str, kind: str | None, r: np.ndarray, rows: int, k: int) -> None:
    shape = {"codes": (rows,), "bits": (rows, k), "hashed": (rows, 3)}.get(kind or "")
    if shape is not None and r.shape != shape:
        raise ValueError(f"{where} has shape {r.shape}; expected {shape}")
    if r.shape[:1] != (rows,):
        raise ValueError(f"{where} has {r.shape[0] if r.ndim else 0} rows; expected {rows}")
    if r.dtype == bool:
        r = r.view(np.uint8)
    if not np.issubdtype(r.dtype, np.integer):
        raise ValueError(f"{where} has dtype {r.dtype}; expected integers")
    if not r.size:
        return
    hi = {"codes": k, "bits": 2}.get(kind or "")
    values = r[:, 2] if kind == "hashed" else r
    if values.min() < 0 or (hi is not None and values.max() >= hi):
        raise ValueError(f"{where} holds values in [{values.min()}, {values.max()}]; expected "
                         f"{'codes in [0, ' + str(hi) + ')' if hi else 'values >= 0'}")


def load_npz(path: str, formats: tuple[str, tuple]) -> tuple[dict, dict]:
    """Read and check an oracle reports file; ``formats`` is ``(format name, readable versions)``."""
    name, readable = formats
    meta, arrays = _read(path)
    if meta.get("format") == "lopub-marginal-reports":
        raise ValueError(f"{path!r} holds marginal-sampling reports (lopub collect --protocol "
                         f"auto|marginals|one-attribute), not one-way oracle reports; read them with "
                         f"lopub fit")
    if meta.get("format") != name or meta.get("version") not in readable:
        raise ValueError(f"{path!r} is not a {name} file of version {readable}")
    stored = meta.get("checksum")
    if stored is not None and stored != checksum(meta, arrays):
        raise ValueError(f"reports file {path!r} fails its checksum: its data or metadata "
                         f"changed after it was written (damaged or edited)")
    if stored is None and meta["version"] >= 3:
        raise ValueError(f"reports file {path!r} has no checksum (version {meta['version']} "
                         f"files must have one)")
    if stored is None:  # versions 1 and 2: refused unless --no-verify
        missing_checksum(f"reports file {path!r}", f"version {meta['version']} oracle reports file")
    _check_meta(path, meta)
    narrow = meta["version"] >= PACKED_FROM
    if narrow and "attributes" in arrays:
        att = arrays["attributes"]
        arrays["attributes"] = _narrow(f"reports file {path!r}: 'attributes'", att, att.shape,
                                       len(meta["attrs"]), "attribute indices")
    rows = _rows_per_attribute(path, meta, arrays)
    kinds = _report_kinds(path, meta)
    g = hash_ranges(path, meta) if narrow and "hashed" in kinds else None
    for j, (x, k, kind) in enumerate(zip(meta["attrs"], meta["sizes"], kinds)):  # attributes
        key = f"reports_{j}"
        if key not in arrays:
            raise ValueError(f"reports file {path!r} has no {key!r} (attribute {x!r})")
        where = f"reports file {path!r}: {key} (attribute {x!r})"
        if kind == "bits" and narrow:
            arrays[key] = _unpacked(where, arrays[key], rows[j], k)
        elif kind == "codes" and narrow:
            arrays[key] = _narrow(where, arrays[key], (rows[j],), k, "codes")
        elif kind == "hashed" and g is not None:
            arrays[key] = _hashed_rows(path, meta, arrays, j, rows[j], g[j])
        _check_array(where, kind, arrays[key], rows[j], k)
    return meta, arrays
