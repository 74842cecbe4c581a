"""Reading a command's input files: data files (:func:`read_csv`, :func:`dataset_from_file`,
``--missing``) and Bloom reports files (:func:`load_bloom_reports`, :func:`refuse_npz` for the
``.npz`` reports other commands read).

pandas and the library's readers are imported where used: ``lopub --help`` imports this module
(through :mod:`lopub.cli._common`) and must start fast (tests/test_startup.py).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Sequence

from lopub.cli._header import headerless_names, warn_header_as_record, warn_record_header

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["MAX_COLUMNS", "NPZ_READERS", "add_missing", "dataset_from_file", "load_bloom_reports", "read_csv",
           "refuse_npz", "with_csv_dialect"]


def read_csv(path: str, na_values: Sequence[str] | None = None, *, sep: str | None = None,
             decimal: str | None = None, names: Sequence[str] | None = None,
             no_header: bool = False) -> pd.DataFrame:
    """Read a data file, keeping every label as written.

    CSV (any suffix but ``.parquet``/``.pq``): every column is read as text,
    so ``None``, ``NA``, ``null``, ``nan``, ``TRUE``, ``01`` stay the labels
    they spell.  Spaces around a value are not part of it (``a, b`` reads as
    ``a`` and ``b``); quote a value to keep commas or quotes in it.  Missing
    values are only empty cells, plus the cells equal to one of
    ``na_values`` (``--na-values``).  Parquet: the file's own nulls are
    missing, plus string cells in ``na_values``; labels are kept as stored
    (spaces and the empty label included).
    Clear errors when the file is missing or empty.

    ``sep``: the delimiter (``--sep``); default: detected from the first
    lines among ``,`` ``;`` tab ``|`` (the one splitting every line into the
    same number of fields, most fields first, ``,`` on a tie).  ``decimal``:
    the decimal mark of numbers (``--decimal``); default ``,`` when the
    delimiter is ``;`` (a European export), else ``.``.  A column whose every
    value is a number written with a decimal comma (``1,5``), or with ``,``
    thousands separators when the decimal mark is ``.`` (``"123,456"``), is
    read as those numbers (``1.5``, ``123456``), with a note.

    Header: a CSV's first row is its column names, with a warning when it
    looks like a record (its cells numbers in columns of numbers, or values
    of their own column: a file without a header row, such as UCI Adult's
    ``adult.data``).  ``names`` (``--names``): the file has no header row and
    these are its column names (as many as its columns); ``no_header``
    (``--no-header``): it has none and its columns are named ``col_1`` ..
    ``col_k``.  Neither applies to Parquet (its columns are named).
    """
    import pandas as pd  # here, not at the top: `lopub --help` must not load pandas

    na = {str(v).strip() for v in (na_values or ())}
    parquet = Path(path).suffix.lower() in (".parquet", ".pq")
    _check_sep_decimal(sep, decimal)
    try:
        if parquet:
            if names is not None or no_header:
                raise ValueError(f"--names and --no-header are for CSV files without a header row; "
                                 f"Parquet file {path!r} has its own column names")
            return _text_missing(_read_parquet(path), na, strip=False)
        given = sep
        sep = used = sep or detect_sep(path)
        headerless = names is not None or no_header
        df = _read_csv_rows(path, used, names if headerless else False)
    except FileNotFoundError:
        raise FileNotFoundError(f"{'Parquet' if parquet else 'CSV'} file {path!r} does not exist") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"data file {path!r} is a folder") from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"CSV file {path!r} is empty") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"CSV file {path!r} is not UTF-8 text (it has the byte "
                         f"{exc.object[exc.start]:#04x}); save it as UTF-8") from None
    except pd.errors.ParserError as exc:
        raise ValueError(f"CSV file {path!r} cannot be read with the delimiter {sep!r}: "
                         f"{' '.join(str(exc).split())}{_sep_hint(path, used, given)}") from None
    _refuse_one_column(path, given, df, headerless)
    df = _text_missing(df, na | {""}, strip=True)
    if headerless:
        warn_header_as_record(df, path, names)
    else:
        warn_record_header(df, path)
    return _read_numbers(df, path, decimal or _decimal_for(sep), na)


def _decimal_for(sep: str) -> str:
    """The decimal mark assumed for delimiter ``sep``: ``,`` in a ``;`` file, else ``.``."""
    return "," if sep == ";" else "."


def with_csv_dialect(domain: Any, path: str, sep: str | None, decimal: str | None) -> Any:
    """``domain`` recording the delimiter and decimal mark :func:`read_csv` read ``path`` with
    (:mod:`lopub.data.dialect`), unless they are ``,`` and ``.`` or it is a Parquet file."""
    import dataclasses

    from lopub.data.dialect import DEFAULT_DIALECT, CsvDialect

    if Path(path).suffix.lower() in (".parquet", ".pq"):
        return domain
    used = sep or detect_sep(path)
    dialect = CsvDialect(used, decimal or _decimal_for(used))
    return domain if dialect == DEFAULT_DIALECT else dataclasses.replace(domain, csv=dialect)


#: most columns a data file may have: each is an attribute of the domain, and a domain is
#: planned, encoded and modelled attribute by attribute (a 10 MB header line is refused at once)
MAX_COLUMNS = 10_000


def _check_header_width(path: str, sep: str = ",") -> None:
    """Refuse a CSV whose header row has more than :data:`MAX_COLUMNS` columns, reading only
    that row (at most 64 MiB of it)."""
    import csv

    with open(path, encoding="utf-8", newline="") as fh:
        line = fh.readline(64 * 2**20)
    try:
        width = len(next(csv.reader([line], delimiter=sep), []))
    except csv.Error as exc:  # e.g. a header cell over the csv module's 131,072 characters
        raise ValueError(f"CSV file {path!r} cannot be read: its header row: {exc}") from None
    if width > MAX_COLUMNS:
        raise ValueError(f"CSV file {path!r} has {width:,} columns in its header row; lopub handles "
                         f"at most {MAX_COLUMNS:,} attributes (select the columns you need first)")


def _read_csv_rows(path: str, sep: str = ",",
                   names: Sequence[str] | None | Literal[False] = False) -> pd.DataFrame:
    """The CSV's header and rows, as text; a row longer than the header or a repeated
    column name is an error (pandas would shift the columns or rename ``a`` to ``a.1``).
    ``names``: False, the first row is the header; else the file has no header row and its
    columns are ``names`` (None: ``col_1`` ..), see :func:`headerless_names`."""
    import pandas as pd

    _check_header_width(path, sep)
    raw = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, na_filter=False, header=None,
                      skipinitialspace=True, encoding="utf-8")
    if names is not False:
        raw.columns = headerless_names(path, raw.shape[1], names)
        return raw
    header = [str(c).strip() for c in raw.iloc[0]]
    seen = set()
    for c in header:  # loop over columns
        if c in seen:
            raise ValueError(f"CSV file {path!r} has the column {c!r} twice in its header row; "
                             f"column names must be unique (if the file has no header row, give "
                             f"--names NAME,NAME,... or --no-header)")
        seen.add(c)
    df = raw.iloc[1:].reset_index(drop=True)
    df.columns = header
    return df


#: delimiters :func:`detect_sep` chooses among (``,`` first on a tie)
SEPARATORS = (",", ";", "\t", "|")


def _check_sep_decimal(sep: str | None, decimal: str | None) -> None:
    if sep is not None and (not isinstance(sep, str) or len(sep) != 1 or sep in "\"\r\n"):
        raise ValueError(f"sep ({sep!r}) must be one character (not a quote or a line break), "
                         f"e.g. ',' or ';' or a tab")
    if decimal is not None and decimal not in (".", ","):
        raise ValueError(f"decimal ({decimal!r}) must be '.' or ','")
    if sep is not None and sep == decimal:
        raise ValueError(f"sep and decimal ({sep!r}) must differ")


def _sample_rows(path: str, sep: str, size: int = 2**20) -> list[list[str]] | None:
    """The non-blank rows of the first ``size`` characters of ``path`` split at ``sep`` (a row
    cut at the end left out); None when the sample cannot be parsed."""
    import csv

    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        text = fh.read(size)
    lines = text.splitlines(keepends=True)
    if len(text) == size and len(lines) > 1:
        lines = lines[:-1]
    try:
        return [r for r in csv.reader(lines[:200], delimiter=sep, skipinitialspace=True) if r]
    except csv.Error:
        return None


def detect_sep(path: str) -> str:
    """The delimiter of a CSV: among :data:`SEPARATORS`, the one that splits every sampled
    line into the same number (> 1) of fields, the most fields first; ``,`` when none does."""
    best, width = ",", 1
    for sep in SEPARATORS:  # loop over four delimiters
        rows = _sample_rows(path, sep)
        widths = {len(r) for r in rows or ()}
        if len(widths) == 1 and min(widths) > width:
            best, width = sep, min(widths)
    return best


def _refuse_one_column(path: str, given: str | None, df: pd.DataFrame, headerless: bool) -> None:
    """A ``--sep`` that read the file as one column, its name the whole header line, while the
    lines split evenly at one of :data:`SEPARATORS`: an error naming what was read and that one
    (pandas read it quietly, and the schema saw one identifier-like or huge column)."""
    if given is None or df.shape[1] != 1:
        return
    try:
        rows = {s: _sample_rows(path, s) for s in SEPARATORS if s != given}
    except OSError:  # pragma: no cover
        return
    widths = {s: {len(row) for row in r} for s, r in rows.items() if r}
    even = {s: min(w) for s, w in widths.items() if len(w) == 1 and min(w) > 1}
    if not even:
        return
    likely = max(even, key=lambda s: even[s])
    option = "tab" if likely == "\t" else repr(likely)
    first = (f"its first row {str(df.iloc[0, 0])!r}" if headerless and len(df) else
             f"named {str(df.columns[0])!r}")
    raise ValueError(f"CSV file {path!r} read with --sep {given!r} is one column, {first} (the "
                     f"whole first line); the delimiter looks like "
                     f"{likely!r}: its lines split evenly into {even[likely]} columns there. Give "
                     f"--sep {option} (or leave --sep out: it is detected among , ; tab |)")


def _sep_hint(path: str, sep: str, given: str | None) -> str:
    """When a CSV cannot be read with ``sep``: the delimiter its header row suggests, and how
    to give it."""
    try:
        rows = {s: _sample_rows(path, s) for s in SEPARATORS if s != sep}
    except OSError:
        return ""
    head = {s: len(r[0]) for s, r in rows.items() if r}
    likely = max(head, key=lambda s: head[s]) if head else None
    if likely is None or head[likely] < 2:
        return ("" if given else f"; if its delimiter is not {sep!r}, give it with --sep "
                "(Python: read_csv(path, sep=...))")
    return (f"; its header row splits into {head[likely]} columns at {likely!r}: if that is the "
            f"delimiter, give it with --sep {likely!r} (Python: read_csv(path, sep={likely!r}))")


def _read_numbers(df: pd.DataFrame, path: str, decimal: str, na: set[str]) -> pd.DataFrame:
    """Text columns of numbers written with a decimal comma or thousands separators (see
    :func:`read_csv`) as plain numbers, with a note naming them."""
    from lopub.data._labels import NA_TOKENS, respelled_numbers
    from lopub.progress import note

    skip = set(NA_TOKENS) | na
    done = []
    for c in df.columns:  # loop over columns
        col = df[c]
        if not pd_text(col):
            continue
        cells = col[col.notna() & ~col.isin(skip)]
        plain = respelled_numbers(cells, decimal)
        if plain is not None:
            df[c] = col.where(~col.index.isin(plain.index), plain.reindex(col.index))
            done.append(str(c))
    if done:
        how = ("a decimal comma", "',' separates thousands there", "'.'") if decimal == "," else \
            ("',' thousands separators", "',' is their decimal mark", "','")
        note(f"CSV file {path!r}: column(s) {done} hold numbers written with {how[0]}: read as "
             f"those numbers (if {how[1]}, give --decimal {how[2]})")
    return df


def pd_text(col: Any) -> bool:
    """Whether a column holds text (object or string dtype)."""
    import pandas as pd

    return pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col)


def _read_parquet(path: str) -> pd.DataFrame:
    """A Parquet data file; categorical columns become their string labels."""
    import pandas as pd

    try:
        df = pd.read_parquet(path)
    except (ImportError, FileNotFoundError):
        raise
    except Exception as exc:  # pyarrow's own errors: not a Parquet file, damaged
        raise ValueError(f"Parquet file {path!r} cannot be read: {exc}") from None
    for c in df.columns:
        if isinstance(df[c].dtype, pd.CategoricalDtype):
            df[c] = df[c].astype(object).where(df[c].notna(), None)
    return df


def _text_missing(df: pd.DataFrame, na: set[str], *, strip: bool) -> pd.DataFrame:
    """Text columns: strip surrounding spaces (CSV) and mark the ``na`` cells missing."""
    import pandas as pd

    for c in df.columns:
        col = df[c]
        if not (pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col)):
            continue
        text = col.str.strip() if strip else col
        df[c] = text.mask(text.isin(na))
    return df


def dataset_from_file(path: str, domain: Any, na_values: Sequence[str] | None = None,
                      missing: str = "category", *, sep: str | None = None,
                      decimal: str | None = None, names: Sequence[str] | None = None,
                      no_header: bool = False) -> Any:
    """The records of a data file coded against ``domain``; errors name the file.

    ``missing``: ``"category"`` codes a missing value as its attribute's
    missing category (an error when the domain has none), ``"drop"`` drops
    the rows holding a missing value in an attribute without one (with a
    warning giving the count), ``"refuse"`` raises on any missing value.
    ``sep``, ``decimal``, ``names``, ``no_header``: as in :func:`read_csv`.
    """
    from lopub.data.dataset import Dataset

    from lopub.progress import note

    df = read_csv(path, na_values, sep=sep, decimal=decimal, names=names, no_header=no_header)
    try:
        df = _missing_rows(df, domain, missing, path)
        data = Dataset.from_pandas(df, domain)
    except ValueError as exc:  # DomainError: missing columns, unknown categories, no rows
        raise type(exc)(f"data file {path!r}: {exc}") from None
    extra = [str(c) for c in df.columns  # (not a trailing delimiter's column of no name and no value)
             if c not in domain and (str(c).strip() or df[c].notna().any())]
    if extra:
        note(f"data file {path!r}: column(s) {extra} are not in the domain: left out (not collected)")
    return data


#: what reads each kind of ``.npz`` reports file
NPZ_READERS = {"lopub-marginal-reports": ("marginal-sampling reports (lopub collect --protocol "
                                          "auto|marginals|one-attribute)", "lopub fit"),
               "lopub-oracle-reports": ("one-way oracle reports (lopub collect --protocol "
                                        "grr|oue|olh|...)", "lopub estimate-freq")}


def refuse_npz(path: str, command: str) -> None:
    """A ``.npz`` reports file (zip magic) given to a command reading Bloom reports: ValueError
    naming the file's kind and the command that reads it."""
    from lopub.formats._io import npz_format

    if not os.path.isfile(path):
        return
    with open(path, "rb") as fh:
        if fh.read(2) != b"PK":
            return
    kind = npz_format(path)
    what, reader = NPZ_READERS.get(kind or "", (f"a zip archive (format {kind!r})", None))
    hint = f"; read it with {reader}" if reader else ""
    raise ValueError(f"reports file {path!r} holds {what}, not the Bloom reports (Parquet file or "
                     f"dataset folder) lopub {command} reads{hint}")


def _missing_rows(df: pd.DataFrame, domain: Any, missing: str, path: str) -> pd.DataFrame:
    """Apply ``--missing`` to the rows of ``df`` (see :func:`dataset_from_file`)."""
    import pandas as pd

    from lopub.errors import DomainError
    from lopub.progress import warning

    cols = [a.name for a in domain.attributes if a.name in df.columns]
    if missing == "category" or not cols:
        return df
    if missing == "refuse":
        bad = df[cols].isna().sum()
        if bad.any():
            raise DomainError(f"--missing refuse: missing values in {bad[bad > 0].to_dict()}")
        return df
    no_cat = [a.name for a in domain.attributes if a.name in df.columns and a.missing is None]
    drop = df[no_cat].isna().any(axis=1) if no_cat else pd.Series(False, index=df.index)
    if drop.any():
        warning(f"--missing drop: {int(drop.sum()):,} of {len(df):,} rows of {path!r} dropped for a "
                f"missing value in {sorted(c for c in no_cat if df[c].isna().any())}")
    return df[~drop].reset_index(drop=True)


def add_missing(p: argparse.ArgumentParser) -> None:
    """``--missing category|drop|refuse`` of the commands that code a data file."""
    p.add_argument("--missing", choices=("category", "drop", "refuse"), default="category",
                   help="missing cells: their attribute's missing category (default; the schema must "
                        "have one: lopub schema keeps them so), drop the rows holding one in an "
                        "attribute without that category, or refuse any")


def load_bloom_reports(path: str, command: str = "estimate") -> Any:
    """A Bloom reports file to estimate from: at least one report (else a clear error now,
    not after the estimator's iterations)."""
    from lopub.reports.bloom import Reports

    refuse_npz(path, command)
    reports = Reports.load(path)
    if reports.n == 0:
        raise ValueError(f"reports file {path!r} holds no reports (n = 0); nothing to estimate from")
    return reports
