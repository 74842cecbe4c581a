"""Column names that are a record: a table read as if its first row were a header when it has
none (UCI Adult's ``adult.data``; ``pandas.read_csv(path)`` without ``header=None``), so that
record became the column names.  :func:`header_evidence` weighs the names against the columns'
values (the CLI's reader, :mod:`lopub.cli._header`, and :func:`warn_record_names`, which
:func:`lopub.data.schema.infer_schema` calls, share it).

pandas is imported where used: ``lopub --help`` imports :mod:`lopub.cli._header`, which imports
this module, and must start fast (tests/test_startup.py).
"""
from __future__ import annotations

import math
import os
import sys
import warnings
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["HEADER_CHECKED", "check_columns", "header_evidence", "record_names_text", "warn_record_names"]

#: rows whose values decide whether a column holds numbers (and their range)
NUMBER_SAMPLE = 10_000
#: share of a column's sampled values that must be numbers for it to be a column of numbers
NUMBER_SHARE = 0.95
#: key of ``DataFrame.attrs`` marking a frame whose column names were already checked (a CSV file
#: read by :func:`lopub.cli.read_csv`, which warns in its own words) or are no header row
HEADER_CHECKED = "lopub.header_checked"


def check_columns(df: "pd.DataFrame", param: str = "df") -> None:
    """Refuse a frame whose columns cannot be attributes: none at all, or a MultiIndex (each
    attribute has one name; ``str`` of a tuple names no column of the frame)."""
    if df.columns.nlevels > 1:
        raise ValueError(f"{param} has MultiIndex columns ({df.columns.nlevels} levels, e.g. "
                         f"{df.columns[0]!r}); an attribute has one name: flatten them first, e.g. "
                         f"{param}.columns = [' '.join(map(str, c)) for c in {param}.columns]")
    if df.shape[1] == 0:
        raise ValueError(f"{param} has no columns ({len(df)} rows); expected at least one attribute column")


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _numbers_range(col: pd.Series) -> tuple[float, float] | None:
    """(min, max) of a column when (nearly) every sampled value is a number, else None; the
    range is widened by its width on both sides (the header of sorted values, such as an index
    or a time series, is just below or above the others).  Dates, durations and booleans are
    not numbers."""
    import pandas as pd

    from lopub.data._labels import NA_TOKENS

    if (pd.api.types.is_bool_dtype(col) or pd.api.types.is_datetime64_any_dtype(col)
            or pd.api.types.is_timedelta64_dtype(col)):
        return None
    head = col.iloc[:NUMBER_SAMPLE]
    head = head[~head.isin(NA_TOKENS)]
    if head.empty:
        return None
    parsed = pd.to_numeric(head, errors="coerce")
    if parsed.notna().mean() < NUMBER_SHARE:
        return None
    low, high = float(parsed.min()), float(parsed.max())
    return low - (high - low), high + (high - low)


def _counting(numbers: list[float | None]) -> bool:
    """Whether the header's numbers, left to right, are at least two consecutive integers:
    column numbers (``0,1,2``, ``1,2,3``, pandas' default names) or years (``2019,2020``), which
    are names, not values."""
    run = [x for x in numbers if x is not None]
    return len(run) >= 2 and all(a == int(a) and b == a + 1 for a, b in pairwise(run))


def header_evidence(df: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Evidence that the column names of ``df`` (a CSV's header row; cells as text, missing
    ones None) are a record: the names that are numbers within the range of a column of numbers,
    and the names that also occur as a value of their own column.  Both empty unless the
    evidence covers at least half of the columns, and either some name is a value of its
    column or every column is a column of numbers named by a number.  Numbers that are
    consecutive integers (``1,2,3``, years ``2019,2020``) are names, not evidence."""
    names = [str(c) for c in df.columns]
    numbers = [_number(n) for n in names]
    skip = {i for i, x in enumerate(numbers) if x is not None} if _counting(numbers) else set()
    as_number, as_value = [], []
    for i, name in enumerate(names):  # loop over columns
        col = df.iloc[:, i]
        col = col[col.notna()]
        if not name or col.empty or i in skip:
            continue
        span = _numbers_range(col) if numbers[i] is not None else None
        if span is not None and span[0] <= numbers[i] <= span[1]:  # type: ignore[operator]
            as_number.append(name)
        elif (col == name).any():
            as_value.append(name)
    found = len(as_number) + len(as_value)
    if 2 * found < len(names) or not (as_value or len(as_number) == len(names)):
        return [], []
    return as_number, as_value


def _some(names: list[str], most: int = 8) -> str:
    shown = ", ".join(repr(n) for n in names[:most])
    return shown + (", ..." if len(names) > most else "")


def evidence_text(as_number: list[str], as_value: list[str]) -> str:
    """The evidence in words: ``6 are numbers in columns of numbers ('39', ...) and 9 are also
    values of their own column ('State-gov', ...)``."""
    why = []
    if as_number:
        why.append(f"{len(as_number)} are numbers in columns of numbers ({_some(as_number)})")
    if as_value:
        why.append(f"{len(as_value)} are also values of their own column ({_some(as_value)})")
    return " and ".join(why)


def _caller_level() -> int:
    """The ``stacklevel`` of the first caller outside lopub (the user's line calling
    ``infer_domain``, ``infer_schema`` or ``Synthesizer.fit``), from the function calling this."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(root):
        frame, level = frame.f_back, level + 1
    return level


def record_names_text(df: pd.DataFrame) -> str | None:
    """Why the column names of ``df`` look like a record and the way out, or None: only names
    that are all strings are weighed (pandas names the columns of a file read with
    ``header=None`` 0, 1, ...), and not those of a frame marked :data:`HEADER_CHECKED` (already
    warned about by :func:`lopub.cli.read_csv`).  Reads :data:`NUMBER_SAMPLE` rows for the
    numbers' range and compares each name with its column."""
    if df.attrs.get(HEADER_CHECKED) or df.empty or not all(isinstance(c, str) for c in df.columns):
        return None
    as_number, as_value = header_evidence(df)
    if not (as_number or as_value):
        return None
    k = len(df.columns)
    return (f"the column names of the data look like a record, not a header: of its {k} names, "
            f"{evidence_text(as_number, as_value)}. A CSV file without a header row (such as UCI "
            f"Adult's adult.data) read with pandas.read_csv(path) gives its first record as the column "
            f"names, so that record is not in the data. Read it with pandas.read_csv(path, "
            f"header=None, names=[...]) (its {k} column names, in order)")


def warn_record_names(df: pd.DataFrame) -> None:
    """Warn (:class:`~lopub.errors.RecordHeaderWarning`, pointing at the first caller outside
    lopub) when the column names of ``df`` look like a record (:func:`record_names_text`)."""
    from lopub.errors import RecordHeaderWarning

    text = record_names_text(df)
    if text is not None:
        warnings.warn(text, RecordHeaderWarning, stacklevel=_caller_level())
