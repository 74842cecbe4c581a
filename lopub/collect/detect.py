"""Detection screen: a trimmed plan with a small screen of the pairs it leaves unmeasured (issue 24).

Where the uniform rule's triple cover cannot be filled by the users and no screen of all pairs fits
(:class:`~lopub.collect.twophase.TwoPhasePlan`), a few users screen only the pairs the trimmed plan
leaves out, in groups sized to *find* a strong dependence, not to measure it
(:func:`detect_users`); the other users measure the trimmed plan with the screen's dependent pairs
added (:meth:`DetectPlan.select`).  The screen's reports are not released.  Chosen by
:func:`lopub.collect.planner.plan`; the figures are in docs/BENCHMARKS.md, "Planning and
collection at scale".
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

import numpy as np

from lopub.collect.adaptive import (
    DEFAULT_DEPENDENCE,
    _check_args,
    all_pairs,
    candidate_plans,
    predict_plan_error,
)
from lopub.collect.cost import best_oracle, cell_var
from lopub.collect.groups import MIN_GROUP_FLOOR, UNREACHABLE, fit_to_users, shortfall
from lopub.collect.plan import MarginalPlan, PlanError
from lopub.collect.screen import ScreenProfile
from lopub.collect.twophase import RANKED_CUTS
from lopub.data.domain import Domain

#: Most users a detection screen (:class:`DetectPlan`) may take, as a share of ``n``.
DETECT_SHARE = 0.1
#: Dependence (TVD from independence) a detection screen's pair group is sized to tell from none
#: (:func:`detect_users`).
DETECT_TVD = 0.3


def detect_users(epsilon: float, cells: int) -> int:
    """Users of a detection screen's group of a ``cells``-cell pair (:class:`DetectPlan`).

    Enough that the expected squared norm of the table's noise, ``cells * v`` (``v``: the oracle's
    per-user variance at uniform cells plus the sampling term, as in
    :func:`~lopub.collect.groups.informative_users`), is at most half the squared norm of the most
    concentrated dependence of TVD :data:`DETECT_TVD` (``+-DETECT_TVD / 2`` in four cells:
    ``DETECT_TVD^2``), the quantity the screen's James-Stein factor compares with the noise.  A
    near-deterministic pair has a larger norm and is found with fewer users; a dependence spread
    thinly over many cells is not looked for.
    """
    k = int(cells)
    f = 1.0 / k
    v = cell_var(best_oracle(epsilon, k), epsilon, k, 1.0, f=f) + f * (1.0 - f)
    need = 2.0 * k * v / (DETECT_TVD * DETECT_TVD)
    if not math.isfinite(need) or need >= UNREACHABLE:
        return UNREACHABLE
    return max(MIN_GROUP_FLOOR, math.ceil(need))


def unmeasured_pairs(domain: Domain, subsets: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    """The attribute pairs (domain order) that no subset of ``subsets`` holds."""
    held = {frozenset(p) for s in subsets for p in itertools.combinations(s, 2)}
    return [p for p in all_pairs(domain) if frozenset(p) not in held]


@dataclass(frozen=True)
class DetectPlan:
    """A trimmed plan with a small screen of the pairs it leaves unmeasured (issue 24, session 36).

    Where the uniform rule's candidate ``rule`` (a triple cover) cannot be filled by the users,
    :func:`~lopub.collect.groups.fit_to_users` keeps its cheapest subsets and leaves pairs
    unmeasured -- whichever they are, near-deterministic ones included (Adult: education x
    education-num, released at independence with a TVD of 0.76) -- and no two-phase screen of all
    pairs fits.  Here a screen of at most :data:`DETECT_SHARE` of the users measures only the pairs
    the trimmed plan (fitted to the other users) leaves out, one pair per user, each group of
    :func:`detect_users` (sized to find a strong dependence, not to measure the pair well); the
    other users measure the plan chosen from it (:meth:`select`).  Each user reports once, at the
    full epsilon, as in :class:`TwoPhasePlan`.

    Unlike a :class:`TwoPhasePlan` the screen's reports are **not part of the release**
    (``keeps_screen`` is False): a few dozen users per table are mostly noise, and merged into
    the release they made it worse (Adult with missing values, 48,842 records, epsilon 8, seeds
    0-2: 0.0452 mean 2-way TVD with them, 0.0390 without, 0.0382 with no screen).
    """

    screen: MarginalPlan
    n: int
    n_screen: int
    #: name of the uniform rule's candidate (:func:`~lopub.collect.adaptive.candidate_plans`)
    rule: str
    #: the prior dependence of the pairs the screen did not measure
    dependence: float = DEFAULT_DEPENDENCE
    keeps_screen: ClassVar[bool] = False

    @classmethod
    def build(cls, domain: Domain, n: int, epsilon: float, rule: str, *,
              dependence: float = DEFAULT_DEPENDENCE, key: str | None = None,
              share: float = DETECT_SHARE) -> "DetectPlan":
        """The screen of the pairs that ``rule``'s candidate, fitted to the users the screen leaves,
        does not measure (a fixed point: a larger screen leaves fewer users, who may fill fewer
        subsets).

        Raises
        ------
        PlanError
            ``rule`` is not a candidate, its plan measures every pair, or the screen would need more
            than ``share`` of the ``n`` users.
        """
        domain, n, epsilon = _check_args(domain, n, epsilon)
        cands = candidate_plans(domain)
        if rule not in cands:
            raise PlanError(f"rule ({rule!r}) must be one of {sorted(cands)}")
        n_main, size, left = n, 0, []
        for _ in range(64):  # the screen grows with each step; the share caps it
            base = fit_to_users(domain, n_main, epsilon, cands[rule])
            left = [] if base is None else unmeasured_pairs(domain, base)
            if base is None or not left:
                raise PlanError(f"no detection screen: {rule!r} fitted to {n_main} users "
                                + ("is not fillable" if base is None else "measures every pair"))
            size = len(left) * max(detect_users(epsilon, k) for k in {domain.cells(p) for p in left})
            if size > share * n:
                raise PlanError(f"n ({n}) is too small for a detection screen: its {len(left)} pairs need "
                                f"{size} users, more than {share:g} of the users")
            if n - size == n_main:
                break
            n_main = n - size
        else:
            raise PlanError("no detection screen: its size did not settle")
        return cls(MarginalPlan(domain, tuple(left), epsilon, key=key), n, size, rule, dependence)

    @property
    def n_main(self) -> int:
        return self.n - self.n_screen

    def screened_dependence(self, screen_source: Any) -> dict[tuple[str, ...], float]:
        """Each screened pair's dependence (TVD from independence) as the screen measures it, shrunk
        by its James-Stein factor (:class:`ScreenProfile`): 0 where the screen cannot tell it from noise."""
        profile = ScreenProfile(self.screen.domain, screen_source)
        return {p: 0.5 * float(np.abs(profile.bias(*p)).sum()) for p in profile.pairs}

    def main_candidates(self, screen_source: Any) -> dict[str, list[tuple[str, ...]]]:
        """The main plans: ``rule``'s fitted to the main users, and with the screen's most dependent
        pairs added (cut at about :data:`RANKED_CUTS` points, denser at the top) -- to the fitted
        plan where they fit, and to ``rule``'s subsets before fitting (the pairs then compete with
        its subsets by their minimum)."""
        domain, eps, n = self.screen.domain, self.screen.epsilon, self.n_main
        full = candidate_plans(domain)[self.rule]
        base = fit_to_users(domain, n, eps, full)
        if base is None:
            raise PlanError(f"no main-phase plan fits n_main ({n}) users")
        dep = self.screened_dependence(screen_source)
        ranked = [p for p in sorted(dep, key=lambda p: -dep[p]) if dep[p] > 0]
        out = {f"{self.rule} (fitted)": base}
        multi = [s for s in base if len(s) > 1]
        cuts: list[int] = (np.unique(np.round(np.geomspace(1, len(ranked), RANKED_CUTS)).astype(int)).tolist()
                           if ranked else [])
        for k in cuts:
            extra = [tuple(p) for p in ranked[:k]]
            covered = {a for s in multi + extra for a in s}
            added = multi + extra + [(a,) for a in domain.attrs if a not in covered]
            if not shortfall(domain, n, eps, added):
                out[f"{self.rule} (fitted) + top-{k}-pairs"] = added
            refit = fit_to_users(domain, n, eps, list(full) + extra)
            if refit is not None and refit not in out.values():
                out[f"{self.rule} + top-{k}-pairs (fitted)"] = refit
        return out

    def select(self, screen_source: Any, predictions: dict[str, float] | None = None) -> MarginalPlan:
        """Main-phase plan of lowest predicted mean 2-way TVD of the release (main-phase users only):
        the cost model at uniform tables with each screened pair's dependence as the screen measures
        it (:meth:`screened_dependence`) and the prior ``dependence`` for the other pairs."""
        plan = self.screen
        dom, eps = plan.domain, plan.epsilon
        dep: dict[tuple[str, ...], float] = {p: self.dependence for p in all_pairs(dom)}
        dep.update(self.screened_dependence(screen_source))
        best: tuple[float, list[tuple[str, ...]]] | None = None
        for name, subsets in self.main_candidates(screen_source).items():  # about 25 candidates
            err = predict_plan_error(dom, self.n_main, eps, subsets, dependence=dep)
            if predictions is not None:
                predictions[name] = err
            if best is None or err < best[0] - 1e-12:
                best = (err, subsets)
        if best is None:  # the fitted rule is always a candidate: main_candidates raises if it does not fit
            raise PlanError(f"no main-phase plan fits n_main ({self.n_main}) users")
        return MarginalPlan(dom, tuple(best[1]), eps, key=plan.key)
