"""JSON reading and writing shared by the file formats.

Text JSON (domain, spec) is indented and written atomically; model files may
be gzip-compressed, recognized on reading by their magic bytes whatever the
file name.  Every JSON read is bounded (:func:`parse_json`): at most
:data:`MAX_DEPTH` levels of arrays and objects inside each other (a deeper
text, such as ``[[[[...]]]]`` nested 100,000 times, is an error naming the
file, not a ``RecursionError``), and a text whose parsed size would exceed the
memory limit (``--max-memory-mb``) is refused before it is read.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import zlib
from pathlib import Path
from typing import Any, Callable

from lopub.io import atomic_path, atomic_write_text
from lopub.limits import check_memory

GZIP_MAGIC = b"\x1f\x8b"
#: deepest nesting of arrays and objects accepted in a lopub JSON file (the formats use < 10)
MAX_DEPTH = 100
#: parsed JSON holds about this many bytes of Python objects per byte of text (numbers, lists)
PARSED_BYTES_PER_BYTE = 8


def json_depth(obj: Any, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of parsed JSON (0 for a scalar), counted without recursion up to ``limit + 1``."""
    deepest, stack = 0, [(obj, 1)] if isinstance(obj, (dict, list)) else []
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            break
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def parse_json(text: str | bytes, error: Callable[[str], Exception], where: str,
               expected: str = "") -> Any:
    """``json.loads(text)`` bounded in depth; ``error(where + ": ...")`` when it does not parse
    or is nested deeper than :data:`MAX_DEPTH` (``expected`` ends the message: "; expected ...")."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{where}: does not parse as JSON ({exc}){expected}") from None
    except RecursionError:
        raise error(f"{where}: JSON nested too deeply (arrays or objects inside each other beyond "
                    f"{MAX_DEPTH} levels); not a lopub file") from None
    if json_depth(obj) > MAX_DEPTH:
        raise error(f"{where}: JSON nested too deeply (more than {MAX_DEPTH} levels of arrays or "
                    f"objects inside each other); not a lopub file")
    return obj


def check_json_size(nbytes: int, where: str) -> None:
    """Refuse a JSON text whose parsed form would exceed the memory limits (before reading it)."""
    check_memory(nbytes * PARSED_BYTES_PER_BYTE, "JSON file", f"{where}, {nbytes} bytes",
                 "its parsed content")


def dump_json(obj: object, path: str | os.PathLike | None = None) -> str:
    """Indented JSON text of ``obj``; also written atomically to ``path`` when given."""
    text = json.dumps(obj, indent=2)
    if path is not None:
        atomic_write_text(path, text + "\n")
    return text


def load_json(source: str | os.PathLike, error: type[Exception], what: str) -> object:
    """Parse JSON from a file path or a JSON string; ``error(what ...)`` when it does not parse."""
    if isinstance(source, str) and source.lstrip().startswith("{"):
        text = source
    else:
        p = Path(source)
        if not p.exists():
            raise FileNotFoundError(f"{what} file {str(p)!r} does not exist")
        if p.is_dir():
            raise IsADirectoryError(f"{what} file {str(p)!r} is a folder")
        check_json_size(p.stat().st_size, f"{what} file {str(p)!r}")
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise error(f"{what} file {str(p)!r} is not UTF-8 JSON text ({exc.reason} at byte "
                        f"{exc.start})") from None
    where = what if text is source else f"{what} file {str(source)!r}"
    return parse_json(text, error, where)


def npz_checksum(meta: dict, arrays: dict) -> str:
    """SHA-256 (hex) of an ``.npz`` file's ``meta`` (without its ``checksum``) and of every array
    (name, dtype, shape and bytes): the checksum of lopub's NumPy archives."""
    import numpy as np

    h = hashlib.sha256(json.dumps({k: v for k, v in meta.items() if k != "checksum"},
                                  sort_keys=True).encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"\0{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def smallest_uint(bound: int) -> Any:
    """The smallest unsigned NumPy dtype holding every integer in ``[0, bound)``: ``uint8`` up to
    256 values, then ``uint16``, ``uint32``, ``uint64`` (how lopub's reports files store codes)."""
    import numpy as np

    for dtype in (np.uint8, np.uint16, np.uint32):
        if bound - 1 <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.uint64)


def npz_meta_text(entry: Any) -> str:
    """The JSON text of an ``.npz`` file's ``meta`` entry: UTF-8 bytes as a uint8 array
    (marginal-sampling reports) or a 0-d unicode array (oracle reports)."""
    import numpy as np

    entry = np.asarray(entry)
    if entry.dtype == np.uint8:
        return bytes(entry).decode("utf-8")
    if entry.dtype.kind == "U" and entry.ndim == 0:
        return str(entry)
    raise ValueError(f"its 'meta' entry has dtype {entry.dtype} and shape {entry.shape}; expected "
                     f"JSON text")


def npz_format(path: str | os.PathLike) -> str | None:
    """The ``format`` named in an ``.npz`` file's metadata (``"lopub-oracle-reports"``,
    ``"lopub-marginal-reports"``), or None when it has none; ``ValueError`` naming the file
    when the archive or its metadata cannot be read."""
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as z:
            if "meta" not in z.files:
                return None
            meta = parse_json(npz_meta_text(z["meta"]), ValueError, "its 'meta' entry")
    except (FileNotFoundError, IsADirectoryError):
        raise
    except Exception as exc:  # zipfile, zlib, numpy: whatever a damaged archive raises
        raise ValueError(f"reports file {os.fspath(path)!r} is damaged or not a lopub reports "
                         f"file ({type(exc).__name__}: {' '.join(str(exc).split())[:160]})") from None
    return meta.get("format") if isinstance(meta, dict) and isinstance(meta.get("format"), str) else None


def write_compact_json(obj: object, path: str | os.PathLike) -> None:
    """Compact JSON written atomically; gzip-compressed when ``path`` ends in ``.gz``."""
    text = json.dumps(obj, separators=(",", ":"))
    with atomic_path(path) as tmp:
        if os.fspath(path).endswith(".gz"):
            with gzip.open(tmp, "wt", encoding="utf-8") as fh:
                fh.write(text)
        else:
            tmp.write_text(text, encoding="utf-8")


def read_json_file(name: str, error: Callable[[str], Exception], what: str) -> Any:
    """Parse a JSON file, gzip-compressed or not (by its magic bytes).

    ``error(message)`` is raised, the message starting with ``name``, when
    the file is truncated, not JSON or not UTF-8; ``what`` names the expected
    kind of file ("lopub model file").
    """
    with open(name, "rb") as fh:
        packed = fh.read(2) == GZIP_MAGIC
    check_json_size(os.path.getsize(name) * (4 if packed else 1), name)
    try:
        with (gzip.open if packed else open)(name, "rt", encoding="utf-8") as fh:
            text = fh.read()
        return parse_json(text, error, name, f"; expected a {what} "
                          f"(JSON{' inside gzip' if packed else ', optionally gzip'})")
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise error(f"{name}: gzip data is truncated or corrupt ({exc}); "
                    f"expected a complete {what}") from None
    except (UnicodeDecodeError, OSError) as exc:
        raise error(f"{name}: not a readable {what} ({exc}); "
                    f"expected UTF-8 JSON, optionally gzip") from None
