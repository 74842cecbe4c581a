"""JSON reading and writing shared by the file formats.

Text JSON (domain, spec) is indented and written atomically; model files may
be gzip-compressed, recognized on reading by their magic bytes whatever the
file name.
"""
from __future__ import annotations

import gzip
import json
import os
import zlib
from pathlib import Path
from typing import Any, Callable

from lopub.io import atomic_path, atomic_write_text

GZIP_MAGIC = b"\x1f\x8b"


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
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise error(f"{what} file {str(p)!r} is not UTF-8 JSON text ({exc.reason} at byte "
                        f"{exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = "" if text is source else f" file {str(source)!r}"
        raise error(f"{what}{where} JSON does not parse: {exc}") from None


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
    try:
        with (gzip.open if packed else open)(name, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise error(f"{name}: gzip data is truncated or corrupt ({exc}); "
                    f"expected a complete {what}") from None
    except json.JSONDecodeError as exc:
        raise error(f"{name}: not valid JSON ({exc}); expected a {what} "
                    f"(JSON{' inside gzip' if packed else ', optionally gzip'})") from None
    except (UnicodeDecodeError, OSError) as exc:
        raise error(f"{name}: not a readable {what} ({exc}); "
                    f"expected UTF-8 JSON, optionally gzip") from None
