"""Dataset: integer-coded records against a Domain, to and from pandas.

Codes are ``int`` arrays of shape ``(n, d)``; column j holds the position of
the record's label in ``domain.attributes[j].categories``.  Numeric columns of
a DataFrame are binned with the domain's stored :class:`~lopub.data.domain.Binning`.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Mapping, Sequence, cast

import numpy as np
import pandas as pd

from lopub._util import check_int
from lopub.data.domain import Attribute, Binning, Domain
from lopub.errors import DomainError
from lopub.limits import check_memory
from lopub.data.marginal import Marginal


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
        spaces around both are stripped.  Nothing is guessed: a string
        ``"None"``, ``"NA"`` or ``"TRUE"`` is a label like any other, and only
        a real missing value (``None``, ``NaN``, ``pd.NA``) is missing.  Values of binned attributes are
        binned, whether numbers or strings that spell numbers (a bin label
        such as ``"[0, 10)"`` is taken as is).  A label that is no category
        but spells the same number as exactly one category (``"1"`` and
        ``"1.0"``) matches it.  Missing values and unknown labels raise
        :class:`DomainError` naming the attribute and the value.
        """
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a lopub Domain, got {type(domain).__name__}")
        missing = [a for a in domain.attrs if a not in df.columns]
        if missing:
            raise DomainError(f"missing columns {missing}; the data has {list(df.columns)}")
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
    if col.isna().any():
        row = int(np.flatnonzero(col.isna().to_numpy())[0])
        raise DomainError(
            f"attribute {attr.name!r}: {int(col.isna().sum())} missing value(s), first at row {row}; "
            "drop or impute them before encoding"
        )
    if attr.binning is not None and pd.api.types.is_numeric_dtype(col):
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
    values = pd.to_numeric(labels[todo], errors="coerce").to_numpy(dtype=float)
    ok = np.isfinite(values)
    if not ok.any():
        return codes
    out = codes.copy()
    idx = np.flatnonzero(todo)[ok]
    out[idx] = cast(Binning, attr.binning).codes(values[ok], attr.name)
    return out


def _numeric_key(label: str) -> float | None:
    """The number a label spells ("1", "1.0", " 1e0" -> 1.0), None if it is not numeric."""
    try:
        value = float(label)
    except ValueError:
        return None
    return value if np.isfinite(value) else None


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


def _category_label(value: object) -> str:
    """A category label: integral floats are written as integers (1.0 -> "1")."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value).strip()


def infer_domain(
    df: pd.DataFrame,
    *,
    bins: int = 8,
    edges: Mapping[str, Sequence[float]] | None = None,
    max_categories: int = 64,
    columns: Sequence[str] | None = None,
) -> Domain:
    """Infer a Domain from a DataFrame.

    Rule: a column listed in ``edges`` is binned with those edges; any other
    numeric column with more than ``max_categories`` distinct values gets
    ``bins`` quantile bins computed once here and stored in the domain; every
    other column is categorical with its sorted distinct labels.  A column of
    strings counts as numeric when every non-missing value spells a finite
    number (a CSV read by ``lopub`` is all strings).  Labels are the values as
    written, surrounding spaces stripped ("01" stays "01", "None" and "NA"
    are labels); only floats are respelled (1.0 -> "1").  Missing values
    (``None``, ``NaN``) are ignored.

    The domain is public: infer it from public or historical data, not from
    the private records you are about to collect.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    if len(df) == 0:
        raise DomainError("cannot infer a domain from empty data")
    bins, max_categories = check_int("bins", bins, 1), check_int("max_categories", max_categories, 0)
    edges = dict(edges or {})
    columns = list(df.columns) if columns is None else list(columns)
    for c in list(edges) + columns:
        if c not in df.columns:
            raise DomainError(f"column {c!r} is not in the data; columns are {list(df.columns)}")
    attrs = []
    for c in columns:
        col = df[c].dropna()
        values = _numbers(col)
        if values is None and c not in edges:
            _warn_almost_numeric(col, str(c), max_categories)
        if c in edges or (values is not None and pd.unique(values).size > max_categories):
            if c not in edges:  # the edges, quantile levels and one label per bin
                check_memory(160.0 * (bins + 1), "bins", bins, f"the quantile bins of column {c!r}")
            b = Binning(tuple(edges[c])) if c in edges else Binning.quantile(cast(np.ndarray, values), bins)
            if c in edges:
                _check_edges_cover(b, values, str(c))
            attrs.append(Attribute(str(c), b.labels, b))
        else:
            labels = sorted({_category_label(v) for v in col.unique()}, key=_natural_key)
            attrs.append(Attribute(str(c), tuple(labels)))
    return Domain(tuple(attrs))


def _check_edges_cover(b: Binning, values: np.ndarray | None, c: str) -> None:
    """Explicit edges must put every value of the column in a bin."""
    if values is None:
        raise DomainError(f"edges given for column {c!r}, but its values are not all numbers")
    try:
        b.codes(values, c)
    except DomainError as exc:
        raise DomainError(f"edges for column {c!r} leave data outside every bin: {exc}") from None


def _numbers(col: pd.Series) -> np.ndarray | None:
    """The column's values as floats when it holds numbers, else None.

    A numeric column qualifies; so does a column of strings (a CSV read as
    text) when every value spells a finite number ("1", "01", "2.5").  Its
    labels, should it stay categorical, are still the strings as written.
    """
    if pd.api.types.is_numeric_dtype(col):
        return col.to_numpy(dtype=float)
    if not (pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col)) or col.empty:
        return None
    values = pd.to_numeric(col.astype(str).str.strip(), errors="coerce").to_numpy(dtype=float)
    return values if np.isfinite(values).all() else None


def _warn_almost_numeric(col: pd.Series, name: str, max_categories: int) -> None:
    """Warn when a few non-numbers ("NA", "?") keep a numeric column from being binned."""
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
            UserWarning, stacklevel=3)


def _natural_key(s: str):
    """Sort key: labels spelling finite numbers first, by value; then the others ("nan", "x")."""
    value = _numeric_key(s)
    return (1, 0.0, s) if value is None else (0, value, s)
