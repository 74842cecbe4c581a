"""Synthetic release: sample records along the junction tree (LoPub Alg. 6).

Order: each component's root clique is drawn jointly (inverse CDF on its
flattened table); every other clique, parents first, draws its new attributes
``C \\ S`` conditionally on the separator values already sampled.  Components
of the junction forest are independent.

Vectorization ("group by separator configuration"): the conditional table of
a clique is a matrix with one row per separator configuration ``cfg``; every
record searches the CDF of its own row for the smallest cell whose CDF
exceeds its uniform ``u`` -- a binary search run for all records at once
(``ceil(log2 k)`` array gathers), no Python loop over records.  Searching the
row's own CDF (rather than row CDFs offset by the row index and concatenated,
which loses float precision far from row 0) guarantees that a cell of zero
probability is never drawn.

Zero-probability separators: a separator configuration to which the clique's
estimate gives zero mass uses the fallback of
:func:`lopub.model.graphical.conditional_table` (the clique's marginal of its new
attributes, else uniform); no NaN, no crash.

The same ``rng`` seed gives the same release.

Conditional sampling (``where={attr: label}``, SDV's ``sample_from_conditions``):
exact draws from ``P(x | where)`` under the model.  The evidence is clamped in
the junction tree: every clique's conditional table ``P(new | sep)`` is
multiplied by the indicator of the evidence and by the messages of its
children (leaves first, :func:`clamped_tables`), so each clique's table is
``P(new, evidence below | sep)``; sampling top-down from these tables draws
exactly from the posterior.  A condition of probability zero under the model
raises :class:`~lopub.data.marginal.ZeroProbabilityError`.  A model's relaxed
regions then update the draw as :func:`sample_codes` says (a heuristic: exact
for the tree, within sampling error for the regions' sets).

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 6.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from lopub._util import check_int, resolve_rng
from lopub.data.dataset import Dataset
from lopub.data.dialect import DEFAULT_DIALECT, CsvDialect
from lopub.data.domain import Domain
from lopub.data.marginal import ZeroProbabilityError
from lopub.data.values import to_values
from lopub.errors import DomainError
from lopub.io import atomic_write
from lopub.limits import check_memory
from lopub.model.graphical import Model, condition_label, conditional_table
from lopub.model.pgm.gum import condition_regions, refine_codes


def sample_codes(model: Model, n: int | None = None, *,
                 rng: np.random.Generator | int | None = None,
                 where: Mapping[str, Any] | None = None) -> Dataset:
    """Draw ``n`` integer-coded records from ``model`` (default ``model.users``).

    Parameters
    ----------
    model : Model
    n : int, optional
        Number of records, >= 1; defaults to the number of users
        (:attr:`Model.users <lopub.model.graphical.Model.users>`: the reports
        fitted, plus the users of a detection screen that only chose the plan).
    rng : Generator, int or None
        Keyword-only randomness; a fixed seed gives a fixed release.
    where : mapping, optional
        ``{attribute: label}``: draw from the model conditioned on these
        values (exact: evidence clamped in the junction tree); every record
        carries them.  A model with relaxed regions (measured sets in no
        clique, ``model.meta["regions"]``) also updates the conditional draw
        toward every region that holds all of ``where``, conditioned on it
        (:func:`lopub.model.pgm.gum.condition_regions`; a clamped attribute
        never changes), so a set inside such a region follows
        :meth:`Model.query(set, where) <lopub.model.graphical.Model.query>`,
        which answers it from that region; other regions are left out, their
        sets given ``where`` being answered from the tree.  The record
        updating is a heuristic (as for unconditional draws): region sets
        agree within sampling error, while the sets the model answers from
        the tree move off the tree's exact conditional by at most the
        fraction of records the updating replaces (measured in
        ``tests/test_conditional_regions.py``: 5 to 33 % of records, TVD
        gaps up to about 0.02 at 20,000 records on the embedded model).

    Returns
    -------
    Dataset

    Raises
    ------
    DomainError
        (a ``ValueError``) ``where`` names an unknown attribute or label.
    ZeroProbabilityError
        (a ``ValueError``) the model gives ``where`` probability zero.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Alg. 6; Lauritzen & Spiegelhalter (1988)
    (evidence propagation in a junction tree).

    Examples
    --------
    >>> from lopub.datasets import embedded_model
    >>> from lopub.pipeline.steps import fit
    >>> model = fit(estimator=embedded_model(), phi=0.4, warn=False).model
    >>> rows = sample_codes(model, 5, rng=0, where={"sex": "Female"}).to_pandas()
    >>> sorted(set(rows["sex"]))
    ['Female']
    """
    if n is None:
        if model.users is None:
            raise ValueError("n (None) must be given: the model records no report count")
        n = model.users
    n = check_int("n", n, 1)
    dom = model.domain  # codes, per-clique draws and the labelled frame: about 40 bytes a cell
    check_memory(40.0 * n * len(dom), "n", n, f"{n} synthetic records of {len(dom)} attributes")
    gen = resolve_rng(rng)
    tables = clamped_tables(model, where) if where else None
    codes = np.full((n, len(dom)), -1, dtype=np.int64)
    for i in model.tree.order:
        sep = list(model.tree.separator(i))
        new = [a for a in model.tree.cliques[i] if a not in sep]
        sep_cells = dom.cells(sep) if sep else 1
        table = model.cliques[i].project(sep + new).values if tables is None else tables[i]
        cond = conditional_table(table, sep_cells)
        if sep:
            cfg = np.ravel_multi_index(tuple(codes[:, dom.index(a)] for a in sep),
                                       dom.project(sep).sizes)
        else:
            cfg = np.zeros(n, dtype=np.int64)
        draw = _draw_rows(cond, cfg, gen)
        new_codes = np.unravel_index(draw, dom.project(new).sizes)
        for a, c in zip(new, new_codes):
            codes[:, dom.index(a)] = c
    regions = model.meta.get("regions")  # measured sets in no clique (lopub.model.pgm.relaxed)
    if regions and where:  # each region holding the evidence, conditioned on it (lopub.model.pgm.gum)
        regions = condition_regions(regions, dom, evidence_codes(model, where))
    if regions:
        codes = refine_codes(codes, dom, regions, rng=gen)
    return Dataset(codes, dom)


def evidence_codes(model: Model, where: Mapping[str, Any]) -> dict[str, int]:
    """``{attr: value}`` as ``{attr: code}``; unknown attributes or values raise ``DomainError``.

    A value is a label or a value as the data held it (:func:`lopub.model.graphical.condition_label`).
    """
    if not isinstance(where, Mapping):
        raise TypeError(f"where ({type(where).__name__}) must be a mapping attribute -> label")
    dom, out = model.domain, {}
    for a, label in where.items():
        if a not in dom.attrs:
            raise DomainError(f"condition names attribute {a!r}, which the model does not have; "
                              f"expected one of {list(dom.attrs)}")
        labels = list(dom.labels(a))
        named = condition_label(dom, a, label)
        if named is None:
            shown = labels if len(labels) <= 20 else labels[:20] + ["..."]
            raise DomainError(f"condition {a}={label!r}: attribute {a!r} has no such category; "
                              f"expected one of {shown}")
        out[a] = labels.index(named)
    return out


def clamped_tables(model: Model, where: Mapping[str, Any]) -> list[np.ndarray]:
    """Per clique, ``P(new, evidence in its subtree | sep)`` with axes ``sep + new`` (see the module docstring).

    Leaves first: a clique's conditional table ``P(new | sep)`` times the
    evidence indicator times its children's messages ``sum_new table``.  A
    root's table is ``P(root clique, evidence in its component)``; a total
    of zero raises :class:`ZeroProbabilityError`.
    """
    dom, tree = model.domain, model.tree
    codes = evidence_codes(model, where)
    kids: dict[int, list[int]] = {i: [] for i in range(len(tree.cliques))}
    for p, c in tree.edges:
        kids[p].append(c)
    out: dict[int, np.ndarray] = {}
    msg: dict[int, np.ndarray] = {}
    for i in reversed(tree.order):  # children before parents
        sep = list(tree.separator(i))
        order = sep + [a for a in tree.cliques[i] if a not in sep]
        t = conditional_table(model.cliques[i].project(order).values, dom.cells(sep) if sep else 1)
        t = t.reshape(dom.project(order).sizes)
        for k, a in enumerate(order):
            if a in codes:  # clamp: zero every cell off the evidence
                mask = np.zeros(dom.size(a))
                mask[codes[a]] = 1.0
                t = t * mask.reshape([-1 if j == k else 1 for j in range(len(order))])
        ops: list[Any] = [t, [dom.index(a) for a in order]]
        for c in kids[i]:
            ops += [msg[c], [dom.index(a) for a in tree.separator(c)]]
        t = np.einsum(*ops, [dom.index(a) for a in order])
        out[i] = t
        msg[i] = t.sum(axis=tuple(range(len(sep), len(order))))
    for r in tree.roots:
        if not float(msg[r]) > 0:
            cond = ", ".join(f"{a}={v}" for a, v in where.items())
            raise ZeroProbabilityError(f"condition {cond} has probability 0 under the model (in the "
                                       f"component of clique {list(tree.cliques[r])}); no record can "
                                       f"match it (expected a condition the model gives positive mass)")
    return [out[i] for i in range(len(tree.cliques))]


def _draw_rows(cond: np.ndarray, cfg: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """Inverse-CDF draw of one column index per record from row ``cfg`` of ``cond``.

    Each record gets the smallest column ``j`` with ``cdf[cfg, j] > u`` in its
    own row's CDF (``u`` uniform in [0, 1), the row's last CDF entry set to
    exactly 1).  A zero-probability cell repeats the CDF value of the cell
    before it, so it can never be that smallest column; no float offsets mix
    rows.  Vectorized binary search: ``ceil(log2 k)`` gathers over all records.
    """
    rows, k = cond.shape
    cdf = np.cumsum(cond, axis=1)
    cdf /= cdf[:, -1:]
    cdf[:, -1] = 1.0
    flat = cdf.ravel()
    base = np.asarray(cfg, dtype=np.int64) * k
    u = gen.random(base.shape[0])
    lo = np.zeros(base.shape[0], dtype=np.int64)  # answer in [lo, hi]
    hi = np.full(base.shape[0], k - 1, dtype=np.int64)
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) // 2
        right = flat[base + mid] <= u  # cdf[mid] <= u: the answer is after mid
        lo = np.where(open_ & right, mid + 1, lo)
        hi = np.where(open_ & ~right, mid, hi)


def synthesize(model: Model, n: int | None = None, *, labels: bool = False,
               rng: np.random.Generator | int | None = None,
               where: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Synthetic records as a DataFrame in the input's shape (Alg. 6).

    Parameters
    ----------
    model : Model
    n : int, optional
        Number of records (default: the number of users, :attr:`Model.users
        <lopub.model.graphical.Model.users>`).
    labels : bool
        Give every column as its category labels (a binned number as its bin
        ``"[33, 36)"``) instead of values.
    rng : Generator, int or None
        Keyword-only randomness; a fixed seed gives a fixed release.
    where : mapping, optional
        ``{attr: label}``: draw from the model conditioned on it (:func:`sample_codes`).

    Returns
    -------
    DataFrame
        Columns whose domain records a kind come back in it
        (:mod:`lopub.data.values`): numbers drawn uniformly within their bin
        (integers among the bin's integers, a point-mass bin its point),
        integers, booleans, dates, and the missing category as missing
        values.  Columns without a kind, and every column with
        ``labels=True``, are ordered categoricals of the labels.
    """
    gen = resolve_rng(rng)
    data = sample_codes(model, n, rng=gen, where=where)
    return to_values(data.codes, model.domain.attributes, labels=labels, rng=gen)


def write_release(df: pd.DataFrame, path: str | os.PathLike, domain: Domain | None = None, *,
                  sep: str | None = None, decimal: str | None = None) -> None:
    """Write a release atomically: Parquet for ``.parquet``/``.pq``, CSV otherwise.

    Missing values are empty CSV cells (Parquet nulls); numbers, integers and
    dates are written as such, so ``pandas.read_csv`` reads them back with
    the input's dtypes.  With the ``domain``, a CSV writes the dates of an
    attribute with a ``date_format`` in it (``%m/%d/%Y``: as the input), in
    the domain's CSV dialect (``domain.csv``: the input's delimiter and
    decimal mark, :mod:`lopub.data.dialect`).  ``sep`` / ``decimal``: the
    CSV's delimiter and decimal mark instead (default: the domain's, else
    ``,`` and ``.``).

    Labels are written exactly as they are.  In a CSV, a label with a comma,
    a quote or a line break is quoted, so that ``lopub`` (and any CSV reader)
    reads back the same labels, ``"None"``, ``"NA"``, ``"TRUE"`` and ``"01"``
    included.  Two kinds of labels survive only in Parquet: the empty label
    (an empty CSV cell is a missing value) and spaces around a label
    (stripped when a CSV is read).
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    suffix = Path(path).suffix.lower()
    if suffix in (".parquet", ".pq"):
        atomic_write(path, lambda tmp: df.to_parquet(tmp, index=False))
    else:
        dialect = CsvDialect(*release_dialect(domain, sep, decimal))  # checked before writing
        df = dates_as_written(df, domain) if domain is not None else df
        atomic_write(path, lambda tmp: df.to_csv(tmp, index=False, sep=dialect.sep, decimal=dialect.decimal))


def release_dialect(domain: Domain | None, sep: str | None = None, decimal: str | None = None
                    ) -> tuple[str, str]:
    """The delimiter and decimal mark of a CSV release: ``sep``/``decimal`` when given, else the
    ``domain``'s recorded dialect, else ``,`` and ``.``; a ``sep`` given alone gets the mark a
    reader assumes for it (``,`` for ``;``, else ``.``), as ``lopub`` reads a CSV."""
    recorded = getattr(domain, "csv", None) or DEFAULT_DIALECT
    if sep is None:
        return recorded.sep, decimal or recorded.decimal
    return sep, decimal or ("," if sep == ";" else ".")


def dates_as_written(df: pd.DataFrame, domain: Domain) -> pd.DataFrame:
    """``df`` with the dates of each attribute with a ``date_format`` as strings in it (for a CSV)."""
    dated = [a for a in domain.attributes if a.date_format
             and a.name in df.columns and pd.api.types.is_datetime64_any_dtype(df[a.name])]
    return df.assign(**{a.name: df[a.name].dt.strftime(a.date_format) for a in dated}) if dated else df
