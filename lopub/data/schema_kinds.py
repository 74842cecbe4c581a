"""What kind each column of a raw table is (a part of :mod:`lopub.data.schema`): boolean, integer,
number, date, datetime (with its time zone) or text, its present values as floats and its missing cells."""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lopub.data._labels import _category_label, _numbers, date_kind, respelled_numbers, stamp_days, stamps_of, zone_name
from lopub.errors import DomainError

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(\s*(Z|[+-]\d{2}:?\d{2}))?)?$")
_SLASH_DATE = re.compile(r"^\d{1,2}/\d{1,2}/\d{4}$")  # 01/31/2024 (US) or 31/01/2024
_DOT_DATE = re.compile(r"^\d{1,2}\.\d{1,2}\.\d{4}$")  # 31.01.2024 (day first: German and others)
_BOOLEAN = ("True", "False")  # as pandas writes booleans: other spellings stay text labels


@dataclass(frozen=True)
class _Zone:
    """The time zone of a ``datetime`` column (None: naive) and the notes on it."""

    name: str | None = None
    notes: tuple[str, ...] = ()


_NAIVE = _Zone()


def _stamps(present: pd.Series, name: str) -> tuple[str, np.ndarray, _Zone]:
    """(kind, days, zone) of datetime values or ISO strings: a tz-aware column keeps its zone,
    strings with one UTC offset that offset, with several UTC (with a note); days are UTC
    instants when there is a zone."""
    stamps, offsets = stamps_of(present, name)
    if stamps.tz is None:
        days = stamp_days(stamps, name)
        return date_kind(days), days, _NAIVE
    if offsets is not None and len(offsets) > 1:
        shown = ", ".join(offsets[:6]) + (", ..." if len(offsets) > 6 else "")
        zone = _Zone("UTC", (f"timestamps with several UTC offsets ({shown}): normalized to UTC; a release "
                             f"gives them in UTC; to have it in their zone, set \"timezone\" of this attribute "
                             f"in the domain file to its name (e.g. \"Europe/Paris\")",))
    else:
        zone = _Zone(zone_name(stamps.tz))
    return "datetime", stamp_days(stamps, name, zone.name), zone


def _kind(raw: pd.Series, na: frozenset) -> tuple[str, np.ndarray | None, np.ndarray, _Zone]:
    """(kind, the present values as floats for numbers/dates or None, missing mask, time zone)."""
    missing = raw.isna().to_numpy()
    if pd.api.types.is_bool_dtype(raw):
        return "boolean", None, missing, _NAIVE
    if pd.api.types.is_datetime64_any_dtype(raw):
        kind, days, zone = _stamps(raw[~missing], str(raw.name))
        return kind, days, missing, zone
    if pd.api.types.is_numeric_dtype(raw):
        x = raw.to_numpy(dtype=float)
        missing = missing | ~np.isfinite(x)
        return _int_or_number(x[~missing]), x[~missing], missing, _NAIVE
    text = raw.astype(str).str.strip().where(~pd.Series(missing, index=raw.index))
    token = text.isin(na).to_numpy() & ~missing
    rest = raw[~missing & ~token]
    values = _numbers(rest)
    if values is not None and rest.size:
        return _int_or_number(values), values, missing | token, _NAIVE
    labels = pd.Series(rest.astype(str).str.strip().unique())  # the checks below hold for all rows
    if labels.size and labels.isin(_BOOLEAN).all():  # when they hold for each distinct label
        return "boolean", None, missing, _NAIVE
    if labels.size and (labels.str.match(_ISO_DATE).all() or _slash_dates(labels) == "month first"):
        try:
            kind, days, zone = _stamps(rest, str(raw.name))
        except DomainError as exc:
            if "UTC offset" in str(exc):  # some with an offset, some without: text, with the reason
                why = str(exc).split(": ", 1)[-1]  # the message without "attribute 'x': "
                return "text", None, missing, _Zone(None, (f"{why}: kept as text",))
        else:
            return kind, days, missing, zone
    return "text", None, missing, _NAIVE


def _slash_dates(labels: pd.Series) -> str | None:
    """The order of ``MM/DD/YYYY`` or ``DD/MM/YYYY`` dates: ``"month first"`` when some second
    field is above 12 and no first field is (US dates), ``"day first"`` the other way round,
    ``"day and month order unclear"`` when no field is above 12 or both are; None when the labels
    are not all such dates."""
    if not labels.size or not labels.str.fullmatch(_SLASH_DATE).all():
        return None
    parts = labels.str.split("/", expand=True).astype(int)
    first, second = int(parts[0].max()), int(parts[1].max())
    if (first > 12) == (second > 12) or max(first, second) > 31:
        return "day and month order unclear"
    return "month first" if second > 12 else "day first"


def _dotted_dates(labels: pd.Series) -> bool:
    """Whether the labels are all ``DD.MM.YYYY`` dates."""
    return bool(labels.size) and bool(labels.str.fullmatch(_DOT_DATE).all())


def _int_or_number(x: np.ndarray) -> str:
    return "integer" if x.size and np.all(x == np.round(x)) else "number"


def _date_format(kind: str, present: pd.Series) -> str | None:
    """``%m/%d/%Y`` for a date column read from US ``MM/DD/YYYY`` strings, else None (ISO)."""
    if kind != "date" or pd.api.types.is_datetime64_any_dtype(present):
        return None
    return "%m/%d/%Y" if _slash_dates(pd.Series(present.astype(str).str.strip().unique())) else None


def decimals(values: np.ndarray, most: int = 6) -> int | None:
    """The fewest decimal places (at most ``most``) that write every value exactly, or None."""
    x = values[np.isfinite(values)]
    for d in range(most + 1):  # loop over a few precisions
        if np.all(np.abs(np.round(x, d) - x) <= 1e-9 * np.maximum(1.0, np.abs(x))):
            return d
    return None


def _row_numbers(values: np.ndarray) -> bool:
    """Whether integers are distinct and fill a range of at most twice their count (row numbers)."""
    n = values.size
    return bool(n) and np.unique(values).size == n and values.max() - values.min() + 1 <= 2 * n


def _case_note(cats: tuple[str, ...]) -> list[str]:
    """A note naming the categories that differ only in case (``Yes``, ``yes``, ``YES``): they may
    be one value (kept apart: only the data steward knows)."""
    groups: dict[str, list[str]] = {}
    for c in cats:  # loop over categories
        groups.setdefault(c.casefold(), []).append(c)
    same = [g for g in groups.values() if len(g) > 1]
    if not same:
        return []
    shown = "; ".join(", ".join(repr(c) for c in g) for g in same[:5])
    return [f"categories differing only in case may be one value ({shown}): kept apart; write them "
            f"alike in the data to merge them"]


def _canonical(labels: tuple[str, ...]) -> bool:
    """Whether every label is the usual spelling of its number ("1", "2.5"; not "01", "1.0")."""
    out = []
    for lab in labels:  # loop over categories
        try:
            out.append(_category_label(float(lab)) == lab or repr(float(lab)) == lab)
        except ValueError:
            return False
    return all(out)


def _respelled_note(present: pd.Series, na: frozenset) -> list[str]:
    """A note when a text column's values (but the ``na`` markers) are all numbers written with
    ',' thousands separators or a decimal comma (a CSV read without saying so)."""
    text = present.astype(str).str.strip()
    text = text[~text.isin(na)]
    for decimal, how, read in ((".", "',' thousands separators (123,456)", "thousands=','"),
                               (",", "a decimal comma (1,5)", "decimal=','")):
        if respelled_numbers(text, decimal) is not None:
            return [f"the values look like numbers written with {how}, not read as numbers; to read "
                    f"them so: lopub --decimal {decimal!r} (pandas: read_csv(..., {read}))"]
    return []


def _warn_almost_numeric(col: pd.Series, name: str, max_categories: int) -> None:
    """Warn when a few non-numbers keep a numeric column from being binned."""
    if pd.api.types.is_numeric_dtype(col) or col.empty:
        return
    uniq = pd.Series(pd.unique(col.astype(str).str.strip()))
    ok = np.isfinite(pd.to_numeric(uniq, errors="coerce").to_numpy(dtype=float))
    others = sorted(uniq[~ok])
    if ok.sum() > max_categories and len(others) <= 5:
        warnings.warn(
            f"column {name!r}: every value but {others} is a number, so the column stays "
            f"categorical with {len(uniq)} labels; if these mark missing values, read them as "
            f"missing (lopub: --na-values {','.join(others)}; pandas: na_values) to bin it",
            UserWarning, stacklevel=4)
