"""The manifest of a reports dataset folder (``_lopub_dataset.json``): its parts, reading, writing, comparing specs.

Layout, crash safety and the folder operations are in :mod:`lopub.reports.folder`.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lopub.errors import ReportsFormatError
from lopub.formats import DATASET_FORMAT, DATASET_VERSION
from lopub.formats._io import dump_json
from lopub.reports.spec import CollectionSpec, spec_from_dict, spec_to_dict

MANIFEST = "_lopub_dataset.json"
_PART_RE = re.compile(r"^part-(\d{5,})\.parquet$")
_BLOCK = 1 << 16  # bytes hashed at a time (readers stream parts in bounded memory)


@dataclass(frozen=True)
class PartInfo:
    """One listed part: file name (in the folder), row count, size in bytes, SHA-256 (hex)."""

    file: str
    n: int
    bytes: int
    sha256: str


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    buf = bytearray(_BLOCK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        while True:
            got = fh.readinto(buf)
            if not got:
                break
            h.update(view[:got])
    return h.hexdigest()


def manifest_to_dict(spec: CollectionSpec, parts: tuple[PartInfo, ...], screened: int = 0) -> dict[str, Any]:
    """The manifest JSON object of a dataset of ``parts`` under ``spec`` (``screened``: users of a
    screen whose reports are in no part, written when not 0)."""
    return {"format": DATASET_FORMAT, "version": DATASET_VERSION, "n": sum(p.n for p in parts),
            **({"screened": screened} if screened else {}),
            "spec": spec_to_dict(spec), "parts": [asdict(p) for p in parts]}


def _part_from_dict(obj: Any, where: str) -> PartInfo:
    ok = (isinstance(obj, dict) and isinstance(obj.get("file"), str) and _PART_RE.match(obj["file"])
          and all(type(obj.get(k)) is int and obj[k] >= 0 for k in ("n", "bytes"))
          and isinstance(obj.get("sha256"), str) and re.fullmatch(r"[0-9a-f]{64}", obj["sha256"]))
    if not ok:
        raise ReportsFormatError(f"{where}: a part must be {{\"file\": \"part-NNNNN.parquet\", \"n\": "
                                 f"int >= 0, \"bytes\": int >= 0, \"sha256\": 64 hex digits}}; "
                                 f"got {obj!r:.120}")
    return PartInfo(obj["file"], obj["n"], obj["bytes"], obj["sha256"])


def manifest_from_dict(obj: Any, folder: str) -> tuple[CollectionSpec, tuple[PartInfo, ...], int]:
    """(spec, parts, screened) of a parsed manifest; ReportsFormatError naming ``folder`` otherwise."""
    where = os.path.join(folder, MANIFEST)
    if not isinstance(obj, dict) or obj.get("format") != DATASET_FORMAT:
        raise ReportsFormatError(f"{where}: not a lopub reports dataset manifest "
                                 f"(expected \"format\": \"{DATASET_FORMAT}\")")
    if type(obj.get("version")) is not int or obj["version"] != DATASET_VERSION:
        raise ReportsFormatError(f"{where}: dataset version {obj.get('version')!r} is not supported "
                                 f"(this lopub reads version {DATASET_VERSION})")
    if not isinstance(obj.get("parts"), list):
        raise ReportsFormatError(f"{where}: \"parts\" must be a list of parts")
    try:
        spec = spec_from_dict(obj.get("spec"))
    except ValueError as exc:
        raise ReportsFormatError(f"{where}: invalid spec: {exc}") from None
    parts = tuple(_part_from_dict(p, where) for p in obj["parts"])
    if len({p.file for p in parts}) != len(parts):
        raise ReportsFormatError(f"{where}: a part is listed twice")
    if obj.get("n") != sum(p.n for p in parts):
        raise ReportsFormatError(f"{where}: \"n\" ({obj.get('n')!r}) must be the sum of the parts' "
                                 f"row counts ({sum(p.n for p in parts)})")
    screened = obj.get("screened", 0)
    if type(screened) is not int or screened < 0:
        raise ReportsFormatError(f"{where}: \"screened\" ({screened!r}) must be an integer >= 0 (users "
                                 f"of a screen whose reports are in no part)")
    return spec, parts, screened


def read_manifest(folder: str | os.PathLike) -> tuple[CollectionSpec, tuple[PartInfo, ...], int]:
    """Read and check the manifest of dataset ``folder``: (spec, parts, screened users)."""
    name = os.fspath(folder)
    path = Path(folder, MANIFEST)
    if not path.exists():
        raise FileNotFoundError(f"{name!r} is not a lopub reports dataset (no {MANIFEST} in it)")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReportsFormatError(f"{path}: not valid JSON ({exc})") from None
    return manifest_from_dict(obj, name)


def write_manifest(folder: str | os.PathLike, spec: CollectionSpec, parts: tuple[PartInfo, ...],
                   screened: int = 0) -> None:
    """Replace the manifest atomically (temporary file, fsync, rename, fsync of the folder)."""
    dump_json(manifest_to_dict(spec, parts, screened), Path(folder, MANIFEST))


def spec_difference(a: CollectionSpec, b: CollectionSpec, names: tuple[str, str] = ("a", "b")) -> str:
    """How two specs differ, naming the first differing field; ``""`` if they are equal.

    E.g. ``"f differs: 0.5 in the dataset, 0.25 in the batch"`` with
    ``names=("the dataset", "the batch")``.
    """
    return dict_difference(spec_to_dict(a), spec_to_dict(b), names)


def dict_difference(a: dict, b: dict, names: tuple[str, str] = ("a", "b")) -> str:
    """:func:`spec_difference` for two JSON objects."""
    found = _first_difference(a, b, "")
    if found is None:
        return ""
    field, x, y = found
    return f"{field} differs: {_short(x)} in {names[0]}, {_short(y)} in {names[1]}"


def _first_difference(x: Any, y: Any, where: str) -> tuple[str, Any, Any] | None:
    if isinstance(x, dict) and isinstance(y, dict):
        for k in list(x) + [k for k in y if k not in x]:
            found = _first_difference(x.get(k, "(absent)"), y.get(k, "(absent)"), f"{where}{k}.")
            if found:
                return found
        return None
    if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        for i, (u, v) in enumerate(zip(x, y)):
            found = _first_difference(u, v, f"{where[:-1]}[{i}].")
            if found:
                return found
        return None
    return None if x == y else (where[:-1], x, y)


def _short(v: Any) -> str:
    text = json.dumps(v)
    return text if len(text) <= 60 else text[:57] + "..."
