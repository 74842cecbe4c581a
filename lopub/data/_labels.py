"""How labels and numbers are spelled: shared by encoding (``dataset``) and inference (``schema``)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from lopub.errors import DomainError

#: cells read as a missing value in a column that is numbers otherwise (``--na-values`` adds more)
NA_TOKENS = ("?", "NA", "N/A", "n/a", "")


def _numeric_key(label: str) -> float | None:
    """The number a label spells ("1", "1.0", " 1e0" -> 1.0), None if it is not numeric."""
    try:
        value = float(label)
    except ValueError:
        return None
    return value if np.isfinite(value) else None


def _category_label(value: object) -> str:
    """A category label: integral floats are written as integers (1.0 -> "1")."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value).strip()


def _numbers(col: pd.Series) -> np.ndarray | None:
    """The column's values as floats when it holds numbers, else None.

    A numeric column qualifies; so does a column of strings (a CSV read as
    text) when every value spells a finite number ("1", "01", "2.5").  Its
    labels, should it stay categorical, are still the strings as written.
    """
    if pd.api.types.is_bool_dtype(col):
        return None
    if pd.api.types.is_numeric_dtype(col):
        return col.to_numpy(dtype=float)
    if not (pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col)) or col.empty:
        return None
    values = pd.to_numeric(col.astype(str).str.strip(), errors="coerce").to_numpy(dtype=float)
    return values if np.isfinite(values).all() else None


def _natural_key(s: str):
    """Sort key: labels spelling finite numbers first, by value; then the others ("nan", "x")."""
    value = _numeric_key(s)
    return (1, 0.0, s) if value is None else (0, value, s)


def date_days(col: pd.Series, name: str) -> np.ndarray:
    """Dates (datetime values or ISO strings) as days since 1970-01-01 (floats)."""
    values = pd.to_datetime(col, errors="coerce", format="mixed") if not \
        pd.api.types.is_datetime64_any_dtype(col) else col
    bad = values.isna().to_numpy()
    if bad.any():
        raise DomainError(f"attribute {name!r}: {col.iloc[int(np.argmax(bad))]!r} is not a date")
    stamps = pd.DatetimeIndex(values)
    if stamps.tz is not None:
        stamps = stamps.tz_localize(None)
    return (stamps - pd.Timestamp("1970-01-01")) / pd.Timedelta(days=1)


def date_kind(days: np.ndarray) -> str:
    """"datetime" when some value has a time of day (a release then gives times back), else "date"."""
    return "datetime" if np.any(days != np.floor(days)) else "date"


def date_label(days: float, unit: str) -> str:
    """Days since 1970-01-01 as a date (``unit`` "D") or a date and time to the minute ("min")."""
    t = (pd.Timestamp("1970-01-01") + pd.Timedelta(days=float(days))).floor(unit)
    return str(t.date()) if unit == "D" else t.strftime("%Y-%m-%d %H:%M")


#: a number written with a decimal comma ("1,5", "-0,25", "12"), as in a European export
_DECIMAL_COMMA = r"[+-]?(?:\d+(?:,\d*)?|,\d+)"
#: a number written with "," thousands separators ("123,456", "1,234.5"), or a plain one
_THOUSANDS = r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?"


def respelled_numbers(text: pd.Series, decimal: str) -> pd.Series | None:
    """The strings of ``text`` (no missing cells) as plain numbers ("1.5", "123456") when every
    one is a number written with the decimal mark ``decimal`` ("," -> "1,5"; "." -> thousands
    separators "123,456") and at least one holds a comma; else None."""
    if text.empty or not text.str.contains(",", regex=False).any():
        return None
    s = text.str.strip()
    if not s.str.fullmatch(_DECIMAL_COMMA if decimal == "," else _THOUSANDS).all():
        return None
    return s.str.replace(",", ".", regex=False) if decimal == "," else s.str.replace(",", "", regex=False)
