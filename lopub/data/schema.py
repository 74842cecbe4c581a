"""Schema inference: a :class:`~lopub.data.domain.Domain` and the decisions behind it.

:func:`infer_schema` returns a :class:`SchemaReport`: the domain plus one
row per column (type, categories or bins, missing share, notes) for the data
steward to review before collecting.  Rules, column by column:

* **type**: a column whose cells all spell finite numbers, once the
  missing-value cells (``na_values``, by default :data:`NA_TOKENS`) are set
  aside, is numeric: ``integer`` when every value is integral, else
  ``number``; ``boolean`` for a bool column or the labels true/false; ``date``
  for datetime values or ISO dates (``2024-01-31``; ``datetime`` where some value
  has a time of day, which a release then gives back, to the second; time-zone-aware values and ISO
  strings with a UTC offset are ``datetime`` with the attribute's ``timezone``: the column's zone,
  the strings' one offset, or UTC with a note when they carry several) or US dates (``01/31/2024``, when some
  second field is above 12 and no first field is; other ``../../YYYY`` dates stay
  text with a note, as ``DD.MM.YYYY`` dates do); else ``text``.  In a text column ``?`` or ``NA``
  are labels like any other.
  Durations (a ``timedelta64`` column) are numbers of seconds, with a note.
* **identifiers**: a text column whose values are unique in at least 90 % of
  its (>= 20) rows, or an integer column of N >= 1,000 distinct values filling
  a range of at most 2 N (a row number), is identifier-like and left out (``identifiers="keep"``, or
  naming it in ``columns``, keeps it); such an integer column of 20 to 999 rows is kept, with a note.
* **numeric columns** keep one category per value when they have at most
  ``max_categories`` distinct values, else are binned: ``edges`` given for
  the column, or equal-width bins between public ``bounds``, or (inferred)
  every value holding at least ``max(1/bins, 5 %)`` of the rows gets a bin of
  its own (a point mass, like 0 for 92 % of a capital-gain column) and the
  other values ``bins`` minus the points quantile bins, merged until none is
  empty.  Defaults from N: ``bins = clip(floor(sqrt(N)) // 4, 2, 8)`` and
  ``max_categories = clip(floor(sqrt(N)) // 2, 2, 32)`` (150 rows: 3 bins, up
  to 6 raw values; 32,561 rows: 8 bins, up to 32 values).  A binned ``number``
  column records its ``decimals``: the fewest decimal places (up to 6) that
  write its values, the precision of a release's values.
* **missing values** (``missing``): ``"category"`` (default) adds a category
  :data:`MISSING_LABEL` to every column that has missing cells; ``"drop"``
  leaves it out (the rows must be dropped before collecting); ``"refuse"``
  raises.  The note says what was read as missing: ``12 missing (empty or
  '?')`` (the missing values of the frame as ``read_as_missing`` spells them,
  then the ``na_values`` tokens found in a numeric column).
* a column with one category is kept with a note: it carries no information
  and costs no budget.
* **column names that are a record**: a CSV file without a header row read
  by ``pandas.read_csv(path)`` (UCI Adult's ``adult.data``) has its first
  record as column names, and that record is lost.  Names that are numbers
  within the range of their column of numbers, or values of their own column,
  covering at least half the columns, are warned about once
  (:class:`~lopub.errors.RecordHeaderWarning`, naming them and
  ``pandas.read_csv(path, header=None, names=[...])``); the same evidence as
  the command line's (``lopub schema`` warns in its own words and offers
  ``--names``).  Integer names (pandas' ``header=None``: 0, 1, ...) are not
  weighed.  The check reads 10,000 rows for a column's range of numbers and
  compares each name with its column (0.06 s of infer_schema's 20 s on
  1,009,360 rows of Adult).

Privacy: categories, quantile edges and point masses computed here come from
the raw records and reveal them.  The domain is marked ``provenance =
"inferred from private data"`` unless every column's categories came from
public knowledge (``edges``/``bounds`` for every column) or the caller
declares the data public (``provenance="public"``, e.g. last year's public
extract).  The honest ways: a data dictionary written by hand (a domain JSON
with ``"provenance": "public"``), or declared ``bounds`` with equal-width bins.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from lopub._util import check_int
from lopub.data._header import check_columns, warn_record_names
from lopub.data._labels import NA_TOKENS, _category_label, _natural_key, parse_numbers
from lopub.data.domain import INFERRED, PUBLIC, Attribute, Binning, Domain
from lopub.data.schema_bins import _bin_labels, _check_cover, auto_bins, auto_max_categories, equal_width, numeric_binning
from lopub.data.schema_kinds import (_canonical, _case_note, _date_format, _dotted_dates, _kind, _respelled_note,
                                     _row_numbers, _slash_dates, _warn_almost_numeric, decimals)
from lopub.data.schema_report import ColumnDecision, SchemaReport
from lopub.errors import DomainError
from lopub.limits import check_memory

__all__ = ["MISSING_LABEL", "MISSING_POLICIES", "NA_TOKENS", "ColumnDecision", "SchemaReport",
           "auto_bins", "auto_max_categories", "infer_domain", "infer_schema"]

#: label of the category that stands for a missing value (underscores added if a label is taken)
MISSING_LABEL = "(missing)"
MISSING_POLICIES = ("category", "drop", "refuse")
IDENTIFIERS = ("exclude", "keep")
PRIVACY_NOTE = ("this schema's categories and bin edges were computed from the raw records and "
                "reveal them (who is in the data, rare values, quantiles): publish it only if that is "
                "acceptable; otherwise write the schema from public knowledge (a data dictionary, "
                "declared --bounds with equal-width bins, --edges) and mark it \"provenance\": \"public\"")
DURATION_NOTE = ("durations (timedelta) read as numbers of seconds: categories and bins in seconds; "
                 "Synthesizer.sample gives them back as durations, a release file as seconds")
_PANDAS_UNNAMED = re.compile(r"^Unnamed: \d+$")  # pandas' name of a column without a header


def infer_domain(
    df: pd.DataFrame,
    *,
    bins: int | None = None,
    edges: Mapping[str, Sequence[float]] | None = None,
    bounds: Mapping[str, Sequence[float]] | None = None,
    max_categories: int | None = None,
    columns: Sequence[str] | None = None,
    missing: str = "category",
    na_values: Sequence[str] = NA_TOKENS,
    identifiers: str = "exclude",
    provenance: str | None = None,
    read_as_missing: Sequence[str] = ("",),
) -> Domain:
    """The domain of :func:`infer_schema` (same parameters); its notes that matter are warnings.

    A column left out (identifier-like) and a column of one category are
    reported as :class:`UserWarning`, column names that look like a record
    (a CSV file read without ``header=None``) as
    :class:`~lopub.errors.RecordHeaderWarning` (by :func:`infer_schema`); read
    :func:`infer_schema`'s table for all decisions.  The domain is public:
    infer it from public or historical data, not from the private records you
    are about to collect (see the module docstring).
    """
    report = infer_schema(df, bins=bins, edges=edges, bounds=bounds, max_categories=max_categories,
                          columns=columns, missing=missing, na_values=na_values,
                          identifiers=identifiers, provenance=provenance,
                          read_as_missing=read_as_missing)
    for c in report.columns:
        if c.decision == "excluded" or len(c.categories) == 1:
            warnings.warn(f"column {c.column!r}: " + "; ".join(c.notes), UserWarning, stacklevel=2)
    return report.domain


def infer_schema(
    df: pd.DataFrame,
    *,
    bins: int | None = None,
    edges: Mapping[str, Sequence[float]] | None = None,
    bounds: Mapping[str, Sequence[float]] | None = None,
    max_categories: int | None = None,
    columns: Sequence[str] | None = None,
    missing: str = "category",
    na_values: Sequence[str] = NA_TOKENS,
    identifiers: str = "exclude",
    provenance: str | None = None,
    read_as_missing: Sequence[str] = ("",),
) -> SchemaReport:
    """Infer a domain from a DataFrame, with the table of decisions (rules: module docstring).

    Warns (:class:`~lopub.errors.RecordHeaderWarning`) when the column names of
    ``df`` look like a record: a CSV file without a header row read by
    ``pandas.read_csv(path)``; read it with ``header=None, names=[...]``.

    Parameters
    ----------
    df : DataFrame
    bins : int, optional
        Bins of a binned numeric column (default from N).
    edges : mapping column -> edges, optional
        Explicit bin edges (public): every value must fall in a bin.
    bounds : mapping column -> (low, high), optional
        Public bounds: ``bins`` equal-width bins between them.
    max_categories : int, optional
        Numeric columns with more distinct values are binned (default from N).
    columns : sequence of str, optional
        Columns to keep (default all); a column named here is never excluded.
    missing : {"category", "drop", "refuse"}
        What to do with missing cells (see the module docstring).
    na_values : sequence of str
        Cells that mark a missing value in an otherwise numeric column.
    identifiers : {"exclude", "keep"}
        Leave identifier-like columns out (default) or keep them.
    provenance : str, optional
        Declare the provenance (e.g. ``"public"`` for public or historical
        data); default: public only when every column has edges or bounds.
    read_as_missing : sequence of str
        What the missing values of ``df`` (NaN, None) were before they were
        read, for the notes: ``""`` an empty cell (the default), plus the
        tokens a reader turned into missing values (``lopub schema
        --na-values ?`` passes ``("", "?")``: "12 missing (empty or '?')").

    Returns
    -------
    SchemaReport
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    check_columns(df)
    if len(df) == 0:
        raise DomainError("cannot infer a domain from empty data")
    warn_record_names(df)
    opts = _Options.make(df, bins, edges, bounds, max_categories, missing, na_values, identifiers,
                         read_as_missing)
    named = columns is not None
    columns = list(df.columns) if columns is None else list(columns)
    for c in list(opts.edges) + list(opts.bounds) + columns:
        if c not in df.columns:
            raise DomainError(f"column {c!r} is not in the data; columns are {list(df.columns)}")
    where = {c: f"column {k + 1} of {df.shape[1]}" for k, c in enumerate(df.columns)}
    pairs = [_hashable(_column, str(c), df[c], opts, keep_id=named, where=where[c]) for c in columns]
    attrs = tuple(a for a, _ in pairs if a is not None)
    if not attrs:
        raise DomainError(f"no column is left for the domain: {[d.column for _, d in pairs]} are "
                          f"identifier-like (pass identifiers='keep' or name them in columns; Synthesizer: pass "
                          f"domain=infer_domain(df, identifiers='keep'); lopub schema: --keep-ids)")
    public = all(c in opts.edges or c in opts.bounds for c in (a.name for a in attrs))
    prov = provenance if provenance is not None else (PUBLIC if public else INFERRED)
    note = None if prov == PUBLIC else PRIVACY_NOTE
    return SchemaReport(Domain(attrs, prov), tuple(d for _, d in pairs), len(df), opts.bins,
                        opts.max_categories, note)


@dataclass(frozen=True)
class _Options:
    bins: int
    max_categories: int
    edges: dict
    bounds: dict
    missing: str
    na: frozenset
    identifiers: str
    read: tuple[str, ...]

    @classmethod
    def make(cls, df, bins, edges, bounds, max_categories, missing, na_values, identifiers,
             read_as_missing=("",)) -> "_Options":
        n = len(df)
        bins = auto_bins(n) if bins is None else check_int("bins", bins, 1)
        maxc = auto_max_categories(n) if max_categories is None else check_int("max_categories",
                                                                                max_categories, 0)
        if missing not in MISSING_POLICIES:
            raise ValueError(f"missing ({missing!r}) must be one of {list(MISSING_POLICIES)}")
        if identifiers not in IDENTIFIERS:
            raise ValueError(f"identifiers ({identifiers!r}) must be one of {list(IDENTIFIERS)}")
        for name, value in (("na_values", na_values), ("read_as_missing", read_as_missing)):
            if isinstance(value, str):
                raise TypeError(f"{name} must be a sequence of strings, not one string ({value!r})")
        read = tuple(dict.fromkeys(str(v).strip() for v in read_as_missing))
        bounds = {str(k): tuple(float(x) for x in v) for k, v in dict(bounds or {}).items()}
        for k, v in bounds.items():
            if len(v) != 2 or not np.all(np.isfinite(v)) or not v[0] < v[1]:
                raise ValueError(f"bounds for column {k!r} ({list(v)}) must be two finite numbers low < high")
        return cls(bins, maxc, dict(edges or {}), bounds, missing,
                   frozenset(str(v).strip() for v in na_values), identifiers, read)


def _hashable(column, name: str, *args, **kwargs):
    """``column(name, ...)``, with pandas' bare "unhashable type: 'list'" made an error naming the column."""
    try:
        return column(name, *args, **kwargs)
    except TypeError as exc:
        if "unhashable" not in str(exc):
            raise
        raise TypeError(f"column {name!r}: {exc} (a cell holds a list, dict or set); an attribute takes one "
                        f"value per cell: join them (df[{name!r}].str.join('|')) or explode the rows "
                        f"(df.explode({name!r})) first") from None


def _column(name: str, raw: pd.Series, o: _Options, *, keep_id: bool,
            where: str = "") -> tuple[Attribute | None, ColumnDecision]:
    """The attribute (None when left out) and the decision for one column (``where``: its
    position, for the message on a column without a name)."""
    unnamed = not name.strip() or _PANDAS_UNNAMED.match(name) is not None
    if unnamed and (raw.isna() | (raw.astype(str).str.strip() == "")).all():
        return None, ColumnDecision(name, "text", "excluded", (), 1.0, (
            f"{where or 'column'} has no name in the header row and no value (a delimiter ending "
            f"every line, as spreadsheets export): left out",))
    seconds = pd.api.types.is_timedelta64_dtype(raw)
    if seconds:  # durations: numbers of seconds (a Synthesizer gives them back as durations)
        raw = raw / pd.Timedelta(seconds=1)
    kind, values, missing, zone = _kind(raw, o.na)
    present = raw[~missing]
    share = float(missing.mean())
    notes: list[str] = list(zone.notes) + [DURATION_NOTE] * seconds
    if missing.any():
        notes.append(_missing_note(raw, missing, o))
    if kind == "text" and name not in o.edges and name not in o.bounds:
        _warn_almost_numeric(present, name, o.max_categories)
        marks = present.astype(str).str.strip()
        for t in sorted(set(marks[marks.isin(o.na)])):  # loop over the few markers found
            notes.append(f"{t!r} ({int((marks == t).sum()):,} rows) may mark a missing value: kept as "
                         f"the category {t!r} (read it as missing with --na-values {t})")
    hint = _respelled_note(present, o.na) if kind == "text" else []
    distinct = pd.Series(present.astype(str).str.strip().unique()) if kind == "text" else None
    order = _slash_dates(distinct) if distinct is not None else None
    if order is not None:
        hint.append(f"the values look like dates ../../YYYY with {order}: kept as text; write them "
                    f"as YYYY-MM-DD to have them read as dates")
    elif distinct is not None and _dotted_dates(distinct):
        hint.append("the values look like dates DD.MM.YYYY: kept as text (a category per distinct "
                    "day); write them as YYYY-MM-DD to have them read as dates")
    notes += hint
    ident = None if keep_id or o.identifiers == "keep" else _identifier(kind, present, values)
    if ident is None and not (keep_id or o.identifiers == "keep") and kind == "integer" \
            and values is not None and 20 <= values.size < 1000 and _row_numbers(values):
        notes.append(f"{values.size} distinct integers from {values.min():.0f} to {values.max():.0f}, one "
                     f"per row: may be an identifier or a row number (left out from 1,000 rows on); kept: "
                     f"it spends budget and a release draws it from its bins; leave it out with lopub "
                     f"schema --columns (infer_domain(df, columns=[...]))")
    if ident is not None:
        return None, ColumnDecision(name, kind, "excluded", (), share, tuple(hint) +
                                    (f"identifier-like ({ident}): left out; keep it with "
                                     f"infer_domain(df, identifiers='keep') or infer_domain(df, "
                                     f"columns=[...]) naming it (Synthesizer: pass that domain as "
                                     f"domain=), or lopub schema --keep-ids / --columns",))
    if not name.strip():
        raise DomainError(f"{where or 'a column'} has no name in the header row (an empty header "
                          f"cell) but holds values; give it a name, or leave it out (columns=[...], "
                          f"--columns)")
    if present.size == 0 and o.missing != "category":
        return None, ColumnDecision(name, kind, "excluded", (), share,
                                    ("no value: every cell is missing; left out",))
    binning, cats, extra = _categories(name, kind, present, values, o, zone.name)
    notes = extra + notes
    if binning is None and kind in ("integer", "number") and not _canonical(cats):
        kind = "text"  # "01" and "1" both present, or "1.50": the labels as written are the values
    label = None
    if missing.any() and o.missing == "category":
        label = _missing_label(cats)
        cats = cats + (label,)
    if kind == "text":
        notes += _case_note(cats)
    if len(cats) == 1:
        notes.append("one category: the column is constant, carries no information and costs no budget")
    elif len(cats) > 50 and kind == "text":
        notes.append(f"{len(cats)} categories: kept, but only protocols that carry large domains "
                     f"(one attribute per user, Bloom reports) estimate it well")
    places = decimals(values) if binning is not None and kind == "number" and values is not None else None
    attr = Attribute(name, cats, binning, kind, label, zone.name, places, _date_format(kind, present))
    return attr, ColumnDecision(name, kind, "bins" if binning else "categories", cats, share, tuple(notes))


def _identifier(kind: str, present: pd.Series, values: np.ndarray | None) -> str | None:
    """Why a column is identifier-like, or None."""
    n = present.size
    if n < 20:
        return None
    if kind == "text":
        text = present.astype(str).str.strip()
        distinct = text.nunique()
        numeric = np.isfinite(parse_numbers(text)).mean()
        return (f"{distinct} distinct values in {n} rows" if distinct >= 0.9 * n and numeric < 0.5
                else None)
    if kind == "integer" and values is not None and n >= 1000 and _row_numbers(values):
        return f"{n} distinct integers from {values.min():.0f} to {values.max():.0f}, one per row"
    return None


def _categories(name: str, kind: str, present: pd.Series, values: np.ndarray | None,
                o: _Options, zone: str | None = None) -> tuple[Binning | None, tuple[str, ...], list[str]]:
    """(binning or None, category labels, notes) of the present values."""
    if name in o.edges or name in o.bounds:
        if values is None:
            raise DomainError(f"{'edges' if name in o.edges else 'bounds'} given for column {name!r}, "
                              f"but its values are not all numbers")
        if name in o.edges:
            b, how = Binning(tuple(o.edges[name])), "explicit edges (public)"
        else:
            b, how = equal_width(o.bounds[name], o.bins), "equal-width bins between declared bounds (public)"
        _check_cover(b, values, name)
        return b, _bin_labels(b, kind, zone), [how]
    if values is not None and np.unique(values).size > o.max_categories:
        check_memory(160.0 * (o.bins + 1), "bins", o.bins, f"the quantile bins of column {name!r}")
        inferred, notes = numeric_binning(values, o.bins)
        if inferred is not None:
            return inferred, _bin_labels(inferred, kind, zone), notes
    if zone is not None and values is not None:  # as written, in time order (offsets may differ)
        first = pd.Series(values).groupby(present.astype(str).str.strip().to_numpy()).min()
        labels = list(first.sort_values(kind="stable").index)
    elif kind in ("date", "datetime") and values is not None:
        labels = sorted({str(v).strip() for v in present.astype(str)})
    else:
        labels = sorted({_category_label(v) for v in present.unique()}, key=_natural_key)
    return None, tuple(labels), []


def _missing_label(cats: tuple[str, ...]) -> str:
    label = MISSING_LABEL
    while label in cats:
        label = "_" + label + "_"
    return label


def _missing_note(raw: pd.Series, missing: np.ndarray, o: _Options) -> str:
    tokens = sorted(set(raw[missing & raw.notna().to_numpy()].astype(str).str.strip()))
    read = ([t for t in o.read if t not in tokens] or [""]) if raw.isna().any() else []  # NaN: as read
    how = " (" + " or ".join(["empty" if t == "" else repr(t) for t in read] + [repr(t) for t in tokens]) + ")"
    what = {"category": "kept as their own category",
            "drop": "no category: drop these rows before collecting (--missing drop)",
            "refuse": ""}[o.missing]
    if o.missing == "refuse":
        raise DomainError(f"column {raw.name!r}: {int(missing.sum()):,} missing value(s){how}; "
                          f"missing='refuse' (--missing refuse) does not accept them")
    return f"{int(missing.sum()):,} missing{how}: {what}"
