"""Reports datasets: reports that grow by batches and never need to fit in memory.

A :class:`ReportsDataset` is a folder of lopub-reports Parquet parts and a
manifest (layout and crash safety in :mod:`lopub.reports.folder`);
:meth:`ReportsDataset.open` also accepts a single reports file, seen as a
dataset of one part.  Readers stream over the parts one chunk at a time
(:meth:`~ReportsDataset.iter_chunks`, the same ``(start, bits)`` chunks as
:meth:`lopub.reports.bloom.Reports.iter_chunks`, so a streaming estimator takes
either), or load everything (:meth:`~ReportsDataset.load`).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import numpy as np

from lopub._util import check_int
from lopub.errors import ReportsFormatError, SpecError
from lopub.reports.parquet import ROW_GROUP, file_screened, open_reports, read_batches
from lopub.reports.folder import (PartInfo, append_part, iter_parts, open_folder, rechunk, check_part_file, build_folder, check_new_folder, copy_part, create_folder, next_part_name, spec_difference, unlisted_parts)
from lopub.reports.bloom import Reports, screened_summary
from lopub.reports.spec import CollectionSpec

__all__ = ["OnDiskReports", "PartInfo", "ReportsDataset", "merge_datasets"]


class ReportsDataset:
    """Reports of ``n`` users under one ``spec``, stored as Parquet parts.

    Make one with :meth:`create` or :meth:`open` (not the constructor).

    Attributes
    ----------
    path : Path
        The dataset folder (or the single reports file).
    spec : CollectionSpec
    parts : tuple of PartInfo
        The listed parts in reading order (``sha256`` empty for a single file).
    screened : int
        Users of a screen whose reports chose the protocol and are in no part
        (the manifest's, or the single file's, count; 0 when it has none).
    """

    def __init__(self, path: Path, spec: CollectionSpec, parts: tuple[PartInfo, ...],
                 *, folder: bool, screened: int = 0) -> None:
        self.path, self.spec, self.parts, self._folder = path, spec, parts, folder
        self.screened = screened

    def __repr__(self) -> str:
        return f"ReportsDataset({os.fspath(self.path)!r}, n={self.n}, parts={len(self.parts)})"

    @property
    def n(self) -> int:
        """Number of reports (users) over all parts."""
        return sum(p.n for p in self.parts)

    def __len__(self) -> int:
        return self.n

    @property
    def users(self) -> int:
        """Users who took part: :attr:`n` plus the :attr:`screened` ones."""
        return self.n + self.screened

    @property
    def is_folder(self) -> bool:
        """True for a dataset folder, False for a single reports file."""
        return self._folder

    # making and opening -----------------------------------------------------
    @classmethod
    def create(cls, folder: str | os.PathLike, spec: CollectionSpec) -> "ReportsDataset":
        """A new, empty dataset in ``folder``, which is created (it must not exist yet)."""
        if not isinstance(spec, CollectionSpec):
            raise TypeError(f"spec must be a CollectionSpec, got {type(spec).__name__}")
        create_folder(folder, spec)
        return cls(Path(folder), spec, (), folder=True)

    @classmethod
    def open(cls, path: str | os.PathLike, *, spec: CollectionSpec | None = None) -> "ReportsDataset":
        """Open a dataset folder or a single reports file; ``spec`` (optional) must match."""
        if spec is not None and not isinstance(spec, CollectionSpec):
            raise TypeError(f"spec must be a CollectionSpec or None, got {type(spec).__name__}")
        p = Path(path)
        if not p.is_dir():
            pf, file_spec, n = open_reports(p, spec)
            return cls(p, file_spec, (PartInfo(p.name, n, p.stat().st_size, ""),), folder=False,
                       screened=file_screened(pf, p))
        file_spec, parts, screened = open_folder(p, spec)
        return cls(p, file_spec, parts, folder=True, screened=screened)

    # writing ----------------------------------------------------------------
    def append(self, reports: Reports) -> PartInfo:
        """Add a batch as a new part; atomic, and safe with concurrent appenders.

        The part is written under a temporary name, fsynced and renamed, then
        the manifest is replaced atomically (under the dataset's lock, after
        re-reading it, so parts appended meanwhile by others are kept); the
        batch's :attr:`~lopub.reports.bloom.Reports.screened` users add to the dataset's.

        Raises
        ------
        SpecError
            ``reports`` were collected under another spec (the differing field is named).
        """
        if not isinstance(reports, Reports):
            raise TypeError(f"reports must be a Reports batch, got {type(reports).__name__}")
        if not self._folder:
            raise ValueError(f"{os.fspath(self.path)!r} is a single reports file; only a dataset "
                             f"folder can be appended to")
        self.check_spec(reports.spec, "the batch")
        self.parts, self.screened = append_part(self.path, self.spec, reports)
        info = self.parts[-1]
        return info

    def check_spec(self, other: CollectionSpec, what: str = "the batch") -> None:
        """Refuse (SpecError) reports collected under ``other`` unless it is the dataset's spec.

        The message names ``what`` and the first differing field.
        """
        diff = spec_difference(self.spec, other, (f"the dataset {os.fspath(self.path)!r}", what))
        if diff:
            raise SpecError(f"cannot append: {what} was collected under a different spec than the "
                            f"dataset; {diff}")

    # reading ----------------------------------------------------------------
    def part_paths(self) -> list[Path]:
        """Paths of the listed parts, in reading order."""
        if not self._folder:
            return [self.path]
        return [self.path / p.file for p in self.parts]

    def partitions(self) -> list["ReportsDataset"]:
        """One single-part dataset per listed part, in order: the unit of distributed work.

        Each is small and picklable (a path, the spec, one PartInfo), so a
        worker (a process, a Dask task) can stream its own part with
        :meth:`iter_chunks` and return a sum over its users; partition ``i``
        holds users ``sum(p.n for p in parts[:i])`` onwards of the whole.
        """
        return [ReportsDataset(self.path, self.spec, (part,), folder=self._folder) for part in self.parts]

    def iter_reports(self, chunk_size: int = ROW_GROUP) -> Iterator[Reports]:
        """Stream the reports in order, in batches of ``chunk_size`` users (the last may be smaller).

        Batches run across part boundaries, so many small appended parts still
        give full batches; at most about two batches are held in memory.
        """
        chunk_size = check_int("chunk_size", chunk_size, 1)
        for packed in rechunk(self._iter_packed(chunk_size), chunk_size):
            yield Reports(self.spec, packed)

    def _iter_packed(self, chunk_size: int) -> Iterator[np.ndarray]:
        """Packed reports part after part, as Parquet hands them out (checked)."""
        paths = zip(self.parts, self.part_paths())
        return iter_parts(paths, self.spec, chunk_size, folder=self.path if self._folder else None)

    def iter_chunks(self, chunk_size: int = ROW_GROUP) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start, bits)``: unpacked uint8 bits (n_chunk, sum_j m_j) of consecutive users.

        The same contract as :meth:`lopub.reports.bloom.Reports.iter_chunks`, with
        bounded memory: a streaming estimator can take a Reports or a dataset.
        """
        start = 0
        for batch in self.iter_reports(chunk_size):
            yield start, batch.bits()
            start += batch.n

    def on_disk(self) -> "OnDiskReports":
        """The reports as a :class:`~lopub.reports.bloom.Reports` left on disk (for a Dask client)."""
        return OnDiskReports(self)

    def load(self) -> Reports:
        """All reports in memory (checked as they are read)."""
        packed = np.empty((self.n, self.spec.packed_bytes), dtype=np.uint8)
        pos = 0
        for batch in self.iter_reports():
            packed[pos: pos + batch.n] = batch.packed
            pos += batch.n
        return Reports(self.spec, packed, self.screened)

    def verify(self) -> None:
        """Check every listed part against its size and SHA-256 (reads every byte).

        Raises
        ------
        ReportsFormatError
            A part is missing, truncated, replaced or corrupted.
        """
        if self._folder:
            for part in self.parts:
                check_part_file(self.path, part, checksum=True)

    def unlisted_parts(self) -> list[str]:
        """Part files in the folder that the manifest does not list (left by a crash; ignored)."""
        return unlisted_parts(self.path, self.parts) if self._folder else []

    def summary(self) -> dict:
        """N, the parts and the spec summary (for ``lopub inspect-reports``)."""
        out = {"n": self.n, **screened_summary(self.n, self.screened),
               "parts": [{"file": p.file, "n": p.n, "bytes": p.bytes} for p in self.parts]}
        unlisted = self.unlisted_parts()
        if unlisted:
            out["unlisted_parts"] = unlisted
        return out | self.spec.summary()


class OnDiskReports(Reports):
    """The reports of a dataset left on disk: ``spec`` and ``n`` in memory, rows read when asked.

    What the client of a Dask fit needs (``scheduler=...``,
    ``reports_path=dataset.path``): the sums over users run on the workers,
    which read the parts themselves, so the client never holds all reports.
    Rows it still asks for (:meth:`subset`, :meth:`bits`, e.g. EM's sample for
    the observed information) and chunks (:meth:`iter_chunks`) are streamed
    from the parts.  ``packed`` (every report in memory) is refused with a
    ValueError: use :meth:`ReportsDataset.load` for that.
    """

    dataset: ReportsDataset

    def __init__(self, dataset: ReportsDataset) -> None:  # not the dataclass __init__: no packed
        if not isinstance(dataset, ReportsDataset):
            raise TypeError(f"dataset ({type(dataset).__name__}) must be a ReportsDataset")
        object.__setattr__(self, "spec", dataset.spec)
        object.__setattr__(self, "dataset", dataset)
        object.__setattr__(self, "screened", dataset.screened)

    def __repr__(self) -> str:
        return f"OnDiskReports({os.fspath(self.dataset.path)!r}, n={self.n})"

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = object.__hash__

    @property  # type: ignore[override]
    def packed(self) -> np.ndarray:
        raise ValueError(f"the reports of {os.fspath(self.dataset.path)!r} stay on disk (OnDiskReports); "
                         f"this needs all of them in memory: use ReportsDataset.load() instead")

    @property
    def n(self) -> int:
        return self.dataset.n

    @property
    def nbytes(self) -> int:
        return 0

    def bits(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        return self.subset(slice(start, stop)).bits()

    def attribute_bits(self, attr: str, start: int = 0, stop: int | None = None) -> np.ndarray:
        return self.subset(slice(start, stop)).attribute_bits(attr)

    def iter_chunks(self, chunk_size: int = ROW_GROUP) -> Iterator[tuple[int, np.ndarray]]:
        return self.dataset.iter_chunks(chunk_size)

    def iter_reports(self, chunk_size: int = ROW_GROUP) -> Iterator[Reports]:
        return self.dataset.iter_reports(chunk_size)

    def subset(self, rows: np.ndarray | slice) -> Reports:
        """The reports of ``rows`` (a slice or indices, as numpy indexes), in memory, in that order."""
        idx = np.arange(self.n)[rows]
        order = np.argsort(idx, kind="stable")
        wanted = idx[order]
        out = np.empty((len(idx), self.spec.packed_bytes), dtype=np.uint8)
        pos = 0
        for packed in self.dataset._iter_packed(ROW_GROUP):  # one pass, one batch at a time
            a, b = np.searchsorted(wanted, [pos, pos + len(packed)])
            out[order[a:b]] = packed[wanted[a:b] - pos]
            pos += len(packed)
            if b == len(wanted):
                break
        return Reports(self.spec, out)

    def save(self, path: str | os.PathLike) -> None:
        raise ValueError(f"reports on disk ({os.fspath(self.dataset.path)!r}) are already saved; "
                         f"copy them with merge_datasets({os.fspath(path)!r}, ...)")


def merge_datasets(out: str | os.PathLike, *sources: str | os.PathLike) -> ReportsDataset:
    """A new dataset folder ``out`` with the parts of every source, in order (copied byte for byte).

    Sources are dataset folders or single reports files; every part is
    checked against its SHA-256 while copied.  The sources' screened users
    (:attr:`ReportsDataset.screened`) add up in the new manifest.

    Raises
    ------
    SpecError
        A source was collected under another spec than the first (the source
        and the differing field are named).
    """
    if not sources:
        raise ValueError("merge_datasets needs at least one source dataset or reports file")
    check_new_folder(Path(out))  # the output first: a merge that cannot be written reads nothing
    _refuse_repeated(sources)
    opened = [ReportsDataset.open(s) for s in sources]
    first = opened[0]
    for src, ds in zip(sources[1:], opened[1:]):
        diff = spec_difference(first.spec, ds.spec, (repr(os.fspath(sources[0])), repr(os.fspath(src))))
        if diff:
            raise SpecError(f"cannot merge: {os.fspath(src)!r} was collected under a different spec "
                            f"than {os.fspath(sources[0])!r}; {diff}")
    # all or nothing: parts and manifest are built in a hidden folder renamed to ``out`` at the end
    screened = sum(ds.screened for ds in opened)
    parts = build_folder(out, first.spec, lambda stage: _copy_parts(opened, stage), screened)
    return ReportsDataset(Path(out), first.spec, parts, folder=True, screened=screened)


def _refuse_repeated(sources: tuple) -> None:
    """The same file or folder given twice would count its users twice: refused."""
    seen: list[str] = []
    for src in sources:
        for prev in seen:
            try:
                same = os.path.samefile(prev, src)
            except OSError:
                same = False
            if same:
                raise ValueError(f"cannot merge: {os.fspath(src)!r} is given twice (as "
                                 f"{prev!r}); merging it twice would count its reports twice")
        seen.append(os.fspath(src))


def _copy_parts(sources: list[ReportsDataset], folder: Path) -> tuple[PartInfo, ...]:
    parts: list[PartInfo] = []
    for ds in sources:
        for part, path in zip(ds.parts, ds.part_paths()):
            if not part.sha256:  # a single reports file: verify its own checksum before copying
                pf, file_spec, _ = open_reports(path, ds.spec)
                for _ in read_batches(pf, file_spec, path):
                    pass
            info = copy_part(path, folder, next_part_name(folder, tuple(parts)), part.n)
            if part.sha256 and info.sha256 != part.sha256:
                raise ReportsFormatError(f"{os.fspath(ds.path)}: part {part.file} does not match "
                                         f"its SHA-256 checksum in the manifest (corrupted or replaced)")
            parts.append(info)
    return tuple(parts)

