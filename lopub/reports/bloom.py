"""Reports: the randomized Bloom bits of N users plus the public spec.

On-disk format ("lopub-reports", version 1): an Apache Parquet file with one
``fixed_size_binary`` column ``report`` (the packed bits of each user) and the
spec in the file's metadata; see :mod:`lopub.reports.parquet` and
``lopub/formats/jsonschema/reports-metadata.schema.json``.  Files are written
atomically; loading checks everything and names what is wrong.

Reports that do not fit in memory, or arrive in batches, live in a
:class:`~lopub.reports.dataset.ReportsDataset`: a folder of such files plus a
manifest (:mod:`lopub.reports.folder`).  :meth:`Reports.save` writes
one when given a folder, and :meth:`Reports.load` / :meth:`Reports.iter_file`
read either.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from lopub._util import check_int
from lopub.errors import ReportsFormatError, SpecError
from lopub.formats import REPORTS_FORMAT, REPORTS_VERSION  # noqa: F401  (re-exported)
from lopub.reports.parquet import ROW_GROUP, file_screened, open_reports, read_batches, write_reports
from lopub.reports.folder import PART, build_folder, is_dataset_path, publish_part, read_folder
from lopub.reports.spec import CollectionSpec


@dataclass(frozen=True)
class Reports:
    """Packed randomized reports of ``n`` users under one ``spec``.

    Attributes
    ----------
    spec : CollectionSpec
    packed : ndarray of uint8, shape (n, spec.packed_bytes)
    screened : int, default 0
        Users whose reports only chose the protocol (the marginal-sampling
        screen after which ``lopub collect --protocol auto`` picked Bloom
        reports) and are not among these: public, costs no privacy;
        :attr:`users` counts them.  Batches and subsets carry 0.
    """

    spec: CollectionSpec
    packed: np.ndarray
    screened: int = 0

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
        object.__setattr__(self, "screened", check_screened(self.screened))

    @property
    def n(self) -> int:
        return self.packed.shape[0]

    @property
    def users(self) -> int:
        """Users who took part: :attr:`n` plus the :attr:`screened` ones whose reports are not here."""
        return self.n + self.screened

    def __len__(self) -> int:
        return self.n

    @property
    def nbytes(self) -> int:
        """Bytes of the reports held in memory."""
        return self.packed.nbytes

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

    def iter_reports(self, chunk_size: int = ROW_GROUP) -> Iterator["Reports"]:
        """Yield consecutive batches of ``chunk_size`` users as Reports (views, no copy).

        The same contract as :meth:`lopub.reports.dataset.ReportsDataset.iter_reports`,
        so code written over batches takes a Reports or a dataset alike.
        """
        chunk_size = check_int("chunk_size", chunk_size, 1)
        for start in range(0, self.n, chunk_size):
            yield Reports(self.spec, self.packed[start: start + chunk_size])

    def subset(self, rows: np.ndarray | slice) -> "Reports":
        return Reports(self.spec, self.packed[rows])

    @staticmethod
    def merge(batches: Sequence["Reports"]) -> "Reports":
        """Concatenate batches collected under the same spec (their :attr:`screened` users add up)."""
        batches = list(batches)
        if not batches:
            raise ValueError("merge needs at least one Reports batch")
        first = batches[0].spec
        for i, b in enumerate(batches[1:], 1):
            if b.spec != first:
                raise SpecError(f"batch {i} was collected under a different spec; cannot merge")
        return Reports(first, np.concatenate([b.packed for b in batches], axis=0),
                       sum(b.screened for b in batches))

    def summary(self) -> dict:
        return {"n": self.n, **screened_summary(self.n, self.screened), **self.spec.summary()}

    # I/O --------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write a reports file, or a new dataset folder holding one part, atomically.

        ``path`` is a folder when it is an existing folder, ends with a
        separator or has no suffix (``reports/``, ``reports``); then a
        dataset folder (:class:`~lopub.reports.dataset.ReportsDataset`) is
        created there (the folder must not exist yet).  Otherwise one Parquet
        file is written (see :mod:`lopub.reports.parquet`).
        """
        if is_dataset_path(path):  # the folder appears whole, with its part and manifest (which counts
            part = Reports(self.spec, self.packed)  # the screened users; parts hold reports only)
            build_folder(path, self.spec, lambda stage: (publish_part(
                stage, PART.format(0), self.n, lambda tmp: write_reports(part, tmp)),), self.screened)
        else:
            write_reports(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike, *, spec: CollectionSpec | None = None) -> "Reports":
        """Read and validate a reports file or dataset folder; ``spec`` (optional) must match."""
        if os.path.isdir(path):
            file_spec, n, screened, stream = read_folder(path, spec, ROW_GROUP)
            return cls(file_spec, _fill(stream, n, file_spec, path), screened)
        pf, file_spec, n = open_reports(path, spec)
        return cls(file_spec, _fill(read_batches(pf, file_spec, path, ROW_GROUP), n, file_spec, path),
                   file_screened(pf, path))

    @classmethod
    def iter_file(
        cls, path: str | os.PathLike, *, chunk_size: int = ROW_GROUP, spec: CollectionSpec | None = None
    ) -> Iterator["Reports"]:
        """Stream a reports file or dataset folder in batches of at most ``chunk_size`` users
        (batches carry no :attr:`screened` users: :meth:`load` or ``ReportsDataset.open`` count them)."""
        chunk_size = check_int("chunk_size", chunk_size, 1)
        if os.path.isdir(path):
            file_spec, _, _, stream = read_folder(path, spec, chunk_size)
            yield from (cls(file_spec, packed) for packed in stream)
            return
        pf, file_spec, _ = open_reports(path, spec)
        for chunk in read_batches(pf, file_spec, path, chunk_size):
            yield cls(file_spec, chunk)


def _fill(stream: Iterator[np.ndarray], n: int, spec: CollectionSpec, path: str | os.PathLike) -> np.ndarray:
    """The ``n`` packed reports of ``stream`` in one array (a count mismatch is an error)."""
    packed = np.empty((n, spec.packed_bytes), dtype=np.uint8)
    pos = 0
    for chunk in stream:
        if pos + len(chunk) > n:
            raise ReportsFormatError(f"{os.fspath(path)}: holds more reports than the {n} its metadata says")
        packed[pos: pos + len(chunk)] = chunk
        pos += len(chunk)
    if pos != n:
        raise ReportsFormatError(f"{os.fspath(path)}: metadata says {n} reports, file holds {pos}")
    return packed


def check_screened(value: object) -> int:
    """``screened`` as an int: an integer >= 0 (users of a screen whose reports are elsewhere)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"screened ({value!r}) must be an integer >= 0 (users of a screen)")
    if value < 0:
        raise ValueError(f"screened ({value}) must be an integer >= 0 (users of a screen)")
    return int(value)


def screened_summary(n: int, screened: int) -> dict:
    """``users`` and ``screened_not_released`` of a summary where a screen's users took part."""
    return {"users": n + screened, "screened_not_released": screened} if screened else {}
