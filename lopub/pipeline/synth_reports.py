"""The reports of a :class:`~lopub.pipeline.synthesizer.Synthesizer`: how its reports were
collected (:class:`CollectionReport`) and what its fit gave (:class:`SynthesizerReport`), with the
synthesizer file's format name and version and the protocols it accepts."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from lopub.collect.reports import MarginalReports
from lopub.data.domain import Domain
from lopub.model.fit_result import FitReport
from lopub.model.verdict import Verdict

FORMAT = "lopub-synthesizer"
VERSION = 1

PROTOCOLS = ("auto", "marginals", "one-attribute", "bloom")


class NotFittedError(ValueError, AttributeError):
    """The synthesizer was used before :meth:`Synthesizer.fit` or :meth:`Synthesizer.fit_reports`."""


@dataclass(frozen=True)
class CollectionReport:
    """How the reports a synthesizer was fitted to were collected.

    Attributes
    ----------
    protocol : str
        "bloom", "marginals" or "one-attribute" (what ran, after "auto").
    epsilon_per_record : float
        The privacy spent: every user's report is epsilon-LDP for the whole record.
    n : int
        Users who took part: the reports, plus those of a screen whose reports
        only chose the plan or protocol (the default size of a sample).
    simulated : bool
        True when :meth:`Synthesizer.fit` simulated the clients.
    recommended : str or None
        The planner's recommendation (simulation only).
    predicted_tvd : float or None
        The planner's predicted mean 2-way TVD of the protocol that ran.
    privacy : str
        One-line privacy statement.
    warning : str or None
        Above epsilon 10 per record: what such a budget means.
    """

    protocol: str
    epsilon_per_record: float
    n: int
    simulated: bool
    recommended: str | None
    predicted_tvd: float | None
    privacy: str
    warning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SynthesizerReport:
    """``Synthesizer.fit_report_``: privacy spent, collection, model fit, times and warnings.

    Attributes
    ----------
    collection : CollectionReport
    fit : FitReport
        :func:`lopub.pipeline.steps.fit`'s report (graph, cliques, per-stage seconds...).
    seconds : dict
        Seconds of the synthesizer's stages ("domain", "collect", "fit", "total").
    """

    collection: CollectionReport
    fit: FitReport
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def epsilon(self) -> float:
        """Privacy spent per record."""
        return self.collection.epsilon_per_record

    @property
    def graph_size(self) -> dict[str, int]:
        """Edges, cliques and the largest clique's cells of the fitted model."""
        return {"edges": self.fit.edges, "cliques": len(self.fit.cliques),
                "max_clique_cells": max(self.fit.clique_cells, default=0)}

    @property
    def verdict(self) -> Verdict | None:
        """The release's verdict (:class:`~lopub.model.verdict.Verdict`; None for an older model file)."""
        return Verdict.from_dict(self.fit.verdict)

    @property
    def warnings(self) -> list[str]:
        """The collection's warning (high epsilon), the fit's and the verdict's reasons."""
        first = [self.collection.warning] if self.collection.warning else []
        verdict = self.verdict
        return first + list(self.fit.warnings) + ([] if verdict is None else verdict.warnings)

    def to_dict(self) -> dict[str, Any]:
        return {"collection": self.collection.to_dict(), "fit": self.fit.to_dict(),
                "seconds": dict(self.seconds), "graph_size": self.graph_size, "warnings": self.warnings}


def protocol_of(reports: Any) -> str:
    """ "marginals", "one-attribute" (a plan of single attributes) or "bloom"."""
    if isinstance(reports, MarginalReports):
        return "one-attribute" if all(len(s) == 1 for s in reports.plan.subsets) else "marginals"
    if getattr(reports, "spec", None) is None or not hasattr(reports, "n"):
        raise TypeError(f"reports ({type(reports).__name__}) must be Bloom Reports, a ReportsDataset "
                        "or MarginalReports")
    return "bloom"


def reports_budget(reports: Any) -> tuple[float, Domain]:
    """Per-record epsilon and domain of the reports."""
    if isinstance(reports, MarginalReports):
        return float(reports.plan.epsilon), reports.plan.domain
    return float(reports.spec.epsilon), reports.spec.domain
