"""Frozen attribute domain: the public schema shared by clients and server.

A :class:`Domain` lists attribute names in order, each with its ordered
category labels, and optionally the binning rule that maps a numeric column to
those categories.  It is public knowledge: the schema file is the contract
between every client and the server.

JSON file format (``"format": "lopub-domain"``, ``"version": 1``): see
:mod:`lopub.data.domain` and ``lopub/formats/jsonschema/domain.schema.json``.

Binning rule: a numeric value x falls in bin i when ``edges[i] <= x < edges[i+1]``
(the last bin also takes ``x == edges[-1]``), unless it equals one of the
binning's ``points``, which have a bin of their own; values outside the edges
(and no point) are an error, never silently clipped.  An attribute may record
its ``kind`` (the input's type, for the release), the label of its
missing-value category and, for a ``datetime`` attribute, its ``timezone`` (an
IANA name such as ``Europe/Paris``, ``UTC`` or a fixed offset ``+01:00``: the
values were time-zone aware, their bins are on UTC instants and a release gives
them back in that zone), for a binned ``number`` attribute its ``decimals`` (the input's
decimal places: a release draws its values to that precision), for a ``date`` attribute read
from ``MM/DD/YYYY`` strings its ``date_format`` (``%m/%d/%Y``: a CSV release writes the dates so); a domain may record its ``provenance`` (public
knowledge, or inferred from the private records, which it then reveals).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from lopub.data.binning import Binning
from lopub.data.dialect import CsvDialect, dialect_from_dict
from lopub.data.kinds import KINDS, check_date_format, check_decimals, check_timezone  # noqa: F401  (re-exported)
from lopub.errors import DomainError
from lopub.formats import DOMAIN_FORMAT, DOMAIN_VERSION  # noqa: F401  (re-exported)
from lopub.formats._io import dump_json, load_json


#: provenance of a schema written from public knowledge (data dictionary, declared bounds)
PUBLIC = "public"
#: provenance of a schema inferred from the raw records: its categories and bins reveal them
INFERRED = "inferred from private data"


@dataclass(frozen=True)
class Attribute:
    """One attribute: a name, its ordered category labels, optional binning.

    ``kind`` (one of :data:`KINDS`, or None when unknown) is the column's type
    in the input, so that a release gives numbers, integers, booleans, dates
    and date-times (dates with a time of day) back as such.  ``missing`` is
    the label of the category that stands for a missing value (None: missing
    values are refused); in a binned attribute it is the last category, after
    one per bin.  ``timezone`` (kind ``datetime`` only; None: naive
    date-times) is the zone of time-zone-aware values: an IANA name
    (``Europe/Paris``), ``UTC`` or a fixed UTC offset (``+01:00``).  Their bin
    edges are days since 1970-01-01 UTC (instants, not wall-clock times); a
    release gives the values back in the zone.  ``decimals`` (kind
    ``number`` only; None: full precision) is the number of decimal places
    of the input's values: a release draws a binned value among the
    multiples of ``10 ** -decimals`` in its bin.  ``date_format`` (kind
    ``date`` only; None: ISO ``YYYY-MM-DD``) is how the input wrote its
    dates, a ``strftime`` format of day, month and year (``%m/%d/%Y``): a
    CSV release writes them so.
    """

    name: str
    categories: tuple[str, ...]
    binning: Binning | None = None
    kind: str | None = None
    missing: str | None = None
    timezone: str | None = None
    decimals: int | None = None
    date_format: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise DomainError(f"attribute name ({self.name!r}) must be a non-empty string")
        object.__setattr__(self, "name", str(self.name))  # numpy.str_ (names from an array) -> str
        if isinstance(self.missing, str):
            object.__setattr__(self, "missing", str(self.missing))
        cats = tuple(str(c) for c in self.categories)
        if len(cats) == 0:
            raise DomainError(f"attribute {self.name!r} has no categories")
        if len(set(cats)) != len(cats):
            dup = sorted({c for c in cats if cats.count(c) > 1})
            raise DomainError(f"attribute {self.name!r} has duplicate categories {dup}")
        if self.kind is not None and self.kind not in KINDS:
            raise DomainError(f"attribute {self.name!r}: kind ({self.kind!r}) must be one of {list(KINDS)}")
        if self.timezone is not None:
            check_timezone(self.name, self.timezone, self.kind)
        if self.decimals is not None:
            check_decimals(self.name, self.decimals, self.kind)
        if self.date_format is not None:
            check_date_format(self.name, self.date_format, self.kind)
        if self.missing is not None and self.missing not in cats:
            raise DomainError(f"attribute {self.name!r}: the missing-value label ({self.missing!r}) "
                              f"is not one of its categories")
        extra = self.missing is not None and self.binning is not None
        if self.binning is not None and self.binning.n_bins != len(cats) - extra:
            raise DomainError(
                f"attribute {self.name!r}: {len(cats) - extra} categories but "
                f"{self.binning.n_bins} bins"
            )
        if extra and cats[-1] != self.missing:
            raise DomainError(f"attribute {self.name!r}: the missing-value label ({self.missing!r}) "
                              f"must be the last category of a binned attribute")
        object.__setattr__(self, "categories", cats)

    @property
    def missing_code(self) -> int | None:
        """Code of the missing-value category, None when there is none."""
        return None if self.missing is None else self.categories.index(self.missing)

    @property
    def size(self) -> int:
        return len(self.categories)


@dataclass(frozen=True)
class Domain:
    """Ordered attributes with ordered categories (immutable).

    Parameters
    ----------
    attributes : sequence of Attribute
        In column order; names must be unique.
    provenance : str, optional
        Where the categories and bins come from: :data:`PUBLIC` (public
        knowledge: a data dictionary, declared bounds) or :data:`INFERRED`
        (computed from the raw records, which they then reveal); free text
        is kept as written.  Not part of equality.
    csv : CsvDialect, optional
        The delimiter and decimal mark of the CSV it was inferred from
        (:mod:`lopub.data.dialect`; None: ``,`` and ``.``); a CSV release is
        written so.  Not part of equality.
    """

    attributes: tuple[Attribute, ...]
    provenance: str | None = field(default=None, compare=False)
    csv: CsvDialect | None = field(default=None, compare=False)
    _index: Mapping[str, int] = field(init=False, repr=False, compare=False)
    _names: tuple[str, ...] = field(init=False, repr=False, compare=False)  # attrs, computed once
    _sizes: tuple[int, ...] = field(init=False, repr=False, compare=False)  # sizes, computed once

    def __post_init__(self) -> None:
        attrs = tuple(self.attributes)
        if not attrs:
            raise DomainError("a domain needs at least one attribute")
        if not all(isinstance(a, Attribute) for a in attrs):
            raise TypeError("attributes must be Attribute objects")
        if self.csv is not None and not isinstance(self.csv, CsvDialect):
            raise TypeError(f"csv must be a CsvDialect or None, got {type(self.csv).__name__}")
        names = [a.name for a in attrs]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise DomainError(f"duplicate attribute names {dup}")
        object.__setattr__(self, "attributes", attrs)
        object.__setattr__(self, "_index", {n: i for i, n in enumerate(names)})
        object.__setattr__(self, "_names", tuple(names))
        object.__setattr__(self, "_sizes", tuple(a.size for a in attrs))

    # construction -----------------------------------------------------
    @classmethod
    def from_categories(cls, categories: Mapping[str, Iterable[Any]]) -> "Domain":
        """Build from ``{name: [labels...]}`` (insertion order kept)."""
        return cls(tuple(Attribute(n, tuple(str(c) for c in cs)) for n, cs in categories.items()))

    # accessors --------------------------------------------------------
    @property
    def attrs(self) -> tuple[str, ...]:
        """Attribute names in order."""
        return self._names

    @property
    def sizes(self) -> tuple[int, ...]:
        """Number of categories per attribute, in order."""
        return self._sizes

    def __len__(self) -> int:
        return len(self.attributes)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __getitem__(self, name: str) -> Attribute:
        return self.attributes[self.index(name)]

    def index(self, name: str) -> int:
        """Position of attribute ``name``; clear error for an unknown name."""
        try:
            return self._index[name]
        except (KeyError, TypeError):
            raise DomainError(
                f"unknown attribute {name!r}; the domain has {list(self.attrs)}"
            ) from None

    def indices(self, names: Sequence[str]) -> tuple[int, ...]:
        """Positions of ``names``; rejects unknown and duplicate names."""
        if isinstance(names, str):
            names = [names]
        names = list(names)
        if not names:
            raise DomainError("attrs must name at least one attribute")
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise DomainError(f"duplicate attributes {dup} in attrs {names}")
        return tuple(self.index(n) for n in names)

    def labels(self, name: str) -> tuple[str, ...]:
        return self[name].categories

    def size(self, name: str) -> int:
        return self[name].size

    def cells(self, names: Sequence[str] | None = None) -> int:
        """Number of cells of the joint domain of ``names`` (all attributes by default)."""
        names = self.attrs if names is None else names
        return math.prod(self.size(n) for n in names)

    def project(self, names: Sequence[str]) -> "Domain":
        """Sub-domain over ``names`` in the given order."""
        return Domain(tuple(self.attributes[i] for i in self.indices(names)), self.provenance, self.csv)

    # JSON -------------------------------------------------------------
    def to_dict(self) -> dict:
        """The ``lopub-domain`` JSON object (see :mod:`lopub.data.domain`)."""
        return domain_to_dict(self)

    @classmethod
    def from_dict(cls, obj: Any) -> "Domain":
        """Rebuild from :meth:`to_dict`; :class:`~lopub.errors.DomainError` naming what is wrong."""
        return domain_from_dict(obj)

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """JSON text; also written atomically to ``path`` when given."""
        return dump_json(self.to_dict(), path)

    @classmethod
    def from_json(cls, source: str | os.PathLike) -> "Domain":
        """Load from a JSON file path or a JSON string."""
        obj = load_json(source, DomainError, "domain")
        try:
            return cls.from_dict(obj)
        except DomainError as exc:
            if isinstance(source, str) and source.lstrip().startswith("{"):
                raise
            raise DomainError(f"domain file {os.fspath(source)!r}: {exc}") from None


# ----------------------------------------------------------------------
# The domain file (``"format": "lopub-domain"``, ``"version": 1``).
#
# JSON Schema: ``lopub/formats/jsonschema/domain.schema.json``::
#
#     {"format": "lopub-domain", "version": 1,
#      "attributes": [
#         {"name": "sex", "categories": ["Female", "Male"]},
#         {"name": "age", "categories": ["[17, 25)", ...],
#          "binning": {"edges": [17, 25, ...]}}]}
#
# Reading checks the header and the shape of every attribute and raises
# :class:`~lopub.errors.DomainError`; the :class:`~lopub.data.domain.Attribute` and
# :class:`~lopub.data.domain.Binning` constructors check the rest (unique names and
# labels, increasing edges, one label per bin).


def domain_to_dict(domain: Domain) -> dict:
    """The JSON object of ``domain`` (binning, kind, missing label and provenance when present)."""
    attrs = []
    for a in domain.attributes:
        d: dict[str, Any] = {"name": a.name, "categories": list(a.categories)}
        if a.binning is not None:
            d["binning"] = {"edges": list(a.binning.edges)}
            if a.binning.points:
                d["binning"]["points"] = list(a.binning.points)
        if a.kind is not None:
            d["kind"] = a.kind
        if a.missing is not None:
            d["missing"] = a.missing
        if a.timezone is not None:
            d["timezone"] = a.timezone
        if a.decimals is not None:
            d["decimals"] = a.decimals
        if a.date_format is not None:
            d["date_format"] = a.date_format
        attrs.append(d)
    out = {"format": DOMAIN_FORMAT, "version": DOMAIN_VERSION, "attributes": attrs}
    if domain.provenance is not None:
        out["provenance"] = domain.provenance
    if domain.csv is not None:
        out["csv"] = domain.csv.to_dict()
    return out


def domain_from_dict(obj: Any) -> Domain:
    """Rebuild a :class:`~lopub.data.domain.Domain` from :func:`domain_to_dict`.

    Raises
    ------
    DomainError
        Wrong format or version, ``attributes`` not a list, an attribute
        without ``name``/``categories``, categories not a list, a malformed
        ``binning``, or anything the Domain constructors refuse.
    """
    if not isinstance(obj, dict) or obj.get("format") != DOMAIN_FORMAT:
        raise DomainError(f"not a lopub domain (expected \"format\": \"{DOMAIN_FORMAT}\")")
    if type(obj.get("version")) is not int or obj["version"] != DOMAIN_VERSION:
        raise DomainError(
            f"domain version {obj.get('version')!r} is not supported (expected {DOMAIN_VERSION})"
        )
    attrs = obj.get("attributes")
    if not isinstance(attrs, list):
        raise DomainError("domain JSON: \"attributes\" must be a list")
    prov = obj.get("provenance")
    if prov is not None and not isinstance(prov, str):
        raise DomainError(f"domain JSON: \"provenance\" must be a string, got {prov!r:.40}")
    if "privacy" in obj and not isinstance(obj["privacy"], str):  # the note lopub schema writes
        raise DomainError(f"domain JSON: \"privacy\" must be a string (a note), got {obj['privacy']!r:.40}")
    return Domain(tuple(_attribute(i, a) for i, a in enumerate(attrs)), prov, dialect_from_dict(obj.get("csv")))


def _attribute(i: int, a: Any) -> Attribute:
    if not isinstance(a, dict) or "name" not in a or "categories" not in a:
        raise DomainError(f"domain JSON: attribute #{i} needs \"name\" and \"categories\"")
    cats, b = a["categories"], a.get("binning")
    if not isinstance(cats, list):
        raise DomainError(f"domain JSON: attribute #{i} ({a['name']!r}): \"categories\" must be "
                          f"a list of labels, got {type(cats).__name__}")
    odd = [c for c in cats if not isinstance(c, str)]
    if odd:
        raise DomainError(f"domain JSON: attribute #{i} ({a['name']!r}): category {odd[0]!r:.40} is "
                          f"not a string; labels are JSON strings (quote numbers: \"1\")")
    if b is not None and not (isinstance(b, dict) and isinstance(b.get("edges"), list)
                              and all(_is_number(e) for e in b["edges"])):
        raise DomainError(f"domain JSON: attribute #{i} ({a['name']!r}): \"binning\" must be "
                          f"{{\"edges\": [e0, e1, ...]}} with numbers, got {b!r:.80}")
    points = b.get("points", []) if b else []
    if not (isinstance(points, list) and all(_is_number(p) for p in points)):
        raise DomainError(f"domain JSON: attribute #{i} ({a['name']!r}): \"binning\" \"points\" "
                          f"must be a list of numbers, got {points!r:.80}")
    for key in ("kind", "missing", "timezone", "date_format"):
        if a.get(key) is not None and not isinstance(a[key], str):
            raise DomainError(f"domain JSON: attribute #{i} ({a['name']!r}): \"{key}\" must be "
                              f"a string, got {a[key]!r:.40}")
    binning = Binning(tuple(b["edges"]), tuple(points)) if b else None
    return Attribute(a["name"], tuple(cats), binning, a.get("kind"), a.get("missing"), a.get("timezone"),
                     a.get("decimals"), a.get("date_format"))


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)
