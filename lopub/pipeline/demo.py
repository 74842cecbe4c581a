"""``lopub demo``: the whole LoPub pipeline on the embedded census-like dataset.

Stages: generate records from the embedded Bayesian network, collect them
under LDP at a per-record budget (``--epsilon``, default 8) with the
protocol the planner recommends -- or, with ``--f``, the paper's Bloom
reports -- (what the clients send), fit (one- and two-way estimates,
dependency graph, junction tree, graphical model fitted to the estimates --
the default release "pgm", structure "auto"), synthesize as many records as
reports, evaluate the release against the true data (average TVD over all
2-way marginals, ``tvd_2way_synthetic``; the same for two independence
baselines: ``tvd_2way_independence_noisy_oneway``, a release of every
attribute independent drawn from the one-way tables estimated from the
reports (noisy: what a publisher could release without modelling any
dependency), and ``tvd_2way_independence_true_oneway``, the exact product of
the true one-way marginals (the verdict's baseline: no noise at all); and for
the directly estimated pair tables, ``tvd_2way_pair_estimates``, so the
summary shows whether the model step lost anything) and the learned graph
against the true graphs, state the
release's verdict (:mod:`lopub.model.checks` plus the true-data finding of
:mod:`lopub.publish.report.verdict_block`), and write
everything into the output folder:

``true_data.csv``, ``domain.json``, ``reports.npz`` and ``plan.json``
(marginal sampling) or ``reports.parquet`` and ``spec.json`` (Bloom),
``model.json``, ``synthetic.csv``, ``graph.png``, ``graph_mi.png``,
``graph.json`` and ``summary.json``.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 1, Alg. 4, Alg. 6, Eq. 8, Eq. 32.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from typing import Any

from lopub._util import check_int, check_open_unit, check_positive
from lopub.client import encode
from lopub.io import atomic_write_text, fsync_dir
from lopub.progress import ConsoleProgress
from lopub.reports.bloom import Reports
from lopub.reports.folder import remove_stale_stages
from lopub.reports.spec import CollectionSpec

#: the demo's per-record budget when neither --epsilon nor --f is given
DEFAULT_EPSILON = 8.0


def _collect(data, f, epsilon, out: Path, seed: int, say) -> tuple[Any, dict]:
    """The clients' reports: the planner's protocol at ``epsilon`` per record, or the
    paper's Bloom reports at flip probability ``f``; written into ``out``."""
    from lopub.collect import collect, privacy_statement

    if f is not None:
        spec = CollectionSpec.from_domain(data.domain, f=f)
        reports, protocol, plan = encode(data, spec, rng=seed), "bloom", None
    else:
        reports, plan = collect(data, epsilon, protocol="auto", rng=seed)
        protocol = plan.recommended
    if isinstance(reports, Reports):
        spec = reports.spec
        say(f"encoding {data.n} records as Bloom reports, f = {spec.f:.4g}, h = {spec.h[0]}, "
            f"epsilon per record = {spec.epsilon:.4g}")
        reports.save(out / "reports.parquet")
        spec.to_json(out / "spec.json")
        info = {"protocol": "bloom", "estimator": "em", "f": spec.f,
                "epsilon_per_attribute": round(spec.epsilon_per_attribute[0], 4),
                "epsilon_per_record": round(spec.epsilon, 4)}
        if plan is None:  # --f: the budget follows from f, and is stated (and warned about) all the same
            info["privacy"], warning = privacy_statement(spec.epsilon)
            if warning:
                _weak_budget(warning)
    else:
        say(f"collecting {data.n} records with {protocol} ({len(reports.plan.subsets)} attribute "
            f"sets, one per user), epsilon per record = {epsilon:g}")
        reports.save(out / "reports.npz")
        reports.plan.to_json(out / "plan.json")
        info = {"protocol": protocol, "estimator": "oracles", "epsilon_per_record": epsilon,
                "attribute_sets": len(reports.plan.subsets)}
    if plan is not None:
        info["planner"] = {o.protocol: round(o.predicted_tvd, 4) for o in plan.options}
        info["privacy"] = plan.privacy
        if plan.warning:
            _weak_budget(plan.warning)
    return reports, info


def _weak_budget(text: str) -> None:
    """The planner's warning of a weak budget, as a warning on stderr (``--quiet`` keeps it)."""
    from lopub.progress import warning

    warning(text.removeprefix("WARNING: "), command="demo")


def run_demo(a: argparse.Namespace) -> dict:
    """Run the demo with ``a.out``, ``a.n``, ``a.seed`` and ``a.epsilon`` (per record,
    protocol from the planner) or ``a.f`` (the paper's Bloom reports); return the summary.

    ``a.quiet`` (optional) silences the progress and the messages.  Everything is written into a
    hidden staging folder beside ``a.out`` (``.NAME.PID.XXXX.new``, removed by the next run once
    its process is dead); a new ``a.out`` appears by one rename, complete (issue 25: a kill
    leaves no half-written demo).  Into an existing folder the files are moved one by one,
    ``summary.json`` (its old copy removed first) last: no ``summary.json``, not complete.
    """
    final = Path(a.out)
    if final.exists() and not final.is_dir():
        raise FileExistsError(f"--out ({os.fspath(final)!r}) is an existing file, not a folder")
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_stages(final)
    stage = Path(tempfile.mkdtemp(prefix=f".{final.name}.{os.getpid()}.", suffix=".new", dir=final.parent))
    try:
        summary = _run_in(a, stage, final)
        fsync_dir(stage)
        if not final.exists():
            os.rename(stage, final)
        else:
            (final / "summary.json").unlink(missing_ok=True)
            for p in sorted(stage.iterdir(), key=lambda p: p.name == "summary.json"):
                os.replace(p, final / p.name)
            stage.rmdir()
        fsync_dir(final.parent)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return summary


def _run_in(a: argparse.Namespace, out: Path, final: Path) -> dict:
    """The demo, its files written into ``out``; the summary names ``final``."""
    from lopub.datasets import embedded_model
    from lopub.collect import CompletedSource, measure_marginals
    from lopub.dependency import MarginalCache
    from lopub.publish.evaluate import average_tvd, correlation_identification, tvd as table_tvd
    from lopub.pipeline.options import FitOptions
    from lopub.pipeline.steps import fit, independence_model, make_estimator
    from lopub.publish.plots import plot_graph, plot_mi
    from lopub.publish.report.verdict_block import real_utility, report_verdict
    from lopub.publish.synthesize import sample_codes, write_release

    epsilon, f = getattr(a, "epsilon", None), getattr(a, "f", None)
    if f is not None and epsilon is not None:
        raise ValueError(f"give --epsilon ({epsilon}) or --f ({f}), not both")
    if f is not None:
        check_open_unit("f", f)  # bad parameters fail before anything is written
    else:
        epsilon = DEFAULT_EPSILON if epsilon is None else check_positive("epsilon", epsilon)
    check_int("n", a.n, 1)
    quiet = getattr(a, "quiet", False)
    say = (lambda *x: None) if quiet else print  # the results: the summary and the verdict
    tell = (lambda *x: None) if quiet else (lambda *x: print(*x, file=sys.stderr, flush=True))  # progress
    progress = None if quiet else ConsoleProgress()
    times = {}
    t = time.perf_counter()
    bn = embedded_model()
    data = bn.sample(a.n, rng=a.seed)
    write_release(data.to_pandas(), out / "true_data.csv")
    bn.domain.to_json(out / "domain.json")
    times["generate"], t = time.perf_counter() - t, time.perf_counter()
    reports, collection = _collect(data, f, epsilon, out, a.seed + 1, tell)
    times["encode"], t = time.perf_counter() - t, time.perf_counter()
    options = FitOptions()  # the library's defaults, as `lopub fit` uses them
    if isinstance(reports, Reports):
        cache = MarginalCache(make_estimator(reports, options.method, progress=progress))
    else:
        cache = MarginalCache(CompletedSource(measure_marginals(reports)))
    phi = options.phi
    tell(f"fitting: one- and two-way estimates ({collection['estimator']}), dependency graph, "
        "junction tree, model fit")
    result = fit(reports, options, estimator=cache, progress=progress, warn=False)
    model, rep = result.model, result.report
    graph = model.graph
    if graph is None:  # fit always learns one (Model.graph is optional for loaded models)
        raise RuntimeError("fit returned a model without a dependency graph")
    if progress is not None:
        progress.close()
    model.save(out / "model.json")
    times["fit"], t = time.perf_counter() - t, time.perf_counter()
    syn = sample_codes(model, rng=a.seed + 2)
    write_release(syn.to_pandas(), out / "synthetic.csv")
    times["synthesize"], t = time.perf_counter() - t, time.perf_counter()
    base = sample_codes(independence_model(cache, n=reports.n), rng=a.seed + 3)
    tvd = average_tvd(data, syn, 2)["mean"]
    tvd_base = average_tvd(data, base, 2)["mean"]  # independence of the noisy one-way estimates
    tvd_true_base = real_utility(data, data)["independence"]  # of the true one-way marginals, exact
    pairs = list(itertools.combinations(bn.domain.attrs, 2))
    tvd_pairs = sum(table_tvd(data.project(list(p)), cache.marginal(list(p))) for p in pairs) / len(pairs)
    attrs = bn.domain.attrs
    vs_skeleton = correlation_identification(graph.edges, bn.dependency_edges(), attrs)
    vs_mi = correlation_identification(graph.edges, bn.mi_graph(phi).edges(), attrs)
    dropped = [[d["a"], d["b"]] for d in rep.dropped_edges if not d["in_clique"]]
    plot_graph(graph.graph, model.tree, out / "graph.png", title="Learned dependency graph",
               dropped_edges=dropped, rule=rep.structure)
    plot_mi(graph, out / "graph_mi.png")
    atomic_write_text(out / "graph.json", json.dumps(
        {"graph": graph.to_dict(), "junction_tree": model.tree.to_dict()}, indent=2) + "\n")
    verdict = report_verdict(model, syn, data)  # the fit's checks and the true-data finding
    times["evaluate"] = time.perf_counter() - t
    summary = {
        "records": data.n, "attributes": len(bn.domain), **collection, "phi": phi,
        "release": rep.release, "structure": rep.structure, "model_fit": rep.model_fit,
        "seconds": {k: round(v, 2) for k, v in times.items()},
        "edges_found": len(graph.edges), "cliques": len(model.tree.cliques),
        "largest_clique_cells": max(rep.clique_cells),
        "dropped_for_clique_budget": dropped,
        "not_modelled_explained_by_path": [list(e) for e in graph.graph.edges
                                           if not any(set(e) <= set(c) for c in model.tree.cliques)
                                           and list(e) not in dropped],
        "tvd_2way_synthetic": round(tvd, 4),
        "tvd_2way_independence_noisy_oneway": round(tvd_base, 4),
        "tvd_2way_independence_true_oneway": round(tvd_true_base, 4),
        "tvd_2way_pair_estimates": round(tvd_pairs, 4),
        "true_edges_recovered": f"{vs_skeleton['true_edges'] - vs_skeleton['lost']}/{vs_skeleton['true_edges']}",
        "accuracy_vs_exact_mi_graph": round(vs_mi["accuracy"], 4),
        "added_vs_exact_mi_graph": vs_mi["added"], "lost_vs_exact_mi_graph": vs_mi["lost"],
        "verdict": None if verdict is None else verdict.level,
        "verdict_reasons": [] if verdict is None else verdict.reasons,
        "output": str(final),
    }
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    say(json.dumps(summary, indent=2))
    if verdict is not None:
        say(verdict.summary())
    return summary
