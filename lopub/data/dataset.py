"""Dataset: integer-coded records against a Domain, to and from pandas.

Codes are ``int`` arrays of shape ``(n, d)``; column j holds the position of
the record's label in ``domain.attributes[j].categories``.  Numeric columns of
a DataFrame are binned with the domain's stored :class:`~lopub.data.domain.Binning`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, cast

import numpy as np
import pandas as pd

from lopub.data._header import check_columns, record_names_text
from lopub.data._labels import NA_TOKENS, _numeric_key, date_days, parse_numbers
from lopub.data.domain import Attribute, Binning, Domain
from lopub.data.marginal import Marginal
from lopub.errors import DomainError

#: attribute kinds whose cells in :data:`~lopub.data._labels.NA_TOKENS` are missing values
NUMERIC_KINDS = ("number", "integer", "date", "datetime")


@dataclass(frozen=True)
class Dataset:
    """Records as integer codes against ``domain``.

    Parameters
    ----------
    codes : ndarray of shape (n, d)
        Integer codes, column order = ``domain.attrs``.
    domain : Domain
    """

    codes: np.ndarray
    domain: Domain

    def __post_init__(self) -> None:
        c = np.asarray(self.codes)
        if c.ndim != 2 or c.shape[1] != len(self.domain):
            raise DomainError(
                f"codes shape {c.shape} does not match the domain's {len(self.domain)} attributes"
            )
        if c.shape[0] == 0:
            raise DomainError("the dataset is empty (0 records)")
        if not np.issubdtype(c.dtype, np.integer):
            raise TypeError(f"codes dtype {c.dtype} must be an integer type")
        sizes = np.asarray(self.domain.sizes)
        bad = (c < 0) | (c >= sizes)
        if bad.any():
            r, j = np.argwhere(bad)[0]
            raise DomainError(
                f"attribute {self.domain.attrs[j]!r}: code {c[r, j]} at record {r} is outside "
                f"[0, {sizes[j]})"
            )
        object.__setattr__(self, "codes", c.astype(_code_dtype(max(sizes))))

    def __len__(self) -> int:
        return self.codes.shape[0]

    @property
    def n(self) -> int:
        return self.codes.shape[0]

    # pandas ------------------------------------------------------------
    @classmethod
    def from_pandas(cls, df: pd.DataFrame, domain: Domain) -> "Dataset":
        """Encode a DataFrame whose columns include every attribute of ``domain``.

        Columns are matched by name (extra columns are ignored).  A label
        matches the category written the same, else the one equal to it once
        spaces around both are stripped.  In a text column nothing is
        guessed: a string ``"None"``, ``"NA"`` or ``"TRUE"`` is a label like
        any other, and only a real missing value (``None``, ``NaN``,
        ``pd.NA``) is missing; in an attribute of kind number, integer or
        date, a cell in :data:`~lopub.data._labels.NA_TOKENS` (``?``, ``NA``,
        ...) is missing too.  A missing value takes the attribute's missing
        category (:attr:`~lopub.data.domain.Attribute.missing`).  Values of
        binned attributes are binned, whether numbers or strings that spell
        numbers (a bin label such as ``"[0, 10)"`` is taken as is; dates are
        parsed).  A label that is no category but spells the same number as
        exactly one category (``"1"`` and ``"1.0"``) matches it.  A missing
        value without a missing category and an unknown label raise
        :class:`DomainError` naming the attribute and the value, as does an
        attribute that is no column (saying so when the column names look
        like a record: a CSV file without a header row read by
        ``pandas.read_csv(path)``, see :func:`~lopub.data.schema.infer_schema`).
        """
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a lopub Domain, got {type(domain).__name__}")
        check_columns(df)
        missing = [a for a in domain.attrs if a not in df.columns]
        if missing:
            why = record_names_text(df)  # pandas.read_csv of a file without a header row
            raise DomainError(f"missing columns {missing}; the data has {list(df.columns)}"
                              + ("" if why is None else f"; {why}"))
        if len(df) == 0:
            raise DomainError("the data is empty (0 rows)")
        cols = [_encode_column(df[a], attr) for a, attr in zip(domain.attrs, domain.attributes)]
        return cls(np.column_stack(cols), domain)

    def to_pandas(self) -> pd.DataFrame:
        """DataFrame with the original labels as ordered categoricals."""
        data = {}
        for j, attr in enumerate(self.domain.attributes):
            data[attr.name] = pd.Categorical.from_codes(
                self.codes[:, j].astype(np.int64), categories=list(attr.categories), ordered=True
            )
        return pd.DataFrame(data)

    # queries -------------------------------------------------------------
    def project(self, attrs: Sequence[str]) -> Marginal:
        """Empirical joint distribution of ``attrs`` (exact counts / n)."""
        idx = self.domain.indices(attrs)
        sub = self.domain.project(list(attrs))
        flat = np.ravel_multi_index(tuple(self.codes[:, i].astype(np.int64) for i in idx), sub.sizes)
        counts = np.bincount(flat, minlength=int(np.prod(sub.sizes))).reshape(sub.sizes)
        return Marginal(sub, counts / self.n, self.n, {"method": "exact"})

    marginal = project  # the MarginalSource interface (lopub.estimate.protocols)

    def subset(self, rows: np.ndarray) -> "Dataset":
        """Records selected by an index or boolean array."""
        return Dataset(self.codes[rows], self.domain)

    def select(self, attrs: Sequence[str]) -> "Dataset":
        """Keep only ``attrs`` (columns reordered accordingly)."""
        idx = list(self.domain.indices(attrs))
        return Dataset(self.codes[:, idx], self.domain.project(attrs))


def _code_dtype(max_size: int) -> type:
    return np.uint8 if max_size <= 256 else (np.uint16 if max_size <= 65536 else np.int64)


def _encode_column(col: pd.Series, attr: Attribute) -> np.ndarray:
    """Codes of one column; missing values go to the attribute's missing category, if any."""
    if pd.api.types.is_timedelta64_dtype(col):  # durations: seconds, as infer_schema reads them
        col = col / pd.Timedelta(seconds=1)
    missing = col.isna().to_numpy().copy()
    if attr.missing is not None and attr.kind in NUMERIC_KINDS:  # NA tokens, infinities: missing
        if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
            missing |= ~np.isfinite(col.to_numpy(dtype=float))
        else:
            missing |= col.astype(str).str.strip().isin(NA_TOKENS).to_numpy() & col.notna().to_numpy()
    if missing.any() and attr.missing is None:
        row = int(np.flatnonzero(missing)[0])
        raise DomainError(
            f"attribute {attr.name!r}: {int(missing.sum())} missing value(s), first at row {row}, and "
            f"the domain has no missing-value category for it; infer the schema with missing values "
            f"kept as a category (lopub schema --missing category), or drop the rows (--missing drop)"
        )
    codes = np.full(len(col), -1 if attr.missing_code is None else attr.missing_code, dtype=np.int64)
    if not missing.all():
        codes[~missing] = _encode_present(col[~missing], attr)
    return codes


def _encode_present(col: pd.Series, attr: Attribute) -> np.ndarray:
    """Codes of the non-missing values of one column."""
    if attr.binning is not None and attr.kind in ("date", "datetime"):
        return attr.binning.codes(date_days(col, attr.name, attr.timezone), attr.name)
    if attr.binning is not None and pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
        return attr.binning.codes(col.to_numpy(dtype=float), attr.name)
    labels = col.astype(str)
    codes = pd.Index(list(attr.categories)).get_indexer(labels)  # exactly as written
    if (codes < 0).any():  # else after stripping spaces
        labels = labels.str.strip()
        codes = np.where(codes < 0, _category_index(attr.categories).get_indexer(labels), codes)
    if (codes < 0).any() and attr.binning is not None:
        codes = _bin_number_labels(labels, codes, attr)
    if (codes < 0).any():
        codes = _match_numeric_labels(labels, codes, attr.categories)
    if (codes < 0).any():
        unknown = sorted(set(labels[codes < 0]))[:5]
        raise DomainError(
            f"attribute {attr.name!r}: unknown categor{'y' if len(unknown) == 1 else 'ies'} "
            f"{unknown}; expected one of {list(attr.categories)[:50]}"
        )
    return codes


def _category_index(categories: Sequence[str]) -> pd.Index:
    """Categories to match stripped labels against: stripped too, unless that merges two."""
    stripped = [c.strip() for c in categories]
    return pd.Index(stripped if len(set(stripped)) == len(stripped) else list(categories))


def _bin_number_labels(labels: pd.Series, codes: np.ndarray, attr: Attribute) -> np.ndarray:
    """Codes of a binned attribute for string labels that spell numbers ("42", "3.5")."""
    todo = codes < 0
    values = parse_numbers(labels[todo])
    ok = np.isfinite(values)
    if not ok.any():
        return codes
    out = codes.copy()
    idx = np.flatnonzero(todo)[ok]
    out[idx] = cast(Binning, attr.binning).codes(values[ok], attr.name)
    return out


def _match_numeric_labels(labels: pd.Series, codes: np.ndarray, categories: Sequence[str]) -> np.ndarray:
    """Codes for labels that differ from a category only in how a number is written.

    A CSV integer column with a missing value is read as floats ("1.0"); the
    same column without it as integers ("1").  Such labels match the category
    spelling the same number when exactly one category does.
    """
    by_number: dict[float | None, int] = {}
    for i, c in enumerate(categories):  # loop over categories, not records
        key = _numeric_key(c)
        if key is not None:
            by_number[key] = -1 if key in by_number else i  # -1: ambiguous
    if not by_number:
        return codes
    missing = codes < 0
    lookup = {lab: by_number.get(_numeric_key(lab), -1) for lab in pd.unique(labels[missing])}
    out = codes.copy()
    out[missing] = labels[missing].map(lookup).to_numpy()
    return out

