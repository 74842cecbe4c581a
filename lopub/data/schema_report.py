"""The table of decisions of :func:`lopub.data.schema.infer_schema`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lopub.data.domain import Domain

__all__ = ["ColumnDecision", "SchemaReport"]


@dataclass(frozen=True)
class ColumnDecision:
    """What :func:`infer_schema` decided for one column."""

    column: str
    kind: str
    decision: str  #: "categories", "bins" or "excluded"
    categories: tuple[str, ...] = ()
    missing_share: float = 0.0
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"column": self.column, "kind": self.kind, "decision": self.decision,
                "size": len(self.categories), "categories": list(self.categories),
                "missing_share": self.missing_share, "notes": list(self.notes)}


@dataclass(frozen=True)
class SchemaReport:
    """An inferred domain and the table of decisions behind it.

    Attributes
    ----------
    domain : Domain
    columns : tuple of ColumnDecision
        One per column considered, excluded ones included, in column order.
    n : int
        Rows the schema was inferred from.
    bins, max_categories : int
        The values used (given or from N).
    """

    domain: Domain
    columns: tuple[ColumnDecision, ...]
    n: int
    bins: int
    max_categories: int
    privacy_note: str | None = field(default=None)

    @property
    def excluded(self) -> list[str]:
        """Columns left out of the domain (identifier-like)."""
        return [c.column for c in self.columns if c.decision == "excluded"]

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "bins": self.bins, "max_categories": self.max_categories,
                "provenance": self.domain.provenance, "privacy_note": self.privacy_note,
                "columns": [c.to_dict() for c in self.columns], "total_cells": self.domain.cells()}

    def table(self, width: int = 60) -> str:
        """The decisions as a text table (column, type, decision, categories or bins, missing, notes)."""
        rows: list[tuple[str, ...]] = [("column", "type", "decision", "size", "categories / bins", "missing",
                                        "notes")]
        for c in self.columns:
            cats = ", ".join(c.categories)
            rows.append(tuple(map(_one_line, (c.column, c.kind, c.decision, str(len(c.categories)),
                                              cats if len(cats) <= width else cats[:width - 3] + "...",
                                              f"{100 * c.missing_share:.1f}%", "; ".join(c.notes)))))
        widths = [max(len(r[i]) for r in rows) for i in range(6)]
        lines = ["  ".join(v.ljust(w) for v, w in zip(r[:6], widths)) + "  " + r[6] for r in rows]
        lines.append(f"rows: {self.n:,}; bins: {self.bins}; raw values kept up to {self.max_categories} "
                     f"distinct; attributes: {len(self.domain)}; total cells: {_count(self.domain.cells())}")
        lines.append(f"provenance: {self.domain.provenance}")
        if self.privacy_note:
            lines.append(f"privacy: {self.privacy_note}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _one_line(text: str) -> str:
    """A table cell on one line: line breaks and tabs of a label (a quoted CSV cell) as ``\\n``."""
    return text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")


def _count(n: int) -> str:
    """An integer with thousands separators up to 15 digits, else in scientific form (``1.2e128``)."""
    digits = str(n)
    return f"{n:,}" if len(digits) <= 15 else f"{digits[0]}.{digits[1]}e{len(digits) - 1}"
