"""A numeric attribute's binning rule: edges, points with a bin of their own, labels, codes.

A value x falls in bin i when ``edges[i] <= x < edges[i+1]`` (the last bin also
takes ``x == edges[-1]``), unless it equals one of the binning's ``points``,
which have a bin of their own; values outside the edges (and no point) are an
error, never silently clipped (:mod:`lopub.data.domain`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from lopub.errors import DomainError


@dataclass(frozen=True)
class Binning:
    """Bins of a numeric attribute: intervals ``edges[i] <= x < edges[i+1]`` and point masses.

    ``points`` are values that get a bin of their own (a column that is 0 for
    92 % of its rows keeps 0 apart from the other values); a value equal to a
    point falls in the point's bin, whatever interval holds it.  Bins are
    ordered by their lower end, a point before the interval that starts at it.
    """

    edges: tuple[float, ...]
    points: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        edges = tuple(float(e) for e in self.edges)
        if len(edges) < 2:
            raise DomainError(f"binning edges ({list(edges)}) need at least 2 values")
        if not all(np.isfinite(edges)) or any(b <= a for a, b in zip(edges, edges[1:])):
            raise DomainError(f"binning edges ({list(edges)}) must be finite and strictly increasing")
        points = tuple(float(p) for p in self.points)
        if not all(np.isfinite(points)) or any(b <= a for a, b in zip(points, points[1:])):
            raise DomainError(f"binning points ({list(points)}) must be finite and strictly increasing")
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "points", points)

    @property
    def n_bins(self) -> int:
        """Number of bins: intervals plus points."""
        return len(self.edges) - 1 + len(self.points)

    def _order(self) -> np.ndarray:
        """Category position of each bin, bins numbered intervals first, then points."""
        keys = [(a, 1, i) for i, a in enumerate(self.edges[:-1])]
        keys += [(p, 0, len(self.edges) - 1 + i) for i, p in enumerate(self.points)]
        pos = np.empty(len(keys), dtype=np.int64)
        pos[[k[2] for k in sorted(keys)]] = np.arange(len(keys))
        return pos

    def bounds(self) -> list[tuple[float, float, bool]]:
        """``(low, high, closed_high)`` of every bin in category order; a point is ``(p, p, True)``."""
        last = len(self.edges) - 2
        raw = [(a, b, i == last) for i, (a, b) in enumerate(zip(self.edges, self.edges[1:]))]
        raw += [(p, p, True) for p in self.points]
        out: list = [None] * len(raw)
        for i, pos in enumerate(self._order()):
            out[pos] = raw[i]
        return out

    @property
    def labels(self) -> tuple[str, ...]:
        """Labels ``[a, b)`` per interval (last one closed; ``(a`` when ``a`` is a point), ``p`` per point."""
        pts = set(self.points)
        out = []
        for a, b, closed in self.bounds():
            if a == b:
                out.append(_fmt(a))
                continue
            close = "]" if closed and b not in pts else ")"
            out.append(f"{'(' if a in pts else '['}{_fmt(a)}, {_fmt(b)}{close}")
        return tuple(out)

    def codes(self, values: np.ndarray, name: str) -> np.ndarray:
        """Bin numeric ``values`` (1-D float array) into codes; error outside every bin."""
        x = np.asarray(values, dtype=float)
        e = np.asarray(self.edges)
        code = np.clip(np.searchsorted(e, x, side="right") - 1, 0, len(e) - 2).astype(np.int64)
        bad = ~np.isfinite(x) | (x < e[0]) | (x > e[-1])
        if self.points:
            p = np.asarray(self.points)
            at = np.clip(np.searchsorted(p, x), 0, p.size - 1)
            hit = p[at] == x
            code = np.where(hit, len(e) - 1 + at, code)
            bad &= ~hit
        if bad.any():
            v = x[np.argmax(bad)]
            pts = f" or the points {[_fmt(q) for q in self.points]}" if self.points else ""
            raise DomainError(
                f"attribute {name!r}: value {v} is outside the binning edges "
                f"[{_fmt(e[0])}, {_fmt(e[-1])}]{pts} ({int(bad.sum())} value(s) out of range)"
            )
        return self._order()[code] if self.points else code

    @staticmethod
    def quantile(values: Sequence[float] | np.ndarray, bins: int) -> "Binning":
        """Quantile edges computed once from ``values`` (duplicates merged)."""
        x = np.asarray(values, dtype=float)
        x = x[np.isfinite(x)]
        if x.size == 0:
            raise DomainError("cannot compute quantile bins from an empty column")
        if bins < 1:
            raise DomainError(f"bins ({bins}) must be >= 1")
        edges = np.unique(np.quantile(x, np.linspace(0, 1, bins + 1)))
        if edges.size < 2:
            edges = np.array([edges[0], edges[0] + 1.0])
        return Binning(tuple(edges))


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"
