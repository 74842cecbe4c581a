"""Real and synthetic inputs of a report: DataFrames or Datasets checked against the model's domain."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.dependency.cache import query_source
from lopub.dependency.mi import mutual_information
from lopub.errors import DomainError


def as_dataset(data: Any, domain: Domain, name: str) -> Dataset:
    """Records of ``data`` coded against ``domain`` (the model's).

    Parameters
    ----------
    data : pandas.DataFrame or Dataset
        Columns (attributes) must be exactly the domain's, in any order, and
        every value one of the domain's categories (numeric columns of binned
        attributes are binned).  A Dataset over another domain is recoded by
        label.
    domain : Domain
    name : str
        What ``data`` is ("real", "synthetic"), used in error messages.

    Raises
    ------
    TypeError
        ``data`` is neither a DataFrame nor a Dataset.
    DomainError
        (a ``ValueError``) naming ``name``, the column and the value: a
        column not in the domain, a missing column, a value not among the
        column's categories, a missing value.
    """
    if isinstance(data, Dataset):
        return _recode(data, domain, name)
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"{name} ({type(data).__name__}) must be a pandas DataFrame or a lopub Dataset")
    _check_columns([str(c) for c in data.columns], domain, name)
    try:
        return Dataset.from_pandas(data.rename(columns=str), domain)
    except DomainError as exc:
        raise DomainError(f"{name}: {exc}") from None


def model_columns(data: Any, domain: Domain, name: str) -> tuple[Any, list[str]]:
    """``data`` without its columns outside ``domain``, and the names left out.

    The columns are left out only when every column of ``domain`` is there
    (the real data ``fit`` read may hold identifiers and other columns the
    model dropped); otherwise ``data`` comes back unchanged and
    :func:`as_dataset` names the missing column.  Values are not checked here.
    """
    if isinstance(data, Dataset):
        columns = list(data.domain.attrs)
    elif isinstance(data, pd.DataFrame):
        columns = [str(c) for c in data.columns]
    else:
        return data, []
    extra = [c for c in columns if c not in domain]
    if not extra or any(a not in columns for a in domain.attrs):
        return data, []
    if isinstance(data, Dataset):
        idx = [data.domain.index(a) for a in domain.attrs]
        return Dataset(data.codes[:, idx], data.domain.project(list(domain.attrs))), extra
    keep = [c for c in data.columns if str(c) in domain]
    return data[keep], extra


def _check_columns(columns: list[str], domain: Domain, name: str) -> None:
    extra = [c for c in columns if c not in domain]
    if extra:
        raise DomainError(f"{name}: column {extra[0]!r} is not in the model's domain; expected the "
                          f"columns {list(domain.attrs)}")
    missing = [a for a in domain.attrs if a not in columns]
    if missing:
        raise DomainError(f"{name}: column {missing[0]!r} of the model's domain is missing; the data "
                          f"has {columns}")


def _recode(data: Dataset, domain: Domain, name: str) -> Dataset:
    """Codes of ``data`` against ``domain``, matched by label (loops over categories, not records)."""
    _check_columns(list(data.domain.attrs), domain, name)
    cols = []
    for a in domain.attrs:
        theirs, ours = data.domain.labels(a), domain.labels(a)
        lookup = np.array([ours.index(lab) if lab in ours else -1 for lab in theirs], dtype=np.int64)
        codes = lookup[data.codes[:, data.domain.index(a)].astype(np.int64)]
        if (codes < 0).any():
            bad = theirs[int(data.codes[np.flatnonzero(codes < 0)[0], data.domain.index(a)])]
            raise DomainError(f"{name}: column {a!r} has the value {bad!r}, which is not in the "
                              f"model's domain; expected one of {list(ours)[:50]}")
        cols.append(codes)
    return Dataset(np.column_stack(cols), domain)


def unmeasured_mask(model: Any, attrs: list[str]) -> np.ndarray:
    """d x d: True where no attribute set of the collection held both attributes.

    Under marginal sampling (one attribute per user among them) such a
    pair's table was never measured: the graph's MI of it (0) is derived
    from the one-way tables as independence, not estimated.  Other
    collections (Bloom reports, all attributes per user) measure every pair.
    """
    meta_fit = model.meta.get("fit")
    fit: dict = meta_fit if isinstance(meta_fit, dict) else {}
    meta_coll = fit.get("collection")
    coll: dict = meta_coll if isinstance(meta_coll, dict) else {}
    d = len(attrs)
    out = np.zeros((d, d), dtype=bool)
    if coll.get("protocol") != "marginals" or not coll.get("subsets"):
        return out
    where = {a: i for i, a in enumerate(attrs)}
    out[:] = True
    for s in coll["subsets"]:
        idx = [where[a] for a in s if a in where]
        out[np.ix_(idx, idx)] = False
    np.fill_diagonal(out, False)
    return out


def mi_matrix(model: Any, attrs: Sequence[str]) -> np.ndarray:
    """d x d mutual information (nats) of every pair of ``attrs`` under ``model`` (diagonal NaN)."""
    m = np.full((len(attrs), len(attrs)), np.nan)
    for i in range(len(attrs)):
        for j in range(i + 1, len(attrs)):
            m[i, j] = m[j, i] = mutual_information(query_source(model, [attrs[i], attrs[j]]))
    return m
