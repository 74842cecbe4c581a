"""What :func:`lopub.pipeline.steps.fit` returns: the model and a typed report of the fit."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from lopub.model.graphical import Model


@dataclass
class FitReport:
    """What :func:`lopub.pipeline.steps.fit` did.

    ``to_dict()`` is the JSON form stored in ``model.meta["fit"]`` (and
    printed by ``lopub fit --json``); its keys are the attribute names.

    Attributes
    ----------
    n, attributes : int
        Reports (None if unknown) and attributes.
    method, release, structure : str
        Estimator, release ("pgm" or "cliques") and structure rule asked for
        (``graph["structure"]`` says which rule ran).
    phi, model_phi : float
        Eq. 26 dependency degree of the reported graph and of the release graph.
    prune : bool
    collection : dict or None
        f, h, m, epsilon per attribute and per record of the reports.
    pairs_total, pairs_computed, edges : int
        ``pairs_computed`` counts the pairs the dependency graph looked at,
        measured or not.
    pairs_measured : int or None
        Pairs the collection measured (a marginal-sampling plan: those inside
        a planned set; the others are derived from one-way tables as
        independent).  None when every pair was measurable (Bloom reports,
        exact marginals).
    graph : dict
        The dependency graph's statistics.
    cliques, clique_cells : list
        Junction-tree cliques and their sizes in cells.
    fill_edges, clique_budget : int
    dropped_edges : list of dict
        Edges dropped for the clique budget (``a``, ``b``, ``in_clique``...).
    estimates : int
        Marginals the estimator computed (cache misses).
    measurements : list of list of str
        Attribute sets the model was fitted to (release "pgm").
    model_fit : dict or None
        :meth:`lopub.model.pgm.MRFFit.summary` (loss, iterations, converged,
        seconds, stop, gap, chi2, dof, chi2_z, constraints,
        constraint_violation) plus ``regions`` (measured sets in no clique,
        kept as relaxed regions) and ``inference``.
    calibration_avd_max : float
        Largest change calibration made to a clique table.
    seconds : dict
        Per stage.
    warnings : list of str
    verdict : dict or None
        The release's verdict (:meth:`lopub.model.verdict.Verdict.to_dict`):
        ``level`` (good / usable with caveats / not usable), ``reasons`` and
        ``findings`` of the checks of :mod:`lopub.model.checks`.
    """

    n: int | None
    attributes: int
    method: str
    release: str
    structure: str
    phi: float
    model_phi: float
    prune: bool
    collection: dict[str, Any] | None
    pairs_total: int
    pairs_computed: int
    edges: int
    graph: dict[str, Any]
    cliques: list[list[str]]
    clique_cells: list[int]
    fill_edges: int
    clique_budget: int
    dropped_edges: list[dict]
    estimates: int
    measurements: list[list[str]] = field(default_factory=list)
    model_fit: dict[str, Any] | None = None
    calibration_avd_max: float = 0.0
    seconds: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    verdict: dict[str, Any] | None = None
    pairs_measured: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class FitResult:
    """The fitted :class:`~lopub.model.graphical.Model` and its :class:`FitReport`."""

    model: Model
    report: FitReport
