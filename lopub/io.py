"""Atomic file writes: write to a temporary file beside the target, fsync, rename.

A crash or an exception leaves either the old file or no file, never a
half-written one; the folder is fsynced after the rename so that the new
name survives a crash too (POSIX).  Every write holds an advisory lock on
``.NAME.lock`` (:func:`output_lock`: a second process writing the same output
fails at once, naming it) and first removes the ``.NAME.XXXXXXXX.tmp`` files
that killed writers left behind.  (JSON reading and writing of lopub's file formats lives
in :mod:`lopub.formats`.)

Reading: every lopub file carries a checksum, and a file without one (an older
lopub's, or edited by hand) is refused by :func:`missing_checksum` unless the
reads are marked unverified (:func:`unverified_reads`, the command line's
``--no-verify``), when a warning says its integrity was not checked.
"""
from __future__ import annotations

import contextlib
import glob
import os
import re
import tempfile
import warnings
from pathlib import Path
from typing import Callable, Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, writes stay atomic
    fcntl = None  # type: ignore[assignment]


def _umask() -> int:
    """The process umask (read by setting it and restoring it at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UNVERIFIED = [False]


@contextlib.contextmanager
def unverified_reads(allow: bool = True) -> Iterator[None]:
    """Within the block, files without a checksum are read (with a warning) instead of refused."""
    old = _UNVERIFIED[0]
    _UNVERIFIED[0] = bool(allow)
    try:
        yield
    finally:
        _UNVERIFIED[0] = old


def missing_checksum(where: str, what: str, error: Callable[[str], Exception] = ValueError) -> None:
    """A ``what`` (``"model file"``) at ``where`` has no checksum: refused, or read with a warning.

    Raises
    ------
    error
        Unless inside :func:`unverified_reads` (``--no-verify``); the message
        says how to read the file anyway.
    """
    if not _UNVERIFIED[0]:
        raise error(f"{where}: this {what} carries no checksum, so damage or edits cannot be "
                    f"detected (written by an older lopub, or edited by hand); if you trust it, "
                    f"read it with --no-verify (Python: with lopub.io.unverified_reads(): ...)")
    warnings.warn(f"{where}: this {what} has no checksum and is read WITHOUT any integrity check "
                  f"(--no-verify); results from a damaged or edited file would be wrong",
                  UserWarning, stacklevel=3)


class OutputLockedError(OSError):
    """Another process is writing the same output (its lock file is held)."""


#: locks this process holds: absolute target path -> [lock fd, lock path, depth]
_HELD: dict[str, list] = {}


def _lock_path(target: Path) -> Path:
    return target.parent / f".{target.name}.lock"


def _acquire(target: Path) -> tuple[int, Path]:
    """Open and ``flock`` the lock file of ``target``; retried if it was unlinked meanwhile."""
    lock = _lock_path(target)
    for _ in range(100):  # a holder unlinks the file on release: lock the file still in place
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666 & ~_umask())
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise OutputLockedError(
                f"{str(target)!r} is being written by another process (its lock file "
                f"{str(lock)!r} is held); wait for it to finish or write elsewhere") from None
        try:
            if os.fstat(fd).st_ino == os.stat(lock).st_ino:
                return fd, lock
        except FileNotFoundError:
            pass
        os.close(fd)
    raise OutputLockedError(f"cannot lock {str(target)!r}: its lock file {str(lock)!r} keeps changing")


@contextlib.contextmanager
def output_lock(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive advisory lock (``fcntl.flock``) on ``.NAME.lock`` beside ``path``.

    A second process asking for the same output gets an :class:`OutputLockedError`
    naming the file at once (no waiting).  Re-entrant within a process; the lock
    file is removed on release.
    """
    target = Path(path).absolute()
    key = str(target)
    if key in _HELD:
        _HELD[key][2] += 1
        try:
            yield
        finally:
            _HELD[key][2] -= 1
        return
    if not target.parent.is_dir():
        raise FileNotFoundError(f"output folder {str(target.parent)!r} does not exist")
    if fcntl is None:  # pragma: no cover
        yield
        return
    fd, lock = _acquire(target)
    _HELD[key] = [fd, lock, 1]
    try:
        yield
    finally:
        del _HELD[key]
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
        os.close(fd)


def release_inherited_locks() -> None:
    """In a forked worker: close the output lock files inherited from the parent, so that a
    lock dies with the process that took it (workers outliving a ``kill -9`` of their parent
    held it and made an immediate re-run fail as "being written by another process"; issue 25)."""
    for fd, _lock, _count in _HELD.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD.clear()


def remove_stale_temporaries(target: Path) -> list[Path]:
    """Delete ``.NAME.XXXXXXXX.tmp`` files left beside ``target`` by killed writers.

    Call only while holding :func:`output_lock` of ``target``: live writers hold it, so
    every such file then belongs to a dead one.
    """
    pattern = re.compile(rf"\.{re.escape(target.name)}\.[a-z0-9_]{{8}}\.tmp")
    removed = []
    for p in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
        if pattern.fullmatch(p.name) and p.is_file():
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
                removed.append(p)
    return removed


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; rename onto ``path`` on success.

    Holds the target's :func:`output_lock` throughout, and first removes the
    temporary files of ``path`` left behind by killed writers.
    """
    target = Path(path)
    if target.parent and not target.parent.exists():
        raise FileNotFoundError(f"output folder {str(target.parent)!r} does not exist")
    with output_lock(target):
        remove_stale_temporaries(target)
        with _atomic_path(target) as tmp:
            yield tmp


@contextlib.contextmanager
def _atomic_path(target: Path) -> Iterator[Path]:
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as fh:
            os.fsync(fh.fileno())
        # mkstemp creates 0600; a published file gets the mode a plain open() would give
        # (that of the file it replaces, else 0666 minus the umask)
        os.chmod(tmp_path, target.stat().st_mode & 0o777 if target.exists() else 0o666 & ~_umask())
        os.replace(tmp_path, target)
        fsync_dir(target.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


def fsync_dir(folder: str | os.PathLike) -> None:
    """Flush a folder's entries (new names, renames) to disk; a no-op where unsupported."""
    try:
        fd = os.open(os.fspath(folder) or ".", os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows cannot open a folder
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse
        pass
    finally:
        os.close(fd)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically (UTF-8)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def atomic_write(path: str | os.PathLike, writer: Callable[[Path], None]) -> None:
    """Call ``writer(tmp_path)`` and move the result onto ``path`` atomically."""
    with atomic_path(path) as tmp:
        writer(tmp)

