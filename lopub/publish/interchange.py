"""Export a release's measurements for Private-PGM (mbi) and score clique marginals against them.

A release is fitted to noisy marginals ``y_i`` (each with its standard deviation ``sigma_i``) on the
cliques of a junction tree.  :func:`export_measurements` writes those measurements, the attributes and
the cliques to an interchange file (``STEM.json`` + ``STEM.npz``, format ``lopub-mbi-interchange`` v1,
probabilities, C order) that a program outside lopub -- e.g. mbi's ``LinearMeasurement`` -- can fit
on the same cliques; :func:`objective` scores any clique marginals under the one loss
``L(mu) = sum_i ||mu_{C_i} - y_i||^2 / (2 sigma_i^2)`` (mbi's l2 loss with ``known_total = 1``).
The fitted tables come back as ``STEM.mbi.json`` + ``STEM.mbi.npz`` (:func:`write_result`,
:func:`read_result`).  Format and an example: docs/bench_mbi.md, "Interchange file".

This module imports only numpy and the standard library (no other lopub module), so a Python
environment without lopub's dependencies (mbi's) can read and write these files.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

FORMAT, RESULT_FORMAT, VERSION = "lopub-mbi-interchange", "lopub-mbi-result", 1


def export_measurements(stem: str | os.PathLike, domain: Any, cliques: Sequence[Sequence[str]],
                        measurements: Sequence[Any], info: dict | None = None) -> tuple[Path, Path]:
    """Write ``measurements`` (:class:`lopub.estimate.measurement.Measurement`: ``attrs``, ``estimate``,
    ``sigma2``) over ``domain`` (a :class:`lopub.data.domain.Domain`) and the model ``cliques`` (e.g. a
    junction tree's) as ``STEM.json`` + ``STEM.npz``; ``info``: provenance kept in the file.  A ValueError
    names the first bad measurement (see :func:`write_interchange`)."""
    return write_interchange(stem, domain.attrs, domain.sizes, [tuple(c) for c in cliques],
                             [(m.attrs, m.estimate, math.sqrt(m.sigma2)) for m in measurements], info)


def write_interchange(stem: str | os.PathLike, attributes: Sequence[str], sizes: Sequence[int],
                      cliques: Sequence[Sequence[str]], measurements: Sequence[tuple],
                      info: dict | None = None) -> tuple[Path, Path]:
    """Write ``STEM.json`` and ``STEM.npz``; ``measurements`` are ``(attrs, y, sigma)``; a ValueError names
    the first bad one (unknown attribute, in no clique, wrong size, non-finite, sigma not > 0)."""
    attributes, sizes, ms = _checked(attributes, sizes, cliques, measurements)
    doc = {"format": FORMAT, "version": VERSION, "units": "probability",
           "attributes": [{"name": a, "size": k} for a, k in zip(attributes, sizes)],
           "cliques": [list(c) for c in cliques],
           "measurements": [{"attrs": list(a), "sigma": s, "key": f"y{i}"} for i, (a, _, s) in enumerate(ms)],
           "info": dict(info or {})}
    return _save(Path(stem), "", doc, {f"y{i}": y for i, (_, y, _) in enumerate(ms)})


def _checked(attributes: Sequence[str], sizes: Sequence[int], cliques: Sequence[Sequence[str]],
             measurements: Sequence[tuple]) -> tuple[list[str], list[int], list[tuple]]:
    """The attributes, sizes and ``(attrs, flat float64 y, sigma)`` per measurement, each checked."""
    attributes, sizes = [str(a) for a in attributes], [int(k) for k in sizes]
    if len(attributes) != len(sizes) or len(set(attributes)) != len(attributes):
        raise ValueError(f"attributes ({attributes}) must be distinct names, one per size ({sizes})")
    size_of = dict(zip(attributes, sizes))
    for c in cliques:
        _check_attrs("clique", c, size_of)
    out = []
    for i, (attrs, y, sigma) in enumerate(measurements):
        what = f"measurements[{i}]"
        _check_attrs(what, attrs, size_of)
        if not any(set(attrs) <= set(c) for c in cliques):
            raise ValueError(f"{what} over {list(attrs)} lies in no model clique of {list(cliques)}")
        y = np.asarray(y, dtype=np.float64).ravel()
        cells = math.prod(size_of[a] for a in attrs)
        if y.size != cells or not np.all(np.isfinite(y)):
            raise ValueError(f"{what} over {list(attrs)}: y has {y.size} entries "
                             f"(finite: {bool(np.all(np.isfinite(y)))}); expected {cells} finite values")
        if not (isinstance(sigma, (int, float, np.floating)) and math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"{what} over {list(attrs)}: sigma ({sigma!r}) must be a finite number > 0")
        out.append((tuple(attrs), y, float(sigma)))
    return attributes, sizes, out


def _check_attrs(what: str, attrs: Sequence[str], size_of: dict) -> None:
    if not attrs or len(set(attrs)) != len(attrs) or any(a not in size_of for a in attrs):
        raise ValueError(f"{what} ({list(attrs)}) must name distinct attributes of {list(size_of)}")


def _save(stem: Path, suffix: str, doc: dict, arrays: dict) -> tuple[Path, Path]:
    """``STEM{suffix}.npz`` of ``arrays`` and ``STEM{suffix}.json`` of ``doc``."""
    jpath, npath = Path(f"{stem}{suffix}.json"), Path(f"{stem}{suffix}.npz")
    text = (json.dumps(doc, indent=1) + "\n").encode()  # before any write: a doc that cannot be written changes nothing
    _atomic(npath, lambda fh: np.savez(fh, **arrays))
    _atomic(jpath, lambda fh: fh.write(text))
    return jpath, npath


def _atomic(path: Path, write: Any) -> None:
    """``write(binary file)`` to a temporary file beside ``path``, then renamed over it: a failure leaves
    no half-written file (the house's atomic writes, without importing them: standard library only)."""
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_interchange(stem: str | os.PathLike) -> dict[str, Any]:
    """Read ``STEM.json`` + ``STEM.npz``: attributes, sizes, cliques, measurements (attrs, y, sigma), checked
    as the writer checks them (a file may come from another program): a ValueError names the file and the
    first bad value."""
    doc = json.loads(Path(f"{stem}.json").read_text())
    if doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise ValueError(f"{stem}.json: format {doc.get('format')!r} v{doc.get('version')!r}; "
                         f"expected {FORMAT!r} v{VERSION}")
    with np.load(f"{stem}.npz") as z:
        if missing := [m["key"] for m in doc["measurements"] if m["key"] not in z.files]:
            raise ValueError(f"{stem}.npz lacks the arrays {missing} that {stem}.json lists")
        raw = [(m["attrs"], np.array(z[m["key"]], dtype=np.float64), m["sigma"]) for m in doc["measurements"]]
    cliques = [tuple(c) for c in doc["cliques"]]
    try:
        attributes, sizes, ms = _checked([a["name"] for a in doc["attributes"]],
                                         [a["size"] for a in doc["attributes"]], cliques, raw)
    except ValueError as exc:
        raise ValueError(f"{stem}.json / .npz: {exc}") from None
    return {"attributes": attributes, "sizes": sizes, "cliques": cliques, "info": doc["info"],
            "measurements": [{"attrs": a, "y": y, "sigma": s} for a, y, s in ms]}


def write_result(stem: str | os.PathLike, tables: Sequence[np.ndarray], meta: dict) -> None:
    """Write ``STEM.mbi.npz`` (``mu{j}`` per model clique) and ``STEM.mbi.json`` (``meta``)."""
    _save(Path(stem), ".mbi", {"format": RESULT_FORMAT, "version": VERSION, **meta},
          {f"mu{j}": np.asarray(t, dtype=np.float64).ravel() for j, t in enumerate(tables)})


def read_result(stem: str | os.PathLike) -> tuple[list[np.ndarray], dict]:
    """``STEM.mbi.npz``'s clique tables (flat, in order) and ``STEM.mbi.json``."""
    meta = json.loads(Path(f"{stem}.mbi.json").read_text())
    with np.load(f"{stem}.mbi.npz") as z:
        tables = [np.array(z[f"mu{j}"]) for j in range(len(z.files))]
    return tables, meta


def project_table(table: np.ndarray, attrs: Sequence[str], onto: Sequence[str]) -> np.ndarray:
    """Sum ``table`` (axes ``attrs``) down to ``onto``, axes in the order of ``onto``."""
    drop = tuple(i for i, a in enumerate(attrs) if a not in onto)
    kept = [a for a in attrs if a in onto]
    out = table.sum(axis=drop) if drop else table
    return np.transpose(out, [kept.index(a) for a in onto])


def home_clique(attrs: Sequence[str], cliques: Sequence[Sequence[str]], size_of: dict) -> int:
    """Index of the smallest model clique containing ``attrs`` (mbi's ``CliqueVector.parent`` rule)."""
    inside = [j for j, c in enumerate(cliques) if set(attrs) <= set(c)]
    if not inside:
        raise ValueError(f"measurement over {list(attrs)} lies in no model clique")
    return min(inside, key=lambda j: math.prod(size_of[a] for a in cliques[j]))


def homes(inter: dict) -> list[int]:
    """Each measurement's home clique."""
    size_of = dict(zip(inter["attributes"], inter["sizes"]))
    return [home_clique(m["attrs"], inter["cliques"], size_of) for m in inter["measurements"]]


def measured(inter: dict, tables: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The model's table of each measurement's scope (flat), read from its home clique."""
    size_of = dict(zip(inter["attributes"], inter["sizes"]))
    out = []
    for m, j in zip(inter["measurements"], homes(inter)):
        c = inter["cliques"][j]
        out.append(project_table(np.reshape(tables[j], [size_of[a] for a in c]), c, m["attrs"]).ravel())
    return out


def objective(inter: dict, tables: Sequence[np.ndarray]) -> float:
    """``sum_i ||mu_{C_i} - y_i||^2 / (2 sigma_i^2)`` of the clique ``tables`` (probabilities)."""
    return sum(float(np.sum((mu - m["y"]) ** 2)) / (2.0 * m["sigma"] ** 2)
               for mu, m in zip(measured(inter, tables), inter["measurements"]))
