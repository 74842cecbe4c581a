"""Locate a dataset file: explicit path, ``LOPUB_DATA_DIR``, user cache, or download.

Resolution order for file ``<name>/<filename>`` (e.g. ``adult/adult.data``):

1. ``path`` given by the caller: a file is used as is; a folder must hold
   ``<filename>`` or ``<name>/<filename>``.  Nothing else is tried.
2. ``$LOPUB_DATA_DIR/<name>/<filename>`` (same layout as ``../shared/datasets``).
3. The user cache ``$LOPUB_CACHE/<name>/<filename>``, default
   ``~/.cache/lopub/<name>/<filename>``.
4. Download from the public URL recorded in the dataset's schema
   (``lopub/datasets/schemas/<name>.json``, key ``"source"``) into the cache.  The
   downloaded bytes are normalized (``\\r`` and blank lines removed, and for
   Adult the ``|1x3 Cross validator`` header line of ``adult.test``), their
   sha256 must equal the schema's checksum (that of the reference copies), and
   the file is written atomically: a failed or wrong download leaves no file.

Offline with no local copy raises :class:`DatasetUnavailableError` (a
``FileNotFoundError``) whose message names the file, ``LOPUB_DATA_DIR`` and the
folder to put the file in.
"""
from __future__ import annotations

import hashlib
import json
import os
import urllib.request
from functools import lru_cache
from importlib import resources
from pathlib import Path

from lopub.io import atomic_path

ENV_DATA_DIR = "LOPUB_DATA_DIR"
ENV_CACHE = "LOPUB_CACHE"
_TIMEOUT = 60.0


class DatasetUnavailableError(FileNotFoundError):
    """A dataset file is neither local nor downloadable (offline, blocked, 404)."""


class ChecksumError(ValueError):
    """Downloaded bytes do not match the sha256 recorded in the schema."""


@lru_cache(maxsize=None)
def schema_dict(name: str) -> dict:
    """Raw JSON of the packaged schema ``lopub/datasets/schemas/<name>.json`` (domain + source)."""
    ref = resources.files("lopub.datasets").joinpath("schemas", f"{name}.json")
    if not ref.is_file():
        raise ValueError(f"dataset ({name!r}) has no packaged schema; expected 'adult' or 'retail'")
    return json.loads(ref.read_text(encoding="utf-8"))


def file_source(name: str, filename: str) -> dict:
    """``{"url", "sha256", ...}`` of ``filename`` from the schema of dataset ``name``."""
    files = schema_dict(name).get("source", {}).get("files", {})
    if filename not in files:
        raise ValueError(f"filename ({filename!r}) is not part of dataset {name!r}; expected one of {sorted(files)}")
    return files[filename]


def cache_dir() -> Path:
    """The user cache folder: ``$LOPUB_CACHE`` or ``~/.cache/lopub``."""
    env = os.environ.get(ENV_CACHE)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "lopub"


def data_path(
    name: str,
    filename: str,
    path: str | os.PathLike | None = None,
    *,
    download: bool = True,
) -> Path:
    """Path of a local copy of ``<name>/<filename>``, downloading it if needed.

    Parameters
    ----------
    name : str
        Dataset name, ``"adult"`` or ``"retail"``.
    filename : str
        File of the dataset, e.g. ``"adult.data"``, ``"adult.test"``, ``"retail.dat"``.
    path : path-like, optional
        Explicit file, or a folder holding ``filename`` or ``name/filename``.
    download : bool, default True
        Whether step 4 (download into the cache) may run.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    FileNotFoundError
        ``path`` was given but holds no such file.
    DatasetUnavailableError
        No local copy and the download is disabled or fails.
    ChecksumError
        The downloaded bytes have the wrong sha256 (no file is kept).
    """
    src = file_source(name, filename)
    if path is not None:
        return _explicit(Path(path).expanduser(), name, filename)
    env = os.environ.get(ENV_DATA_DIR)
    if env:
        cand = Path(env).expanduser() / name / filename
        if cand.is_file():
            return cand
    cached = cache_dir() / name / filename
    if cached.is_file():
        return cached
    if not download:
        raise DatasetUnavailableError(_missing_message(name, filename, src["url"], "downloads are disabled"))
    return _download(src, name, filename, cached)


def _explicit(p: Path, name: str, filename: str) -> Path:
    if p.is_file():
        return p
    for cand in (p / filename, p / name / filename):
        if cand.is_file():
            return cand
    raise FileNotFoundError(
        f"path ({str(p)!r}) is neither the file {filename!r} nor a folder holding "
        f"{filename!r} or {name + '/' + filename!r}"
    )


def _missing_message(name: str, filename: str, url: str, why: str) -> str:
    env = os.environ.get(ENV_DATA_DIR)
    where = (
        f"{ENV_DATA_DIR} is {env!r} but {str(Path(env) / name / filename)!r} does not exist"
        if env
        else f"{ENV_DATA_DIR} is not set"
    )
    return (
        f"dataset file {name}/{filename} is not available: {why}. {where}. "
        f"Download {url} yourself and put it at {str(cache_dir() / name / filename)!r}, "
        f"or set {ENV_DATA_DIR} to a folder holding {name}/{filename}, "
        f"or pass path= to the loader."
    )


def normalize(filename: str, raw: bytes) -> bytes:
    """Canonical bytes of a downloaded file (what the schema checksum covers).

    Drops ``\\r``, blank lines and, for ``adult.*``, lines starting with ``|``
    (the ``|1x3 Cross validator`` header of the UCI ``adult.test``); ends with
    one newline.
    """
    lines = raw.replace(b"\r", b"").split(b"\n")
    keep = [ln for ln in lines if ln.strip() and not (filename.startswith("adult") and ln.startswith(b"|"))]
    return b"\n".join(keep) + b"\n"


def _download(src: dict, name: str, filename: str, target: Path) -> Path:
    url = src["url"]
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT) as resp:
            raw = resp.read()
    except (OSError, ValueError) as exc:  # URLError, HTTPError, timeouts are OSError
        raise DatasetUnavailableError(_missing_message(name, filename, url, f"download failed ({exc})")) from exc
    data = normalize(filename, raw)
    digest = hashlib.sha256(data).hexdigest()
    if digest != src["sha256"]:
        raise ChecksumError(
            f"downloaded {url} has sha256 {digest}, expected {src['sha256']}; "
            f"nothing was written. Check the source, or put a verified copy at "
            f"{str(target)!r} or under {ENV_DATA_DIR}/{name}/{filename}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)
    return target


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file (streamed)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
