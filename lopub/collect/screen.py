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
#: Standard deviations of the screen's estimate of its pairs' total dependence added before the
#: calibrated shrink (:func:`calibrated_noise_factor`): it keeps an upper bound, not the estimate.
CALIBRATION_Z = 2.0


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
    only).  ``target``: every pair's noise is scaled by one factor ``c >= 1``
    so that the shrunk pairs hold at most this total ``sum ||d||^2``
    (:func:`calibrated_noise_factor`; the pilot's bound,
    :meth:`~lopub.collect.twophase.TwoPhasePlan.pilot_stops`); ``raw``: ``d``
    from each pair's unbiased table, whose stated variance is its noise, not
    from the post-processed one, which holds less.
    """

    def __init__(self, domain: Domain, source: Any, own_margins: bool = False, target: float | None = None,
                 raw: bool = False) -> None:
        super().__init__(domain, None)
        self.source = source
        #: ``d`` from the pair's unbiased (raw) table, not its post-processed one
        self.raw = bool(raw)
        #: ``d`` from the pair table's own margins, with the interaction share of its noise
        self.own_margins = bool(own_margins)
        #: the screened pairs, in domain order: the pairs the predictions are evaluated on
        held = (tuple(sorted(m.attrs, key=domain.index)) for m in source.measurements() if len(m.attrs) == 2)
        self.pairs: list[tuple[str, ...]] = sorted(held, key=lambda p: tuple(map(domain.index, p)))
        #: the noise multiplier ``c >= 1`` of every pair's factor ``max(0, 1 - c v / ||d||^2)``
        #: (:func:`calibrated_noise_factor` to a ``target`` total, e.g. :func:`split_total`'s; 1 without)
        self.noise_factor = 1.0
        if target is not None and self.pairs:
            found = [self._raw(*p) for p in self.pairs]
            self.noise_factor = calibrated_noise_factor(np.array([float(np.vdot(d, d)) for d, _ in found]),
                                                        np.array([v for _, v in found]), target)

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
        d, noise = self._raw(a, b)
        dev = float(np.vdot(d, d))
        return d * (max(0.0, 1.0 - self.noise_factor * noise / dev) if dev > 0 else 0.0)

    def _raw(self, a: str, b: str) -> tuple[np.ndarray, float]:
        """The pair's measured ``d`` and the expected squared norm of its noise."""
        m = self.source.marginal([a, b])
        noise = float(np.sum(m.variance))
        if self.own_margins:
            table = np.clip(np.asarray(m.values, dtype=float), 0.0, None)
            d = (table - np.outer(table.sum(axis=1), table.sum(axis=0))).ravel()
            ka, kb = table.shape
            noise *= (ka - 1) * (kb - 1) / (ka * kb)
        elif self.raw and m.raw is not None:  # the unbiased table: its stated variance is its noise
            d = np.asarray(m.raw, dtype=float).ravel() - np.outer(self.probs((a,)), self.probs((b,))).ravel()
        else:
            d = self.probs((a, b)) - np.outer(self.probs((a,)), self.probs((b,))).ravel()
        return d, noise


#: Users per pair :func:`split_total` needs: one in each of its four quarters.
SPLIT_GROUP_FLOOR = 4


def split_total(reports: Any, pairs: Sequence[Sequence[str]]) -> tuple[float, float]:
    """The pairs' total dependence ``sum ||d||^2`` estimated without bias from a screen's ``reports``.

    Each pair's users are dealt into four quarters (every fourth user of its group, which the
    assignment drew at random; :func:`split_groups`); the first two make one
    half, the last two the other.  In each half, ``d`` is the half's unbiased (raw) table less the
    product of one quarter's row margin and the other quarter's column margin (averaged both ways):
    independent quarters make that product unbiased for the product of the true margins, so ``d``
    is unbiased for the pair's dependence, and the inner product of the halves' ``d`` (independent
    noises) has the pair's squared dependence as its mean, with no noise model.  The product of a
    table's own margins is not: a cell's noise is in both its row and its column sum, so the inner
    product of two halves' ``t - r c'`` has ``||d - C||^2`` as its mean, ``C`` the cells' variances
    (bn-water, 10^6 records, epsilon 1, a 5 % pilot of 128 users per pair: 22-29 where the truth
    is 0.76; this estimate 8, 12 and -12 with a spread of 12).  A variance stated for post-processed
    tables or cut to an interaction share was measured at half to twice the noise actually in
    ``||d||^2`` (bn-hepar2 at 10^6 records, epsilon 1, a 5 % screen).  Returns ``(total, spread)``:
    the sum over the pairs and the root of the sum of the squared terms, a conservative standard
    deviation of that sum.

    Raises
    ------
    ValueError
        A pair is not a pair of the reports' plan, or its group has fewer than
        :data:`SPLIT_GROUP_FLOOR` users (a quarter would be empty).
    """
    plan = reports.plan
    where = {frozenset(sub): i for i, sub in enumerate(plan.subsets)}
    terms = []
    for p in pairs:  # pairs, not users
        i = where.get(frozenset(p))
        if i is None or len(plan.subsets[i]) != 2:
            raise ValueError(f"pair {list(p)} is not a pair of the reports' plan")
        oracle, k, shape = plan.oracle(i), plan.cells(i), plan.subset_domain(i).sizes
        g = np.asarray(reports.groups[i])
        if len(g) < SPLIT_GROUP_FLOOR:
            raise ValueError(f"pair {list(p)} has {len(g)} users in the reports; its dependence needs >= "
                             f"{SPLIT_GROUP_FLOOR} (one in each of four quarters)")
        ts = [np.asarray(oracle.estimate(g[q::4]), dtype=float)[:k].reshape(shape) for q in range(4)]
        if tuple(plan.subsets[i]) != tuple(p):
            ts = [t.T for t in ts]
        ds = []
        for a, b in ((0, 1), (2, 3)):  # the halves, each of two quarters
            cross = 0.5 * (np.outer(ts[a].sum(axis=1), ts[b].sum(axis=0))
                           + np.outer(ts[b].sum(axis=1), ts[a].sum(axis=0)))
            ds.append((0.5 * (ts[a] + ts[b]) - cross).ravel())
        terms.append(float(np.vdot(ds[0], ds[1])))
    x = np.asarray(terms)
    return float(x.sum()), float(np.sqrt(np.sum(x * x)))


def calibrated_noise_factor(dev: np.ndarray, noise: np.ndarray, target: float) -> float:
    """The smallest ``c >= 1`` whose shrunk pairs hold no more dependence than ``target`` in all.

    ``dev``: each pair's measured ``||d||^2``, ``noise``: its stated noise ``sum(v)``; ``target``:
    the pairs' total ``||d||^2`` as the screen shows it (:class:`ScreenProfile` is given
    :func:`split_total`'s estimate plus :data:`CALIBRATION_Z` of its standard deviations, an upper
    bound: a small screen's estimate is noisy, and below the truth it would read strong dependence
    as none).  Each pair's positive-part factor ``max(0, 1 - noise / dev)`` alone keeps what
    noise lifts above it: summed over hundreds of near-independent pairs that is most of the total
    (bn-hepar2, 10^6 records, epsilon 1, a 5 % screen: mean TVD from independence 0.0142 kept
    where the truth is 0.0052).  ``c`` scales every pair's noise until the shrunk total
    ``sum(dev max(0, 1 - c noise / dev)^2)`` is at most ``max(0, target)``: a pair far above its
    noise keeps nearly all of it, and where the total is noise nothing is kept.  Tried and not
    kept: ``c`` below 1 where the target exceeds what the factors keep (the stated variance of a
    post-processed table is its raw estimate's, up to twice what is left in it): matching the
    squared norm spreads noise over many cells, whose TVD is far larger than a concentrated
    dependence of the same norm (bn-hailfinder, epsilon 1: predictions of 0.157 where one
    attribute per user measures 0.052).  Bisection, 60 steps.
    """
    dev = np.asarray(dev, dtype=float)
    noise = np.asarray(noise, dtype=float)
    target = max(0.0, float(target))

    def kept(c: float) -> float:
        f = np.clip(1.0 - c * noise / np.maximum(dev, 1e-300), 0.0, None)
        return float(np.sum(dev * f * f))

    if kept(1.0) <= target:
        return 1.0
    pos = noise > 0
    if not np.any(pos):
        return 1.0
    hi = float(np.max(dev[pos] / noise[pos]))  # every pair zeroed at this c
    lo = 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if kept(mid) > target else (lo, mid)
    return hi


def split_groups(reports: Any, parts: int = 2) -> tuple[Any, ...]:
    """``parts`` :class:`~lopub.collect.reports.MarginalReports` of disjoint shares of each group's
    users (every ``parts``-th user in the group's order, which the assignment drew at random)."""
    from lopub.collect.reports import MarginalReports

    out = []
    for start in range(int(parts)):
        groups = tuple(np.asarray(g)[start::parts] for g in reports.groups)
        ids = np.repeat(np.arange(len(groups), dtype=np.int32), [len(g) for g in groups])
        out.append(MarginalReports(reports.plan, ids, groups, 0))
    return tuple(out)
