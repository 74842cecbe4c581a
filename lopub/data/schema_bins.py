"""Bins of a numeric column for :mod:`lopub.data.schema`: how many, and where.

Inferred bins never collapse a column: a value holding at least
``max(1/bins, 5 %)`` of the rows is a point mass with a bin of its own, the
other values get quantile bins (``bins`` minus the points, at least one; for
integer data the edges are rounded up to integers, which keeps every value in
its bin), and an empty interval is merged into its neighbour.  A point inside the range of the
intervals moves the nearest interval edge onto it (``[30, 40)``, ``40``, ``(40, 45)``; an edge is
added when no edge can move), so the bins are in numeric order.  A lowest or highest value
lying farther from the next value than the others span also gets a bin of its own, with a note:
a sentinel such as ``-999`` when it holds at least 1 % of the rows, else an outlier (one income of
10^9 among incomes up to 10^5), which would otherwise stretch the end bin across the gap, and a
release draws within a bin, uniformly (a quarter of the records up to 10^9).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from lopub.data._labels import date_label
from lopub.data.binning import Binning, _fmt
from lopub.errors import DomainError

#: a value holding at least this share of the rows (and 1/bins) is a point mass
POINT_SHARE = 0.05
#: a lowest or highest value farther from the next value than the others span gets a bin of its own:
#: a sentinel (``-999``) when it holds this share of the rows, else an outlier
SENTINEL_SHARE = 0.01


def auto_bins(n: int) -> int:
    """Bins of a binned numeric column for ``n`` rows: ``clip(floor(sqrt(n)) // 4, 2, 8)``."""
    return int(np.clip(int(np.sqrt(n)) // 4, 2, 8))


def auto_max_categories(n: int) -> int:
    """Distinct values a numeric column keeps as raw categories: ``clip(floor(sqrt(n)) // 2, 2, 32)``."""
    return int(np.clip(int(np.sqrt(n)) // 2, 2, 32))


def equal_width(bounds: Sequence[float], bins: int) -> Binning:
    """``bins`` equal-width bins between public ``bounds`` (low, high)."""
    lo, hi = float(bounds[0]), float(bounds[1])
    return Binning(tuple(np.linspace(lo, hi, bins + 1)))


def numeric_binning(values: np.ndarray, bins: int) -> tuple[Binning | None, list[str]]:
    """(Binning, notes) of finite ``values``: point masses plus quantile intervals, none empty.

    None when the values leave fewer than two distinct non-point values (the
    column is then better kept as categories).
    """
    x = np.asarray(values, dtype=float)
    uniq, counts = np.unique(x, return_counts=True)
    share = counts / x.size
    points = uniq[share >= max(1.0 / max(bins, 1), POINT_SHARE)]
    far = _sentinels(uniq)
    points = np.union1d(points, far)
    rest = x[~np.isin(x, points)]
    if np.unique(rest).size < 2:
        return None, []
    edges = np.quantile(rest, np.linspace(0, 1, max(bins - points.size, 1) + 1))
    if np.all(x == np.round(x)):  # integers: integer edges hold the same integers ([57.5, 60) = [58, 60))
        edges = np.ceil(edges)
    edges, points = _drop_empty(_at_points(np.unique(edges), points), x, points)
    notes = [f"{_fmt(p)} is {100 * s:.1f}% of the rows: a bin of its own" + _far_note(s) * (p in far)
             for p, s in zip(points, share[np.isin(uniq, points)])]
    return Binning(tuple(edges), tuple(points)), notes + ["quantile bins (inferred from the data)"]


def _at_points(grid: np.ndarray, points: np.ndarray) -> list[float]:
    """Edges with every point strictly inside them made an edge: the nearer free interior edge of
    its interval moves onto it (the number of bins stays), or, when neither can move (an end, or
    another point's), the point is added.  Then no interval straddles a point, and bins ordered by
    their lower end are in numeric order (``[30, 40)``, ``40``, ``(40, 45)``)."""
    edges = [float(e) for e in grid]
    fixed: set[float] = set()
    for p in (float(q) for q in points):  # loop over the points (a handful)
        if p in edges:
            fixed.add(p)
        if not edges[0] < p < edges[-1] or p in fixed:
            continue
        i = int(np.searchsorted(edges, p))  # edges[i - 1] < p < edges[i]
        free = [j for j in (i - 1, i) if 0 < j < len(edges) - 1 and edges[j] not in fixed]
        if free:
            edges[min(free, key=lambda j: abs(edges[j] - p))] = p
        else:
            edges.insert(i, p)
        fixed.add(p)
    return edges


def _far_note(share: float) -> str:
    """The note's reason for a far value's bin: a sentinel (:data:`SENTINEL_SHARE` of the rows or
    more) may code a missing value; a rarer one is an outlier."""
    if share >= SENTINEL_SHARE:
        return (" (far from every other value: if it codes a missing value, read it as missing: "
                "--na-values with the value as written in the file)")
    return (" (an outlier, far from every other value: without its own bin the end bin would span "
            "the gap and a release would draw values across it)")


def _sentinels(uniq: np.ndarray) -> np.ndarray:
    """The lowest or highest distinct value when it lies farther from the next value than the other
    values span (-999 below heights of 140 to 200; one income of 10^9 among incomes up to 10^5; one
    end found, the other is measured without it): a sentinel or an outlier (:func:`_far_note` tells
    them apart), whose quantile bin would span an empty gap."""
    lo, hi = 0, uniq.size - 1
    for _ in range(2):  # the second pass sees each end without the other end's far value
        if lo == 0 and hi >= 2 and uniq[1] - uniq[0] > uniq[hi] - uniq[1]:
            lo = 1
        if hi == uniq.size - 1 and hi - lo >= 2 and uniq[-1] - uniq[-2] > uniq[-2] - uniq[lo]:
            hi = uniq.size - 2
    return np.concatenate([uniq[:lo], uniq[hi + 1:]]).astype(float)


def _drop_empty(grid: list[float], x: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(edges, points) with every interval holding none of the values of ``x`` but the points
    merged into its neighbour: a free edge (not a point's) goes, or an end edge; an empty interval
    between two points' edges (integers 40 and 41 both point masses) gives up the second point,
    whose rows join the interval after it (a point inside an interval would break the order)."""
    edges, pts = list(grid), [float(p) for p in points]
    while len(edges) > 2:  # loop over intervals (a handful), not records
        rest = x[~np.isin(x, pts)]
        idx = np.clip(np.searchsorted(edges, rest, side="right") - 1, 0, len(edges) - 2)
        counts = np.bincount(idx, minlength=len(edges) - 1)
        empty = np.flatnonzero(counts == 0)
        if empty.size == 0:
            break
        i = int(empty[0])
        free = [j for j in (i + 1, i) if 0 < j < len(edges) - 1 and edges[j] not in pts]
        if free:
            del edges[free[0]]
        elif i + 1 == len(edges) - 1 or i == 0:
            del edges[i + 1 if i + 1 == len(edges) - 1 else 0]
        else:  # [p, q) between two points: q is a point no more
            pts.remove(edges[i + 1])
            del edges[i + 1]
    return np.asarray(edges), np.asarray(pts, dtype=float)


def _bin_labels(b: Binning, kind: str, zone: str | None = None) -> tuple[str, ...]:
    """Bin labels; of dates (and date-times) as days, or to the minute where days would repeat
    (zoned date-times: the local dates and times in ``zone``)."""
    if kind not in ("date", "datetime"):
        return b.labels
    for unit in ("D", "min"):
        out = [date_label(lo, unit, zone) if lo == hi
               else f"[{date_label(lo, unit, zone)}, {date_label(hi, unit, zone)}{']' if closed else ')'}"
               for lo, hi, closed in b.bounds()]
        if len(set(out)) == len(out):
            return tuple(out)
    return b.labels


def _check_cover(b: Binning, values: np.ndarray, name: str) -> None:
    """Public edges or bounds must put every value of the column in a bin."""
    try:
        b.codes(values, name)
    except DomainError as exc:
        raise DomainError(f"edges for column {name!r} leave data outside every bin: {exc}") from None
