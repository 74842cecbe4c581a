"""The reports file (``lopub-reports``, version 1): an Apache Parquet file.

* one column ``report`` of type ``fixed_size_binary(B)`` with
  B = ceil(sum_j m_j / 8): the user's concatenated randomized Bloom filters,
  attribute order of the spec, packed most-significant bit first
  (``numpy.packbits``), zero padding in the last byte;
* file metadata keys ``lopub.format`` = ``lopub-reports``,
  ``lopub.version`` = ``1``, ``lopub.n`` (row count, decimal) and
  ``lopub.reports.spec`` (the CollectionSpec JSON text); JSON Schema of this
  metadata: ``lopub/formats/jsonschema/reports-metadata.schema.json``;
* ``lopub.screened`` (optional, decimal, written only when not 0): users of a
  screen whose reports chose the protocol and are not in the file (``lopub
  collect --protocol auto`` after a screen that picked Bloom reports); public,
  costs no privacy; absent reads as 0;
* ``lopub.sha256``: SHA-256 over ``lopub.format=..\\0``, ``lopub.version=..\\0``,
  ``lopub.n=..\\0``, ``lopub.reports.spec=..\\0`` (then ``lopub.screened=..\\0``
  where the file has that key) and the packed reports, verified on
  every read (optional: files written before it existed have none);
* row groups of at most 65,536 users, so a reader can stream chunks.

Files are written atomically (temporary file + rename).  Opening checks the
format, version, spec, column type/width and row count; every batch read is
checked for nulls and set padding bits.  Errors are
:class:`~lopub.errors.ReportsFormatError` naming the file.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lopub.errors import ReportsFormatError
from lopub.io import atomic_write, missing_checksum
from lopub.reports.spec import CollectionSpec
from lopub.formats import REPORTS_FORMAT, REPORTS_VERSION
from lopub.formats._io import dump_json
from lopub.reports.spec import spec_from_dict, spec_to_dict

ROW_GROUP = 65536


def reports_metadata(spec: CollectionSpec, n: int, packed: np.ndarray | None = None,
                     screened: int = 0) -> dict[str, str]:
    """The Parquet key/value metadata of a file of ``n`` reports under ``spec`` (and
    ``lopub.screened`` when ``screened`` users of a screen are not in it); with the
    ``packed`` reports also ``lopub.sha256``, the checksum over spec, counts and reports."""
    meta = {
        "lopub.format": REPORTS_FORMAT,
        "lopub.version": str(REPORTS_VERSION),
        "lopub.n": str(n),
        "lopub.spec": dump_json(spec_to_dict(spec)),
    }
    if screened:
        meta["lopub.screened"] = str(screened)
    if packed is not None:
        h = _checksum_start(meta)
        h.update(np.ascontiguousarray(packed).data)
        meta["lopub.sha256"] = h.hexdigest()
    return meta


def _checksum_start(meta: dict[str, str]) -> "hashlib._Hash":
    """SHA-256 over the format, version, count and spec text (and the screened users where
    the file records them); the reports bytes follow."""
    h = hashlib.sha256()
    for key in ("lopub.format", "lopub.version", "lopub.n", "lopub.spec"):
        h.update(f"{key}={meta.get(key, '')}\0".encode())
    if "lopub.screened" in meta:
        h.update(f"lopub.screened={meta['lopub.screened']}\0".encode())
    return h


def write_reports(reports: Any, path: str | os.PathLike) -> None:
    """Write ``reports`` (a :class:`~lopub.reports.bloom.Reports`) in the documented format, atomically."""
    width = reports.spec.packed_bytes
    arr = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), reports.n,
        [None, pa.py_buffer(np.ascontiguousarray(reports.packed).tobytes())])
    meta = reports_metadata(reports.spec, reports.n, reports.packed, reports.screened)
    table = pa.table({"report": arr}).replace_schema_metadata(meta)
    atomic_write(path, lambda tmp: pq.write_table(table, tmp, row_group_size=ROW_GROUP))


def read_metadata(path: str | os.PathLike) -> dict[str, str]:
    """The decoded key/value metadata of a Parquet file (no validation)."""
    return _metadata(pq.ParquetFile(os.fspath(path)))


def _metadata(pf: pq.ParquetFile) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in (pf.schema_arrow.metadata or {}).items()}


def parse_metadata(meta: dict[str, str], name: str) -> tuple[CollectionSpec, int]:
    """(spec, n) from a reports file's metadata; ReportsFormatError naming ``name`` otherwise."""
    if meta.get("lopub.format") != REPORTS_FORMAT:
        raise ReportsFormatError(f"{name}: not a lopub reports file (no lopub.format={REPORTS_FORMAT} metadata)")
    if meta.get("lopub.version") != str(REPORTS_VERSION):
        raise ReportsFormatError(
            f"{name}: reports format version {meta.get('lopub.version')!r} is not supported "
            f"(this lopub reads version {REPORTS_VERSION})"
        )
    try:
        spec = spec_from_dict(json.loads(meta["lopub.spec"]))
        n = int(meta["lopub.n"])
    except (KeyError, ValueError, TypeError, json.JSONDecodeError) as exc:
        raise ReportsFormatError(f"{name}: invalid spec or count in metadata: {exc}") from None
    parse_screened(meta, name)
    return spec, n


def parse_screened(meta: dict[str, str], name: str) -> int:
    """The ``lopub.screened`` users of a reports file's metadata (0 where the key is absent)."""
    text = meta.get("lopub.screened", "0")
    if not re.fullmatch(r"0|[1-9][0-9]*", text):
        raise ReportsFormatError(f"{name}: metadata 'lopub.screened' ({text!r}) must be an integer >= 0 "
                                 f"in decimal (users of a screen whose reports are not in the file)")
    return int(text)


def file_screened(pf: pq.ParquetFile, path: str | os.PathLike) -> int:
    """The screened users of an opened reports file (:func:`open_reports` checked them)."""
    return parse_screened(_metadata(pf), os.fspath(path))


def open_reports(path: str | os.PathLike, expected: CollectionSpec | None
                 ) -> tuple[pq.ParquetFile, CollectionSpec, int]:
    """Open and check a reports file: (ParquetFile, its spec, its row count).

    ``expected`` (optional) must equal the file's spec.
    """
    name = os.fspath(path)
    if expected is not None and not isinstance(expected, CollectionSpec):
        raise TypeError(f"spec must be a CollectionSpec or None, got {type(expected).__name__}")
    if not os.path.exists(name):
        raise FileNotFoundError(f"reports file {name!r} does not exist")
    try:
        pf = pq.ParquetFile(name)
    except (pa.ArrowException, OSError) as exc:
        raise ReportsFormatError(f"{name}: not a readable reports file (truncated or not Parquet): {exc}") from None
    try:
        meta = _metadata(pf)
    except UnicodeDecodeError as exc:
        raise ReportsFormatError(f"{name}: damaged metadata (not UTF-8: {exc.reason})") from None
    spec, n = parse_metadata(meta, name)
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


def read_batches(pf: pq.ParquetFile, spec: CollectionSpec, path: str | os.PathLike,
                 batch_size: int = ROW_GROUP) -> Iterator[np.ndarray]:
    """The packed reports of an opened file, batch by batch (:func:`read_batch`).

    The file's ``lopub.sha256`` (spec, count and every report) is verified
    after the last batch; a mismatch or unreadable data page is a
    :class:`~lopub.errors.ReportsFormatError` naming the file.  Files written
    before the checksum existed have none and are checked as before.
    """
    name = os.fspath(path)
    meta = _metadata(pf)
    stored = meta.get("lopub.sha256")
    if stored is None:  # refused unless --no-verify
        missing_checksum(name, "reports file", ReportsFormatError)
    h = _checksum_start(meta) if stored is not None else None
    pos = 0
    batches = pf.iter_batches(batch_size=batch_size, columns=["report"])
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            break
        except (pa.ArrowException, OSError) as exc:
            raise ReportsFormatError(f"{name}: damaged data after user {pos} "
                                     f"({' '.join(str(exc).split())[:200]})") from None
        chunk = read_batch(batch, spec, path, pos)
        pos += len(chunk)
        if h is not None:
            h.update(chunk.data)
        yield chunk
    if h is not None and h.hexdigest() != stored:
        raise ReportsFormatError(f"{name}: fails its checksum (lopub.sha256): its reports, count "
                                 f"or spec changed after it was written (damaged or edited)")


def read_batch(batch: pa.RecordBatch, spec: CollectionSpec, path: str | os.PathLike,
               start: int) -> np.ndarray:
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
