"""Measurements: a noisy marginal with its variance, the currency between
collection and modelling.

Every protocol's server side (the Bloom-report estimators, the frequency
oracles, marginal sampling) returns :class:`Measurement` objects; the
graphical model (:mod:`lopub.model.pgm`) is fitted to any set of them, weighting
each by its inverse variance.

A :class:`Measurement` *is* a :class:`~lopub.data.marginal.Marginal` (probability
table over a few attributes, record count, ``meta``) with three more fields:

``variance``
    Per-cell variance of ``values`` (same shape), as probabilities, i.e. the
    variance of the estimated probability of each cell.  Covariances between
    cells are not kept; where an estimator only has an approximation, its
    ``provenance["variance"]`` says which.
``provenance``
    Where the table came from: ``protocol`` (e.g. ``"bloom"``, ``"grr"``),
    ``estimator`` (``"em"``, ``"moment"``, ...), ``postprocess`` and
    ``variance`` (how the variance was obtained).
``raw``
    Optional: the unbiased (not post-processed) estimate, when it differs from
    ``values``.  A model fit uses ``raw`` if present (the variance describes
    it) and ``values`` otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from lopub.data.domain import Domain
from lopub.errors import DomainError
from lopub.data.marginal import Marginal


class MeasurementError(ValueError):
    """A measurement is malformed: non-finite values, negative variance, unknown attributes."""


@dataclass(frozen=True)
class Measurement(Marginal):
    """A noisy marginal: ``values`` (probabilities) with per-cell ``variance``.

    Parameters
    ----------
    domain : Domain
        Sub-domain of the table (axes in this order).
    values : ndarray
        Estimated probabilities, shape ``domain.sizes``.
    n : int or None
        Number of reports behind the estimate.
    meta : dict
        The estimator's diagnostics (iterations, seconds, ...).
    variance : ndarray or float
        Per-cell variance of ``values`` (a scalar is broadcast).  Must be
        finite and >= 0.
    provenance : dict
        ``protocol``, ``estimator``, ``postprocess``, ``variance``.
    raw : ndarray, optional
        Unbiased estimate before post-processing (same shape).
    """

    variance: Any = 0.0
    provenance: dict[str, Any] = field(default_factory=dict)
    raw: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        name = "measurement over " + ",".join(self.domain.attrs)
        v = self.values
        if not np.all(np.isfinite(v)):
            raise MeasurementError(f"{name}: values contain a non-finite entry; expected finite probabilities")
        var = np.broadcast_to(np.asarray(self.variance, dtype=float), v.shape).copy()
        if not np.all(np.isfinite(var)):
            raise MeasurementError(f"{name}: variance contains a non-finite entry; expected finite values >= 0")
        if np.any(var < 0):
            raise MeasurementError(f"{name}: variance has a negative entry ({var.min():g}); expected >= 0")
        object.__setattr__(self, "variance", var)
        if self.raw is not None:
            raw = np.asarray(self.raw, dtype=float)
            if raw.shape != v.shape:
                raise MeasurementError(f"{name}: raw shape {raw.shape} does not match {v.shape}")
            if not np.all(np.isfinite(raw)):
                raise MeasurementError(f"{name}: raw contains a non-finite entry")
            object.__setattr__(self, "raw", raw)
        object.__setattr__(self, "provenance", dict(self.provenance))

    # ------------------------------------------------------------------
    @property
    def estimate(self) -> np.ndarray:
        """The table a model should match: ``raw`` if kept, else ``values``."""
        return self.values if self.raw is None else self.raw

    @property
    def sigma2(self) -> float:
        """One scalar noise level: the mean per-cell variance (weights of a model fit)."""
        return float(self.variance.mean())

    @property
    def stddev(self) -> np.ndarray:
        return np.sqrt(self.variance)

    def project(self, attrs: Sequence[str]) -> "Measurement":
        """Sum out attributes not in ``attrs``.

        A permutation of the attributes transposes ``variance`` exactly; a
        true projection adds the per-cell variances of the summed cells
        (covariances are not kept, so this ignores them; for a multinomial
        table the cells are negatively correlated and the sum over-states
        the variance, a conservative approximation).
        """
        attrs = list(attrs)
        idx = self.domain.indices(attrs)
        drop = tuple(i for i in range(len(self.attrs)) if i not in idx)
        kept = [i for i in range(len(self.attrs)) if i in idx]
        perm = [kept.index(i) for i in idx]

        def proj(a: np.ndarray) -> np.ndarray:
            a = a.sum(axis=drop) if drop else a
            return np.transpose(a, perm)

        prov = dict(self.provenance)
        if drop:
            prov["projected_from"] = list(self.attrs)
        return Measurement(self.domain.project(attrs), proj(self.values), self.n, dict(self.meta),
                           variance=proj(self.variance), provenance=prov,
                           raw=None if self.raw is None else proj(self.raw))

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["variance"] = self.variance.ravel().tolist()
        d["provenance"] = dict(self.provenance)
        if self.raw is not None:
            d["raw"] = self.raw.ravel().tolist()
        return d

    @classmethod
    def from_marginal(cls, marginal: Marginal, variance: Any, provenance: Mapping[str, Any] | None = None,
                      raw: Any = None) -> "Measurement":
        """Attach a variance (and provenance) to a plain :class:`Marginal`."""
        return cls(marginal.domain, marginal.values, marginal.n, dict(marginal.meta),
                   variance=variance, provenance=dict(provenance or {}), raw=raw)


def multinomial_variance(values: np.ndarray, n: int) -> np.ndarray:
    """Per-cell variance p (1 - p) / n of an empirical distribution of ``n`` records."""
    p = np.clip(np.asarray(values, dtype=float), 0.0, 1.0)
    return p * (1.0 - p) / float(n)


def check_measurements(measurements: Sequence[Measurement], domain: Domain) -> list[Measurement]:
    """Check a list of measurements against ``domain`` (attributes and categories).

    Raises
    ------
    TypeError
        An element is not a :class:`Measurement`.
    DomainError
        A measurement names an attribute not in ``domain`` or has another
        number of categories.
    """
    out = []
    for i, m in enumerate(measurements):
        if not isinstance(m, Measurement):
            raise TypeError(f"measurements[{i}] ({type(m).__name__}) must be a lopub Measurement")
        unknown = [a for a in m.attrs if a not in domain.attrs]
        if unknown:
            raise DomainError(f"measurements[{i}] is over unknown attribute(s) {unknown}; "
                              f"expected attributes of {list(domain.attrs)}")
        for a, k in zip(m.attrs, m.domain.sizes):
            if domain.size(a) != k:
                raise DomainError(f"measurements[{i}]: attribute {a!r} has {k} categories; "
                                  f"the domain has {domain.size(a)}")
        out.append(m)
    return out


def combine(measurements: Sequence[Measurement]) -> Measurement:
    """Inverse-variance weighted mean of measurements over the same attributes (same order).

    Each measurement gets the scalar weight ``1 / sigma2`` (its mean cell
    variance), so the result of distributions is a distribution; the
    per-cell variance is ``sum_i w_i^2 var_i`` with normalized weights
    (independent groups of users).
    """
    if len(measurements) == 1:
        return measurements[0]
    s2 = np.array([m.sigma2 for m in measurements])
    zero = s2 <= 0
    w = zero.astype(float) if zero.any() else 1.0 / s2
    w = w / w.sum()
    values = sum(wi * m.values for wi, m in zip(w, measurements))
    raw = sum(wi * m.estimate for wi, m in zip(w, measurements))
    var = sum(wi ** 2 * m.variance for wi, m in zip(w, measurements))
    first = measurements[0]
    prov = dict(first.provenance)
    prov["combined"] = [m.provenance.get("projected_from", list(m.attrs)) for m in measurements]
    prov["variance"] = "inverse-variance weighted mean of independent measurements"
    n = sum(int(m.n or 0) for m in measurements)
    return Measurement(first.domain, values, n, {"combined": len(measurements)}, variance=var,
                       provenance=prov, raw=raw)
