"""Simulated two-phase collection: a screen's users, then the main plan's (:mod:`lopub.collect.twophase`).

:func:`collect_two_phase` runs both phases of a :class:`~lopub.collect.twophase.TwoPhasePlan` (its
pilot first, where it has one) or a :class:`~lopub.collect.detect.DetectPlan` for a data owner;
:func:`merge_reports` joins the phases' reports into one; :class:`Alternative` is another protocol
the main phase may use (Bloom reports, :func:`lopub.collect.auto.collect`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from lopub.collect.plan import MarginalPlan, PlanError
from lopub.collect.screen import ScreenProfile
from lopub.collect.twophase import TwoPhasePlan


def collect_two_phase(dataset: Any, plan: TwoPhasePlan, *, rng: np.random.Generator | int | None = None,
                      predictions: dict[str, float] | None = None,
                      alternative: Alternative | None = None,
                      pilot: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """Simulate both phases for a data owner: ``(screen_reports, main_reports)``.

    ``predictions`` receives the screen-based predictions of
    :meth:`TwoPhasePlan.select`.  ``alternative``: another protocol the
    main-phase users may report with instead (:class:`Alternative`, e.g.
    Bloom reports); it is predicted at the screen's tables for the
    ``n_main`` users alone (the screen's marginal reports are not part of
    its release) and runs when its prediction is below every marginal
    candidate's; its prediction is recorded under its name.  ``pilot``
    receives the pilot's outcome (:meth:`TwoPhasePlan.pilot_stops`) where the
    plan has one: the first ``n_pilot`` of the screen's users report, and where
    the pilot stops the screen the other users report one attribute each (the
    returned screen reports are the pilot's; no ``alternative`` is considered).

    A random ``plan.n_screen`` of the records report under ``plan.screen``;
    the server selects the main plan from their measurements; the other
    records report under it (disjoint users, one report each).  Join them
    with :func:`merge_reports` (one reports object) or measure both and join
    the sources with :func:`~lopub.collect.server.merge_sources`; a :class:`~lopub.collect.detect.DetectPlan`'s screen
    (``keeps_screen`` False) is not part of the release: use the main reports, whose
    ``screened`` counts the screen's users (:attr:`~lopub.collect.reports.MarginalReports.users`).
    """
    from lopub._util import resolve_rng
    from lopub.collect.client import collect_records
    from lopub.collect.server import measure_marginals

    if not (isinstance(plan, TwoPhasePlan) or type(plan).__name__ == "DetectPlan"):  # by name, as before the move
        raise TypeError(f"plan ({type(plan).__name__}) must be a TwoPhasePlan or DetectPlan")
    if dataset.n != plan.n:
        raise ValueError(f"dataset has {dataset.n} records; the plan was made for n ({plan.n})")
    rng = resolve_rng(rng)
    order = rng.permutation(dataset.n)
    n_pilot = getattr(plan, "n_pilot", 0)
    preds: dict[str, float] = {}
    stopped = False
    if n_pilot:  # the pilot decides whether the rest of the screen is collected
        screen = collect_records(dataset.subset(order[:n_pilot]), plan.screen, rng=rng)
        outcome = plan.pilot_stops(screen)
        if pilot is not None:
            pilot.update(outcome)
        stopped = outcome["stopped"]
        if stopped:
            plan = replace(plan, n_screen=n_pilot, n_pilot=0)
            main_plan = MarginalPlan(plan.screen.domain, tuple((a,) for a in plan.screen.domain.attrs),
                                     plan.screen.epsilon, key=plan.screen.key)
            preds["one-way"] = outcome["one_way"]
        else:
            screen = merge_reports(screen, collect_records(dataset.subset(order[n_pilot:plan.n_screen]),
                                                           plan.screen, rng=rng))
    else:
        screen = collect_records(dataset.subset(order[:plan.n_screen]), plan.screen, rng=rng)
    if not preds:
        source = measure_marginals(screen)
        main_plan = plan.select(source, preds)
    rest = dataset.subset(order[plan.n_screen:])
    if alternative is not None and not stopped:
        alt = alternative.predict(ScreenProfile(plan.screen.domain, source), plan.n_main)
        if predictions is not None:
            predictions.update(preds)
            predictions[alternative.name] = alt
        if alt < min(preds.values()):
            return screen, alternative.run(rest, rng)
    elif predictions is not None:  # (after a stopping pilot the alternative is not considered)
        predictions.update(preds)
    main = collect_records(rest, main_plan, rng=rng)
    if not plan.keeps_screen:  # the screen's users took part; their count is public
        main = replace(main, screened=main.screened + screen.n)
    return screen, main


@dataclass(frozen=True)
class Alternative:
    """A protocol the main phase of a two-phase collection may use instead of marginal sampling.

    ``predict(profile, n_main)``: its predicted mean 2-way TVD with the
    screen's tables (a :class:`ScreenProfile`) for the ``n_main`` users of
    the main phase; ``run(dataset, rng)``: those users' reports.
    """

    name: str
    predict: Any
    run: Any


def merge_reports(screen: Any, main: Any) -> Any:
    """One :class:`~lopub.collect.reports.MarginalReports` holding both phases' reports.

    Its plan lists the screen's subsets, then the main plan's subsets not
    screened (same domain, epsilon and key); a subset of both phases is one
    group (same subset in the same attribute order, hence the same oracle).
    Each user keeps their one report.
    """
    from lopub.collect.reports import MarginalReports

    for name, r in (("screen", screen), ("main", main)):
        if not isinstance(r, MarginalReports):
            raise TypeError(f"{name} ({type(r).__name__}) must be MarginalReports")
    a, b = screen.plan, main.plan
    if (a.domain, a.epsilon, a.key) != (b.domain, b.epsilon, b.key):
        raise PlanError("screen and main reports must share domain, epsilon and key; got epsilon "
                        f"{a.epsilon} and {b.epsilon}")
    index = {s: i for i, s in enumerate(a.subsets)}
    subsets = list(a.subsets)
    for s in b.subsets:  # subsets, not users
        if s not in index:
            if frozenset(s) in {frozenset(t) for t in index}:
                raise PlanError(f"main subset {list(s)} repeats a screened subset in another order")
            index[s] = len(subsets)
            subsets.append(s)
    plan = MarginalPlan(a.domain, tuple(subsets), a.epsilon, key=a.key)
    groups: list[list[np.ndarray]] = [[] for _ in subsets]
    for rep in (screen, main):
        for s, g in zip(rep.plan.subsets, rep.groups):
            groups[index[s]].append(np.asarray(g))
    merged = tuple(np.concatenate(g) if len(g) > 1 else g[0] for g in groups)
    ids = np.repeat(np.arange(len(subsets), dtype=np.int32), [len(g) for g in merged])
    return MarginalReports(plan, ids, merged, screen.screened + main.screened)
