"""The CSV dialect a domain was inferred from: its delimiter and decimal mark.

``lopub schema`` records it in the domain JSON as the optional field
``"csv": {"sep": ";", "decimal": ","}`` when the input was not a plain
``,``-separated, decimal-point file, so that ``lopub synthesize`` writes a CSV
release in the input's dialect.  Domains without the field (files written
before it, hand-written or Parquet-inferred ones) mean ``,`` and ``.``.  It
describes the file's spelling only: no value of the data is in it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lopub.errors import DomainError

__all__ = ["CsvDialect", "DEFAULT_DIALECT", "dialect_from_dict"]


@dataclass(frozen=True)
class CsvDialect:
    """A CSV file's delimiter ``sep`` (one character, not a quote or line break) and decimal mark
    ``decimal`` (``.`` or ``,``, not the delimiter)."""

    sep: str = ","
    decimal: str = "."

    def __post_init__(self) -> None:
        if not isinstance(self.sep, str) or len(self.sep) != 1 or self.sep in "\"\r\n":
            raise DomainError(f"csv sep ({self.sep!r:.20}) must be one character (not a quote or a line "
                              f"break), e.g. ',' or ';' or a tab")
        if self.decimal not in (".", ","):
            raise DomainError(f"csv decimal ({self.decimal!r:.20}) must be '.' or ','")
        if self.sep == self.decimal:
            raise DomainError(f"csv sep and decimal ({self.sep!r}) must differ")

    def to_dict(self) -> dict[str, str]:
        """``{"sep": ..., "decimal": ...}``, the domain JSON's ``csv`` field."""
        return {"sep": self.sep, "decimal": self.decimal}


#: what a domain without a ``csv`` field means
DEFAULT_DIALECT = CsvDialect()


def dialect_from_dict(obj: Any) -> CsvDialect | None:
    """The ``csv`` field of a domain JSON (None when absent); ``DomainError`` when malformed."""
    if obj is None:
        return None
    if not isinstance(obj, dict) or set(obj) - {"sep", "decimal"}:
        raise DomainError(f"domain JSON: \"csv\" must be {{\"sep\": \";\", \"decimal\": \",\"}} (both "
                          f"optional), got {obj!r:.60}")
    return CsvDialect(obj.get("sep", ","), obj.get("decimal", "."))
