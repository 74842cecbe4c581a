"""Server pipeline: reports -> estimates -> dependency graph -> junction tree -> model.

:func:`fit` runs the server side with one shared estimator session wrapped in
a :class:`~lopub.dependency.MarginalCache`: one-way marginals and the
pairwise joints are estimated once and feed both the structure rule
(``structure``: noise-aware "auto", the paper's "phi" threshold with Alg. 4/5,
or a Chow-Liu "tree") and the release.  The default release ("pgm") fits a
graphical model on the junction tree to all those one- and two-way estimates
(:func:`lopub.model.pgm.fit_mrf`), so no clique joint is ever estimated directly;
release "cliques" is the paper's (each clique's joint estimated from the
reports, then calibrated).  :func:`fit` returns a :class:`FitResult` (model
plus :class:`FitReport`).

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 4 (dependency graph), Alg. 5
(pruning), Sec. V-B (junction tree and clique joints), Alg. 6 (synthesis);
McKenna, Sheldon, Miklau, ICML 2019 (model fitted to measurements).
"""
from __future__ import annotations

import time
import warnings
from typing import Any, Mapping

import networkx as nx

from lopub._util import check_int
from lopub.dependency import MarginalCache, budgeted_junction_tree
from lopub.dependency.graph import DependencyGraph, rethreshold
from lopub.dependency.structure import STRUCTURES, structure_graph  # noqa: F401  (re-exported)
from lopub.dependency.junction import JunctionTree, junction_tree
from lopub.data.domain import Domain
from lopub.errors import BudgetError
from lopub.model.verdict import GOOD, ReleaseQualityWarning
from lopub.model.verdict_inputs import fit_verdict, unmeasured_pairs
from lopub.model.fit_result import FitReport, FitResult
from lopub.model.graphical import Model
from lopub.model.pgm import DEFAULT_MEMORY_BUDGET
from lopub.model.pgm.fit import BYTES_PER_CELL, not_converged_note
from lopub.model.release import release_cliques, release_pgm
from lopub.pipeline.options import MRF_OPTIONS, RELEASES, FitOptions  # noqa: F401  (RELEASES re-exported)
from lopub.progress import Progress

FIT_OPTIONS = MRF_OPTIONS  # keys of FitOptions.fit_options
#: largest clique (cells) of release "cliques", the paper's (EM estimates every clique joint), and
#: of release "pgm" below PGM_USERS_PER_CELL * DEFAULT_CLIQUE_BUDGET users
DEFAULT_CLIQUE_BUDGET = 50_000
#: release "pgm": its cliques are completed by the fitted model from the measured sets, never
#: estimated, so size costs model-fit time, and a model larger than the data can support costs
#: accuracy.  Its default budget grows with the users, one cell per PGM_USERS_PER_CELL users, from
#: DEFAULT_CLIQUE_BUDGET up to PGM_CLIQUE_BUDGET.  Measured (docs/BENCHMARKS.md, issue 12): with
#: 10^6 users 50,000 -> 100,000 takes 6 % (epsilon 8) and 18 % (epsilon 16) off the planned
#: release (200,000: 11 % and 23 %, at twice the model-fit time); with 20,000-45,000 users a
#: larger model was 0-11 % worse at epsilon 16.
PGM_CLIQUE_BUDGET = 200_000
PGM_USERS_PER_CELL = 10
#: release "pgm", structure "auto": the model may hold this many clique budgets of cells in all
#: (or more when the noise supports it; see ``min_cells`` in :mod:`lopub.dependency.structure`)
PGM_MODEL_CELLS = 2


def default_clique_budget(release: str, n: int | None = None, *, max_cells: int | None = None) -> int:
    """The clique budget ``fit`` uses for ``release`` and ``n`` users when none is given.

    "cliques": ``DEFAULT_CLIQUE_BUDGET``.  "pgm": ``n / PGM_USERS_PER_CELL``
    clamped to ``[DEFAULT_CLIQUE_BUDGET, PGM_CLIQUE_BUDGET]`` (the smallest
    when ``n`` is unknown), and to ``max_cells`` (what the model fit's memory
    holds per clique) when that is larger than ``DEFAULT_CLIQUE_BUDGET``: a
    default never asks for more than the memory allows.
    """
    if release != "pgm" or n is None:
        return DEFAULT_CLIQUE_BUDGET
    top = PGM_CLIQUE_BUDGET if max_cells is None else min(PGM_CLIQUE_BUDGET, int(max_cells))
    return int(max(DEFAULT_CLIQUE_BUDGET, min(top, int(n) // PGM_USERS_PER_CELL)))


def make_estimator(reports: Any, method: str = "em", options: Mapping[str, Any] | None = None,
                   progress: Any = None) -> Any:
    """One estimator session over ``reports`` (``lopub.estimate.Estimator``).

    A ``progress`` with an ``em`` method (:class:`ConsoleProgress`) also
    receives the EM steps.
    """
    from lopub.estimate import Estimator

    opts = dict(options or {})
    if progress is not None and hasattr(progress, "em") and "progress" not in opts:
        opts["progress"] = progress.em
    return Estimator(reports, method=method, **opts)


def dependency(cache: MarginalCache, options: FitOptions | None = None, *, n: int | None = None,
               progress: Progress | None = None, warn: bool = True,
               model_options: Mapping[str, Any] | None = None, **changes: Any,
               ) -> tuple[DependencyGraph, JunctionTree, list[dict], dict]:
    """Dependency graph (rule ``structure``; Alg. 4/5 for "phi") and budgeted junction tree.

    The junction tree is built on the dependency graph itself, or -- when
    ``model_phi`` is given (structure "phi") -- on the graph of the *same*
    computed MI values thresholded at ``tau(model_phi)`` (pairs not computed
    keep their decision), or -- when ``model_options`` is given -- on the
    graph of the same rule with those options added (e.g. the fitted-model
    release's larger size bound, :func:`model_structure_options`).  No pair
    is estimated twice; the returned graph stays the reported one
    (correlation identification), its ``stats["model_edges"]`` counts the
    edges the model was built on.

    ``options`` (:class:`~lopub.pipeline.options.FitOptions`) or its fields as
    keywords (``changes``) give ``phi``, ``prune``, ``clique_budget``,
    ``heuristic``, ``prune_options``, ``model_phi``, ``structure`` and
    ``structure_options``; without ``options`` the structure is "phi" and
    the clique budget ``DEFAULT_CLIQUE_BUDGET``.

    Returns ``(graph, tree, dropped_edges, seconds)``.
    """
    if options is None:
        changes = {"structure": "phi", **changes}
    o = FitOptions.build(options, **changes)
    phi, model_phi, structure, prune, prune_options = o.phi, o.model_phi, o.structure, o.prune, o.prune_options
    structure_options = o.structure_options
    clique_budget = DEFAULT_CLIQUE_BUDGET if o.clique_budget is None else o.clique_budget
    t0 = time.perf_counter()
    dg = _graph(cache, structure, phi=phi, prune=prune, prune_options=prune_options, n=n,
                progress=progress, options=structure_options)
    t1 = time.perf_counter()
    base = dg.graph
    if model_phi is not None:
        base = rethreshold(dg, model_phi)
    elif model_options:
        base = _graph(cache, structure, phi=phi, prune=prune, prune_options=prune_options, n=n,
                      progress=None, options={**dict(structure_options or {}), **model_options}).graph
        dg.stats["model_edges"] = base.number_of_edges()
    jt, used, dropped = budgeted_junction_tree(base, cache.domain, clique_budget,
                                               heuristic=o.heuristic, warn=warn)
    t2 = time.perf_counter()
    lost = [[d["a"], d["b"]] for d in dropped if not d["in_clique"]]
    if lost:  # in no clique of the tree: absent from the model and the release
        dg.stats["dropped_for_budget"] = lost
    if model_phi is not None:
        dg.stats["model_phi"] = model_phi
        dg.stats["model_edges"] = base.number_of_edges()
    return dg, jt, dropped, {"graph": t1 - t0, "junction_tree": t2 - t1}


def _graph(cache: MarginalCache, structure: str, *, phi: float, prune: bool, prune_options,
           n: int | None, progress, options) -> DependencyGraph:
    """The dependency graph by ``structure`` (:func:`lopub.dependency.structure.structure_graph`)."""
    opts = dict(options or {})
    if structure == "phi":
        opts.update(prune=bool(prune), **dict(prune_options or {}))
    return structure_graph(cache, structure, phi=phi, n=n, progress=progress, **opts)


def fit(reports: Any = None, options: FitOptions | None = None, *, estimator: Any = None,
        progress: Progress | None = None, warn: bool = True, **changes: Any) -> FitResult:
    """Fit a LoPub model: dependency graph, junction tree and the release model.

    Parameters
    ----------
    reports : Reports, optional
        The collected reports (needed unless ``estimator`` is given).
    options : FitOptions, optional
        Every option listed under Notes, in one checked value
        (:class:`~lopub.pipeline.options.FitOptions`); each can also be given
        as a keyword (``fit(reports, phi=0.3)``), which replaces the field of
        ``options``.  An unknown keyword is a TypeError listing the options.
    progress : callable(stage, done, total), optional
    estimator : object, optional
        Any source with ``.marginal(attrs)`` (an ``Estimator`` session, a
        :class:`MarginalCache`, a Dataset for exact marginals in tests...).
    warn : bool
        ``UserWarning`` when edges are dropped for the clique budget (always
        listed in ``report.dropped_edges``); a :class:`~lopub.model.verdict.ReleaseQualityWarning`
        when ``report.verdict`` (what ``lopub fit`` prints) is not "good".

    Notes
    -----
    The options (fields of :class:`~lopub.pipeline.options.FitOptions`):

    * ``phi`` (float in (0, 1])
      Dependency degree (Eq. 26) of structure "phi"; also the pruning share
      with ``prune``.  Recorded for the other structures (plots, ``at_phi``).
    * ``method`` ({"em", "lasso", "moment", "hybrid", "hybrid-lasso"})
      Estimator of every marginal (ignored when ``estimator`` is given).
    * ``release`` ({"pgm", "cliques"})
      "pgm" (default): a graphical model on the junction tree fitted to
      all one-way and pairwise estimates (and ``measure_triples``),
      weighted by inverse variance (:func:`lopub.model.pgm.fit_mrf`); no clique
      joint is estimated directly.  "cliques": the paper's release, each
      clique's joint estimated from the reports and calibrated (kept for
      reproduction).
    * ``structure`` ({"auto", "phi", "tree"})
      Edge rule (:func:`lopub.dependency.structure.structure_graph`):
      noise-aware test (default), the paper's MI >= tau(phi), or a
      Chow-Liu tree.  ``prune`` and ``model_phi`` are options of "phi":
      with them, "auto" means "phi".
    * ``prune`` (bool)
      Entropy-based pruning (Alg. 5) instead of testing all pairs.
    * ``clique_budget`` (int, optional)
      Largest clique in cells; bigger cliques are split by dropping the
      weakest edges (:func:`lopub.dependency.budgeted_junction_tree`).
      Default :func:`default_clique_budget`: 50,000 for release "cliques";
      for "pgm" one cell per 10 users, between 50,000 and 200,000.
      Checked before any estimation against what the release can handle
      (the model fit's or the estimator's memory).
    * ``heuristic`` ({"min-fill", "min-size"})
    * ``estimator_options, prune_options, structure_options`` (mapping, optional)
      Passed to ``Estimator``, to Alg. 5, to the structure rule.  With
      release "pgm" and structure "auto" the model is built on the same
      rule's graph with a model-size bound of at least
      ``PGM_MODEL_CELLS * clique_budget`` (:func:`model_structure_options`);
      the reported graph keeps the bound from N and the noise.
    * ``model_phi`` (float in (0, 1], optional)
      Structure "phi": build the junction tree on the MI graph at this
      dependency degree instead of ``phi`` (the reported graph stays at ``phi``).
    * ``measure_triples`` (bool or int)
      Release "pgm": also measure three-way marginals inside the cliques
      (triangles of graph edges; an int caps their number).
    * ``fit_options`` (mapping, optional)
      Passed to :func:`lopub.model.pgm.fit_mrf` (``tol``, ``max_iter``,
      ``accelerate``); ``memory_budget`` (bytes) bounds the model fit.

    Returns
    -------
    FitResult
        ``.model`` (its ``meta["fit"]`` is the report's dict) and ``.report``.

    Raises
    ------
    ValueError
        A bad option (named), or a ``clique_budget`` the release cannot
        handle (a :class:`~lopub.errors.BudgetError`, raised before any estimation).

    References
    ----------
    Ren et al., IEEE TIFS 2018, Alg. 4-6, Sec. V-B; McKenna et al., ICML 2019.
    """
    t0 = time.perf_counter()
    o = FitOptions.build(options, **changes)
    o = o.replace(structure=o.rule) if o.rule != o.structure else o
    release, fit_options, clique_budget = o.release, dict(o.fit_options), o.clique_budget
    cache, n = _session(reports, estimator, o.method, o.estimator_options, progress)
    memory = fit_options.get("memory_budget", DEFAULT_MEMORY_BUDGET)
    if clique_budget is None:  # within what _check_capacity admits for d cliques
        clique_budget = default_clique_budget(release, n,
                                              max_cells=memory // (len(cache.domain) * BYTES_PER_CELL))
    _check_capacity(cache, clique_budget, release, memory)
    o = o.replace(clique_budget=clique_budget)
    dg, jt, dropped, secs = dependency(cache, o, progress=progress, warn=warn, n=n,
                                       model_options=model_structure_options(release, o.structure,
                                                                             clique_budget))
    t1 = time.perf_counter()
    build = release_pgm if release == "pgm" else release_cliques
    model, extra = build(cache, jt, dg, n=n, triples=o.measure_triples, fit_options=fit_options,
                         progress=progress, shrink=o.shrink)
    secs.update(extra.pop("seconds"), estimation=cache.seconds, total=time.perf_counter() - t0)
    secs["release"] = time.perf_counter() - t1
    report = _report(cache, reports, dg, jt, dropped, model, dict(
        method=getattr(cache.source, "method", o.method), release=release, structure=o.structure,
        prune=o.prune, clique_budget=clique_budget, model_phi=dg.phi if o.model_phi is None else o.model_phi,
        seconds={k: round(v, 3) for k, v in secs.items()}, **extra))
    verdict = fit_verdict(cache, model, report)
    report.verdict = verdict.to_dict()
    mf = report.model_fit or {}
    if mf.get("converged") is False and any(f.check == "convergence" and f.severity in ("fatal", "caveat")
                                           for f in verdict.findings):
        # not when it already fits its measurements within their noise (the verdict's note says so)
        report.warnings.insert(0, not_converged_note(mf["stop"], mf["iterations"], mf.get("gap")))
    if warn and verdict.level != GOOD:  # a Python caller hears the verdict that lopub fit prints
        warnings.warn(verdict.warning_text(), ReleaseQualityWarning, stacklevel=2)
    model.meta["fit"] = report.to_dict()
    return FitResult(model, report)


def model_structure_options(release: str, structure: str, clique_budget: int) -> dict[str, Any] | None:
    """Extra structure options for the graph the release model is built on (None: the reported graph).

    Release "pgm" with structure "auto": the model-size bound is at least
    ``PGM_MODEL_CELLS * clique_budget`` cells -- the fitted model completes
    its cliques from the measured pairs instead of estimating them, so size
    costs compute, not noise -- while the reported dependency graph keeps the
    bound from N and the noise (what the data show).
    """
    if release == "pgm" and structure == "auto":
        return {"min_cells": PGM_MODEL_CELLS * clique_budget}
    return None


def _session(reports, estimator, method, options, progress) -> tuple[MarginalCache, int | None]:
    """The shared estimate cache and the number of reports (None if unknown)."""
    from lopub.collect.reports import MarginalReports
    from lopub.collect.server import CompletedSource, MarginalSource, measure_marginals

    if estimator is None and isinstance(reports, MarginalReports):
        estimator = measure_marginals(reports)  # marginal sampling: the oracles' measurements
    if estimator is None:
        if reports is None:
            raise ValueError("reports (None) must be given when no estimator is passed")
        estimator = make_estimator(reports, method, options, progress)
    if isinstance(estimator, MarginalSource):  # answer unmeasured sets as "no information"
        estimator = CompletedSource(estimator)
    cache = estimator if isinstance(estimator, MarginalCache) else MarginalCache(estimator)
    if cache.domain is None:
        raise TypeError("estimator must expose its domain (.domain or .reports.spec.domain)")
    n = reports.n if reports is not None else getattr(cache.source, "n", None)
    return cache, (n if isinstance(n, int) and not isinstance(n, bool) else None)


def _check_capacity(cache: MarginalCache, clique_budget: int, release: str, memory_budget: int) -> None:
    """Refuse, before any estimation, a clique budget the release cannot handle.

    "pgm": at most ``d`` cliques of ``clique_budget`` cells each must fit the
    model fit's memory (``BYTES_PER_CELL`` per cell).  "cliques" (the paper's
    release) is checked clique by clique once the tree is known, before the
    first clique estimation (the estimator's exact ``check``).
    """
    check_int("clique_budget", clique_budget, 1)
    d = len(cache.domain)
    if release == "pgm":
        need = d * clique_budget * BYTES_PER_CELL
        if need > memory_budget:
            raise BudgetError(
                f"clique_budget ({clique_budget} cells) admits models whose fit needs up to "
                f"{need / 2**20:,.0f} MiB ({d} cliques x {BYTES_PER_CELL} bytes per cell), above the "
                f"model-fit memory budget ({memory_budget / 2**20:,.0f} MiB); lower clique_budget "
                f"(lopub fit --clique-budget N) or raise that budget (in Python, "
                f"fit(..., fit_options={{'memory_budget': bytes}}))")
        return
    # "cliques": the tree is not known yet; each clique is checked against the estimator
    # after the graph and before the first clique estimation (lopub.model.release.release_cliques)


def _report(cache, reports, dg, jt, dropped, model, fields: dict) -> FitReport:
    notes = list(fields.pop("warnings", []))
    lost = [[d["a"], d["b"]] for d in dropped if not d["in_clique"]]
    if lost:
        notes.append(f"clique_budget: {len(lost)} edge(s) in no clique, not modelled: {lost}")
    unmeasured = unmeasured_pairs(getattr(cache, "source", None), list(cache.domain.attrs))
    return FitReport(
        n=model.n, attributes=len(cache.domain), phi=dg.phi,
        pairs_measured=None if unmeasured is None else dg.stats["pairs_total"] - len(unmeasured),
        collection=collection_parameters(reports if reports is not None else cache.source),
        pairs_total=dg.stats["pairs_total"], pairs_computed=dg.stats["pairs_computed"],
        edges=len(dg.edges), graph=dict(dg.stats), cliques=[list(c) for c in jt.cliques],
        clique_cells=[cache.domain.cells(list(c)) for c in jt.cliques],
        fill_edges=len(jt.fill_edges), dropped_edges=dropped, estimates=cache.calls,
        calibration_avd_max=max(model.meta["calibration_avd"]), warnings=notes, **fields)


def collection_parameters(source: Any) -> dict[str, Any] | None:
    """Public collection parameters of the reports behind ``source`` (or None).

    ``source`` is a ``Reports``, an estimator session over one (``.reports``)
    or anything else (exact marginals: None).  Returns f, h and m per
    attribute, bits per report and epsilon per attribute and per record
    (Eq. 8), so a model file says under which privacy its reports were taken;
    of marginal-sampling reports their plan.  ``users`` counts the users who
    took part: the reports plus a screen's whose reports only chose the plan or
    protocol (:attr:`MarginalReports.users
    <lopub.collect.reports.MarginalReports.users>`,
    :attr:`Reports.users <lopub.reports.bloom.Reports.users>`).
    """
    from lopub.collect.reports import MarginalReports

    if isinstance(source, MarginalReports):
        plan = source.plan
        return {"protocol": "marginals", "epsilon_per_record": plan.epsilon,
                "subsets": [list(s) for s in plan.subsets], "oracles": list(plan.oracles),
                "plan_id": plan.plan_id, "users": source.users}
    if getattr(source, "spec", None) is None:
        source = getattr(source, "reports", None)
    spec = getattr(source, "spec", None)
    if spec is None or not hasattr(spec, "summary"):
        return None
    s = spec.summary()
    attrs = list(spec.domain.attrs)
    users = getattr(source, "users", None)
    return {"protocol": "bloom", "f": s["f"], "h": dict(zip(attrs, s["h"])), "m": dict(zip(attrs, s["m"])),
            "bits_per_report": s["bits_per_report"],
            "epsilon_per_attribute": dict(s["epsilon_per_attribute"]),
            "epsilon_per_record": s["epsilon_per_record"],
            **({"users": users} if isinstance(users, int) else {})}


def independence_model(estimator: Any, *, n: int | None = None) -> Model:
    """Baseline release model: every attribute on its own (singleton cliques).

    Reuses the one-way marginals of ``estimator`` (pass the same
    :class:`MarginalCache` as :func:`fit` to avoid re-estimating).
    """
    cache = estimator if isinstance(estimator, MarginalCache) else MarginalCache(estimator)
    dom: Domain = cache.domain
    jt = junction_tree(nx.empty_graph(list(dom.attrs)), dom)
    tables = [cache.marginal(list(c)) for c in jt.cliques]
    return Model.from_marginals(dom, jt, tables, n=n if n is not None else tables[0].n,
                                meta={"baseline": "independence"})
