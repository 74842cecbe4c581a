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
    """A category label: integral floats are written as integers (1.0 -> "1"); bytes decoded as UTF-8, as
    pandas' ``astype(str)`` does when a column is coded (b"ab" -> "ab", not "b'ab'")."""
    if isinstance(value, bytes):
        value = value.decode("utf-8")
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
    values = parse_numbers(col.astype(str).str.strip())
    return values if np.isfinite(values).all() else None


def parse_numbers(text: pd.Series) -> np.ndarray:
    """``pd.to_numeric(text, errors="coerce")`` as floats (NaN where a string is not a number),
    parsing each distinct string once: pandas parses a string that is not a number slowly (2.4 s
    for 10^6 cells of a text column, 0.03 s for its 8 distinct values), and numbers 20x slower
    than a hash of the distinct strings when few are distinct (10^6 cells of "0" and "1")."""
    head = text.iloc[:10_000]
    if head.nunique() > head.size // 2:  # mostly distinct: one pass (a hash pass would cost more)
        try:
            return pd.to_numeric(text, errors="raise").to_numpy(dtype=float)
        except (ValueError, TypeError):
            pass
    codes, uniq = pd.factorize(text)
    values = pd.to_numeric(pd.Series(np.asarray(uniq, dtype=object), dtype=object),
                           errors="coerce").to_numpy(dtype=float)
    return np.append(values, np.nan)[codes]  # code -1 (a missing cell): NaN


def _natural_key(s: str):
    """Sort key: labels spelling finite numbers first, by value; then the others ("nan", "x")."""
    value = _numeric_key(s)
    return (1, 0.0, s) if value is None else (0, value, s)


#: the UTC offset ending an ISO 8601 timestamp with a time of day ("...T10:00:00+01:00", "...Z")
_OFFSET = r"[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?\s*(Z|[+-]\d{2}:?\d{2})$"
_EPOCH = pd.Timestamp("1970-01-01")


def zone_name(tz: object) -> str:
    """A pandas time zone as a domain records it: an IANA name, ``UTC`` or ``+HH:MM``."""
    name = str(getattr(tz, "key", None) or getattr(tz, "zone", None) or tz)
    if name.startswith("UTC") and len(name) > 3:  # datetime.timezone(timedelta(hours=1)): "UTC+01:00"
        name = name[3:]
    return "UTC" if name in ("+00:00", "-00:00", "Z") else name


def _offsets(text: pd.Series, name: str) -> list[str] | None:
    """The distinct UTC offsets of ISO timestamp strings, normalized (``+01:00``; ``Z`` is
    ``+00:00``), sorted; None when no string has one; DomainError when only some do."""
    found = text.astype(str).str.strip().str.extract(_OFFSET, expand=False)
    if found.isna().all():
        return None
    if found.isna().any():
        without = text[found.isna()].iloc[0]
        raise DomainError(f"attribute {name!r}: some timestamps carry a UTC offset and some do not "
                          f"(e.g. {without!r}); write every one with its offset, or none")
    norm = found.str.replace("Z", "+00:00", regex=False).str.replace(r"^([+-]\d{2})(\d{2})$", r"\1:\2",
                                                                     regex=True)
    return sorted(set(norm))


def stamps_of(col: pd.Series, name: str) -> tuple[pd.DatetimeIndex, list[str] | None]:
    """Datetime values or ISO strings as a DatetimeIndex, and the strings' distinct UTC offsets.

    Strings with one offset give stamps in that offset, with several stamps in UTC (the
    instants kept); a tz-aware column keeps its zone; naive values stay naive (offsets None).
    """
    if pd.api.types.is_datetime64_any_dtype(col):
        return pd.DatetimeIndex(col), None
    offsets = _offsets(col, name) if col.size else None
    values = pd.to_datetime(col, errors="coerce", format="mixed", utc=offsets is not None)
    bad = values.isna().to_numpy()
    if bad.any():
        raise DomainError(f"attribute {name!r}: {col.iloc[int(np.argmax(bad))]!r} is not a date")
    stamps = pd.DatetimeIndex(values)
    if offsets is not None and len(offsets) == 1:
        stamps = stamps.tz_convert(offsets[0])
    return stamps, offsets


def date_days(col: pd.Series, name: str, timezone: str | None = None) -> np.ndarray:
    """Dates (datetime values or ISO strings) as days since 1970-01-01 (floats).

    With ``timezone`` (a zoned ``datetime`` attribute) the days are UTC instants: tz-aware
    values (or strings with an offset) are converted, naive ones read as local times of that
    zone.  Without it (naive attributes, domains written before zones) a tz-aware value counts
    by its wall-clock time, as before.
    """
    return stamp_days(stamps_of(col, name)[0], name, timezone)


def stamp_days(stamps: pd.DatetimeIndex, name: str, timezone: str | None = None) -> np.ndarray:
    """:func:`date_days` of parsed stamps (:func:`stamps_of`)."""
    if timezone is None:
        stamps = stamps if stamps.tz is None else stamps.tz_localize(None)
    else:
        if stamps.tz is None:
            try:
                stamps = stamps.tz_localize(timezone, ambiguous="raise", nonexistent="raise")
            except (ValueError, TypeError) as exc:  # pytz/pandas: AmbiguousTimeError, NonExistentTimeError
                raise DomainError(f"attribute {name!r}: a time without a UTC offset is not one instant in "
                                  f"{timezone} ({exc}); write the timestamps with their offset") from None
        stamps = stamps.tz_convert("UTC").tz_localize(None)
    return np.asarray((stamps - _EPOCH) / pd.Timedelta(days=1), dtype=float)


def date_kind(days: np.ndarray) -> str:
    """"datetime" when some value has a time of day (a release then gives times back), else "date"."""
    return "datetime" if np.any(days != np.floor(days)) else "date"


def days_to_stamps(days: np.ndarray, timezone: str | None) -> pd.Series:
    """Days since 1970-01-01 as timestamps to the second: naive, or in ``timezone`` (UTC days)."""
    stamps = pd.Series(_EPOCH + pd.to_timedelta(np.floor(np.asarray(days) * 86_400.0), unit="s"))
    return stamps if timezone is None else stamps.dt.tz_localize("UTC").dt.tz_convert(timezone)


def date_label(days: float, unit: str, timezone: str | None = None) -> str:
    """Days since 1970-01-01 as a date (``unit`` "D") or a date and time to the minute ("min");
    with ``timezone`` the days are UTC and the label is the local date (and time) in that zone."""
    t = _EPOCH + pd.Timedelta(days=float(days))
    if timezone is not None:
        t = t.tz_localize("UTC").tz_convert(timezone).tz_localize(None)
    t = t.floor(unit)
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
