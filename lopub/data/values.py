"""Codes back to values in the input's shape: numbers, integers, booleans, dates, missing.

Rule (documented for releases): a binned attribute's value is drawn
uniformly within its bin -- a float uniform in ``[low, high)`` for kind
``number`` (uniform among the multiples of ``10 ** -decimals`` in the bin when the
attribute records the input's ``decimals``); an integer uniform among the integers of the bin for kind
``integer`` (point masses of the attribute excluded, so the value falls back
in the same bin); a point-mass bin returns its point; a date uniform among the
days of the bin; a date-time uniform within the bin, to the second, in the
attribute's ``timezone`` when it has one (a tz-aware column, UTC bins).  A categorical attribute of kind number or integer gives its
label as a number, a boolean one ``True``/``False``, a date one a datetime.
The missing category gives a missing value (NaN, ``pd.NA`` or ``NaT``; an
empty CSV cell).  Integer columns with missing values are pandas ``Int64``.

An attribute without a kind (a domain written before kinds were recorded)
and ``labels=True`` give the category labels, as ordered categoricals (the
missing category then keeps its label).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from lopub.data._labels import days_to_stamps
from lopub.data.domain import Attribute, Binning

__all__ = ["decode_column", "to_values"]


def to_values(codes: np.ndarray, attributes: tuple[Attribute, ...], *, labels: bool = False,
              rng: np.random.Generator) -> pd.DataFrame:
    """A DataFrame of ``codes`` (n, d) in the input's shape (module docstring)."""
    return pd.DataFrame({a.name: decode_column(codes[:, j].astype(np.int64), a, labels=labels, rng=rng)
                         for j, a in enumerate(attributes)})


def decode_column(codes: np.ndarray, attr: Attribute, *, labels: bool = False,
                  rng: np.random.Generator) -> pd.Series | pd.Categorical:
    """One attribute's codes as values (or labels)."""
    if labels or attr.kind is None:
        return pd.Categorical.from_codes(codes, categories=list(attr.categories), ordered=True)
    miss = np.zeros(codes.shape, dtype=bool) if attr.missing_code is None else codes == attr.missing_code
    if attr.binning is not None:
        x = _draw_in_bins(np.where(miss, 0, codes), attr.binning, attr.kind, rng, attr.decimals)
    elif attr.kind in ("number", "integer"):
        x = pd.to_numeric(pd.Series(attr.categories), errors="coerce").to_numpy(dtype=float)[codes]
    elif attr.kind in ("date", "datetime"):
        days = pd.to_datetime(pd.Series(attr.categories), errors="coerce", format="mixed",
                              utc=attr.timezone is not None)
        if attr.timezone is not None:
            days = days.dt.tz_convert(attr.timezone)
        return pd.Series(days.to_numpy()[codes], dtype=days.dtype).mask(miss)
    elif attr.kind == "boolean":
        flags = pd.Series(attr.categories).str.strip().str.lower().map({"true": True, "false": False})
        out = pd.Series(flags.to_numpy()[codes], dtype="boolean").mask(miss)
        return out if miss.any() else out.astype(bool)
    else:
        cats = [c for c in attr.categories if c != attr.missing]
        keep = {c: i for i, c in enumerate(cats)}
        remap = np.array([keep.get(c, -1) for c in attr.categories])
        return pd.Categorical.from_codes(remap[codes], categories=cats)
    return _typed(x, miss, attr.kind, attr.timezone)


def _typed(x: np.ndarray, miss: np.ndarray, kind: str, timezone: str | None = None) -> pd.Series:
    if kind == "date":
        stamps = pd.Timestamp("1970-01-01") + pd.to_timedelta(np.floor(x), unit="D")
        return pd.Series(stamps).mask(miss)
    if kind == "datetime":  # a time of day too, to the second (UTC days when zoned)
        return days_to_stamps(x, timezone).mask(miss)
    if kind == "integer":
        out = pd.Series(np.round(np.where(miss, 0.0, x)).astype(np.int64))  # (NaN at a missing cell: no cast)
        return out.astype("Int64").mask(miss) if miss.any() else out
    return pd.Series(np.where(miss, np.nan, x))


def _draw_in_bins(codes: np.ndarray, b: Binning, kind: str, rng: np.random.Generator,
                  decimals: int | None = None) -> np.ndarray:
    """A value per code, uniform within its bin (integers among the bin's integers; numbers with
    ``decimals`` among the bin's multiples of ``10 ** -decimals``)."""
    if kind == "number" and decimals is not None:
        scale = 10.0 ** decimals  # the grid's steps as integers (edges rounded off float noise)
        grid = Binning(tuple(np.round(np.asarray(b.edges) * scale, 6)),
                       tuple(np.round(np.asarray(b.points) * scale, 6)))
        v = _draw_in_bins(codes, grid, "integer", rng)  # a bin without a multiple: its lower end
        return np.where(v == np.round(v), np.round(v / scale, decimals), v / scale)
    out = np.empty(codes.shape, dtype=float)
    points = np.asarray(b.points)
    for k, (lo, hi, closed) in enumerate(b.bounds()):  # loop over bins, not records
        at = np.flatnonzero(codes == k)
        if at.size == 0:
            continue
        if lo == hi:
            out[at] = lo
        elif kind in ("integer", "date"):
            out[at] = _integers(lo, hi, closed, points, at.size, rng)
        else:
            out[at] = np.minimum(lo + rng.random(at.size) * (hi - lo), np.nextafter(hi, lo))
    return out


def _integers(lo: float, hi: float, closed: bool, points: np.ndarray, size: int,
              rng: np.random.Generator) -> np.ndarray:
    """``size`` integers uniform in the bin ``[lo, hi)`` (``]`` when closed), points left out."""
    first = int(np.ceil(lo))
    last = int(np.floor(hi)) if closed else int(np.ceil(hi)) - 1
    inside = points[(points >= first) & (points <= last) & (points == np.round(points))]
    count = last - first + 1 - inside.size
    if count <= 0:  # no integer in the bin: its lower end, as a number
        return np.full(size, lo)
    v = first + rng.integers(0, count, size=size)
    for p in inside:  # sorted points inside the bin: skip each (a handful)
        v = v + (v >= p)
    return v.astype(float)
