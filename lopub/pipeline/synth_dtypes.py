"""The input's pandas dtypes that a domain does not carry, given back by :meth:`Synthesizer.sample
<lopub.pipeline.synthesizer.Synthesizer.sample>`.

A domain's categories are strings, so a release gives a categorical column as a categorical of
its labels, and a duration (read as seconds, :func:`lopub.data.schema.infer_schema`) as numbers.
:meth:`~lopub.pipeline.synthesizer.Synthesizer.fit` records, per column:

* a pandas categorical column (a text attribute, not binned): ``{"type": "int" | "float" | "str",
  "ordered": bool}``; the release's column then has the input's ``ordered`` flag (``pd.cut`` and
  :meth:`lopub.data.dataset.Dataset.to_pandas` give ordered ones) and integer or float categories
  (``pd.Categorical([1, 2, 3])``) come back as those numbers, not the strings ``'1'``, ``'2'``.
  Other category types (``pd.cut``'s intervals, timestamps) keep their labels.
* a ``timedelta64`` column: ``{"type": "timedelta"}``; the release's seconds become durations.
* a pandas nullable integer column (``Int64``, ``Int32``, ``UInt8`` ...) with no value at all: ``{"type":
  "Int64"}`` (its dtype's name); such a column's kind is inferred as ``number`` (there is no value to
  tell), so the release's column (NaN) becomes that dtype again, as do whole numbers a given domain's
  model draws (other numbers, within a number's bins, are kept as floats).  A nullable integer column
  with values is an integer attribute and comes back as such (``Int64`` when missing values are drawn).
* a pandas ``boolean``, ``string``, ``Float64`` or ``Float32`` column with no value at all: ``{"type":
  "string"}`` (its dtype's name); the release's all-missing column (NaN, a categorical of no
  label) becomes that dtype again (``<NA>``).  With values, such columns come back by their kind.
* an integer column label (``pandas.read_csv(path, header=None)``: 0, 1, ...; the attribute is
  named ``"0"``, ``"1"``): ``{"label": 0}``; the release's column is labelled ``0`` again.

The record is ``meta["synthesizer"]["dtypes"]`` of a saved synthesizer (absent in older files: none).
"""
from __future__ import annotations

import reprlib
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from lopub.data._header import HEADER_CHECKED, check_columns
from lopub.data.dataset import Dataset
from lopub.data.domain import Attribute, Domain
from lopub.data.schema import infer_domain
from lopub.errors import DomainError

NULLABLE_INTS = ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64")
#: the other pandas extension dtypes an all-missing column is given back as
NULLABLE_OTHERS = ("boolean", "string", "Float32", "Float64")
TYPES = ("int", "float", "str", "timedelta") + NULLABLE_INTS + NULLABLE_OTHERS


def record(df: pd.DataFrame, domain: Domain, labels: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """``{attribute: {"type", "ordered"}}`` of ``df``'s categorical columns that a release gives
    as categoricals (attributes of kind text, not binned), ``{"type": "timedelta"}`` of its
    durations, ``{"type": "Int64"}`` (the dtype's name) of its nullable integer columns without a
    value, and ``"label"``, an attribute's integer column label in ``labels``."""
    out: dict[str, dict[str, Any]] = {a: {"label": int(v)} for a, v in (labels or {}).items()
                                      if a in domain.attrs}
    for a in domain.attributes:  # loop over columns
        col = df[a.name] if a.name in df.columns else None
        if not isinstance(col, pd.Series):
            continue
        if pd.api.types.is_timedelta64_dtype(col) and a.kind in ("integer", "number"):
            out.setdefault(a.name, {})["type"] = "timedelta"
        elif isinstance(col.dtype, pd.CategoricalDtype) and a.kind == "text" and a.binning is None:
            cats = col.cat.categories
            kind = ("int" if pd.api.types.is_integer_dtype(cats) else
                    "float" if pd.api.types.is_float_dtype(cats) else "str")
            out.setdefault(a.name, {}).update(type=kind, ordered=bool(col.cat.ordered))
        elif str(col.dtype) in NULLABLE_INTS + NULLABLE_OTHERS and bool(col.isna().all()):
            out.setdefault(a.name, {})["type"] = str(col.dtype)  # no value: the kind cannot tell
    return out


def check(value: Any, where: str) -> dict[str, dict[str, Any]]:
    """A record read from a file (None: an older file, no record), checked."""
    if value is None:
        return {}
    ok = isinstance(value, dict) and all(isinstance(k, str) and _entry(v) for k, v in value.items())
    if not ok:
        raise ValueError(f"{where}: meta['synthesizer']['dtypes'] ({value!r}) must map column names "
                         f"to {{'type': one of {list(TYPES)}, 'ordered': true/false (for int, float, str), "
                         f"'label': an integer column label}} (type or label or both)")
    return value


def _entry(v: Any) -> bool:
    if not isinstance(v, dict) or not v or set(v) - {"type", "ordered", "label"}:
        return False
    label = v.get("label", 0)
    if not isinstance(label, int) or isinstance(label, bool):
        return False
    return "type" not in v or (v["type"] in TYPES and (v["type"] in ("timedelta",) + NULLABLE_INTS + NULLABLE_OTHERS
                                                       or isinstance(v.get("ordered"), bool)))


def restore(df: pd.DataFrame, dtypes: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """``df`` (a release) with the recorded columns' dtypes (in place; a categorical column whose
    labels do not all spell distinct numbers keeps its labels)."""
    for name, how in dtypes.items():  # loop over columns
        col = df[name] if name in df.columns else None
        if not isinstance(col, pd.Series) or "type" not in how:
            continue
        if how["type"] == "timedelta" and pd.api.types.is_numeric_dtype(col):
            df[name] = pd.to_timedelta(col.astype(float), unit="s")
        elif how["type"] in NULLABLE_INTS:
            df[name] = _nullable_int(col, how["type"])
        elif how["type"] in NULLABLE_OTHERS:
            df[name] = _nullable_other(col, how["type"])
        elif how["type"] != "timedelta" and isinstance(col.dtype, pd.CategoricalDtype):
            df[name] = _categorical(col, how)
    return relabel(df, dtypes)


def relabel(df: pd.DataFrame, dtypes: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """``df`` with the recorded integer column labels (a new frame when there are any)."""
    labels = {a: how["label"] for a, how in dtypes.items() if "label" in how}
    return df.rename(columns=labels) if labels else df


def names(conditions: Mapping[Any, Any] | None, dtypes: dict[str, dict[str, Any]]) -> Mapping[Any, Any] | None:
    """``conditions`` with integer column labels as the attributes' names (``{0: "x"}`` -> ``{"0": "x"}``)."""
    back = {how["label"]: a for a, how in dtypes.items() if "label" in how}
    return conditions if not (back and conditions) else {back.get(k, k): v for k, v in conditions.items()}


def check_conditions(conditions: Any, domain: Domain, dtypes: dict[str, dict[str, Any]],
                     param: str = "conditions") -> None:
    """A TypeError naming ``param`` (``conditions`` of ``sample``, ``where`` of ``query``) when it is not a
    mapping or one of its values is not one value (a list, set, array:
    :func:`~lopub.model.graphical.condition_label` matches no category to those)."""
    if conditions is None:
        return
    if not isinstance(conditions, Mapping):
        raise TypeError(f"{param} ({type(conditions).__name__}) must be a mapping attribute -> label, "
                        f"e.g. {{{domain.attrs[0]!r}: {domain.labels(domain.attrs[0])[0]!r}}}")
    for key, value in conditions.items():  # loop over conditions
        (name,) = names({key: value}, dtypes) or {key: value}
        if name not in domain.attrs or value is None or pd.api.types.is_scalar(value):
            continue  # an unknown attribute or label: DomainError from the sampler, as documented
        labels = list(domain.labels(name))
        missing = domain[name].missing
        example = next((x for x in labels if x != missing), labels[0])
        shown = labels if len(labels) <= 20 else labels[:20] + ["..."]
        how = ("sample each value's condition in proportion to query({!r}) and concatenate" if param == "conditions"
               else "add each value's query weighted by its share in query({!r})").format(name)
        raise TypeError(f"{param}[{key!r}] is a {type(value).__name__}, {reprlib.repr(value)}; expected one "
                        f"label of attribute {name!r}, e.g. {example!r} (labels {shown}): a condition fixes one "
                        f"value. For any of several values, {how}")


def _nullable_int(col: pd.Series, dtype: str) -> pd.Series:
    """``col`` as the nullable integer ``dtype`` when its values are missing or whole numbers in range
    (else ``col``: a binned number's floats, a text attribute's labels)."""
    if isinstance(col.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(col):
        return col
    x = col.to_numpy(dtype=float, na_value=np.nan)  # (pandas casts Int64 to Int8 modulo 256: checked here)
    info = np.iinfo(dtype.lower())
    present = x[~np.isnan(x)]
    whole = (present == np.round(present)) & (present >= info.min) & (present < float(info.max) + 1)
    return col.astype(dtype) if whole.all() else col


def _nullable_other(col: pd.Series, dtype: str) -> pd.Series:
    """``col`` as ``dtype`` (``boolean``, ``string``, ``Float64``...) when every value is missing (the
    column had no value to fit; else ``col``: values a given domain's model draws keep their type)."""
    return col.astype(dtype) if bool(col.isna().all()) else col


def _categorical(col: pd.Series, how: dict[str, Any]) -> pd.Series:
    if how["type"] != "str":
        values = pd.to_numeric(pd.Series(col.cat.categories, dtype=object), errors="coerce")
        whole = how["type"] == "float" or bool((values == values.round()).all())
        if values.notna().all() and values.is_unique and whole:
            col = col.cat.rename_categories(values.to_numpy(dtype="int64" if how["type"] == "int" else float))
    return col.cat.as_ordered() if how["ordered"] else col.cat.as_unordered()


def named_columns(data: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """``data`` with string column names (``pd.read_csv(header=None)``: 0, 1, ... -> "0", "1", ...) and
    the integer labels they had, ``{"0": 0}``; a ValueError names columns that appear twice."""
    check_columns(data, "data")
    named = all(isinstance(c, str) for c in data.columns)
    ints = {str(c): c for c in data.columns if isinstance(c, (int, np.integer)) and not isinstance(c, bool)}
    data = data.rename(columns=str)
    if not named:  # no header row read as names: infer_domain does not weigh them as a record
        data.attrs = {**data.attrs, HEADER_CHECKED: True}
    twice = sorted({str(c) for c in data.columns[data.columns.duplicated()]})
    if twice:
        raise ValueError(f"data has the columns {twice} more than once; column names must be "
                         f"unique (each is one attribute)")
    return data, ints


def declared_order(domain: Domain, df: pd.DataFrame) -> Domain:
    """An inferred domain whose pandas-categorical columns keep their declared categories and order."""
    attrs = []
    for a in domain.attributes:
        col = df[a.name] if a.binning is None and a.name in df.columns else None
        if isinstance(col, pd.Series) and isinstance(col.dtype, pd.CategoricalDtype):
            cats = tuple(str(c).strip() for c in col.cat.categories)
            extra = (a.missing,) if a.missing is not None and a.missing not in cats else ()
            if len(set(cats)) == len(cats) and set(a.categories) <= set(cats) | set(extra):
                a = Attribute(a.name, cats + extra, None, a.kind, a.missing, a.timezone, a.decimals, a.date_format)
        attrs.append(a)
    return Domain(tuple(attrs), domain.provenance, domain.csv)


def coded(data: Any, domain: Domain | None, bins: int | None) -> tuple[Dataset, dict[str, dict[str, Any]]]:
    """``data`` (a DataFrame or a :class:`~lopub.data.dataset.Dataset`) coded against ``domain`` (inferred
    with ``bins`` when None, declared categories kept in order), and its dtypes to give back (:func:`record`);
    the records of :meth:`Synthesizer.fit <lopub.pipeline.synthesizer.Synthesizer.fit>`."""
    if isinstance(data, Dataset):
        if domain is not None and data.domain != domain:
            raise DomainError("data (a Dataset) is coded against another domain than the "
                              "domain parameter")
        return data, {}
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data ({type(data).__name__}) must be a pandas DataFrame or a lopub Dataset")
    data, ints = named_columns(data)
    given = domain
    if domain is None:
        domain = declared_order(infer_domain(data, bins=bins), data)
    extra = [c for c in data.columns if c not in domain.attrs] if given is not None else []
    if extra:  # documented (Synthesizer.fit), and said: a release without a column the user gave
        warnings.warn(f"data columns {extra[:10]}{' ...' if len(extra) > 10 else ''} ({len(extra)}) are "
                      f"not in the domain parameter: left out of the model and the release", UserWarning,
                      stacklevel=4)
    return Dataset.from_pandas(data, domain), record(data, domain, ints)
