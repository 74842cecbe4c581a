"""Collect with the planner's choice: one call for ``lopub collect --protocol auto``.

:func:`collect` asks :func:`~lopub.collect.planner.plan` for the protocol
of lowest predicted error at the per-record budget (or takes the one given)
and simulates the clients of a data owner's records with it.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from lopub.collect.adaptive import DEFAULT_DEPENDENCE
from lopub.collect.client import collect_records
from lopub.collect.plan import MarginalPlan
from lopub.collect.planner import PlanReport, plan
from lopub.collect.reports import MarginalReports
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.oracles.longitudinal import LONGITUDINAL
from lopub.oracles.oneshot import ONESHOT

PROTOCOLS = ("auto", "marginals", "one-attribute", "bloom")
#: protocols of :mod:`lopub.oracles` (one-way marginals), named in the refusal of ``collect``
_ORACLE_NAMES = (*ONESHOT, *LONGITUDINAL, "allomfree", "rr-lip", "ue-lip", "lh-lip")


def bloom_spec(domain: Domain, report: PlanReport, *, key: str | None = None):
    """The :class:`~lopub.reports.spec.CollectionSpec` of the report's ``bloom`` option
    (its ``h`` and collision-free ``m``, ``f`` for the report's epsilon)."""
    from lopub.reports.spec import DEFAULT_KEY, CollectionSpec

    params = report.option("bloom").params
    return CollectionSpec.from_domain(domain, epsilon=report.epsilon, h=params["h"], m=list(params["m"]),
                                      key=DEFAULT_KEY if key is None else key)


def _bloom_alternative(domain: Domain, report: PlanReport, key: str | None) -> Any:
    """Bloom reports as the main phase of a two-phase collection (``None`` where Bloom was refused):
    predicted at the screen's tables with the report's ``h``."""
    from lopub.collect.bloom_cost import predict_bloom
    from lopub.collect.phases import Alternative

    from lopub.collect.planner import BLOOM_AUTO_MAX_D

    if "bloom" in report.refused or len(domain) > BLOOM_AUTO_MAX_D:  # its fit's cost (planner docstring)
        return None
    h, eps = report.option("bloom").params["h"], report.epsilon

    def run(rest: Dataset, rng: Any) -> Any:
        from lopub.client.encode import encode

        return encode(rest, bloom_spec(domain, report, key=key), rng=rng)
    return Alternative("bloom", lambda profile, n_main: predict_bloom(domain, n_main, eps, h, prior=profile,
                                                                      pairs=profile.pairs), run)


def collect(dataset: Dataset, epsilon: float, *, protocol: str = "auto",
            rng: np.random.Generator | int | None = None, key: str | None = None,
            prior: Any = None, dependence: float = DEFAULT_DEPENDENCE) -> tuple[Any, PlanReport]:
    """Simulate every record's report at per-record ``epsilon`` with the planned protocol.

    Parameters
    ----------
    dataset : Dataset
    epsilon : float
        Per-record budget.
    protocol : {"auto", "marginals", "one-attribute", "bloom"}
        ``auto``: the planner's recommendation.
    rng : Generator, int or None
        ``None``: OS entropy (as on real devices); an int seeds a simulation.
    key : str, optional
        Assignment key of a marginal plan / Bloom hash key.
    prior : object with ``project(attrs)``, optional
        Passed to the planner: public tables (records or a model) to predict at.
    dependence : float
        Passed to the planner: the prior mean pair dependence where no ``prior`` is given.

    Returns
    -------
    (reports, plan_report)
        :class:`~lopub.collect.reports.MarginalReports` (marginals,
        one-attribute; a two-phase plan's two phases merged into one,
        :func:`~lopub.collect.phases.merge_reports`; after a detection screen,
        :class:`~lopub.collect.detect.DetectPlan`, the main phase's reports
        alone) or :class:`lopub.reports.bloom.Reports` (bloom), and the
        planner's report (its ``warning`` is set above epsilon 10; its
        ``notes`` give the plan-time group-size checks; after a two-phase
        collection its ``marginals`` option carries the screen's predictions,
        :meth:`~lopub.collect.plan_report.PlanReport.after_screen`, and Bloom
        reports of the main-phase users are returned where the screen
        predicts them lowest, their ``screened`` counting the screen's users,
        :attr:`~lopub.reports.bloom.Reports.users`; after a single-phase ``auto`` collection that
        measures every pair, the predictions from its own tables,
        :meth:`~lopub.collect.plan_report.PlanReport.after_collection`).

    Raises
    ------
    PlanError
        The protocol asked for was refused at plan time (too few users for
        one attribute per group, no distinct Bloom filters); the message says why.
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(f"dataset ({type(dataset).__name__}) must be a lopub Dataset")
    if protocol not in PROTOCOLS:
        oracle = isinstance(protocol, str) and protocol.lower() in _ORACLE_NAMES
        raise ValueError(f"protocol ({protocol!r}) must be one of {list(PROTOCOLS)}"
                         + ("; a frequency oracle collects one-way marginals with "
                            "lopub.oracles (SPL, SMP, Allomfree, RRLIP, UELIP, LHLIP; or lopub collect --protocol "
                            f"{protocol.lower()})" if oracle else ""))
    report = plan(dataset.domain, dataset.n, epsilon, prior=prior, key=key, dependence=dependence)
    choice = report.recommended if protocol == "auto" else protocol
    if choice == "bloom":
        from lopub.client.encode import encode

        return encode(dataset, bloom_spec(dataset.domain, report, key=key), rng=rng), report
    if report.marginal_plan is None:
        report.option(choice)  # PlanError: why the sampling protocols were refused at plan time
    if choice == "marginals" and report.two_phase is not None:
        from lopub.collect.phases import collect_two_phase, merge_reports

        predictions: dict[str, float] = {}
        keeps = report.two_phase.keeps_screen  # a DetectPlan's screen is not released
        alt = _bloom_alternative(dataset.domain, report, key) if protocol == "auto" and keeps else None
        pilot: dict[str, Any] = {}
        screen, main = collect_two_phase(dataset, report.two_phase, rng=rng, predictions=predictions,
                                         alternative=alt, pilot=pilot)
        if not keeps:
            return main, report.after_screen(predictions)
        if alt is not None and not isinstance(main, MarginalReports):  # Bloom reports of the main phase:
            main = replace(main, screened=main.screened + screen.n)  # the screen's users took part
            return main, report.after_screen(predictions)
        return merge_reports(screen, main), report.after_screen(predictions, pilot=pilot or None)
    if choice == "marginals":
        if report.marginal_plan is None:
            raise ValueError(f"protocol 'marginals' has no plan at n ({dataset.n}) and epsilon "
                             f"({report.epsilon:g}): {report.warning or 'the planner refused it'}")
        mplan = report.marginal_plan
        reports = collect_records(dataset, mplan, rng=rng)
        if protocol == "auto":  # the prediction from the collected tables (every pair measured)
            from lopub.collect.server import measure_marginals

            report = report.after_collection(measure_marginals(reports))
        return reports, report
    mplan = MarginalPlan(dataset.domain, tuple((a,) for a in dataset.domain.attrs), report.epsilon, key=key)
    return collect_records(dataset, mplan, rng=rng), report
