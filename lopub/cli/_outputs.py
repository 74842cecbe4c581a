"""Commands that write several files: all of them or none.

:func:`staged_outputs` hands out, for every output path, a path of the same
name inside a hidden staging folder beside it (so suffix-driven writers such
as ``.json.gz`` or ``.png`` behave as for the real name).  Only when the
whole command succeeded are the staged files renamed onto their targets; on
any error the staging folders are removed and the existing outputs are
untouched.  A staging folder left by a killed process
(``.NAME.XXXX.stage``) is removed by the next staged write of ``NAME``.

Inputs are sacred (:func:`guard_outputs`, called by every command before any
work): an output that is one of the command's inputs (by inode) or lies
inside an input folder is refused, and an output that is a symbolic link,
device, pipe or socket is replaced only with ``--force``.

An output named like another format (:func:`check_suffix`, with the table
:data:`OUTPUT_SUFFIXES`, called before any work): ``--out r.csv`` of a command
writing a NumPy archive, JSON into ``m.csv``, HTML into ``rep.pdf`` is refused,
naming the option, the path, its suffix and the suffixes expected.  A name
without suffix, or with one no well-known format uses (``run.v2``), is written
as given.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Iterator, NamedTuple

__all__ = ["staged_outputs", "check_output_path", "check_suffix", "guard_outputs", "input_paths",
           "OUTPUT_SUFFIXES", "Suffixes"]

STAGE_SUFFIX = ".stage"
#: argument names of the commands' positional inputs (the others are named as --options)
POSITIONAL = {"csv", "reports", "model", "source", "inputs", "data", "files"}


#: well-known file suffixes -> the kind of file they name; an output of another kind under one of
#: them is refused (a suffix not listed here is the user's own name and accepted)
KNOWN_SUFFIXES = {
    ".csv": "CSV", ".tsv": "tab-separated text", ".txt": "text", ".json": "JSON", ".gz": "gzip",
    ".html": "HTML", ".htm": "HTML", ".pdf": "PDF", ".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG",
    ".svg": "SVG", ".parquet": "Parquet", ".pq": "Parquet", ".npz": "NumPy archive",
    ".npy": "NumPy array", ".pkl": "pickle", ".pickle": "pickle", ".uai": "UAI", ".xlsx": "Excel",
    ".xls": "Excel", ".md": "Markdown", ".zip": "zip", ".xml": "XML", ".yaml": "YAML", ".yml": "YAML",
    ".sqlite": "SQLite", ".db": "database", ".tar": "tar", ".bz2": "bzip2", ".xz": "xz", ".zst": "zstd",
}


class Suffixes(NamedTuple):
    """What an output option writes: the ``suffixes`` its readers expect, in words (``what``).

    ``closed``: any other suffix is refused (the writer picks its format by the suffix);
    ``bare``: a name without suffix is accepted (written as given, or a folder).
    """

    suffixes: tuple[str, ...]
    what: str
    closed: bool = False
    bare: bool = True


_PLAN = Suffixes((".json",), "lopub serve-plan writes a plan or spec JSON")
#: (command, argument[, --format]) -> what that output holds; checked by ``check_outputs`` before
#: any work.  ``--plot`` is checked against matplotlib's formats (``lopub.cli.graph.check_plot``).
OUTPUT_SUFFIXES: dict[tuple[str, ...], Suffixes] = {
    ("schema", "out"): Suffixes((".json",), "lopub schema writes a domain JSON"),
    ("encode", "out"): Suffixes((".parquet", ".pq"), "lopub encode writes Bloom reports: a Parquet "
                                "file, or a dataset folder"),
    ("collect", "out"): Suffixes((".npz", ".parquet", ".pq"), "lopub collect writes reports: a NumPy "
                                 ".npz archive (marginal sampling, one attribute per user, frequency "
                                 "oracles) or a Parquet file (Bloom)"),
    ("fit", "out"): Suffixes((".json", ".json.gz"), "lopub fit writes a model JSON (gzip for .gz)"),
    ("graph", "out_json"): Suffixes((".json",), "lopub graph --out-json writes JSON"),
    ("synthesize", "out"): Suffixes((".csv", ".parquet", ".pq"), "a release is written as CSV or "
                                    "Parquet by suffix", closed=True, bare=False),
    ("report", "out"): Suffixes((".html", ".htm"), "lopub report writes one HTML page"),
    ("export", "out", "uai"): Suffixes((".uai",), "--format uai writes a UAI MARKOV text file"),
    ("export", "out", "pgmpy"): Suffixes((".pkl", ".pickle"), "--format pgmpy writes a pickled pgmpy "
                                         "model"),
    ("serve-plan", "out"): _PLAN,
}


def _suffix_of(name: str) -> str:
    """The suffix of ``name`` as a user reads it: ``.csv``, ``.json.gz`` (two for a compressed file)."""
    parts = Path(name).suffixes
    if len(parts) >= 2 and parts[-1].lower() in (".gz", ".bz2", ".xz", ".zst"):
        return "".join(parts[-2:])
    return parts[-1] if parts else ""


def check_suffix(path: str | os.PathLike, option: str, kind: Suffixes) -> None:
    """Refuse, before any work, an output whose suffix names another format than ``kind``'s.

    An expected suffix (case-insensitive, ``.json.gz`` included) passes; a
    well-known other one (:data:`KNOWN_SUFFIXES`) is refused; a name without
    suffix passes when ``kind.bare``, an unknown suffix unless ``kind.closed``.

    Raises
    ------
    ValueError
        Naming ``option``, the path, its suffix and the expected suffixes.
    """
    name = Path(os.fspath(path).rstrip("/" + os.sep)).name
    if name.lower().endswith(tuple(s.lower() for s in kind.suffixes)):
        return
    suffix = _suffix_of(name)
    last = Path(name).suffix.lower()
    if not suffix and kind.bare or suffix and last not in KNOWN_SUFFIXES and not kind.closed:
        return
    known = f" ({KNOWN_SUFFIXES[last]})" if last in KNOWN_SUFFIXES else ""
    bare = " (or a name without suffix)" if kind.bare else ""
    raise ValueError(f"{option} ({os.fspath(path)!r}) has the suffix {suffix or '(none)'!r}{known}; "
                     f"{kind.what}: expected one of {list(kind.suffixes)}{bare}")


def output_kind(command: str, attr: str, fmt: object = None) -> Suffixes | None:
    """What output argument ``attr`` of ``command`` holds (``fmt``: its ``--format``), if declared."""
    return OUTPUT_SUFFIXES.get((command, attr, str(fmt))) or OUTPUT_SUFFIXES.get((command, attr))


def check_output_path(path: str | os.PathLike, option: str) -> Path:
    """``path`` as a writable output file: its folder exists, it is not a folder itself.

    ``FileNotFoundError``/``IsADirectoryError`` naming ``option`` and the path otherwise.
    """
    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(f"{option} ({str(p)!r}) is a folder; expected a file path")
    if os.fspath(path).endswith(("/", os.sep)):  # Path() drops the slash: 'new/' would be written as a file 'new'
        raise IsADirectoryError(f"{option} ({os.fspath(path)!r}) names a folder (it ends with '/'); expected a "
                                f"file path")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise FileNotFoundError(f"{option} ({str(p)!r}): output folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise PermissionError(f"{option} ({str(p)!r}): output folder {str(parent)!r} is not writable")
    return p


def _kind(st_mode: int) -> str:
    """The kind of a file that is neither a regular file nor a folder, in words."""
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket")):
        if test(st_mode):
            return name
    return "not a regular file"


def _special(p: Path) -> str | None:
    """Why ``p`` must not be replaced without ``--force`` (a link, device, pipe...); None if it may."""
    if p.is_symlink():
        try:
            to = os.readlink(p)
        except OSError:  # pragma: no cover
            to = "?"
        return f"is a symbolic link (to {to!r})"
    try:
        st = p.stat()
    except FileNotFoundError:
        return None
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):  # a folder: check_output_path
        return None
    return f"is {_kind(st.st_mode)}"


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` (resolved) is ``folder`` or lies below it."""
    try:
        path.resolve().relative_to(folder.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def _same(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def input_paths(values: dict[str, object], skip: set[str]) -> list[tuple[str, str]]:
    """``(path, name)`` of every argument value naming an existing file or folder (the inputs).

    ``values`` maps argument names to parsed values (strings or lists of them);
    the names in ``skip`` (the outputs) are left out.
    """
    found = []
    for name, value in values.items():
        if name in skip or name.startswith("_") or name in ("func", "command"):
            continue
        items = value if isinstance(value, (list, tuple)) else [value]
        for v in items:
            if isinstance(v, (str, os.PathLike)) and str(v) and os.path.lexists(v):
                found.append((os.fspath(v), name))
    return found


def guard_outputs(outputs: list[tuple[str, str]], inputs: list[tuple[str, str]], *,
                  force: bool = False, folders: bool = False) -> None:
    """Refuse outputs that would destroy an input or replace a file that is not a regular file.

    An output that is one of the inputs (same file, by inode: hard links and
    symbolic links included), lies inside an input folder (a reports dataset's
    parts and manifest) or holds an input inside it (an output folder) is
    refused, ``--force`` or not.  An output that exists but is a symbolic
    link, a device, a named pipe or a socket is refused unless ``force``.
    ``folders``: the outputs may be folders (dataset folders, the demo's).

    Raises
    ------
    ValueError
        Naming the option, the path and the input it would overwrite.
    """
    for path, option in outputs:
        out = Path(path)
        for ip, name in inputs:
            src = Path(ip)
            label = name.replace("_", "-")
            what = f"the input {'' if label in POSITIONAL else '--'}{label} ({ip!r})"
            if _same(out, src):
                raise ValueError(f"{option} ({path!r}) is {what}: lopub never overwrites its inputs; "
                                 f"write to another file")
            if src.is_dir() and _inside(out, src):
                raise ValueError(f"{option} ({path!r}) is inside {what}, a folder lopub reads; write "
                                 f"outside it")
            if folders and out.is_dir() and _inside(src, out) and not _same(out, src):
                raise ValueError(f"{option} ({path!r}) is a folder that holds {what}; write elsewhere")
        why = _special(out)
        if why and not force:
            raise ValueError(f"{option} ({path!r}) {why}: lopub replaces only regular files; give "
                             f"another path, or --force to replace it with a regular file")


def _clean_stale(target: Path) -> None:
    """Remove staging folders of ``target`` left behind by killed processes."""
    for old in target.parent.glob(f".{target.name}.*{STAGE_SUFFIX}"):
        if old.is_dir():
            shutil.rmtree(old, ignore_errors=True)


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _publish(stage: Path, target: Path) -> None:
    """Move every file of ``stage`` into ``target``'s folder (fsync'd, umask mode)."""
    mask = os.umask(0o022)
    os.umask(mask)
    for f in sorted(stage.iterdir()):
        final = target.parent / f.name
        with open(f, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(f, final.stat().st_mode & 0o777 if final.exists() else 0o666 & ~mask)
        os.replace(f, final)
    _fsync_dir(target.parent)


@contextlib.contextmanager
def staged_outputs(*paths: tuple[str | os.PathLike, str]) -> Iterator[list[Path]]:
    """Stage ``(path, option)`` outputs; publish them all only if the block succeeds.

    Yields one staged path per output (same file name, in a hidden folder
    beside the target).  Files a writer adds next to its staged path (such as
    ``x_mi.png`` beside ``x.png``) are published too.
    """
    targets = [check_output_path(p, opt) for p, opt in paths]
    stages: list[Path] = []
    try:
        for t in targets:
            _clean_stale(t)
            stages.append(Path(tempfile.mkdtemp(prefix=f".{t.name}.", suffix=STAGE_SUFFIX,
                                                dir=t.parent if str(t.parent) else ".")))
        yield [s / t.name for s, t in zip(stages, targets)]
        for s, t in zip(stages, targets):
            _publish(s, t)
    finally:
        for s in stages:
            shutil.rmtree(s, ignore_errors=True)
