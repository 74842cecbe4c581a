"""Marginal-sampling collection (CALM) and the protocol planner.

* :class:`MarginalPlan` (:mod:`.plan`): the public plan -- attribute subsets,
  per-user epsilon, one oracle per subset, optional assignment key.
* Client (:mod:`.client`): :func:`assign_random`, :func:`assign_user`,
  :func:`collect_records` (simulate a data owner's users).
* :class:`MarginalReports` (:mod:`.reports`): reports grouped by subset, saved
  as one ``.npz`` archive.
* Server (:mod:`.server`): :func:`measure_marginals` -> :class:`MarginalSource`
  (``measurements()``, ``marginal(attrs)``, ``measured_sets()``).
* Adaptive plans (:mod:`.adaptive`, cost model and candidates); :func:`plan_marginals`
  and two-phase plans (:mod:`.twophase`): :class:`TwoPhasePlan`; their simulated collection
  (:mod:`.phases`): :func:`collect_two_phase`, :func:`merge_reports`; :func:`merge_sources`.
* Planner (:mod:`.planner`): :func:`plan` predicts each protocol family's
  mean 2-way error at a budget and recommends one (:class:`PlanReport`);
  :func:`collect` (:mod:`.auto`) simulates a collection with its choice.

References
----------
Zhang, Wang, Li, He, Chen, "CALM: Consistent adaptive local marginal for
marginal release under local differential privacy", ACM CCS 2018.
"""
from lopub.collect.adaptive import predict_pair_errors, predict_plan_error
from lopub.collect.auto import bloom_spec, collect
from lopub.collect.server import merge_sources
from lopub.collect.phases import collect_two_phase, merge_reports
from lopub.collect.twophase import TwoPhasePlan, plan_marginals
from lopub.collect.client import assign_ids, assign_random, assign_user, collect_records
from lopub.collect.plan import MarginalPlan, PlanError
from lopub.collect.planner import PlanReport, ProtocolOption, plan, privacy_statement
from lopub.collect.reports import MarginalReports
from lopub.collect.server import (NOT_MEASURED, CompletedSource, MarginalSource, NotMeasuredError,
                                  combine, measure_marginals)

__all__ = [
    "NOT_MEASURED", "CompletedSource",
    "MarginalPlan", "PlanError", "MarginalReports", "MarginalSource", "NotMeasuredError",
    "assign_random", "assign_user", "assign_ids", "collect_records", "measure_marginals", "combine",
    "plan_marginals", "TwoPhasePlan", "collect_two_phase", "merge_reports", "merge_sources", "predict_pair_errors",
    "predict_plan_error", "plan", "PlanReport", "ProtocolOption", "privacy_statement",
    "collect", "bloom_spec",
]
