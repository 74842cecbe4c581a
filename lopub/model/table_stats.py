"""Measured tables beside the model's marginals: the statistics behind :mod:`lopub.model.checks`."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from lopub.data.marginal import Marginal
from lopub.estimate.measurement import Measurement, multinomial_variance

VAR_EPS = 1e-15       # a cell with a smaller variance is exact: a constraint
#: ``provenance["protocol"]`` of a stand-in table for a set nobody measured (lopub.collect.server)
NOT_MEASURED = "not measured"


@dataclass
class Table:
    """One measurement next to the model (``mu`` None: outside every clique, not projected)."""

    m: Measurement
    mu: np.ndarray | None

    @property
    def attrs(self) -> tuple[str, ...]:
        return self.m.attrs

    @property
    def fitted(self) -> np.ndarray:
        """The model's table (only for a table inside a clique)."""
        if self.mu is None:
            raise ValueError(f"measurement over {list(self.attrs)} lies in no model clique; it has no fitted table")
        return self.mu

    @property
    def pos(self) -> np.ndarray:
        return self.m.variance > VAR_EPS

    def stat(self, a: np.ndarray, b: np.ndarray) -> float:
        """``sum ((a - b)^2 / var)`` over the cells with positive variance."""
        p = self.pos
        return float(np.sum((a[p] - b[p]) ** 2 / self.m.variance[p]))

    @property
    def dof(self) -> int:
        """Degrees of freedom of a table's noise: its cells of positive variance.

        Not one fewer: an unbiased estimate (OUE, Bloom moments) need not sum
        to 1, so its noise has one degree of freedom per cell; for noise that
        does sum to 0 this is conservative (a false alarm is rarer).  A table
        with a single such cell has none.
        """
        k = int(self.pos.sum())
        return k if k > 1 else 0

    def noise_tvd(self) -> float:
        """Expected TVD of the noise alone: ``1/2 sum sqrt(2 var / pi)`` (mean absolute normal)."""
        return float(0.5 * np.sqrt(2.0 * self.m.variance / np.pi).sum())


@dataclass
class TableStats:
    """The measurements of a release, each beside the model's marginal when inside a clique."""

    model: Any
    one: dict[str, Table]
    pairs: list[Table]
    larger: list[Table]
    memo: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, model: Any, ms: Sequence[Measurement]) -> "TableStats":
        cliques = [set(c) for c in model.tree.cliques]
        one: dict[str, Table] = {}
        pairs: list[Table] = []
        larger: list[Table] = []
        for m in ms:
            attrs = m.attrs
            inside = any(set(attrs) <= c for c in cliques)
            t = Table(m, model.project(list(attrs)).values if inside else None)
            if len(attrs) == 1:
                one.setdefault(attrs[0], t)
            else:
                (pairs if len(attrs) == 2 else larger).append(t)
        return cls(model, one, pairs, larger)

    @property
    def inside(self) -> list[Table]:
        return [t for t in [*self.one.values(), *self.pairs, *self.larger] if t.mu is not None]


def gather_measurements(cache: Any, extra_sets: Sequence[Sequence[str]] = ()) -> list[Measurement]:
    """Every one-way and pairwise table ``cache`` already holds, plus the cached ``extra_sets``.

    Nothing is estimated: only sets for which ``cache.cached(attrs)`` is true are read.
    """
    attrs = list(cache.domain.attrs)
    sets = [[a] for a in attrs] + [list(p) for p in itertools.combinations(attrs, 2)]
    sets += [list(s) for s in extra_sets if len(s) > 2]
    found = (as_measurement(cache.marginal(s)) for s in sets if cache.cached(s))
    return [m for m in found if m is not None]


def as_measurement(t: Any) -> Measurement | None:
    """``t`` as a Measurement (multinomial variance for a plain Marginal); None when unusable."""
    if isinstance(t, Measurement):
        return None if t.provenance.get("protocol") == NOT_MEASURED else t
    if isinstance(t, Marginal) and t.n:
        return Measurement.from_marginal(t, multinomial_variance(t.values, int(t.n)),
                                         {"variance": "multinomial p(1-p)/n (no variance given)"})
    return None





def cramers_v(table: np.ndarray, variance: np.ndarray | None = None) -> float:
    """Cramer's V of a probability table, the noise of per-cell ``variance`` taken out of ``phi^2``.

    ``phi^2 = sum (p_ab - e_ab)^2 / e_ab`` with ``e_ab = p_a p_b`` (on the
    table clipped at 0); noise of per-cell variance ``var_ab`` adds about
    ``sum var_ab / e_ab`` to it, which is subtracted (as in Bergsma's
    bias-corrected V, with the measurement's own variance for the
    multinomial one), so a noisy table of independent attributes does not
    look strongly dependent.  Without ``variance``: the plain V.
    """
    p = np.clip(np.asarray(table, dtype=float), 0.0, None)
    var = np.zeros_like(p) if variance is None else np.asarray(variance, dtype=float)
    keep_r, keep_c = p.sum(1) > 0, p.sum(0) > 0
    p, var = p[keep_r][:, keep_c], var[keep_r][:, keep_c]
    if min(p.shape) < 2:
        return 0.0
    p = p / p.sum()
    e = np.outer(p.sum(1), p.sum(0))
    phi2 = float(((p - e) ** 2 / e).sum()) - float((var / e).sum())
    return float(np.sqrt(min(max(phi2, 0.0) / (min(p.shape) - 1), 1.0)))


def table_tvd(a: np.ndarray, b: np.ndarray) -> float:
    """``1/2 sum |a - b|``."""
    return 0.5 * float(np.abs(np.asarray(a) - np.asarray(b)).sum())
