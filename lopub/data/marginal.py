"""Marginal tables: a probability table over a few attributes, labels attached.

Real data, estimators and fitted models all answer queries with a
:class:`Marginal`, so evaluation and queries are written once.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from lopub.data.domain import Domain
from lopub.errors import DomainError


class ZeroProbabilityError(ValueError):
    """A conditional query's condition has estimated probability 0 (the answer is undefined)."""


@dataclass(frozen=True)
class Marginal:
    """Joint distribution over ``domain.attrs`` as an array of shape ``domain.sizes``.

    Attributes
    ----------
    domain : Domain
        Sub-domain of the table, axes in this order.
    values : ndarray
        Probabilities (non-negative, sum 1 unless ``meta['postprocess']`` says
        the raw estimate was kept).
    n : int or None
        Number of records/reports behind the table (``counts = values * n``).
    meta : dict
        Provenance: method, iterations, converged, seconds, loglik, postprocess...
    """

    domain: Domain
    values: np.ndarray
    n: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        v = np.asarray(self.values, dtype=float)
        if v.shape != self.domain.sizes:
            raise ValueError(
                f"values shape {v.shape} does not match the domain sizes {self.domain.sizes}"
            )
        object.__setattr__(self, "values", v)

    @property
    def attrs(self) -> tuple[str, ...]:
        return self.domain.attrs

    @property
    def counts(self) -> np.ndarray:
        if self.n is None:
            raise ValueError("this marginal carries no record count n")
        return self.values * self.n

    def project(self, attrs: Sequence[str]) -> "Marginal":
        """Sum out every attribute not in ``attrs``; axes follow ``attrs``."""
        attrs = list(attrs)
        idx = self.domain.indices(attrs)
        drop = tuple(i for i in range(len(self.attrs)) if i not in idx)
        v = self.values.sum(axis=drop) if drop else self.values
        kept = [i for i in range(len(self.attrs)) if i in idx]
        v = np.transpose(v, [kept.index(i) for i in idx])
        return Marginal(self.domain.project(attrs), v, self.n, dict(self.meta))

    def condition(self, where: dict[str, str]) -> "Marginal":
        """Slice at ``{attr: label}`` and renormalize (conditional distribution).

        The result's ``n`` is the (estimated) number of records matching
        ``where``, so its ``counts`` refer to those records; ``meta`` records
        the condition and its probability mass (``condition_mass``).

        Raises
        ------
        ZeroProbabilityError
            (a ``ValueError``) when the estimated probability of ``where`` is
            0 (or negative in a raw estimate): P(attrs | where) is undefined
            there, and no distribution -- uniform or otherwise -- is returned
            in its place.
        """
        for a, label in where.items():
            if a not in self.attrs:
                raise DomainError(f"where names attribute {a!r}, which is not in this table {list(self.attrs)}")
            if label not in self.domain.labels(a):
                raise DomainError(f"attribute {a!r} has no category {label!r}; expected one of {list(self.domain.labels(a))}")
        keep = [a for a in self.attrs if a not in where]
        if not keep:
            raise ValueError("condition() needs at least one attribute left unconditioned")
        index = tuple(self.domain.labels(a).index(where[a]) if a in where else slice(None) for a in self.attrs)
        v = self.values[index]
        total = float(v.sum())
        if not total > 0:
            cond = ", ".join(f"{a}={label}" for a, label in where.items())
            raise ZeroProbabilityError(
                f"condition {cond} has estimated probability {total:g}; the conditional "
                f"distribution of {keep} given it is undefined (expected a condition with "
                f"probability > 0)")
        v = v / total
        n = None if self.n is None else int(round(self.n * total))
        meta = dict(self.meta, condition=dict(where), condition_mass=total)
        return Marginal(self.domain.project(keep), v, n, meta)

    def to_frame(self) -> pd.DataFrame:
        """Long table: one row per cell with the labels, ``p`` and (if n known) ``count``."""
        idx = pd.MultiIndex.from_product([self.domain.labels(a) for a in self.attrs], names=list(self.attrs))
        df = pd.DataFrame({"p": self.values.ravel()}, index=idx).reset_index()
        if self.n is not None:
            df["count"] = df["p"] * self.n
        return df

    def to_dict(self) -> dict[str, Any]:
        return {
            "attrs": list(self.attrs),
            "categories": {a: list(self.domain.labels(a)) for a in self.attrs},
            "shape": list(self.values.shape),
            "p": self.values.ravel().tolist(),
            "n": self.n,
            "meta": _jsonable(self.meta),
        }

    def avd(self, other: "Marginal") -> float:
        """Average variation distance 1/2 sum |P - Q| (LoPub Eq. 32)."""
        o = other.project(self.attrs)
        return 0.5 * float(np.abs(self.values - o.values).sum())


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return obj


def probability_table(values: Any, domain: Domain, name: str = "p", *, atol: float = 1e-6) -> np.ndarray:
    """Check a flat, row-major list of probabilities over ``domain``; return it shaped.

    Parameters
    ----------
    values : list of numbers
        One value per cell of ``domain`` (C order).
    domain : Domain
    name : str
        Field name used in error messages (e.g. ``"cliques[2].p"``).
    atol : float
        Tolerance on the sum being 1.

    Raises
    ------
    ValueError
        Naming ``name``: not a flat list of numbers, wrong length, a NaN or
        infinite entry, a negative entry, or a sum away from 1.
    """
    expected = f"a flat list of {domain.cells()} finite probabilities >= 0 summing to 1"
    try:
        arr = np.asarray(values) if isinstance(values, list) else None
    except ValueError:
        arr = None
    if arr is None or arr.ndim != 1 or (arr.size and arr.dtype.kind not in "if"):
        raise ValueError(f"field {name!r} is not a list of numbers; expected {expected}")
    arr = arr.astype(float)
    if arr.size != domain.cells():
        raise ValueError(f"field {name!r} has {arr.size} values; expected {domain.cells()} "
                         f"(the cells of {list(domain.attrs)}, shape {list(domain.sizes)})")
    bad = np.flatnonzero(~np.isfinite(arr) | (arr < 0))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"field {name!r}: entry {i} is {arr[i]}; expected {expected}")
    if abs(arr.sum() - 1.0) > atol:
        raise ValueError(f"field {name!r} sums to {arr.sum():.6g}; expected 1 (tolerance {atol:g})")
    return arr.reshape(domain.sizes)
