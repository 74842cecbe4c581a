"""The reports dataset (``lopub-reports-dataset``, version 1): a folder of Parquet parts.

Layout of a dataset folder::

    reports/
        _lopub_dataset.json      the manifest (JSON Schema: jsonschema/reports-dataset.schema.json)
        part-00000.parquet       a lopub-reports v1 file (readable on its own)
        part-00001.parquet
        ...

The manifest::

    {"format": "lopub-reports-dataset", "version": 1, "n": 70000,
     "spec": {...lopub-spec...},
     "parts": [{"file": "part-00000.parquet", "n": 50000, "bytes": 812345,
                "sha256": "9f86d0..."}, ...]}

plus ``"screened": S`` (optional, written only when not 0; absent reads as 0):
the users of a screen whose reports chose the protocol and are in no part
(:attr:`lopub.reports.bloom.Reports.screened`); the dataset's users are ``n +
S``.  Appending a batch adds its screened users; a part's own
``lopub.screened`` (a screened reports file copied in by ``merge-reports``)
is counted in the manifest and not read again from the part.

Only the parts listed in the manifest belong to the dataset, in the listed
order; every part holds reports under the manifest's spec.  A batch is
appended by writing its part under a temporary name, fsync, rename, and then
replacing the manifest atomically, all under a lock file
(``.lopub_dataset.lock``, POSIX ``flock``); a crash at any point leaves the
previous manifest, so a reader never sees a half-written or half-listed part
(an unlisted ``part-*.parquet`` left by a crash is ignored and never reused).
Errors are :class:`~lopub.errors.ReportsFormatError` naming the folder.
"""
from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from lopub.errors import ReportsFormatError
from lopub.io import atomic_path, fsync_dir
from lopub.reports.parquet import open_reports, read_batches, write_reports
from lopub.reports.spec import CollectionSpec
from lopub.reports.manifest import (_PART_RE, MANIFEST, PartInfo, read_manifest, sha256_file,  # noqa: F401  (re-exported)
                                    spec_difference, write_manifest, dict_difference)

LOCK = ".lopub_dataset.lock"
PART = "part-{:05d}.parquet"


def is_dataset_path(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a dataset folder rather than a single reports file.

    An existing folder is one (to be refused by :func:`create_folder` unless it
    is a dataset already), an existing file is not; a path that does not exist
    is a folder when it ends with a separator or its name has no suffix
    (``reports`` but not ``reports.parquet``).
    """
    p = Path(path)
    if p.is_dir():
        return True
    if p.exists():
        return False
    return os.fspath(path).endswith((os.sep, "/")) or p.suffix == ""


def check_part_file(folder: str | os.PathLike, part: PartInfo, *, checksum: bool = False) -> Path:
    """The path of a listed part, checked to exist with the listed size (and SHA-256)."""
    path = Path(folder, part.file)
    if not path.is_file():
        raise ReportsFormatError(f"{os.fspath(folder)}: listed part {part.file} is missing")
    size = path.stat().st_size
    if size != part.bytes:
        raise ReportsFormatError(f"{os.fspath(folder)}: part {part.file} has {size} bytes, the "
                                 f"manifest says {part.bytes} (truncated or replaced)")
    if checksum and sha256_file(path) != part.sha256:
        raise ReportsFormatError(f"{os.fspath(folder)}: part {part.file} does not match its SHA-256 "
                                 f"checksum in the manifest (corrupted or replaced)")
    return path


def unlisted_parts(folder: str | os.PathLike, parts: tuple[PartInfo, ...]) -> list[str]:
    """``part-*.parquet`` files in ``folder`` that the manifest does not list (ignored)."""
    listed = {p.file for p in parts}
    return sorted(f for f in os.listdir(folder) if _PART_RE.match(f) and f not in listed)


def next_part_name(folder: str | os.PathLike, parts: tuple[PartInfo, ...]) -> str:
    """A part name after every listed and every unlisted part file in ``folder``."""
    names = [p.file for p in parts] + unlisted_parts(folder, parts)
    last = max((int(m.group(1)) for m in map(_PART_RE.match, names) if m), default=-1)
    return PART.format(last + 1)


def publish_part(folder: str | os.PathLike, name: str, n: int, write: Any) -> PartInfo:
    """Write a part with ``write(tmp_path)``, fsync and rename it to ``name``; its PartInfo."""
    target = Path(folder, name)
    if target.exists():
        raise FileExistsError(f"{os.fspath(folder)}: part {name} exists already")
    with atomic_path(target) as tmp:
        write(tmp)
        info = PartInfo(name, n, tmp.stat().st_size, sha256_file(tmp))
    return info


def copy_part(src: str | os.PathLike, folder: str | os.PathLike, name: str, n: int) -> PartInfo:
    """Copy a reports file byte for byte into ``folder`` as part ``name``."""
    return publish_part(folder, name, n, lambda tmp: shutil.copyfile(src, tmp))


@contextlib.contextmanager
def locked(folder: str | os.PathLike) -> Iterator[None]:
    """Hold the dataset's lock file (exclusive ``flock``, waiting for other appenders).

    The lock file holds the holder's PID and is removed on release; one left by
    a killed process holds no lock (the system releases ``flock`` locks of dead
    processes) and is taken over and removed by the next appender.  No locking
    where fcntl is missing.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path = Path(folder, LOCK)
    while True:  # lock the file still in place: a releasing holder unlinks it
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        os.close(fd)  # releases the lock


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def remove_stale_stages(folder: Path) -> list[Path]:
    """Remove the staging folders ``.NAME.PID.XXXX.new`` of ``folder`` whose process is dead."""
    removed = []
    for stage in folder.parent.glob(f".{glob.escape(folder.name)}.*.new"):
        m = re.fullmatch(rf"\.{re.escape(folder.name)}\.(\d+)\.[a-z0-9_]+\.new", stage.name)
        if m and stage.is_dir() and not _pid_alive(int(m.group(1))):
            shutil.rmtree(stage, ignore_errors=True)
            removed.append(stage)
    return removed


def build_folder(folder: str | os.PathLike, spec: CollectionSpec,
                 fill: Callable[[Path], tuple[PartInfo, ...]], screened: int = 0) -> tuple[PartInfo, ...]:
    """Make the new dataset ``folder`` all at once: parts, then manifest (counting ``screened``
    users), then the folder's name.

    ``fill(stage)`` writes the parts into a hidden staging folder beside
    ``folder`` (``.NAME.PID.XXXX.new``) and returns them; the manifest is
    written last, and the staging folder is renamed to ``folder`` (atomic).
    A failure or a kill leaves no ``folder``; the staging folders of dead
    processes are removed by the next build of the same folder.
    """
    path = Path(folder)
    check_new_folder(path)
    remove_stale_stages(path)
    stage = Path(tempfile.mkdtemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".new",
                                  dir=path.parent if str(path.parent) else "."))
    try:
        parts = fill(stage)
        write_manifest(stage, spec, parts, screened)
        fsync_dir(stage)
        check_new_folder(path)
        os.rename(stage, path)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    fsync_dir(path.parent)
    return parts


def check_new_folder(path: Path) -> None:
    """FileExistsError unless ``path`` is free for a new dataset folder whose parent exists."""
    name = os.fspath(path)
    if (path / MANIFEST).exists():
        raise FileExistsError(f"{name!r} is a reports dataset already; append to it "
                              f"(lopub encode --append, ReportsDataset.open(...).append) or choose "
                              f"a new folder name")
    if path.exists() or path.is_symlink():
        kind = "folder" if path.is_dir() else "file"
        raise FileExistsError(f"{name!r} is an existing {kind}, not a reports dataset; give a new "
                              f"folder name (lopub creates the folder)")
    if not path.parent.exists():
        raise FileNotFoundError(f"output folder {os.fspath(path.parent)!r} does not exist")


def create_folder(folder: str | os.PathLike, spec: CollectionSpec) -> None:
    """Create ``folder`` (its parent must exist) as an empty dataset; it must not exist yet.

    An existing folder is refused even when empty, so that lopub never
    writes parts into a folder it did not make.  The folder appears with its
    manifest (built beside it and renamed).
    """
    build_folder(folder, spec, lambda stage: ())


# reading and appending, shared by Reports (file or folder) and ReportsDataset ------------------
def open_folder(folder: str | os.PathLike, spec: CollectionSpec | None = None
                ) -> tuple[CollectionSpec, tuple[PartInfo, ...], int]:
    """The spec, parts and screened users of a dataset folder, every listed part checked to exist
    with its size.

    ``spec`` (optional) must be the dataset's spec; the message names the first difference.
    """
    file_spec, parts, screened = read_manifest(folder)
    if spec is not None and spec != file_spec:
        raise ReportsFormatError(f"{os.fspath(folder)}: reports were collected under a different spec "
                                 f"than the one given: "
                                 f"{spec_difference(file_spec, spec, ('the dataset', 'the given spec'))}")
    for part in parts:
        check_part_file(folder, part)
    return file_spec, parts, screened


def iter_parts(paths: Iterable[tuple[PartInfo, Path]], spec: CollectionSpec, chunk_size: int, *,
               folder: str | os.PathLike | None = None) -> Iterator[np.ndarray]:
    """Packed reports part after part, as Parquet hands them out (checked against the manifest)."""
    for part, path in paths:
        if folder is not None:
            check_part_file(folder, part, checksum=True)
        pf, _, n = open_reports(path, spec)
        if n != part.n:
            raise ReportsFormatError(f"{os.fspath(path)}: holds {n} reports, the manifest says {part.n}")
        yield from read_batches(pf, spec, path, chunk_size)  # checksum verified


def rechunk(packed: Iterable[np.ndarray], chunk_size: int) -> Iterator[np.ndarray]:
    """Batches of exactly ``chunk_size`` rows (the last may be smaller) across part boundaries."""
    buf: list[np.ndarray] = []
    have = 0
    for block in packed:
        buf.append(block)
        have += len(block)
        while have >= chunk_size:
            joined = buf[0] if len(buf) == 1 else np.concatenate(buf)
            yield joined[:chunk_size]
            rest = joined[chunk_size:]
            buf, have = ([rest] if len(rest) else []), len(rest)
    if have:
        yield buf[0] if len(buf) == 1 else np.concatenate(buf)


def read_folder(folder: str | os.PathLike, spec: CollectionSpec | None, chunk_size: int
                ) -> tuple[CollectionSpec, int, int, Iterator[np.ndarray]]:
    """Spec, number of reports, screened users and a stream of packed batches of a dataset folder."""
    file_spec, parts, screened = open_folder(folder, spec)
    paths = [(p, Path(folder, p.file)) for p in parts]
    stream = rechunk(iter_parts(paths, file_spec, chunk_size, folder=folder), chunk_size)
    return file_spec, sum(p.n for p in parts), screened, stream


#: hidden temporary and lock files of a part being written (and of its own temporary file)
_PART_TEMP = re.compile(r"\.+part-\d+\.parquet(\..+)?\.(tmp|lock)")


def remove_stale_part_files(folder: str | os.PathLike) -> list[Path]:
    """Delete the hidden temporary and lock files of parts (``.part-00003.parquet.lock``,
    ``.part-00003.parquet.XXXXXXXX.tmp`` and those of that file) left by killed appenders.

    Call only under :func:`locked`: every appender holds it while writing a part, so every
    such file then belongs to a dead process (issue 25: they were never removed, the next
    appender choosing the next part name).
    """
    removed = []
    for p in Path(folder).glob(".*part-*"):
        if _PART_TEMP.fullmatch(p.name) and p.is_file():
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
                removed.append(p)
    return removed


def append_part(folder: str | os.PathLike, spec: CollectionSpec, reports: Any
                ) -> tuple[tuple[PartInfo, ...], int]:
    """Add ``reports`` (same spec, checked by the caller) as a new part; the parts now listed and
    the screened users now counted (the batch's :attr:`~lopub.reports.bloom.Reports.screened` added).

    The part is written under a temporary name, fsynced and renamed, then the
    manifest is replaced atomically under the dataset's lock, after re-reading
    it, so parts appended meanwhile by others are kept.
    """
    with locked(folder):
        remove_stale_part_files(folder)
        _, parts, screened = read_manifest(folder)
        name = next_part_name(folder, parts)
        part = replace(reports, screened=0) if reports.screened else reports  # the manifest counts them
        info = publish_part(folder, name, reports.n, lambda tmp: write_reports(part, tmp))
        screened += reports.screened
        write_manifest(folder, spec, parts + (info,), screened)
    return parts + (info,), screened
