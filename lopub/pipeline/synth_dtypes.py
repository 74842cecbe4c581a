"""The input's pandas categorical columns, given back as such by :meth:`Synthesizer.sample
<lopub.pipeline.synthesizer.Synthesizer.sample>`.

A domain's categories are strings, so a release gives a categorical column as a categorical of
its labels.  A pandas categorical column of the input (a text attribute, not binned) is recorded
at :meth:`~lopub.pipeline.synthesizer.Synthesizer.fit` as ``{"ordered": bool, "type": "int" |
"float" | "str"}``: the release's column then has the input's ``ordered`` flag (``pd.cut`` and
:meth:`lopub.data.dataset.Dataset.to_pandas` give ordered ones) and integer or float categories
(``pd.Categorical([1, 2, 3])``) come back as those numbers, not the strings ``'1'``, ``'2'``.
Other category types (``pd.cut``'s intervals, timestamps) keep their labels.  The record is
``meta["synthesizer"]["categorical"]`` of a saved synthesizer (absent in older files: none).
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from lopub.data.domain import Domain

TYPES = ("int", "float", "str")


def record(df: pd.DataFrame, domain: Domain) -> dict[str, dict[str, Any]]:
    """``{attribute: {"ordered", "type"}}`` of ``df``'s categorical columns that a release gives
    as categoricals (attributes of kind text, not binned)."""
    out = {}
    for a in domain.attributes:  # loop over columns
        col = df[a.name] if a.name in df.columns else None
        if (a.kind != "text" or a.binning is not None or not isinstance(col, pd.Series)
                or not isinstance(col.dtype, pd.CategoricalDtype)):
            continue
        cats = col.cat.categories
        kind = ("int" if pd.api.types.is_integer_dtype(cats) else
                "float" if pd.api.types.is_float_dtype(cats) else "str")
        out[a.name] = {"ordered": bool(col.cat.ordered), "type": kind}
    return out


def check(value: Any, where: str) -> dict[str, dict[str, Any]]:
    """A record read from a file (None: an older file, no record), checked."""
    if value is None:
        return {}
    ok = isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, dict) and isinstance(v.get("ordered"), bool)
        and v.get("type") in TYPES for k, v in value.items())
    if not ok:
        raise ValueError(f"{where}: meta['synthesizer']['categorical'] ({value!r}) must map column "
                         f"names to {{'ordered': true/false, 'type': one of {list(TYPES)}}}")
    return value


def restore(df: pd.DataFrame, categorical: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """``df`` (a release of labels) with the recorded columns' ordered flag and number categories
    (in place; a column whose labels do not all spell distinct numbers keeps its labels)."""
    for name, how in categorical.items():  # loop over columns
        col = df[name] if name in df.columns else None
        if not isinstance(col, pd.Series) or not isinstance(col.dtype, pd.CategoricalDtype):
            continue
        if how["type"] != "str":
            values = pd.to_numeric(pd.Series(col.cat.categories, dtype=object), errors="coerce")
            whole = how["type"] == "float" or bool((values == values.round()).all())
            if values.notna().all() and values.is_unique and whole:
                col = col.cat.rename_categories(values.to_numpy(dtype="int64" if how["type"] == "int" else float))
        df[name] = col.cat.as_ordered() if how["ordered"] else col.cat.as_unordered()
    return df
