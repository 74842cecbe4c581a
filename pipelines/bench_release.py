"""The release on UCI Adult (issues 4 and 11): the fitted model against the paper's release, and
the paper's whole pipeline.

Parts (``--parts``; targets, commands and figures: docs/BENCHMARKS.md, "Whole pipeline" and "Release"):

``f``            Adult, m = 128, h = 4, f in ``--fs``: four releases of the same reports and estimator
                 session (one :class:`~lopub.dependency.MarginalCache`), scored by the mean 2-way TVD
                 exactly on the model and on a synthetic sample: ``pgm`` (``fit()``'s default),
                 ``paper`` (``release="cliques", structure="phi"``, phi = 0.4), ``independent`` and
                 ``pairs`` (the estimated pair tables themselves, not a release).
``grid``         the same at equal per-record budgets: ``--epsilons`` x Bloom h = 1, 2, 4, Adult and embedded.
``structure``    embedded data at f = 0.5: recall / precision of the structure against the true DAG.
``timing``       Adult at f = 0.5: the default ``fit`` against the paper's release (CPU ratio).
``paper-timing`` the paper's pipeline (encode -> pairs -> graph -> junction tree -> cliques -> synthesis)
                 at f = 0.5, per method in a fresh process: seconds per stage and peak RSS.
``paper``        per f: the paper's release against the independence release (2-way TVD) and the
                 correlation identification against the true data's phi = 0.4 graph.
``phi-sweep``    f = 0.5: the release graph at phi = 0.4, 0.3, 0.2, 0.15 and the TVD floor of each graph (the true
                 data's graph with exact clique marginals).  ``--model-phi`` / ``--tol``: the paper
                 parts' release graph threshold and estimator tolerance.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repository root

from pipelines.harness import datasets  # noqa: E402

M, H, PHI = 128, 4, 0.4
#: the paper's release: each clique's joint estimated on the Alg. 4 graph
PAPER = {"release": "cliques", "structure": "phi"}


def _spec(domain, *, f=None, epsilon=None, h=H, m=M):
    """Bloom spec; m doubled until every attribute's values get distinct filters."""
    from lopub.errors import SpecError
    from lopub.reports.spec import CollectionSpec

    while True:
        try:
            return CollectionSpec.from_domain(domain, f=f, epsilon=epsilon, m=m, h=h)
        except SpecError:
            if m >= 8192:
                raise
            m *= 2


def _reports(data, seed: int, **spec):
    from lopub.client import encode

    return encode(data, _spec(data.domain, **spec), rng=seed)


def _cache(reports, method: str, options: dict | None = None):
    """One estimator session over ``reports`` (shared by every release fitted from it)."""
    from lopub.dependency import MarginalCache
    from lopub.pipeline.steps import make_estimator

    return MarginalCache(make_estimator(reports, method, options))


def _fit(reports, cache, phi: float = PHI, **kw):
    """``fit`` (warnings silenced): the model and the report as a dict."""
    from lopub.pipeline.steps import fit

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fit(reports, phi=phi, estimator=cache, **kw)
    return res.model, res.report.to_dict()


def _tvd(data, model) -> float:
    from lopub.publish.evaluate import average_tvd

    return average_tvd(data, model, 2)["mean"]


def _sample(model, seed: int):
    from lopub.publish.synthesize import sample_codes

    return sample_codes(model, rng=seed)


def _emit(rows: list[dict], row: dict, show=None) -> None:
    rows.append(row)
    print(json.dumps(row if show is None else {k: row[k] for k in show}), flush=True)


def compare(data, reports, method: str, seed: int = 0) -> dict:
    """The four releases of one set of reports (shared estimator session)."""
    from lopub.pipeline.steps import independence_model
    from lopub.publish.evaluate import tvd

    cache = _cache(reports, method)
    row = {"method": method, "n": reports.n, "epsilon_per_record": reports.spec.epsilon,
           "f": reports.spec.f}
    t0 = time.perf_counter()
    pgm, rep = _fit(reports, cache)
    row["seconds_pgm"] = time.perf_counter() - t0
    row["pgm_fit"] = {k: rep.get(k) for k in ("structure", "release", "edges", "model_fit")}
    row["max_clique_cells_pgm"] = max(rep["clique_cells"])
    paper, rep_p = _fit(reports, cache, **PAPER)
    row["max_clique_cells_paper"] = max(rep_p["clique_cells"])
    indep = independence_model(cache, n=reports.n)
    pairs = list(itertools.combinations(data.domain.attrs, 2))
    row["tvd_pairs"] = sum(tvd(data.project(list(p)), cache.marginal(list(p))) for p in pairs) / len(pairs)
    for name, model, s in (("pgm", pgm, 1), ("paper", paper, 2), ("independent", indep, 3)):
        row[f"tvd_model_{name}"] = _tvd(data, model)
        row[f"tvd_synthetic_{name}"] = _tvd(data, _sample(model, seed + s))
    return row


def part_releases(cells, methods, seed) -> list[dict]:
    """``compare`` per (part, dataset, Bloom spec) cell and method."""
    rows: list[dict] = []
    loaded: dict = {}
    for part, ds, spec in cells:
        data = loaded[ds] = loaded.get(ds) or datasets.load(ds, None, seed)
        reports = _reports(data, seed, **spec)
        extra = {"m_max": max(reports.spec.m)} if part == "grid" else {}
        for method in methods:
            _emit(rows, {"part": part, "dataset": ds, "h": spec.get("h", H), **extra,
                         **compare(data, reports, method, seed)})
    return rows


def part_structure(seed, methods) -> list[dict]:
    from lopub.datasets import embedded_model
    from lopub.publish.evaluate import correlation_identification

    bn = embedded_model()
    data = bn.sample(20000, rng=seed)
    reports = _reports(data, seed + 1, f=0.5)
    rows: list[dict] = []
    for method in methods:
        model, rep = _fit(reports, _cache(reports, method))
        truth = {frozenset(e) for e in bn.dependency_edges()}
        found = {frozenset(e) for e in model.graph.edges}
        ci = correlation_identification(model.graph.edges, bn.dependency_edges(), data.domain.attrs)
        _emit(rows, {"part": "structure", "dataset": "embedded", "method": method, "f": 0.5,
                     "recall": len(truth & found) / len(truth),
                     "precision": len(truth & found) / max(1, len(found)),
                     "true_edges": len(truth), "found_edges": len(found), "accuracy": ci["accuracy"]})
    return rows


def part_timing(methods, seed) -> list[dict]:
    data = datasets.load("adult")
    reports = _reports(data, seed, f=0.5)
    rows: list[dict] = []
    for method in methods:
        out = {"part": "timing", "method": method}
        for name, kw in (("paper", PAPER), ("pgm", {})):
            t0 = time.process_time()
            _, rep = _fit(reports, _cache(reports, method), **kw)
            out[f"cpu_{name}"] = time.process_time() - t0
            if name == "pgm":
                out["model_fit"] = rep.get("model_fit")
        out["ratio_pgm_over_paper"] = out["cpu_pgm"] / out["cpu_paper"]
        _emit(rows, out)
    return rows


def verdicts(rows: list[dict], kind: str = "model") -> dict:
    """The issue's checks over every row that has them.

    ``kind`` "model": exact TVD of each release model (no sampling noise; the
    checks compare releases, not samples); "synthetic": TVD of one sample of
    N records each (what a user downloads; +/- about 0.001 of sampling noise).
    """
    rel = [r for r in rows if f"tvd_{kind}_pgm" in r]
    key = lambda name: f"tvd_{kind}_{name}"  # noqa: E731
    v: dict = {"kind": kind}
    f5 = [r for r in rel if r["part"] == "f" and abs(r["f"] - 0.5) < 1e-9]
    if f5:
        v["tvd_at_f05_le_0.025"] = {r["method"]: (round(r[key("pgm")], 4), r[key("pgm")] <= 0.025) for r in f5}
    for part in ("f", "grid"):
        sub = [r for r in rel if r["part"] == part]
        if not sub:
            continue
        v[f"{part}_no_worse_than_independent"] = sum(r[key("pgm")] <= r[key("independent")] for r in sub), len(sub)
        v[f"{part}_no_worse_than_paper"] = sum(r[key("pgm")] <= r[key("paper")] for r in sub), len(sub)
        hi = [r for r in sub if r["f"] >= 0.7]
        v[f"{part}_within_1.1x_pairs_at_f>=0.7"] = sum(r[key("pgm")] <= 1.1 * r["tvd_pairs"] for r in hi), len(hi)
        v[f"{part}_misses"] = [{k: r.get(k) for k in ("dataset", "method", "h", "epsilon_per_record", "f")}
                               | {"pgm": round(r[key("pgm")], 4), "independent": round(r[key("independent")], 4),
                                  "paper": round(r[key("paper")], 4), "pairs": round(r["tvd_pairs"], 4)}
                               for r in sub if r[key("pgm")] > min(r[key("independent")], r[key("paper")])
                               or (r["f"] >= 0.7 and r[key("pgm")] > 1.1 * r["tvd_pairs"])]
    for r in rows:
        if r["part"] == "structure":
            v[f"structure_{r['method']}"] = {"recall": round(r["recall"], 3),
                                             "precision": round(r["precision"], 3)}
        if r["part"] == "timing":
            v[f"timing_{r['method']}"] = {"ratio": round(r["ratio_pgm_over_paper"], 2),
                                          "model_fit": r.get("model_fit")}
    return v


# the paper's pipeline ------------------------------------------------------------------------------
def one_run(method: str, f: float, seed: int = 0, model_phi: float | None = None,
            options: dict | None = None) -> dict:
    """The paper's whole pipeline once: seconds per stage and peak memory of this process."""
    data = datasets.load("adult")
    t0 = time.perf_counter()
    reports = _reports(data, seed, f=f)
    t1 = time.perf_counter()
    model, rep = _fit(reports, _cache(reports, method, options), model_phi=model_phi, **PAPER)
    t2 = time.perf_counter()
    _sample(model, seed + 1)
    t3 = time.perf_counter()
    return {"part": "paper-timing", "method": method, "f": f, "records": data.n, "model_phi": model_phi or PHI,
            "options": options or {},
            "seconds": {"encode": t1 - t0, **rep["seconds"], "synthesize": t3 - t2, "pipeline": t3 - t0},
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "edges": rep["edges"], "cliques": rep["cliques"], "clique_cells": rep["clique_cells"]}


def part_paper_timing(methods, model_phi, tol) -> list[dict]:
    rows: list[dict] = []
    for method in methods:
        extra = (["--model-phi", str(model_phi)] if model_phi else []) + (["--tol", str(tol)] if tol else [])
        out = subprocess.run([sys.executable, __file__, "--one", method, "0.5", *extra], check=True,
                             capture_output=True, text=True, env=os.environ).stdout
        _emit(rows, json.loads(out.strip().splitlines()[-1]), ("method", "model_phi", "seconds", "peak_mb"))
    return rows


def part_paper(methods, fs, seed: int = 0, model_phi: float | None = None, options: dict | None = None):
    """Per f and method: the paper's release vs independence (2-way TVD), correlation identification."""
    from lopub.pipeline.steps import independence_model
    from lopub.publish.evaluate import correlation_identification

    data = datasets.load("adult")
    true_edges = _fit(None, data, **PAPER)[0].graph.edges
    rows: list[dict] = []
    for f in fs:
        reports = _reports(data, seed, f=f)
        for method in methods:
            cache = _cache(reports, method, options)
            model, rep = _fit(reports, cache, model_phi=model_phi, **PAPER)
            syn = _sample(model, seed + 1)
            base = _sample(independence_model(cache), seed + 2)
            ci = correlation_identification(model.graph.edges, true_edges, data.domain.attrs)
            _emit(rows, {"part": "paper", "f": f, "method": method, "model_phi": model_phi or PHI,
                         "max_clique_cells": max(rep["clique_cells"]), "tvd_synthetic": _tvd(data, syn),
                         "tvd_independent": _tvd(data, base), "tvd_model": _tvd(data, model),
                         "accuracy": ci["accuracy"], "added": ci["added"], "lost": ci["lost"],
                         "true_edges": ci["true_edges"], "found_edges": ci["found_edges"],
                         "seconds": rep["seconds"]["total"]})
    return rows


def part_phi_sweep(phis, f: float, method: str, seed: int = 0) -> list[dict]:
    """TVD floor (true graph, exact marginals) and the LDP release, per release-graph phi."""
    data = datasets.load("adult")
    reports = _reports(data, seed, f=f)
    cache = _cache(reports, method)
    rows: list[dict] = []
    for phi in phis:
        exact, rep_exact = _fit(None, data, phi=phi, **PAPER)
        model, rep = _fit(reports, cache, model_phi=phi, **PAPER)
        _emit(rows, {"part": "phi-sweep", "model_phi": phi, "f": f, "method": method,
                     "edges_true": rep_exact["edges"], "edges_found": rep["graph"].get("model_edges", rep["edges"]),
                     "max_clique_cells": max(rep["clique_cells"]), "tvd_exact_model": _tvd(data, exact),
                     "tvd_synthetic": _tvd(data, _sample(model, seed + 1))})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", default="f,grid,structure,timing")
    p.add_argument("--fs", default="0.1,0.3,0.5,0.7,0.9")
    p.add_argument("--methods", default="em,moment")
    p.add_argument("--epsilons", default="2,4,8,16,64", help="grid: per-record budgets (x h = 1, 2, 4)")
    p.add_argument("--model-phi", type=float, help="paper parts: release graph at this phi (graph stays 0.4)")
    p.add_argument("--tol", type=float, help="paper parts: estimator tolerance (default: the estimator's)")
    p.add_argument("--one", nargs=2, metavar=("METHOD", "F"), help=argparse.SUPPRESS)
    p.add_argument("--out", default="bench_release.json")
    p.add_argument("--verdicts", metavar="JSON", nargs="+",
                   help="only recompute the verdicts of earlier --out files (merged)")
    a = p.parse_args(argv)
    opts = {} if a.tol is None else {"tol": a.tol}
    if a.one:
        print(json.dumps(one_run(a.one[0], float(a.one[1]), model_phi=a.model_phi, options=opts)))
        return 0
    if a.verdicts:
        rows = [r for path in a.verdicts for r in json.load(open(path))["rows"]]
        print(json.dumps({"model": verdicts(rows, "model"), "synthetic": verdicts(rows, "synthetic")},
                         indent=2))
        return 0
    parts, methods, fs = a.parts.split(","), a.methods.split(","), [float(x) for x in a.fs.split(",")]
    rows: list[dict] = []
    if "f" in parts:
        rows += part_releases([("f", "adult", {"f": f}) for f in fs], methods, 0)
    if "grid" in parts:  # equal per-record budgets, moment
        rows += part_releases([("grid", ds, {"epsilon": float(e), "h": h}) for ds in ("adult", "embedded")
                               for e in a.epsilons.split(",") for h in (1, 2, 4)], ["moment"], 0)
    if "structure" in parts:
        rows += part_structure(0, methods)
    if "timing" in parts:
        rows += part_timing(methods, 0)
    if "paper-timing" in parts:
        rows += part_paper_timing(methods, a.model_phi, a.tol)
    if "paper" in parts:
        rows += part_paper(methods, fs, 0, a.model_phi, opts)
    if "phi-sweep" in parts:  # release-graph thresholds
        rows += part_phi_sweep([0.4, 0.3, 0.2, 0.15], 0.5, methods[0], 0)
    v = {"model": verdicts(rows, "model"), "synthetic": verdicts(rows, "synthetic")}
    print(json.dumps({"verdicts": v}, indent=2))
    from lopub.io import atomic_write_text

    atomic_write_text(a.out, json.dumps({"rows": rows, "verdicts": v, "cpus": os.cpu_count(),
                                         "load": os.getloadavg()}, indent=2, default=str) + "\n")
    print(f"written {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
