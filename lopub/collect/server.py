"""Server side of marginal sampling: per-subset measurements and a marginal source.

Each subset's group of ``n_i`` users gives, through its oracle's
``measure()``, the subset's joint table with the oracle's analytic variance.
Because the group is a uniform random share of the ``N`` users, estimating
the whole population's table adds the sampling term
``f (1 - f) (1/n_i - 1/N)`` per cell (as for SMP); the measurement's
variance is the sum, ``n`` is ``n_i`` and ``meta["n_users"]`` is ``N``.

Both terms are evaluated at a **reference table**, not at the group's own
estimate: the product of the attributes' one-way tables pooled over all groups
(pooled with weights that depend only on the groups' sizes and oracles).  A
variance read off the group's own table is correlated with it: a group that
happens to see a rare value less often gets a smaller variance, hence more
weight wherever measurements are pooled (one-way tables, the model fit), and the
pooled estimate is biased towards "rarer".  On retail's top 100 items (a triple
cover, 48 users per triple, epsilon 8) the pooled one-way tables were off by 0.0063
TVD with a mean bias of -0.0059 in P(item), against 0.0019 from the same reports
weighted by group size; and a small group's plug-in put 0 variance on its empty
cells, which made a table of 6 users look nearly exact.

Where few users hold an attribute the pooled one-way table itself has empty cells (a one-way plan:
it is the group's own table), and a variance read there is ~0 again: 300 records, 60 three-category
columns, one attribute per user at epsilon 8 (5 users per table) gave the empty cells variance 7e-5
where the true share was about 0.07, and the truth's chi-square against the plain tables was 20,212 on
180 cells.  The reference is therefore each pooled one-way table smoothed as the posterior mean under
Jeffreys' Dirichlet(1/2) prior, ``(n p + 1/2) / (n + K/2)`` with ``n`` the users holding the attribute:
no cell below ``1 / (2 n + K)``; above a few hundred users the reference moves by at most ``K / (2 n)``
of its mass (the suite's releases moved by -3 to +3.5 % per run, through the shrinkage priors'
discrete choices, geometric mean 1.0001: docs/BENCHMARKS.md "More budget never hurts", item 4).

Per cell the variance is therefore the one under independence: for a dependent
pair's cells off by up to 1.6x either way (tests/test_collect_twophase.py),
while the total over the cells, which pooling and the fit weigh by, is right.
Keeping each total but spreading it over the cells as the group's own table
says was measured and not kept: the independence tests of the dependency graph
(:mod:`lopub.dependency.mi`) weigh cells by these variances, and the releases
got worse (bn-alarm, 50,000 records, epsilon 8, seeds 0-2: 0.0163 / 0.0144 /
0.0190 -> 0.0184 / 0.0192 / 0.0202 mean 2-way TVD).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from lopub.collect.plan import MarginalPlan, PlanError
from lopub.collect.reports import MarginalReports
from lopub.data.domain import Domain
from lopub.estimate.measurement import Measurement, check_measurements, combine


SAMPLING_NOTE = (" + sampling term f (1 - f) (1/n_i - 1/N); both at f = the product of the one-way "
                 "tables pooled over all groups (not the group's own table)")


class NotMeasuredError(KeyError, ValueError):
    """A marginal was asked for attributes that no measured subset contains (a KeyError and a ValueError)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def _measure_group(plan: MarginalPlan, i: int, reports: Any, n_users: int, postprocess: str
                   ) -> Measurement:
    """Subset ``i``'s measurement with the oracle's variance at its own estimate (replaced by
    :func:`_at_reference`)."""
    oracle = plan.oracle(i)
    n_i = int(np.asarray(reports).shape[0])
    base = oracle.measure(reports, postprocess=postprocess)
    k = plan.cells(i)
    sub = plan.subset_domain(i)
    values, raw, var = base.values[:k], base.raw[:k], base.variance[:k]  # k = 1: one padded cell dropped
    if k == 1:
        values, raw, var = np.ones(1), np.ones(1), np.zeros(1)
    prov = dict(base.provenance)
    prov.update({"protocol": f"marginals/{oracle.name}", "plan_id": plan.plan_id,
                 "variance": prov.get("variance", "") + SAMPLING_NOTE})
    return Measurement(sub, values.reshape(sub.sizes), n_i, {"n_users": int(n_users), "subset": i},
                       variance=np.clip(var, 0.0, None).reshape(sub.sizes), provenance=prov,
                       raw=raw.reshape(sub.sizes))


def _at_reference(plan: MarginalPlan, i: int, m: Measurement, ref: np.ndarray, n_users: int
                  ) -> Measurement:
    """``m`` with its variance evaluated at the reference table ``ref`` (module docstring): the
    oracle's fixed-dataset variance plus the group-sampling term ``ref (1 - ref) (1/n_i - 1/N)``."""
    k = plan.cells(i)
    if k == 1:
        return m
    n_i = int(m.n or 1)
    oracle = plan.oracle(i)
    r = np.clip(np.asarray(ref, dtype=float).ravel(), 0.0, 1.0)
    padded = np.zeros(oracle.k)
    padded[:k] = r
    var = np.asarray(oracle.variance(n_i, padded), dtype=float).ravel()[:k]
    var = var + r * (1 - r) * (1.0 / n_i - 1.0 / n_users)
    return Measurement(m.domain, m.values, m.n, m.meta, provenance=m.provenance, raw=m.raw,
                       variance=np.clip(var, 0.0, None).reshape(m.values.shape))


def measure_marginals(reports: MarginalReports, *, plan: MarginalPlan | None = None,
                      postprocess: str = "norm-sub") -> "MarginalSource":
    """Estimate every subset of the plan from ``reports``.

    Parameters
    ----------
    reports : MarginalReports
    plan : MarginalPlan, optional
        The plan the server expects; reports of another plan are refused.
    postprocess : {"norm-sub", "clip", "simplex", "none"}

    Raises
    ------
    PlanError
        The reports belong to another plan, or a subset got no users
        (more subsets than users).
    """
    if not isinstance(reports, MarginalReports):
        raise TypeError(f"reports ({type(reports).__name__}) must be MarginalReports")
    if plan is not None:
        reports.check_plan(plan)
    plan = reports.plan
    sizes = reports.group_sizes()
    empty = [list(plan.subsets[i]) for i in np.flatnonzero(sizes == 0)]
    if empty:
        raise PlanError(f"subset(s) {empty} got no users ({reports.n} users for {plan.n_subsets} "
                        "subsets); use a plan with fewer subsets or collect more users")
    return MarginalSource(plan.domain, group_measurements(reports, postprocess), n=reports.n)


def group_measurements(reports: MarginalReports, postprocess: str = "norm-sub") -> list[Measurement]:
    """One measurement per subset that got users, its variance at the reference table (module
    docstring); :func:`measure_marginals` refuses plans with an empty subset, this skips them."""
    plan, sizes = reports.plan, reports.group_sizes()
    groups = [(i, _measure_group(plan, i, rep, reports.n, postprocess))
              for i, rep in enumerate(reports.groups) if sizes[i] > 0]
    # the one-way tables pooled with weights that depend on the groups' sizes and oracles only
    flat = [_at_reference(plan, i, m, np.full(m.values.size, 1.0 / m.values.size), reports.n)
            for i, m in groups]
    holding: dict[str, list[Measurement]] = {}  # attribute -> the measurements holding it, in order
    for m in flat:  # subsets, not users
        for a in m.attrs:
            holding.setdefault(a, []).append(m)
    one = {a: _smoothed(combine([m.project([a]) for m in holding[a]]).values,
                        sum(int(m.n or 0) for m in holding[a]))
           for a in plan.domain.attrs if a in holding}
    ms = []
    for i, m in groups:  # subsets, not users
        independent = np.ones(())
        for a in m.attrs:
            independent = np.multiply.outer(independent, np.clip(one[a], 0.0, 1.0))
        ms.append(_at_reference(plan, i, m, independent, reports.n))
    return ms


def _smoothed(table: np.ndarray, n: int) -> np.ndarray:
    """A pooled one-way table as a reference for variances: the posterior mean of its cells under
    Jeffreys' Dirichlet(1/2) prior given ``n`` users, ``(n p + 1/2) / (n + K/2)`` (module docstring)."""
    p = np.clip(np.asarray(table, dtype=float), 0.0, 1.0)
    p = p / p.sum() if p.sum() > 0 else np.full(p.shape, 1.0 / p.size)
    return (n * p + 0.5) / (n + 0.5 * p.size)


class MarginalSource:
    """Measured marginals of a collection: what the model fit and queries consume.

    Parameters
    ----------
    domain : Domain
    measurements : list of Measurement
    n : int
        Number of users.
    """

    def __init__(self, domain: Domain, measurements: Sequence[Measurement], n: int) -> None:
        self.domain = domain
        self._ms = check_measurements(list(measurements), domain)
        self.n = int(n)
        self._holding: dict[str, set[int]] = {}  # attribute -> indices of the measurements holding it
        for i, m in enumerate(self._ms):
            for a in m.attrs:
                self._holding.setdefault(a, set()).add(i)

    def _holders(self, attrs: Sequence[str]) -> list[int]:
        """Indices of the measurements whose sets contain all of ``attrs`` (in measurement order)."""
        sets = [self._holding.get(a, set()) for a in attrs]
        return sorted(set.intersection(*sets)) if sets else list(range(len(self._ms)))

    def measurements(self) -> list[Measurement]:
        """All measurements, one per measured subset."""
        return list(self._ms)

    def measured_sets(self) -> list[tuple[str, ...]]:
        """Attribute sets of the measurements."""
        return [m.attrs for m in self._ms]

    def covers(self, attrs: Sequence[str]) -> bool:
        """Whether some measured subset contains all of ``attrs``."""
        return bool(self._holders(list(dict.fromkeys(attrs))))

    def marginal(self, attrs: Sequence[str]) -> Measurement:
        """Table of ``attrs`` (axes in this order) from the measurements containing them.

        Several containing measurements are combined by :func:`combine`.

        Raises
        ------
        NotMeasuredError
            No measured subset contains all of ``attrs``.
        """
        attrs = list(attrs)
        self.domain.indices(attrs)  # unknown or duplicate names: DomainError naming them
        found = [self._ms[i].project(attrs) for i in self._holders(attrs)]
        if not found:
            raise NotMeasuredError(f"attrs {attrs} were not measured: no measured subset contains "
                                   f"them (measured: {[list(s) for s in self.measured_sets()]}); "
                                   "fit a model to the measurements to estimate them")
        return combine(found)

    def project(self, attrs: Sequence[str]) -> Measurement:
        """Alias of :meth:`marginal` (lopub's ``project`` protocol)."""
        return self.marginal(attrs)


#: ``provenance["protocol"]`` of a stand-in table for an attribute set nobody measured
NOT_MEASURED = "not measured"


class CompletedSource:
    """A :class:`MarginalSource` that answers every attribute set, for the pipeline.

    Measured sets are answered from the measurements.  An unmeasured set
    (a pair a one-way plan did not measure) gets the product of its
    attributes' measured one-way tables with an uninformative variance
    (1 per cell) and ``provenance["protocol"] == NOT_MEASURED``: the
    structure tests see no evidence of dependence in it and the model fit
    leaves it out, so it only says "independent unless measured otherwise".

    Raises
    ------
    NotMeasuredError
        (from :meth:`marginal`) an attribute of the set has no measured one-way table.
    """

    #: what a fit report names as the estimator: the oracles' unbiased estimates of each set
    method = "marginal-sampling"

    def __init__(self, source: MarginalSource) -> None:
        self.source, self.domain, self.n = source, source.domain, source.n

    def measurements(self) -> list[Measurement]:
        return self.source.measurements()

    def marginal(self, attrs: Sequence[str]) -> Measurement:
        attrs = list(attrs)
        if self.source.covers(attrs):
            return self.source.marginal(attrs)
        values = np.ones(())
        for a in attrs:
            values = np.multiply.outer(values, self.source.marginal([a]).values)
        return Measurement(self.domain.project(attrs), values, self.n, {"method": NOT_MEASURED},
                           variance=1.0, provenance={"protocol": NOT_MEASURED,
                                                     "variance": "uninformative (not measured)"})

    project = marginal


def merge_sources(sources: Sequence[Any]) -> "MarginalSource":
    """One :class:`MarginalSource` with the measurements of all ``sources``
    (disjoint users; ``marginal()`` combines overlapping ones by inverse variance)."""
    sources = list(sources)
    if not sources:
        raise ValueError("sources is empty; expected at least one MarginalSource")
    ms = [m for s in sources for m in s.measurements()]
    return MarginalSource(sources[0].domain, ms, n=sum(s.n for s in sources))
