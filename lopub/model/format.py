"""The model file (``"format": "lopub-model"``, ``"version": 1``).

JSON, gzip-compressed when the path ends in ``.gz`` (on reading, gzip is
recognized by its magic bytes, whatever the name), written atomically.
JSON Schema: ``lopub/formats/jsonschema/model.schema.json``.  ``n`` may be
null (unknown report count)::

    {"format": "lopub-model", "version": 1, "n": 45222,
     "domain": {...lopub-domain...},
     "junction_tree": {"cliques": [[a, b], ...], "edges": [[parent, child]...],
                       "roots": [...], "order": [...], "fill_edges": [...],
                       "separators": [...]},
     "cliques": [{"attrs": [a, b], "shape": [|a|, |b|], "p": [...row-major...],
                  "meta": {...}}],
     "graph": {...DependencyGraph.to_dict()...} or null,
     "meta": {...fit report, free-form...}}

``"checksum": "sha256:<hex>"`` (SHA-256 of the object without it, as JSON
with sorted keys and no spaces) is written by :func:`save_model` and
verified on reading (files without it, written before, are still read).
Reading validates every field and raises :class:`ModelFormatError` (a
``ValueError``) naming the file, the field and what was expected.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any, Callable

from lopub.dependency.graph import DependencyGraph
from lopub.dependency.junction import JunctionTree
from lopub.data.domain import Domain
from lopub.data.marginal import Marginal, _jsonable, probability_table
from lopub.formats import MODEL_FORMAT, MODEL_VERSION
from lopub.formats._io import read_json_file, write_compact_json
from lopub.io import missing_checksum
from lopub.data.domain import domain_from_dict, domain_to_dict
from lopub.dependency.tree_format import tree_to_dict


class ModelFormatError(ValueError):
    """A model file is unreadable (truncated, not JSON) or a field is invalid."""


def model_to_dict(model: Any) -> dict[str, Any]:
    """The JSON object of a :class:`~lopub.model.graphical.Model`."""
    return {
        "format": MODEL_FORMAT, "version": MODEL_VERSION, "n": model.n,
        "domain": domain_to_dict(model.domain), "junction_tree": tree_to_dict(model.tree),
        "cliques": [{"attrs": list(m.attrs), "shape": list(m.values.shape),
                     "p": m.values.ravel().tolist(), "meta": _jsonable(m.meta)}
                    for m in model.cliques],
        "graph": None if model.graph is None else model.graph.to_dict(),
        "meta": _jsonable(model.meta),
    }


def model_from_dict(build: Callable[..., Any], obj: Any, *, source: str = "model") -> Any:
    """Validate a model object and return ``build(domain, tree, tables, n, graph, meta)``.

    Raises
    ------
    ModelFormatError
        (a ``ValueError``) naming ``source``, the field and what was
        expected: format/version, keys, types, clique tables (shape of the
        domain, finite, >= 0, sum 1), ``n`` (positive int or null), junction
        tree (valid forest, one root per component, running intersection);
        also any ``ValueError``/``TypeError`` of ``build``.
    """
    _verify_checksum(obj, source)
    try:
        _check_header(obj)
        n = _check_n(obj["n"])
        domain = _domain_of(obj["domain"])
        tree = JunctionTree.from_dict(obj["junction_tree"], domain)
        tables = _clique_tables(obj["cliques"], tree, domain, n)
        graph = None if obj.get("graph") is None else _graph_of(obj["graph"], domain)
        meta = obj.get("meta", {})
        if not isinstance(meta, dict):
            raise ModelFormatError(f"field 'meta' ({type(meta).__name__}) is not an object; "
                                   f"expected a JSON object")
        return build(domain, tree, tables, n, graph, dict(meta))
    except (ValueError, TypeError) as exc:  # ModelFormatError, DomainError, tree/table errors
        raise ModelFormatError(f"{source}: {exc}") from None


def model_checksum(obj: dict) -> str:
    """``"sha256:<hex>"`` of the model object without its ``checksum`` (canonical JSON)."""
    body = {k: v for k, v in obj.items() if k != "checksum"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def save_model(model: Any, path: str | os.PathLike) -> None:
    """Write ``model`` atomically as compact JSON (gzip when ``path`` ends in .gz), with
    its ``checksum``."""
    obj = model_to_dict(model)
    obj["checksum"] = model_checksum(obj)
    write_compact_json(obj, path)


def _verify_checksum(obj: Any, name: str) -> None:
    """A stored ``checksum`` must match the content (files without one are older)."""
    if not isinstance(obj, dict) or "checksum" not in obj:
        return
    stored = obj["checksum"]
    if not (isinstance(stored, str) and re.fullmatch(r"sha256:[0-9a-f]{64}", stored)):
        raise ModelFormatError(f"{name}: field 'checksum' ({stored!r:.80}) must be 'sha256:' "
                               f"and 64 lowercase hex digits")
    try:
        ok = obj["checksum"] == model_checksum(obj)
    except (TypeError, ValueError):  # NaN or odd values: the field checks below name them
        return
    if not ok:
        raise ModelFormatError(f"{name}: fails its checksum: the model changed after it was "
                               f"written (damaged or edited)")


def load_model(build: Callable[..., Any], path: str | os.PathLike) -> Any:
    """Read a model file (gzip detected by content) and :func:`model_from_dict` it.

    Raises
    ------
    FileNotFoundError
        No such file.
    ModelFormatError
        The file is truncated, not JSON, or any field is invalid; the
        message names the file and the field.
    """
    name = os.fspath(path)
    if not os.path.exists(name):
        raise FileNotFoundError(f"model file {name!r} does not exist")
    obj = read_json_file(name, ModelFormatError, "lopub model file")
    if isinstance(obj, dict) and "checksum" not in obj:  # refused unless --no-verify
        try:  # what the file is (format, version) is said first; then that it has no checksum
            _check_header(obj)
        except ModelFormatError as exc:
            raise ModelFormatError(f"{name}: {exc}") from None
        missing_checksum(name, "model file", ModelFormatError)
    return model_from_dict(build, obj, source=name)


def _check_header(obj: Any) -> None:
    """A JSON object with the right format, version and required keys."""
    if not isinstance(obj, dict):
        raise ModelFormatError(f"content is a JSON {type(obj).__name__}, not a lopub model; "
                               f"expected an object with \"format\": \"{MODEL_FORMAT}\"")
    if obj.get("format") != MODEL_FORMAT:
        raise ModelFormatError(f"field 'format' ({obj.get('format')!r}) is not a lopub model; "
                               f"expected {MODEL_FORMAT!r}")
    if type(obj.get("version")) is not int or obj["version"] != MODEL_VERSION:
        raise ModelFormatError(f"field 'version' ({obj.get('version')!r}): model version "
                               f"{obj.get('version')!r} is not supported; expected {MODEL_VERSION}")
    for key in ("n", "domain", "junction_tree", "cliques"):
        if key not in obj:
            raise ModelFormatError(f"missing field {key!r}; expected the keys n, domain, "
                                   f"junction_tree, cliques (and graph, meta)")


def _domain_of(raw: Any) -> Domain:
    try:
        return domain_from_dict(raw)
    except (ValueError, TypeError, KeyError) as exc:
        raise ModelFormatError(f"field 'domain': {exc}") from None


def _graph_of(raw: Any, domain: Domain) -> DependencyGraph:
    try:
        return DependencyGraph.from_dict(raw, domain)
    except (ValueError, TypeError) as exc:
        raise ModelFormatError(f"field 'graph': {exc}") from None


def _check_n(n: Any) -> int | None:
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ModelFormatError(f"field 'n' ({n!r}) is not a positive integer; expected a "
                               f"positive integer (the number of reports) or null")
    return n


def _clique_tables(raw: Any, tree: JunctionTree, domain: Domain, n: int | None) -> list[Marginal]:
    """One checked :class:`Marginal` per junction-tree clique, from the file's ``cliques``."""
    k = len(tree.cliques)
    if not isinstance(raw, list) or len(raw) != k:
        got = f"{len(raw)} tables" if isinstance(raw, list) else type(raw).__name__
        raise ModelFormatError(f"field 'cliques' has {got}; expected {k} (one per junction-tree clique)")
    return [_clique_table(i, c, attrs, domain, n) for i, (c, attrs) in enumerate(zip(raw, tree.cliques))]


def _clique_table(i: int, c: Any, attrs: tuple[str, ...], domain: Domain, n: int | None) -> Marginal:
    for key in ("attrs", "shape", "p"):
        if not isinstance(c, dict) or key not in c:
            raise ModelFormatError(f"missing field 'cliques[{i}].{key}'")
    if c["attrs"] != list(attrs):
        raise ModelFormatError(f"field 'cliques[{i}].attrs' ({c['attrs']!r}) does not match "
                               f"junction_tree.cliques[{i}]; expected {list(attrs)}")
    sub = domain.project(list(attrs))
    if c["shape"] != list(sub.sizes):
        raise ModelFormatError(f"field 'cliques[{i}].shape' ({c['shape']!r}) does not match the "
                               f"domain; expected {list(sub.sizes)}")
    if not isinstance(c.get("meta", {}), dict):
        raise ModelFormatError(f"field 'cliques[{i}].meta' is not an object; expected a JSON object")
    values = probability_table(c["p"], sub, f"cliques[{i}].p")
    return Marginal(sub, values, n, c.get("meta", {}))
