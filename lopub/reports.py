"""Reports: the randomized Bloom bits of N users plus the public spec.

On-disk format ("lopub-reports", version 1) — an Apache Parquet file:

* one column ``report`` of type ``fixed_size_binary(B)`` with
  B = ceil(sum_j m_j / 8): the user's concatenated randomized Bloom filters,
  attribute order of the spec, packed most-significant bit first
  (``numpy.packbits``), zero padding in the last byte;
* file metadata keys ``lopub.format`` = ``lopub-reports``,
  ``lopub.version`` = ``1``, ``lopub.n`` (row count) and ``lopub.spec`` (the
  CollectionSpec JSON);
* row groups of at most 65,536 users, so a reader can stream chunks.

Files are written atomically (temporary file + rename).  Loading checks the
format, version, spec, column type/width and row count and names what is
wrong.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ._util import check_int
from .errors import ReportsFormatError, SpecError
from .io import atomic_write
from .spec import CollectionSpec

REPORTS_FORMAT = "lopub-reports"
REPORTS_VERSION = 1
ROW_GROUP = 65536


@dataclass(frozen=True)
class Reports:
    """Packed randomized reports of ``n`` users under one ``spec``.

    Attributes
    ----------
    spec : CollectionSpec
    packed : ndarray of uint8, shape (n, spec.packed_bytes)
    """

    spec: CollectionSpec
    packed: np.ndarray

    def __post_init__(self) -> None:
        if not isinstance(self.spec, CollectionSpec):
            raise TypeError(f"spec must be a CollectionSpec, got {type(self.spec).__name__}")
        p = np.asarray(self.packed)
        if p.dtype != np.uint8 or p.ndim != 2 or p.shape[1] != self.spec.packed_bytes:
            raise ReportsFormatError(
                f"packed reports must be uint8 of shape (n, {self.spec.packed_bytes}); got "
                f"{p.dtype} {p.shape}"
            )
        object.__setattr__(self, "packed", p)

    @property
    def n(self) -> int:
        return self.packed.shape[0]

    def __len__(self) -> int:
        return self.n

    def bits(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Unpacked bits of users ``start:stop`` as uint8 (n_chunk, sum_j m_j)."""
        return np.unpackbits(self.packed[start:stop], axis=1, count=self.spec.total_bits)

    def attribute_bits(self, attr: str, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Unpacked bits of one attribute for users ``start:stop`` (uint8, (n_chunk, m_j))."""
        sl = self.spec.slice(attr)
        lo, hi = sl.start // 8, (sl.stop + 7) // 8
        raw = np.unpackbits(self.packed[start:stop, lo:hi], axis=1)
        return raw[:, sl.start - 8 * lo: sl.stop - 8 * lo]

    def iter_chunks(self, chunk_size: int = ROW_GROUP) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start, bits)`` for consecutive chunks of users."""
        chunk_size = check_int("chunk_size", chunk_size, 1)
        for start in range(0, self.n, chunk_size):
            yield start, self.bits(start, start + chunk_size)

    def subset(self, rows: np.ndarray | slice) -> "Reports":
        return Reports(self.spec, self.packed[rows])

    @staticmethod
    def merge(batches: Sequence["Reports"]) -> "Reports":
        """Concatenate batches collected under the same spec."""
        batches = list(batches)
        if not batches:
            raise ValueError("merge needs at least one Reports batch")
        first = batches[0].spec
        for i, b in enumerate(batches[1:], 1):
            if b.spec != first:
                raise SpecError(f"batch {i} was collected under a different spec; cannot merge")
        return Reports(first, np.concatenate([b.packed for b in batches], axis=0))

    def summary(self) -> dict:
        return {"n": self.n, **self.spec.summary()}

    # I/O --------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the documented Parquet format atomically."""
        width = self.spec.packed_bytes
        arr = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(width), self.n, [None, pa.py_buffer(np.ascontiguousarray(self.packed).tobytes())]
        )
        meta = {
            "lopub.format": REPORTS_FORMAT,
            "lopub.version": str(REPORTS_VERSION),
            "lopub.n": str(self.n),
            "lopub.spec": self.spec.to_json(),
        }
        table = pa.table({"report": arr}).replace_schema_metadata(meta)
        atomic_write(path, lambda tmp: pq.write_table(table, tmp, row_group_size=ROW_GROUP))

    @classmethod
    def load(cls, path: str | os.PathLike, *, spec: CollectionSpec | None = None) -> "Reports":
        """Read and validate a reports file; ``spec`` (optional) must match the file's."""
        pf, file_spec, n = _open(path, spec)
        packed = np.empty((n, file_spec.packed_bytes), dtype=np.uint8)
        pos = 0
        for batch in pf.iter_batches(batch_size=ROW_GROUP, columns=["report"]):
            chunk = _read_batch(batch, file_spec, path, pos)
            packed[pos: pos + len(chunk)] = chunk
            pos += len(chunk)
        if pos != n:
            raise ReportsFormatError(f"{os.fspath(path)}: metadata says {n} reports, file holds {pos}")
        return cls(file_spec, packed)

    @classmethod
    def iter_file(
        cls, path: str | os.PathLike, *, chunk_size: int = ROW_GROUP, spec: CollectionSpec | None = None
    ) -> Iterator["Reports"]:
        """Stream a reports file in batches of at most ``chunk_size`` users."""
        pf, file_spec, _ = _open(path, spec)
        pos = 0
        for batch in pf.iter_batches(batch_size=check_int("chunk_size", chunk_size, 1), columns=["report"]):
            yield cls(file_spec, _read_batch(batch, file_spec, path, pos))
            pos += batch.num_rows


def _open(path, expected: CollectionSpec | None):
    name = os.fspath(path)
    if expected is not None and not isinstance(expected, CollectionSpec):
        raise TypeError(f"spec must be a CollectionSpec or None, got {type(expected).__name__}")
    if not os.path.exists(name):
        raise FileNotFoundError(f"reports file {name!r} does not exist")
    try:
        pf = pq.ParquetFile(name)
    except (pa.ArrowException, OSError) as exc:
        raise ReportsFormatError(f"{name}: not a readable reports file (truncated or not Parquet): {exc}") from None
    meta = {k.decode(): v.decode() for k, v in (pf.schema_arrow.metadata or {}).items()}
    if meta.get("lopub.format") != REPORTS_FORMAT:
        raise ReportsFormatError(f"{name}: not a lopub reports file (no lopub.format={REPORTS_FORMAT} metadata)")
    if meta.get("lopub.version") != str(REPORTS_VERSION):
        raise ReportsFormatError(
            f"{name}: reports format version {meta.get('lopub.version')!r} is not supported "
            f"(this lopub reads version {REPORTS_VERSION})"
        )
    try:
        spec = CollectionSpec.from_dict(json.loads(meta["lopub.spec"]))
        n = int(meta["lopub.n"])
    except (KeyError, ValueError, TypeError, json.JSONDecodeError) as exc:
        raise ReportsFormatError(f"{name}: invalid spec or count in metadata: {exc}") from None
    if expected is not None and spec != expected:
        raise ReportsFormatError(f"{name}: reports were collected under a different spec than the one given")
    field = pf.schema_arrow.field("report") if "report" in pf.schema_arrow.names else None
    if field is None or not pa.types.is_fixed_size_binary(field.type) or field.type.byte_width != spec.packed_bytes:
        raise ReportsFormatError(
            f"{name}: column 'report' must be fixed_size_binary({spec.packed_bytes}) for "
            f"{spec.total_bits} bits per report; found {field.type if field else 'no such column'}"
        )
    if pf.metadata.num_rows != n:
        raise ReportsFormatError(f"{name}: metadata says {n} reports, file holds {pf.metadata.num_rows}")
    return pf, spec, n


def _read_batch(batch: pa.RecordBatch, spec: CollectionSpec, path, start: int) -> np.ndarray:
    """Packed reports of one batch (users ``start`` ...), refusing nulls and set padding bits."""
    name, width = os.fspath(path), spec.packed_bytes
    col = batch.column(0)
    if col.null_count:
        raise ReportsFormatError(f"{name}: {col.null_count} missing (null) report(s) among users "
                                 f"{start}..{start + batch.num_rows - 1}")
    flat = np.frombuffer(col.buffers()[1], dtype=np.uint8)[col.offset * width: (col.offset + len(col)) * width]
    packed = flat.reshape(len(col), width).copy()
    rem = spec.total_bits % 8
    if rem and len(packed):
        bad = np.flatnonzero(packed[:, -1] & np.uint8(0xFF >> rem))
        if bad.size:
            raise ReportsFormatError(f"{name}: report of user {start + int(bad[0])} has padding bits set "
                                     f"past bit {spec.total_bits} (corrupted or another format)")
    return packed
