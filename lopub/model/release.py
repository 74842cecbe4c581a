"""The two release models :func:`lopub.pipeline.fit` builds on a junction tree: "pgm" and "cliques".

* :func:`release_pgm` (the default): every measurement kept, a graphical
  model fitted to them (:func:`lopub.model.pgm.fit_mrf`; sets in no clique by
  relaxed marginal consistency, :mod:`lopub.model.pgm.relaxed`; one-way
  shrinkage priors, :mod:`lopub.model.pgm.shrink`).
* :func:`release_cliques` (the paper's, Ren et al. 2018 Sec. V-B): each
  clique's joint estimated from the reports, then calibrated.

Both take the estimate cache, the tree and the dependency graph, and return
``(model, extra)``: ``extra`` holds the fit report's fields (``seconds``,
``measurements``, ``model_fit``, ``warnings``).
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from lopub.errors import BudgetError
from lopub.model.graphical import Model
from lopub.model.pgm import MRFFit, fit_mrf
from lopub.model.pgm.measure import outside_measurements, release_measurements
from lopub.model.pgm.relaxed import derived, regions
from lopub.model.pgm.shrink import shrinkage_priors


def release_pgm(cache, jt, dg, *, n, triples, fit_options, progress, shrink) -> tuple[Model, dict]:
    """Release "pgm": every measurement kept, graphical model fitted to them.

    Measurements inside the junction tree's cliques are fitted exactly;
    measured sets in no clique are kept by relaxed marginal consistency
    (:mod:`lopub.model.pgm.relaxed`): their projections on the cliques join
    the fit and their own tables (consistent with the model) answer their
    queries (``model.meta["regions"]``).
    """
    t0 = time.perf_counter()
    ms = release_measurements(cache, jt, n=n, graph=dg, triples=triples, progress=progress)
    outside = outside_measurements(cache, jt, n=n)
    t1 = time.perf_counter()
    opts = {k: v for k, v in fit_options.items() if k != "memory_budget"}
    if progress is not None:
        progress("model fit", 0, 1)
    n = n if n is not None else next((m.n for m in ms if m.n is not None), None)
    fitted = ms + derived(outside, jt.cliques)
    priors = shrinkage_priors(fitted) if shrink else []
    mrf: MRFFit = fit_mrf(cache.domain, jt, fitted, n=n, priors=priors, **opts)
    model = mrf.to_model(n=n, graph=dg)
    if outside:
        tables = regions(outside, model.project, jt.cliques, cache.domain)
        model.meta["regions"] = [{"attrs": list(t.attrs), "p": t.values.ravel().tolist()} for t in tables]
    if progress is not None:
        progress("model fit", 1, 1)
    notes: list[str] = []  # an unconverged fit: a warning only when the verdict finds it matters (fit)
    lams = [p.provenance["shrinkage"] for p in priors]
    summary = dict(mrf.summary(), regions=len(outside), initial_loss=float(mrf.losses[0]) if mrf.losses else None,
                   shrinkage=float(np.mean(lams)) if lams else None,
                   shrinkage_targets=sorted({p.provenance["target"] for p in priors}),
                   inference="exact" if not outside else "exact tree + relaxed regions")
    extra = {"measurements": [list(m.attrs) for m in ms + outside], "model_fit": summary,
             "warnings": notes,
             "seconds": {"measurements": t1 - t0, "model_fit": time.perf_counter() - t1}}
    return model, extra


def release_cliques(cache, jt, dg, *, n, triples, fit_options, progress, shrink) -> tuple[Model, dict]:
    """Release "cliques" (the paper's): each clique's joint estimated, then calibrated (no ``shrink``)."""
    t0 = time.perf_counter()
    cliques = [list(c) for c in jt.cliques]
    check: Any = getattr(cache.source, "check", None)  # a MarginalEstimator's exact budget check
    for c in cliques if callable(check) else []:  # refuse before the first clique estimation
        if not cache.cached(c):
            try:
                check(c)
            except BudgetError as exc:
                raise BudgetError(f"clique {c} of the junction tree ({cache.domain.cells(c):,} cells) "
                                  f"cannot be estimated directly: {exc}; lower clique_budget or use "
                                  f"release='pgm', which never estimates a clique") from None
    cache.prefetch(cliques, stage="clique joints", progress=progress)
    tables = [cache.marginal(c) for c in cliques]
    model = Model.from_marginals(cache.domain, jt, tables, n=n if n is not None else tables[0].n, graph=dg)
    return model, {"seconds": {"clique_joints": time.perf_counter() - t0}}
