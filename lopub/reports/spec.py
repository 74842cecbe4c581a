"""CollectionSpec: the public parameters of a LoPub collection.

Everything a client needs to produce a report and the server needs to read
it: the Domain, per attribute the Bloom length m_j, the number of hash
functions h_j and a salt index, the flip probability f, the hash key and the
format version.  Shared in the clear; JSON round trip (file format: see
:mod:`lopub.reports.spec` and ``lopub/formats/jsonschema/spec.schema.json``).

References
----------
Ren et al., IEEE TIFS 2018, Eq. 5 (bit flipping), Eq. 6-7 (Bloom sizing),
Eq. 8 (privacy).
"""
from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Sequence, cast

import numpy as np

from lopub.reports import privacy
from lopub._util import check_int, check_open_unit
from lopub.data.domain import Domain
from lopub.errors import SpecError
from lopub.limits import check_memory
from lopub.formats import SPEC_FORMAT, SPEC_VERSION  # noqa: F401  (re-exported)
from lopub.formats._io import dump_json, load_json
from lopub.data.domain import domain_from_dict, domain_to_dict

DEFAULT_KEY = "lopub-default-public-key-v1"
MAX_SALT_TRIES = 64


def bloom_positions(key: str, attr: str, salt: int, label: str, h: int, m: int) -> list[int]:
    """The h bit positions of one value's Bloom filter (stable keyed BLAKE2b).

    Position i is the i-th little-endian 64-bit word of
    ``blake2b(attr \\0 salt \\0 label, key=key, digest_size=8h)`` modulo m.
    Identical on every platform and process (a keyed BLAKE2b, never Python's salted built-in hash).
    """
    msg = f"{attr}\x00{salt}\x00{label}".encode("utf-8")
    digest = hashlib.blake2b(msg, key=key.encode("utf-8")[:64], digest_size=min(64, 8 * h)).digest()
    words = [int.from_bytes(digest[8 * i: 8 * i + 8], "little") for i in range(min(h, 8))]
    extra = h - len(words)
    j = 1
    while extra > 0:  # more than 8 hashes: chain further digests
        more = hashlib.blake2b(msg + j.to_bytes(4, "little"), key=key.encode("utf-8")[:64], digest_size=64).digest()
        take = min(extra, 8)
        words += [int.from_bytes(more[8 * i: 8 * i + 8], "little") for i in range(take)]
        extra -= take
        j += 1
    return [w % m for w in words]


def bloom_matrix(key: str, attr: str, salt: int, labels: Sequence[str], h: int, m: int) -> np.ndarray:
    """Bloom filters of all values of one attribute: bool array (|O_j|, m)."""
    H = np.zeros((len(labels), m), dtype=bool)
    for v, label in enumerate(labels):  # over domain values, not users
        H[v, bloom_positions(key, attr, salt, label, h, m)] = True
    return H


def optimal_bloom(size: int, fp_rate: float) -> tuple[int, int]:
    """(m, h) for a value set of ``size`` at false-positive rate ``fp_rate`` (Eq. 6-7)."""
    fp_rate = check_open_unit("fp_rate", fp_rate)
    bits = -math.log(fp_rate)  # not log(1 / fp_rate): 1 / a subnormal rate overflows to inf
    m = math.ceil(bits / math.log(2) ** 2 * size)
    h = max(1, round(bits / math.log(2)))
    return max(m, h), h


def _refuse_constant(domain: Domain, hs: list, epsilon: float) -> None:
    """Refuse a per-record budget split over an attribute of one category.

    One ``f`` serves every attribute and the stated epsilon is
    ``sum_j 2 h_j ln((2 - f) / f)`` over all of them (what every reader of a
    spec, the JS device client too, checks), so a constant attribute would take
    its share ``h_j / sum h`` of ``epsilon`` and buy nothing with it.
    """
    one = [(a, hj) for a, k, hj in zip(domain.attrs, domain.sizes, hs) if k < 2]
    if not one:
        return
    share = sum(hj for _, hj in one) / sum(hs)
    names = ", ".join(f"{a!r} (only {list(domain.labels(a))})" for a, _ in one)
    raise SpecError(
        f"attribute(s) {names} have one category: Bloom reports split epsilon ({epsilon:g}) over "
        f"every attribute's hashes, so they would take {share:.0%} of it ({epsilon * share:.4g}) "
        f"and reveal nothing for it. A constant column carries no information: leave it out of "
        f"the domain (lopub schema --columns ..., or domain.project([...])), or use --protocol auto")


@dataclass(frozen=True)
class CollectionSpec:
    """Public parameters of a Bloom-filter LDP collection.

    Build with :meth:`from_domain`.  Construction validates everything and
    refuses specs that cannot work.
    """

    domain: Domain
    m: tuple[int, ...]
    h: tuple[int, ...]
    f: float
    key: str = DEFAULT_KEY
    salts: tuple[int, ...] = ()
    version: int = SPEC_VERSION
    _check: bool = field(default=True, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.domain, Domain):
            raise TypeError(f"domain must be a Domain, got {type(self.domain).__name__}")
        d = len(self.domain)
        m = tuple(check_int("m", x, 1) for x in self.m)
        h = tuple(check_int("h", x, 1) for x in self.h)
        salts = tuple(self.salts) or (0,) * d
        for name, seq in (("m", m), ("h", h), ("salts", salts)):
            if len(seq) != d:
                raise SpecError(f"{name} has {len(seq)} entries for {d} attributes")
        object.__setattr__(self, "m", m)
        object.__setattr__(self, "h", h)
        object.__setattr__(self, "salts", tuple(int(s) for s in salts))
        object.__setattr__(self, "f", check_open_unit("f", self.f))
        if not isinstance(self.key, str) or not self.key:
            raise SpecError(f"key ({self.key!r}) must be a non-empty string")
        if len(self.key.encode("utf-8")) > 64:
            raise SpecError(f"key ({len(self.key.encode('utf-8'))} bytes in UTF-8) must be at most "
                            "64 bytes (the BLAKE2b key size)")
        if self.version != SPEC_VERSION:
            raise SpecError(f"spec version {self.version!r} is not supported (expected {SPEC_VERSION})")
        for a, mj, hj in zip(self.domain.attrs, m, h):
            if mj < hj:
                raise SpecError(f"attribute {a!r}: m_j ({mj}) must be >= h ({hj})")
        if self._check:
            for j in range(d):
                collision = self._collision(j)
                if collision:
                    a = self.domain.attrs[j]
                    raise SpecError(
                        f"attribute {a!r}: values {collision[0]!r} and {collision[1]!r} have the same "
                        f"Bloom filter with m_j={m[j]}, h={h[j]}, salt={self.salts[j]}; "
                        "increase m_j or let from_domain() re-derive the salt"
                    )

    # construction -------------------------------------------------------
    @classmethod
    def from_domain(
        cls,
        domain: Domain,
        *,
        f: float | None = None,
        epsilon: float | None = None,
        m: int | Sequence[int] | None = None,
        h: int | Sequence[int] | None = None,
        fp_rate: float | None = None,
        key: str = DEFAULT_KEY,
    ) -> "CollectionSpec":
        """Build a spec from a domain and either ``f`` or a per-record ``epsilon``.

        Bloom sizes: ``m``/``h`` as given (one int for all attributes or one
        per attribute), else derived from ``fp_rate`` (Eq. 6-7), else the
        paper's defaults m = 128, h = 4 (m = 32, h = 4 for binary attributes).
        A salt index per attribute is re-derived (0, 1, 2, ...) until no two
        values of the attribute share a Bloom filter.
        """
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a lopub Domain, got {type(domain).__name__}")
        if not isinstance(key, str):
            raise TypeError(f"key must be a string, got {type(key).__name__}")
        if (f is None) == (epsilon is None):
            raise SpecError("give exactly one of f or epsilon")
        d = len(domain)
        if fp_rate is not None and (m is not None or h is not None):
            raise SpecError("give either fp_rate or m/h, not both")
        if fp_rate is not None:
            mh = [optimal_bloom(s, fp_rate) for s in domain.sizes]
            ms, hs = [x[0] for x in mh], [x[1] for x in mh]
        else:
            ms = _per_attr("m", m, d, [32 if s <= 2 else 128 for s in domain.sizes])
            hs = _per_attr("h", h, d, [4] * d)
        if epsilon is not None:
            _refuse_constant(domain, hs, epsilon)
            f = privacy.f_for_epsilon(epsilon, hs)
        salts = [_find_salt(key, a, domain.labels(a), hj, mj) for a, hj, mj in zip(domain.attrs, hs, ms)]
        return cls(domain, tuple(ms), tuple(hs), cast(float, f), key, tuple(salts))

    def _collision(self, j: int) -> tuple[str, str] | None:
        return _first_collision(self.bloom[j], self.domain.labels(self.domain.attrs[j]))

    # derived --------------------------------------------------------------
    @cached_property
    def bloom(self) -> tuple[np.ndarray, ...]:
        """Per attribute, the Bloom filters of all values: bool (|O_j|, m_j)."""
        return tuple(
            bloom_matrix(self.key, a, s, self.domain.labels(a), hj, mj)
            for a, s, hj, mj in zip(self.domain.attrs, self.salts, self.h, self.m)
        )

    @cached_property
    def bloom_packed(self) -> tuple[np.ndarray, ...]:
        """Per attribute, the packed Bloom filters of all values: uint8 (|O_j|, ceil(m_j/8))."""
        return tuple(np.packbits(H, axis=1) for H in self.bloom)

    @property
    def offsets(self) -> tuple[int, ...]:
        """Start bit of each attribute in a report (length d + 1)."""
        return tuple(int(x) for x in np.concatenate([[0], np.cumsum(self.m)]))

    @property
    def total_bits(self) -> int:
        """Bits per report, sum_j m_j (Eq. 9)."""
        return int(sum(self.m))

    @property
    def packed_bytes(self) -> int:
        return (self.total_bits + 7) // 8

    def slice(self, attr: str) -> slice:
        j = self.domain.index(attr)
        return slice(self.offsets[j], self.offsets[j + 1])

    @property
    def epsilon_per_attribute(self) -> tuple[float, ...]:
        return tuple(privacy.epsilon_per_attribute(self.f, hj) for hj in self.h)

    @property
    def epsilon(self) -> float:
        """Per-record epsilon: the sum over attributes (Eq. 8), ``2 (sum_j h_j) ln((2 - f)/f)``
        exact and rounded once (:func:`lopub.reports.privacy.epsilon_per_record`)."""
        return privacy.epsilon_per_record(self.f, list(self.h))

    def summary(self) -> dict[str, Any]:
        """Human/JSON summary, always with the privacy figures."""
        return {
            "attributes": len(self.domain),
            "f": self.f,
            "m": list(self.m),
            "h": list(self.h),
            "bits_per_report": self.total_bits,
            "epsilon_per_attribute": dict(zip(self.domain.attrs, self.epsilon_per_attribute)),
            "epsilon_per_record": self.epsilon,
        }

    # JSON -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The ``lopub-spec`` JSON object (see :mod:`lopub.reports.spec`)."""
        return spec_to_dict(self)

    @classmethod
    def from_dict(cls, obj: Any) -> "CollectionSpec":
        """Rebuild from :meth:`to_dict`; :class:`~lopub.errors.SpecError` naming what is wrong."""
        return spec_from_dict(obj)

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """JSON text; also written atomically to ``path`` when given."""
        return dump_json(self.to_dict(), path)

    @classmethod
    def from_json(cls, source: str | os.PathLike) -> "CollectionSpec":
        """Load from a JSON file path or a JSON string."""
        return cls.from_dict(load_json(source, SpecError, "spec"))


def _per_attr(name: str, value: Any, d: int, default: list[int]) -> list[int]:
    if value is None:
        return default
    if isinstance(value, (list, tuple)):
        if len(value) != d:
            raise SpecError(f"{name} has {len(value)} entries for {d} attributes")
        return [check_int(name, v, 1) for v in value]
    return [check_int(name, value, 1)] * d


def _first_collision(H: np.ndarray, labels: Sequence[str]) -> tuple[str, str] | None:
    packed = np.ascontiguousarray(np.packbits(H, axis=1))  # rows as bytes: no per-column fields
    rows = packed.view(np.dtype((np.void, max(packed.shape[1], 1)))).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    inverse = np.asarray(inverse).ravel()
    dup = np.flatnonzero(first[inverse] != np.arange(len(labels)))
    if dup.size:
        return labels[first[inverse[dup[0]]]], labels[dup[0]]
    return None


def _find_salt(key: str, attr: str, labels: Sequence[str], h: int, m: int) -> int:
    if m < h:
        raise SpecError(f"attribute {attr!r}: m_j ({m}) must be >= h ({h})")
    check_memory(1.5 * len(labels) * m, "m_j", m, f"the Bloom matrix of attribute {attr!r} "
                 f"({len(labels)} values x m_j bits)")
    if m < len(labels) and sum(math.comb(m, i) for i in range(1, h + 1)) < len(labels):
        raise SpecError(f"attribute {attr!r}: m_j ({m}) with h ({h}) cannot separate {len(labels)} values")
    collision: tuple[str, str] | None = None
    for salt in range(MAX_SALT_TRIES):
        collision = _first_collision(bloom_matrix(key, attr, salt, labels, h, m), labels)
        if collision is None:
            return salt
    collision = cast(tuple[str, str], collision)  # the last salt's (the loop returned otherwise)
    raise SpecError(
        f"attribute {attr!r}: values {collision[0]!r} and {collision[1]!r} share a Bloom filter "
        f"for every salt tried (m_j={m}, h={h}); increase m_j"
    )


# ----------------------------------------------------------------------
# The collection-spec file (``"format": "lopub-spec"``, ``"version": 1``).
#
# JSON Schema: ``lopub/formats/jsonschema/spec.schema.json``::
#
#     {"format": "lopub-spec", "version": 1, "f": 0.5, "key": "...",
#      "m": [32, 128, ...], "h": [4, 4, ...], "salts": [0, 2, ...],
#      "epsilon_per_record": 12.3,            (informative; recomputed on load)
#      "domain": {...lopub-domain...}}
#
# Reading checks the header and the presence of every field and raises
# :class:`~lopub.errors.SpecError`; the :class:`~lopub.reports.spec.CollectionSpec`
# constructor checks the values (``0 < f < 1``, ``m_j >= h_j``, no two values
# of an attribute sharing a Bloom filter...).


def spec_to_dict(spec: CollectionSpec) -> dict[str, Any]:
    """The JSON object of ``spec`` (with the per-record epsilon, for readers)."""
    return {
        "format": SPEC_FORMAT,
        "version": spec.version,
        "f": spec.f,
        "key": spec.key,
        "m": list(spec.m),
        "h": list(spec.h),
        "salts": list(spec.salts),
        "epsilon_per_record": spec.epsilon,
        "domain": domain_to_dict(spec.domain),
    }


def spec_from_dict(obj: Any) -> CollectionSpec:
    """Rebuild a :class:`~lopub.reports.spec.CollectionSpec` from :func:`spec_to_dict`.

    Raises
    ------
    SpecError
        Wrong format or version, a missing field, or a spec that cannot work.
    DomainError
        The embedded domain is invalid.
    """
    if not isinstance(obj, dict) or obj.get("format") != SPEC_FORMAT:
        raise SpecError(f"not a lopub collection spec (expected \"format\": \"{SPEC_FORMAT}\")")
    if type(obj.get("version")) is not int or obj["version"] != SPEC_VERSION:
        raise SpecError(f"spec version {obj.get('version')!r} is not supported (expected {SPEC_VERSION})")
    salts = obj.get("salts")
    if "salts" in obj and not (isinstance(salts, list) and all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in salts)):
        raise SpecError(f"spec JSON: \"salts\" ({salts!r:.60}) must be a list of non-negative "
                        f"integers, one per attribute")
    try:
        return CollectionSpec(
            domain_from_dict(obj["domain"]), tuple(obj["m"]), tuple(obj["h"]), obj["f"],
            obj["key"], tuple(obj["salts"]), obj["version"],
        )
    except KeyError as exc:
        raise SpecError(f"spec JSON lacks the field {exc.args[0]!r}") from None
