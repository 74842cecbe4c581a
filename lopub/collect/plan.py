"""The public plan of a marginal-sampling collection (CALM).

A :class:`MarginalPlan` lists the attribute subsets to measure, the per-user
epsilon and, per subset, the frequency oracle that reports the subset's joint
value.  It is public: clients need it to report, the server to estimate, and
its content hash :attr:`MarginalPlan.plan_id` ties reports to it.

JSON form (``format: "lopub-marginal-plan"``, ``version: 1``)::

    {"format": "lopub-marginal-plan", "version": 1,
     "domain": {... lopub-domain ...}, "epsilon": 2.0,
     "subsets": [["age", "sex"], ["sex", "race"]],
     "oracles": ["grr", "oue"], "key": null, "plan_id": "9f0c..."}

``plan_id`` is the first 16 hex digits of the SHA-256 of the canonical JSON
(sorted keys, no spaces) of everything but ``plan_id``.
"""
from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
from dataclasses import dataclass, field
from typing import Any, Sequence

from lopub._util import check_positive
from lopub.collect.cost import ORACLES, best_oracle, oracle_var
from lopub.data.domain import Domain
from lopub.errors import DomainError

PLAN_FORMAT = "lopub-marginal-plan"
PLAN_VERSION = 1
#: Largest joint domain of one subset (OLH's hash family needs K < 2^31 - 1).
MAX_CELLS = (1 << 31) - 2


class PlanError(ValueError):
    """A marginal plan is malformed, or reports do not belong to the plan used."""


def _check_subsets(domain: Domain, subsets: Any) -> tuple[tuple[str, ...], ...]:
    if isinstance(subsets, (str, bytes)) or not isinstance(subsets, Sequence):
        raise TypeError(f"subsets ({subsets!r}) must be a list of attribute lists")
    out = []
    size = dict(zip(domain.attrs, domain.sizes))
    for i, s in enumerate(subsets):  # subsets, not users
        s = (s,) if isinstance(s, str) else tuple(s)
        if not s:
            raise PlanError(f"subsets[{i}] is empty; expected at least one attribute")
        unknown = [a for a in s if not isinstance(a, str) or a not in size]
        if unknown:
            raise PlanError(f"subsets[{i}] ({list(s)}) names unknown attribute(s) {unknown}; "
                            f"the domain has {list(domain.attrs)}")
        if len(set(s)) != len(s):
            raise PlanError(f"subsets[{i}] ({list(s)}) repeats an attribute")
        cells = math.prod(size[a] for a in s)
        if cells > MAX_CELLS:
            raise PlanError(f"subsets[{i}] ({list(s)}) has {cells} joint cells; at most {MAX_CELLS}")
        out.append(tuple(str(a) for a in s))
    if not out:
        raise PlanError("subsets is empty; a plan must measure at least one attribute subset")
    seen: dict[frozenset, int] = {}
    for i, s in enumerate(out):
        if frozenset(s) in seen:
            raise PlanError(f"subsets[{i}] ({list(s)}) duplicates subsets[{seen[frozenset(s)]}]")
        seen[frozenset(s)] = i
    return tuple(out)


@dataclass(frozen=True)
class MarginalPlan:
    """Public parameters of a marginal-sampling collection.

    Parameters
    ----------
    domain : Domain
    subsets : sequence of sequence of str
        Attribute subsets, one group of users each; non-empty, over known
        attributes, no duplicates.
    epsilon : float
        Per-user (= per-record) budget; each user reports one subset's joint
        value with the whole ``epsilon``.
    oracles : sequence of str, optional
        Oracle per subset (``grr``, ``oue``, ``olh``); by default the one of
        lowest variance for the subset's joint domain size at ``epsilon``.
    key : str, optional
        Key of the BLAKE2b hash that derives a user's subset from a user id
        (stable assignment); ``None``: devices draw their subset at random.
    """

    domain: Domain
    subsets: tuple[tuple[str, ...], ...]
    epsilon: float
    oracles: tuple[str, ...] = ()
    key: str | None = None
    plan_id: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.domain, Domain):
            raise TypeError(f"domain ({type(self.domain).__name__}) must be a lopub Domain")
        eps = check_positive("epsilon", self.epsilon)
        subsets = _check_subsets(self.domain, self.subsets)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "subsets", subsets)
        oracles = tuple(self.oracles) or _best_oracles(self.domain, eps, subsets)
        if len(oracles) != len(subsets):
            raise PlanError(f"oracles has {len(oracles)} entries for {len(subsets)} subsets")
        for i, o in enumerate(oracles):
            if o not in ORACLES:
                raise PlanError(f"oracles[{i}] ({o!r}) must be one of {list(ORACLES)}")
        object.__setattr__(self, "oracles", oracles)
        if self.key is not None and (not isinstance(self.key, str) or not self.key
                                     or len(self.key.encode("utf-8")) > 64):
            raise PlanError(f"key ({self.key!r}) must be None or a non-empty string of at most "
                            "64 bytes (the BLAKE2b key size)")
        object.__setattr__(self, "plan_id", _digest(self._content()))

    # derived ------------------------------------------------------------
    @property
    def n_subsets(self) -> int:
        return len(self.subsets)

    def cells(self, i: int) -> int:
        """Joint domain size of subset ``i``."""
        return self.domain.cells(self.subsets[i])

    def subset_domain(self, i: int) -> Domain:
        """Sub-domain of subset ``i`` (axes in the plan's order)."""
        return self.domain.project(self.subsets[i])

    def oracle(self, i: int):
        """The frequency oracle object of subset ``i`` (:mod:`lopub.oracles`)."""
        from lopub.oracles import make_oracle

        return make_oracle(self.oracles[i], self.epsilon, max(2, self.cells(i)))

    def variance(self, i: int, n_group: int) -> float:
        """Var* of one cell of subset ``i``'s table from ``n_group`` reports."""
        return oracle_var(self.oracles[i], self.epsilon, max(2, self.cells(i))) / n_group

    def index(self, attrs: Sequence[str]) -> int:
        """Position of the subset with exactly the attributes ``attrs`` (any order)."""
        target = frozenset(attrs)
        for i, s in enumerate(self.subsets):
            if frozenset(s) == target:
                return i
        raise PlanError(f"attrs ({list(attrs)}) is not a subset of this plan; "
                        f"it measures {[list(s) for s in self.subsets]}")

    # JSON ---------------------------------------------------------------
    def _content(self) -> dict[str, Any]:
        return {"format": PLAN_FORMAT, "version": PLAN_VERSION, "domain": self.domain.to_dict(),
                "epsilon": self.epsilon, "subsets": [list(s) for s in self.subsets],
                "oracles": list(self.oracles), "key": self.key}

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the module docstring (with ``plan_id``)."""
        return {**self._content(), "plan_id": self.plan_id}

    @classmethod
    def from_dict(cls, obj: Any) -> "MarginalPlan":
        """Rebuild from :meth:`to_dict`; a ``plan_id`` that does not match the content is refused."""
        if not isinstance(obj, dict):
            raise TypeError(f"plan ({type(obj).__name__}) must be a JSON object")
        if obj.get("format") != PLAN_FORMAT:
            raise PlanError(f"format ({obj.get('format')!r}) must be {PLAN_FORMAT!r}")
        if obj.get("version") != PLAN_VERSION:
            raise PlanError(f"plan version ({obj.get('version')!r}) is not supported "
                            f"(expected {PLAN_VERSION})")
        missing = [k for k in ("domain", "epsilon", "subsets", "oracles") if k not in obj]
        if missing:
            raise PlanError(f"plan is missing {missing}")
        try:
            domain = Domain.from_dict(obj["domain"])
        except DomainError as exc:
            raise PlanError(f"plan domain: {exc}") from None
        plan = cls(domain, obj["subsets"], obj["epsilon"], tuple(obj["oracles"]), obj.get("key"))
        if "plan_id" in obj and obj["plan_id"] != plan.plan_id:
            raise PlanError(f"plan_id ({obj['plan_id']!r}) does not match the plan's content "
                            f"(hash {plan.plan_id!r}); the plan was altered")
        return plan

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """JSON text; also written atomically to ``path`` when given."""
        from lopub.io import atomic_write_text

        text = json.dumps(self.to_dict(), indent=1)
        if path is not None:
            atomic_write_text(path, text + "\n")
        return text

    @classmethod
    def from_json(cls, source: str | os.PathLike) -> "MarginalPlan":
        """Load from a JSON file path or a JSON string."""
        text = str(source)
        if not text.lstrip().startswith("{"):
            with open(source, encoding="utf-8") as fh:
                text = fh.read()
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PlanError(f"plan is not valid JSON: {exc}") from None
        return cls.from_dict(obj)

    def describe_difference(self, other_id: str, other: dict | None = None) -> str:
        """Sentence naming what differs from another plan (its id, and its dict if known)."""
        parts = [f"plan_id {other_id!r} != {self.plan_id!r}"]
        if other:
            mine = self._content()
            for k in ("epsilon", "subsets", "oracles", "key", "domain"):
                if k in other and other[k] != mine[k]:
                    shown = "differs" if k == "domain" else f"{other[k]!r} vs {mine[k]!r}"
                    parts.append(f"{k} {shown}")
        return "; ".join(parts)


def _best_oracles(domain: Domain, eps: float, subsets: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    """:func:`~lopub.collect.cost.best_oracle` of every subset (once per joint size)."""
    size = dict(zip(domain.attrs, domain.sizes))
    memo: dict[int, str] = {}
    out = []
    for s in subsets:  # subsets, not users
        k = math.prod(size[a] for a in s)
        if k not in memo:
            memo[k] = best_oracle(eps, k)
        out.append(memo[k])
    return tuple(out)


def _digest(content: dict[str, Any]) -> str:
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def check_n(name: str, value: Any) -> int:
    """An integer number of users >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and math.isfinite(value) and value == int(value) and value >= 1:
            return int(value)
        raise TypeError(f"{name} ({value!r}) must be an integer number of users")
    if value < 1:
        raise ValueError(f"{name} ({value}) must be an integer >= 1")
    return int(value)
