"""A CSV's header row that looks like a record (a file without a header row, such as UCI Adult's
``adult.data``): the evidence (:func:`header_evidence`, from :mod:`lopub.data._header`, which
Python's ``infer_schema`` shares) and the warning naming it and the way out
(:func:`warn_record_header`); the column names of a file read without a header row
(:func:`headerless_names`), and the warning when such a file's first row looks like a header after
all (:func:`warn_header_as_record`).

pandas is imported where used: ``lopub --help`` imports :mod:`lopub.cli._inputs`, which imports
this module, and must start fast (tests/test_startup.py).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lopub.data._header import HEADER_CHECKED, _number, _numbers_range, _some, header_evidence

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["header_evidence", "headerless_names", "warn_header_as_record", "warn_record_header"]

def headerless_names(path: str, width: int, names: Sequence[str] | None) -> list[str]:
    """The column names of a CSV read without a header row: ``names`` (``--names``), checked
    (as many as the file's ``width`` columns, unique, not blank), or ``col_1`` .. ``col_k``."""
    if names is None:
        return [f"col_{i + 1}" for i in range(width)]
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"names ({names!r}) must be a list of column names (str)")
    given = [n.strip() for n in names]
    if any(not n for n in given):
        raise ValueError(f"--names ({','.join(given)}) holds a blank name; every column needs one")
    twice = sorted({n for n in given if given.count(n) > 1})
    if twice:
        raise ValueError(f"--names gives {twice} more than once; column names must be unique")
    if len(given) != width:
        raise ValueError(f"--names gives {len(given)} column names but CSV file {path!r} has {width} "
                         f"columns; give one name per column, in the file's order")
    return given


def warn_record_header(df: pd.DataFrame, path: str) -> None:
    """Warn when the header row of the CSV ``path`` read into ``df`` looks like a record
    (:func:`header_evidence`), naming the evidence and the options of a file without one."""
    from lopub.progress import warning

    df.attrs[HEADER_CHECKED] = True  # lopub.data.schema.infer_schema does not warn again
    if any(not str(c).strip() and df.iloc[:, j].notna().any() for j, c in enumerate(df.columns)):
        return  # an empty header cell over values: a malformed header that infer_schema refuses by itself,
        #         in one line naming the column (a warning before that error would be a second message)
    as_number, as_value = header_evidence(df)
    if not (as_number or as_value):
        return
    k = len(df.columns)
    why = []
    if as_number:
        why.append(f"{len(as_number)} are numbers in columns of numbers ({_some(as_number)})")
    if as_value:
        why.append(f"{len(as_value)} are also values of their own column ({_some(as_value)})")
    warning(f"CSV file {path!r}: its first row looks like a record, not a header: of its {k} cells, "
            f"{' and '.join(why)}. It is read as the column names, so that record is not in the data. "
            f"If the file has no header row, give --names NAME,NAME,... (its {k} column names, in "
            f"order) or --no-header (columns col_1 .. col_{k}); in Python, lopub.cli.read_csv(path, "
            f"names=[...]) or no_header=True, or pandas.read_csv(path, names=[...])")


def warn_header_as_record(df: pd.DataFrame, path: str, names: Sequence[str] | None) -> None:
    """A file read without a header row (``--names``/``--no-header``) whose first row looks like a
    header: an error when it is the ``names`` given, else a warning when some of its cells are
    text in a column of numbers (``age`` above ages)."""
    from lopub.data._labels import NA_TOKENS
    from lopub.progress import warning

    df.attrs[HEADER_CHECKED] = True  # read with the names given: lopub.data does not weigh them
    if df.empty:
        return
    first = [None if v is None else str(v) for v in df.iloc[0]]
    if names is not None and first == list(df.columns):
        raise ValueError(f"CSV file {path!r}: its first row is the --names given: the file has a "
                         f"header row; leave out --names (or --no-header)")
    text = []
    for i, cell in enumerate(first):  # loop over columns
        rest = df.iloc[1:, i]
        rest = rest[rest.notna()]
        if cell is None or cell in NA_TOKENS or _number(cell) is not None or rest.empty:
            continue
        if _numbers_range(rest) is not None and not (rest == cell).any():
            text.append(cell)
    if text:
        warning(f"CSV file {path!r}, read without a header row (--names/--no-header): its first "
                f"row looks like a header: {_some(text)} {'is' if len(text) == 1 else 'are'} text "
                f"in {'a column' if len(text) == 1 else 'columns'} of numbers; it is read as a "
                f"record (if it is the header, leave out --names/--no-header)")
