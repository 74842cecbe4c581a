"""The screen of a two-phase plan: its public sample of pairs and the cost-model tables it measures.

:func:`screen_pairs` draws the public sample of pairs a wide screen measures;
:class:`ScreenProfile` turns a screen's measurements into the tables and pair
dependences the cost model (:mod:`lopub.collect.adaptive`) predicts with.
The protocol is :mod:`lopub.collect.twophase`'s (module docstring there).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from lopub.collect.adaptive import Profile, all_pairs
from lopub.data.domain import Domain

#: Most pairs a screen measures (all pairs of 30 attributes); above, it
#: measures a public random sample of at most that many pairs (:func:`screen_pairs`), as many as its users fill.
MAX_SCREEN_PAIRS = 435
#: Seed of the public sample of screened pairs (the plan must be reproducible by anyone).
SCREEN_SEED = 24


def screen_pairs(domain: Domain, count: int) -> list[tuple[str, str]]:
    """``count`` attribute pairs, a public random sample (seed :data:`SCREEN_SEED`) in domain order.

    Drawn as rounds of random perfect matchings of the attributes (a repeat
    is skipped), so that the first ``ceil(d / 2)`` pairs hold every attribute
    and each attribute is in about ``2 count / d`` pairs; the pairs are
    otherwise uniform, so their mean error estimates the mean over all pairs.
    """
    d = len(domain)
    total = d * (d - 1) // 2
    count = min(int(count), total)
    if count >= total:
        return list(all_pairs(domain))
    rng = np.random.default_rng(SCREEN_SEED)
    seen: set[tuple[int, int]] = set()
    out: list[tuple[int, int]] = []
    while len(out) < count:  # rounds of matchings: about 2 count / d rounds
        perm = rng.permutation(d)
        if d % 2:  # odd: the left-out attribute pairs with a random other one
            perm = np.append(perm, rng.choice(perm[:-1]))
        for i, j in perm.reshape(-1, 2).tolist():
            p = (min(i, j), max(i, j))
            if p not in seen:
                seen.add(p)
                out.append(p)
                if len(out) == count:
                    break
    return [(domain.attrs[i], domain.attrs[j]) for i, j in sorted(out)]


class ScreenProfile(Profile):
    """Cost-model tables from a screen's measurements (a :class:`MarginalSource`).

    ``probs(attrs)`` is the screen's post-processed table of ``attrs`` (one-way
    tables combine every pair containing the attribute); ``bias(a, b)`` is the
    screen's ``d = p_ab - p_a p_b`` shrunk by its positive-part James-Stein
    factor ``max(0, 1 - sum(v_ab) / ||d||^2)`` (``v_ab`` the pair table's
    cell variances): a dependence the screen cannot tell from its noise
    counts as none (module docstring).  ``own_margins``: ``d`` from the pair
    table's own margins (the pooled one-way tables differ from them by noise,
    which reads as dependence) and the factor's noise cut to the interaction
    share ``(K_a - 1)(K_b - 1) / (K_a K_b)`` in which ``d`` lives.  It is
    closer to the true mean dependence (retail top-100 items at epsilon 8:
    0.0009 against 0.0068 without, truth 0.0006) and is what
    :meth:`~lopub.collect.plan_report.PlanReport.after_collection` predicts
    with; as the screen's choice of the main plan it made retail top-20 at
    epsilon 1 worse (0.0221 against 0.0198 mean 2-way TVD, seeds 0-3: it
    measured fewer pairs), so the screen keeps the default.  Pairs the
    screen did not measure have the product of their one-way tables and no
    known dependence (:meth:`TwoPhasePlan.select` evaluates screened pairs
    only).
    """

    def __init__(self, domain: Domain, source: Any, own_margins: bool = False) -> None:
        super().__init__(domain, None)
        self.source = source
        #: ``d`` from the pair table's own margins, with the interaction share of its noise
        self.own_margins = bool(own_margins)
        #: the screened pairs, in domain order: the pairs the predictions are evaluated on
        held = (tuple(sorted(m.attrs, key=domain.index)) for m in source.measurements() if len(m.attrs) == 2)
        self.pairs: list[tuple[str, ...]] = sorted(held, key=lambda p: tuple(map(domain.index, p)))

    def probs(self, attrs: Sequence[str]) -> np.ndarray:
        key = tuple(attrs)
        if key not in self._cache:
            if self.source.covers(list(key)):
                values = np.asarray(self.source.marginal(list(key)).values, dtype=float).ravel()
            elif len(key) == 1:  # an attribute no screened pair holds: uniform
                values = np.full(self.domain.size(key[0]), 1.0 / self.domain.size(key[0]))
            else:  # a pair not screened: the product of its one-way tables (no bias known)
                values = np.outer(self.probs(key[:1]), self.probs(key[1:])).ravel()
            self._cache[key] = np.clip(values, 0.0, None)
        return self._cache[key]

    def bias(self, a: str, b: str) -> np.ndarray:
        if not self.source.covers([a, b]):
            return np.zeros(self.domain.cells((a, b)))
        m = self.source.marginal([a, b])
        noise = float(np.sum(m.variance))
        if self.own_margins:
            table = np.clip(np.asarray(m.values, dtype=float), 0.0, None)
            d = (table - np.outer(table.sum(axis=1), table.sum(axis=0))).ravel()
            ka, kb = table.shape
            noise *= (ka - 1) * (kb - 1) / (ka * kb)
        else:
            d = self.probs((a, b)) - np.outer(self.probs((a,)), self.probs((b,))).ravel()
        dev = float(np.vdot(d, d))
        return d * (max(0.0, 1.0 - noise / dev) if dev > 0 else 0.0)
