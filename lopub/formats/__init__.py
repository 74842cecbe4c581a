"""lopub's on-disk file formats: reading, writing, validation and JSON Schemas.

One module per format; the data classes keep thin ``to_dict``/``from_dict``/
``save``/``load`` methods that call them:

============================  ====================================  ===========================================
format                        module                                JSON Schema (package data)
============================  ====================================  ===========================================
``lopub-domain`` v1           :mod:`lopub.data.domain`           ``jsonschema/domain.schema.json``
``lopub-spec`` v1             :mod:`lopub.reports.spec`             ``jsonschema/spec.schema.json``
``lopub-reports`` v1          :mod:`lopub.reports.parquet`          ``jsonschema/reports-metadata.schema.json``
``lopub-reports-dataset`` v1  :mod:`lopub.reports.folder`  ``jsonschema/reports-dataset.schema.json``
``lopub-model`` v1            :mod:`lopub.model.format`            ``jsonschema/model.schema.json``
(junction tree)               :mod:`lopub.dependency.tree_format`             ``$defs/junction_tree`` of the model schema
============================  ====================================  ===========================================

The schemas (JSON Schema draft 2020-12) describe the documents lopub writes
and are what other programs can validate against; lopub's own loaders check
more (a table sums to 1, bin edges increase, the junction tree has the running
intersection property, Bloom filters do not collide...).  A reports file is
Parquet: its schema covers the file's key/value metadata.  A reports dataset
(``lopub-reports-dataset``) is a folder of reports files with a JSON manifest,
``_lopub_dataset.json``, which its schema covers.

This package module imports none of its submodules (they import the data
classes, which import the constants below), so it is safe to import anywhere.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

DOMAIN_FORMAT, DOMAIN_VERSION = "lopub-domain", 1
SPEC_FORMAT, SPEC_VERSION = "lopub-spec", 1
REPORTS_FORMAT, REPORTS_VERSION = "lopub-reports", 1
DATASET_FORMAT, DATASET_VERSION = "lopub-reports-dataset", 1
MODEL_FORMAT, MODEL_VERSION = "lopub-model", 1

SCHEMAS = ("domain", "spec", "reports-metadata", "reports-dataset", "model")
SCHEMA_ID = "urn:lopub:schema:{name}:1"

__all__ = ["DOMAIN_FORMAT", "DOMAIN_VERSION", "SPEC_FORMAT", "SPEC_VERSION", "REPORTS_FORMAT",
           "REPORTS_VERSION", "DATASET_FORMAT", "DATASET_VERSION", "MODEL_FORMAT", "MODEL_VERSION", "SCHEMAS", "schema", "validator",
           "validate"]


def _check_name(name: Any) -> str:
    if name not in SCHEMAS:
        raise ValueError(f"name ({name!r}) is not a lopub file format; expected one of {SCHEMAS}")
    return name


@lru_cache(maxsize=None)
def _schema_text(name: str) -> str:
    return resources.files(__name__).joinpath("jsonschema", f"{name}.schema.json").read_text("utf-8")


def schema(name: str) -> dict:
    """The JSON Schema (draft 2020-12) of format ``name``, one of :data:`SCHEMAS`.

    A fresh dict on every call.  Schemas refer to each other by ``$id``
    (``urn:lopub:schema:<name>:1``); :func:`validate` resolves these.
    """
    return json.loads(_schema_text(_check_name(name)))


def validator(name: str) -> Any:
    """A ``jsonschema.Draft202012Validator`` for format ``name`` (other lopub schemas resolved).

    Needs the optional ``jsonschema`` package (``pip install 'lopub[test]'``).

    Raises
    ------
    ImportError
        ``jsonschema`` is not installed.
    """
    try:
        import jsonschema
        from referencing import Registry, Resource
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"validating against lopub's JSON Schemas needs the jsonschema package "
                          f"({exc}); install it with pip install 'lopub[test]'") from None
    registry = Registry().with_resources(
        (SCHEMA_ID.format(name=n), Resource.from_contents(schema(n))) for n in SCHEMAS)
    return jsonschema.Draft202012Validator(schema(_check_name(name)), registry=registry)


def validate(document: Any, name: str) -> None:
    """Validate ``document`` (parsed JSON) against the schema of format ``name``.

    Raises
    ------
    jsonschema.ValidationError
        The document does not match the schema (the most relevant error).
    ImportError
        ``jsonschema`` is not installed.
    """
    check = validator(name)  # ImportError with advice when jsonschema is missing
    from jsonschema.exceptions import best_match

    error = best_match(check.iter_errors(document))
    if error is not None:
        raise error
