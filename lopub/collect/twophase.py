"""Two-phase marginal sampling: a share of the users screens all pairs, the rest measure the plan the screen selects.

Protocol (:class:`TwoPhasePlan`)
--------------------------------
1. A uniform random share ``screen_share`` of the ``n`` users (default
   :data:`DEFAULT_SCREEN_SHARE`) is assigned the public *screen* plan: every
   attribute pair, one pair per user, each with the lowest-variance oracle.
2. The server measures the screen (:func:`~lopub.collect.server.measure_marginals`)
   and chooses the *main* plan from those measurements (:meth:`TwoPhasePlan.select`):
   the screen's tables replace the planner's uniform tables and prior
   dependence in the cost model (:class:`ScreenProfile`), and the candidate
   of lowest predicted mean 2-way TVD wins -- the candidates of the ``auto``
   rule (:func:`~lopub.collect.adaptive.candidate_plans`: one-way, all
   pairs, pairs up to L cells, a triple cover) and the pairs ranked by the
   screen's dependence, cut at about a dozen points (one-way tables for the
   attributes a cut leaves out).  The screen's tables are measurements of
   the release too, so every prediction counts the screen as an extra phase.
3. The other users are assigned the main plan.  :func:`~lopub.collect.phases.merge_reports` joins
   both phases into one :class:`~lopub.collect.reports.MarginalReports`
   whose plan lists the screen's pairs and the main plan's other subsets (a
   subset in both phases is one group: same subset, same oracle, so its
   reports are exchangeable); ``fit`` and the file format take it unchanged.

Privacy: the two phases are **disjoint groups of users**; each user reports
once, under one plan, one subset, at the full per-record epsilon (the
screen's and the main plan's epsilon are the same number).  The choice of
the main plan is post-processing of the screen's LDP reports and does not
touch the main-phase users' data, so the whole collection is epsilon-LDP
per user (parallel composition over disjoint users); the tests check that
every user appears in exactly one group with one report.

Sampled screens: where there are more than :data:`MAX_SCREEN_PAIRS` pairs,
the screen measures a public random sample of that many pairs
(:func:`screen_pairs`; a screen whose users cannot fill its pairs is not
used: a smaller sample, down to one pair per attribute, was measured at
12-34 % worse than no screen on the stress shape, 20,000 records, epsilon
8 and 16, where each screened pair got only its minimum of users).  Every
prediction is then evaluated on the screened pairs only (their tables and dependence are what
the data show; the cost does not grow with the number of attributes), as the
mix of two means over them: the screened share of the pairs with the
screen's tables counted, and the rest as pairs the screen left out -- for a
cut of the dependence ranking, completed from the one-way tables (it measures
screened pairs only); for the ``auto`` rule's candidates, measured by the
main phase alone.  Measured (two seeds, after the pooled-reference fix of
the marginal weights, with the own-margins dependence that
:class:`ScreenProfile` describes as tried): on retail top-100 items, bn-hepar2 and bn-water at
epsilon 4 / 8 / 16 the screen's predictions of the pick had a median
relative error of 23 % where the uniform rule's had 607 %, but the release
was 7-35 % worse at epsilon 8 and 16 there and on bn-alarm (0.0153 -> 0.0207
at epsilon 8) than the single-phase triples, so the planner does not use a
sampled screen (:func:`~lopub.collect.planner.plan`); ask for it with
``strategy="two-phase"``.

Cost-model note: the screen's noise inflates the apparent dependence of
every pair (``E||d + e||^2 = ||d||^2 + sum v``), which would lean the choice
towards measuring pairs that are noise; each pair's bias is therefore shrunk
by its James-Stein factor (:class:`ScreenProfile`).  Measured (three seeds,
two-phase plans, docs/BENCHMARKS.md "What the measurements know, kept"):
bn-survey (50,000 records) at epsilon 1 from 0.036 to 0.030 mean 2-way TVD,
retail top-20 at epsilon 1 from 0.0225 to 0.0217 and at epsilon 2 from
0.0133 to 0.0114.  The planner uses a two-phase plan only where its uniform
rule already measures more than the smallest pairs
(:func:`~lopub.collect.planner.plan`).

Pilot (:meth:`TwoPhasePlan.pilot_stops`, session 41): the first
:data:`PILOT_SHARE` (5 %) of the users report under the screen plan; the
server measures them and the screen stops there -- every other user reports
one attribute -- where (a) the pilot cannot tell its pairs' dependence from
none (:func:`~lopub.collect.screen.split_total`: the inner product of two
halves' dependence, each without the bias of a table's own margins, within 2
of its standard deviations of zero) and (b) with
the pairs shrunk to the upper bound of that total
(:func:`~lopub.collect.screen.calibrated_noise_factor`, on the unbiased tables,
whose stated variance is their noise), one attribute per user after the pilot
is predicted no worse than the best main plan after the whole screen.
Otherwise the rest of the screen reports and the protocol goes on as above
(the same reports in distribution).  Reason: on near-independent data a
screen's pair reports cost one-way accuracy (a pair's report tells each of
its attributes at a lower epsilon: ln((p + q) / 2q) = 0.62 for a binary pair
at epsilon 1), which no pair it finds repays (bn-hailfinder, 10^6 records,
epsilon 1: the 30 % screen lost to one attribute per user, docs/BENCHMARKS.md
"The screen's pilot").  Tried first and not kept: (b) with the total
estimated as ``sum(dev - v)`` from the post-processed tables and their
stated variance (twice the noise left in them at small groups) stopped on
strongly dependent data in 14 of 40 collections (the test chain, 30,000
records, epsilon 2) and on bn-sachs at 10^6 records and epsilon 0.5 (where
one attribute per user measures 0.084 against the two-phase 0.055); (a)
alone would stop bn-hepar2 at epsilon 4, whose 5 % pilot cannot see the
dependence the full screen uses (one attribute per user 0.0084 against
0.0057).  A 5 % pilot rarely bounds
the dependence tightly enough to stop: on independent binary data (12
attributes, 2 x 10^6 records, epsilon 1) it does not.

Where no screen of all pairs fits a trimmed triple cover, :mod:`lopub.collect.detect` screens
only the pairs it leaves out.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from lopub._util import check_open_unit
from lopub.collect.adaptive import (DEFAULT_DEPENDENCE, STRATEGIES, _check_args, _check_dependence, candidate_plans,
                                    choose_subsets, predict_plan_error)
from lopub.collect.cost import expected_tvd
from lopub.collect.groups import MIN_GROUP_FLOOR, needs, shortfall
from lopub.collect.plan import MarginalPlan, PlanError
from lopub.collect.screen import (CALIBRATION_Z, MAX_SCREEN_PAIRS, SPLIT_GROUP_FLOOR, ScreenProfile, screen_pairs,
                                  split_total)
from lopub.data.domain import Domain

#: Default share of the users in the screening phase.
DEFAULT_SCREEN_SHARE = 0.3
#: Share of the users whose screen reports decide whether the rest of the screen is collected
#: (:meth:`TwoPhasePlan.pilot_stops`).
PILOT_SHARE = 0.05
#: Number of cut points of the dependence ranking tried as main plans.
RANKED_CUTS = 12
#: A sampled screen its users cannot fill is cut by this factor until they can (at least one
#: matching of the attributes); :meth:`TwoPhasePlan.build`.
SCREEN_SHRINK = 0.9


@dataclass(frozen=True)
class TwoPhasePlan:
    """Screen all pairs with a share of the users, then measure the plan the screen selects.

    ``screen`` is the public plan of the first phase (``n_screen`` users);
    :meth:`select` turns its measurements into the plan of the second phase
    (``n_main`` users).  Each user reports once at the full epsilon (module
    docstring).
    """

    screen: MarginalPlan
    n: int
    n_screen: int
    #: the first ``n_pilot`` of the screen's users (0: no pilot) decide whether the rest screen
    #: (:meth:`pilot_stops`)
    n_pilot: int = 0
    #: the screen's reports are measurements of the release (:func:`~lopub.collect.phases.merge_reports`)
    keeps_screen: ClassVar[bool] = True

    @classmethod
    def build(cls, domain: Domain, n: int, epsilon: float, *,
              screen_share: float = DEFAULT_SCREEN_SHARE, key: str | None = None,
              pilot_share: float | None = PILOT_SHARE) -> "TwoPhasePlan":
        """The screen of ``screen_share`` of the ``n`` users: all pairs up to :data:`MAX_SCREEN_PAIRS`;
        above, a public sample of that many, cut by :data:`SCREEN_SHRINK` until the screen's users fill
        every pair's minimum group, down to one matching of the attributes (every attribute screened).
        ``pilot_share`` of the ``n`` users (``None``: no pilot) are the screen's pilot where that
        is fewer than the screen's users and gives every screened pair
        :data:`~lopub.collect.screen.SPLIT_GROUP_FLOOR` users, one in each quarter of
        :func:`~lopub.collect.screen.split_total` (:meth:`pilot_stops`).

        Raises
        ------
        PlanError
            The screen cannot fill its pairs (all of them up to 30 attributes, one matching above) or
            the main phase gets fewer than the minimum per attribute.
        """
        domain, n, epsilon = _check_args(domain, n, epsilon)
        screen_share = check_open_unit("screen_share", screen_share)
        if len(domain) < 2:
            raise PlanError("a two-phase plan needs at least 2 attributes")
        n_screen = int(round(n * screen_share))
        d = len(domain)
        pairs = screen_pairs(domain, MAX_SCREEN_PAIRS)
        need = max(needs(domain, epsilon, pairs))
        if d * (d - 1) // 2 > MAX_SCREEN_PAIRS:  # a sampled screen: as many pairs as its users fill
            count = len(pairs)
            while n_screen < count * need and count > (d + 1) // 2:  # down to one matching: every attribute
                count = max(int(count * SCREEN_SHRINK), (d + 1) // 2)
                pairs = screen_pairs(domain, count)
                need = max(needs(domain, epsilon, pairs))
        if n_screen < len(pairs) * need or n - n_screen < len(domain) * MIN_GROUP_FLOOR:
            raise PlanError(f"n ({n}) is too small for a two-phase plan: the screen needs >= "
                            f"{len(pairs) * need} users ({len(pairs)} pairs, >= {need} users each at "
                            f"epsilon {epsilon:g}) and the main phase >= {len(domain) * MIN_GROUP_FLOOR}; "
                            f"it would get {n_screen} and {n - n_screen}")
        n_pilot = 0
        if pilot_share is not None:
            n_pilot = int(round(n * check_open_unit("pilot_share", pilot_share)))
            if not len(pairs) * SPLIT_GROUP_FLOOR <= n_pilot < n_screen:
                n_pilot = 0
        return cls(MarginalPlan(domain, tuple(pairs), epsilon, key=key), n, n_screen, n_pilot)

    @property
    def n_main(self) -> int:
        return self.n - self.n_screen

    def main_candidates(self, screen_source: Any) -> dict[str, list[tuple[str, ...]]]:
        """The main-phase candidates: the ``auto`` rule's and cuts of the dependence ranking."""
        domain, eps, n = self.screen.domain, self.screen.epsilon, self.n_main
        out = {k: v for k, v in candidate_plans(domain).items() if not shortfall(domain, n, eps, v)}
        dep = {}
        for m in screen_source.measurements():  # pairs of the screen, not users
            pa, pb = m.values.sum(axis=1), m.values.sum(axis=0)
            raw = 0.5 * float(np.abs(m.values - np.outer(pa, pb)).sum())
            dep[tuple(m.attrs)] = raw - expected_tvd(m.variance, 0.0)
        ranked = sorted(dep, key=lambda p: dep[p], reverse=True)
        for k in np.unique(np.linspace(1, len(ranked), RANKED_CUTS).astype(int)):
            subsets = [tuple(p) for p in ranked[:k]]
            covered = {a for p in subsets for a in p}
            subsets += [(a,) for a in domain.attrs if a not in covered]
            if not shortfall(domain, n, eps, subsets):
                out[f"top-{k}-pairs"] = subsets
        if not out:  # one attribute per group, whatever the minimum says
            out["one-way"] = [(a,) for a in domain.attrs]
        return out

    def pilot_stops(self, pilot_reports: Any) -> dict[str, Any]:
        """Whether the screen stops after its pilot: ``{"users", "stopped", "one_way", "screen",
        "dependence_total", "dependence_spread"}``.

        ``pilot_reports``: the screen's reports of its first :attr:`n_pilot` users.  From the
        pilot's tables, with the pairs' dependence shrunk to an upper bound of their total
        (:func:`~lopub.collect.screen.split_total` over two halves of each pair's users, unbiased, plus
        :data:`~lopub.collect.screen.CALIBRATION_Z` standard deviations;
        :func:`~lopub.collect.screen.calibrated_noise_factor`), ``one_way`` is the predicted mean
        2-way TVD of the release if the screen stops at the pilot and every other user reports
        one attribute, ``screen`` that of the best main plan after the whole screen
        (:meth:`select`'s candidates); ``dependence_total`` and ``dependence_spread`` are the split
        estimate and its standard deviation.  The screen stops where ``one_way`` is not above
        ``screen`` and the total is within :data:`~lopub.collect.screen.CALIBRATION_Z` standard
        deviations of none.  Module docstring, "Pilot".
        """
        from lopub.collect.server import measure_marginals

        if not self.n_pilot:
            raise PlanError("this two-phase plan has no pilot (n_pilot 0)")
        source = measure_marginals(pilot_reports)
        total, spread = split_total(pilot_reports, [m.attrs for m in source.measurements() if len(m.attrs) == 2])
        target = total + CALIBRATION_Z * spread
        pilot = replace(self, n_screen=self.n_pilot, n_pilot=0)
        stop: dict[str, float] = {}
        try:
            pilot.select(source, stop, target=target, only=["one-way"])
        except PlanError:  # one-way tables do not fit the users the pilot leaves
            stop = {}
        full: dict[str, float] = {}
        replace(self, n_pilot=0).select(source, full, target=target)
        best = min(v for k, v in full.items() if k != "one-attribute")
        one = stop.get("one-way", float("inf"))
        found = total > CALIBRATION_Z * spread  # dependence the pilot tells from none
        return {"users": self.n_pilot, "stopped": bool(one <= best and not found), "one_way": one,
                "screen": best, "dependence_total": total, "dependence_spread": spread}

    def select(self, screen_source: Any, predictions: dict[str, float] | None = None, *,
               target: float | None = None, only: list[str] | None = None) -> MarginalPlan:
        """Main-phase plan from the screen's measurements (module docstring, step 2).

        ``predictions``, when given, receives every candidate's predicted
        mean 2-way TVD of the release (both phases), computed from the
        screen's tables: the data-driven predictions of the plan; and under
        ``"one-attribute"`` that of the one-attribute protocol had all ``n``
        users reported one attribute (no screen), at the same tables.  ``target``: the pairs'
        dependence shrunk to this total ``sum ||d||^2`` (:class:`ScreenProfile`); ``only``: the
        names of the candidates to evaluate (e.g. ``["one-way"]``).
        """
        plan = self.screen
        profile = ScreenProfile(plan.domain, screen_source, target=target, raw=target is not None)
        screen = [(list(plan.subsets), float(self.n_screen))]
        best: tuple[float, list[tuple[str, ...]]] | None = None
        dom, eps, pairs = plan.domain, plan.epsilon, profile.pairs
        share = len(pairs) / (len(dom) * (len(dom) - 1) / 2)  # screened share of all pairs
        for name, subsets in self.main_candidates(screen_source).items():  # ~30 candidate plans
            if only is not None and name not in only:
                continue
            err = predict_plan_error(dom, self.n_main, eps, subsets, prior=profile, extra_phases=screen,
                                     pairs=pairs)
            if share < 1.0:  # a sampled screen: the pairs it left out (module docstring)
                if name.startswith("top-"):  # measures screened pairs only: the rest are completed
                    out = predict_plan_error(dom, self.n_main, eps, subsets, prior=profile, extra_phases=screen,
                                             pairs=pairs, unmeasured=True)
                else:  # the same rule for every pair, without the screen's table of the pair
                    out = predict_plan_error(dom, self.n_main, eps, subsets, prior=profile, pairs=pairs)
                err = share * err + (1.0 - share) * out
            if predictions is not None:
                predictions[name] = err
            if best is None or err < best[0] - 1e-12:
                best = (err, subsets)
        if predictions is not None:  # the one-attribute protocol for all n users, at the screen's tables
            predictions["one-attribute"] = predict_plan_error(plan.domain, self.n, plan.epsilon,
                                                              [(a,) for a in plan.domain.attrs], prior=profile,
                                                              pairs=profile.pairs)
        if best is None:
            raise PlanError(f"no main-phase plan fits n_main ({self.n_main}) users")
        same = {frozenset(s): s for s in plan.subsets}  # a screened pair keeps the screen's order
        subsets = [same.get(frozenset(s), tuple(s)) for s in best[1]]
        return MarginalPlan(plan.domain, tuple(subsets), plan.epsilon, key=plan.key)


def plan_marginals(domain: Domain, n: int, epsilon: float, *, strategy: str = "auto",
                   dependence: float = DEFAULT_DEPENDENCE, prior: Any = None,
                   key: str | None = None, screen_share: float = 0.3
                   ) -> "MarginalPlan | TwoPhasePlan":
    """Choose the subsets to measure for ``n`` users at per-user ``epsilon``.

    Parameters
    ----------
    domain : Domain
    n : int
        Number of users; every subset's group must get its minimum
        (:mod:`lopub.collect.groups`): ``auto`` fits its plan to ``n``, a
        fixed strategy that ``n`` cannot fill is refused.
    epsilon : float
        Per-user budget (finite, > 0).
    strategy : {"auto", "one-way", "pairs", "triples", "two-phase"}
        ``auto`` applies the rule of the module docstring; ``two-phase``
        returns a :class:`TwoPhasePlan`.
    dependence : float
        Prior guess of the mean TVD of a pair from independence (cost of not
        measuring a pair).
    prior : object with ``project(attrs)``, optional
        Tables to evaluate the cost model at (a public or earlier dataset, a
        fitted model); replaces the uniform tables and ``dependence``.
    key : str, optional
        Assignment key of the plan (stable assignment from user ids).
    screen_share : float
        Share of users in the screening phase (``two-phase`` only).
    """
    domain, n, epsilon = _check_args(domain, n, epsilon)
    dependence = _check_dependence(dependence)
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy ({strategy!r}) must be one of {list(STRATEGIES)}")
    if strategy == "two-phase":
        return TwoPhasePlan.build(domain, n, epsilon, screen_share=screen_share, key=key)
    if strategy == "auto":
        subsets = choose_subsets(domain, n, epsilon, dependence=dependence, prior=prior)[1]
    else:
        cands = candidate_plans(domain)
        subsets = cands.get(strategy, cands.get("pairs", cands["one-way"]))
        short = shortfall(domain, n, epsilon, subsets)
        if short:
            s, need = max(short, key=lambda t: t[1])
            raise PlanError(f"strategy {strategy!r} needs {len(subsets)} subsets but n ({n}) users "
                            f"give {n // len(subsets)} per subset where {list(s)} needs >= {need} "
                            f"at epsilon {epsilon:g} (lopub.collect.groups); collect more users, "
                            "raise epsilon or use strategy='auto', which fits the plan to the users")
    return MarginalPlan(domain, tuple(subsets), epsilon, key=key)
