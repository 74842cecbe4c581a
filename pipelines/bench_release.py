"""The release on UCI Adult (issues 4 and 11): the fitted model against the paper's release, and
the paper's whole pipeline.

Parts (``--parts``; targets, commands and figures: docs/BENCHMARKS.md, "Whole pipeline" and "Release"):

``f``            Adult, m = 128, h = 4, f in ``--fs``: four releases of the same reports and estimator
                 session (one :class:`~lopub.dependency.MarginalCache`), scored by the mean 2-way TVD
                 exactly on the model and on a synthetic sample: ``pgm`` (``fit()``'s default),
                 ``paper`` (``release="cliques", structure="phi"``, phi = 0.4), ``independent`` and
                 ``pairs`` (the estimated pair tables themselves, not a release).
``grid``         the same at equal per-record budgets: ``--epsilons`` x Bloom ``--hs``, Adult and embedded.
``structure``    embedded data at f = 0.5: recall / precision of the structure against the true DAG.
``timing``       Adult at f = 0.5: the default ``fit`` against the paper's release (CPU ratio).
``paper-timing`` the paper's pipeline (encode -> pairs -> graph -> junction tree -> cliques -> synthesis)
                 at f = 0.5, per method in a fresh process: seconds per stage and peak RSS.
``paper``        per f: the paper's release against the independence release (2-way TVD) and the
                 correlation identification against the true data's phi = 0.4 graph.
``phi-sweep``    f = 0.5: the release graph at ``--phis`` and the TVD floor of each graph (the true
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


def _pair_tvd(data, cache) -> float:
    from lopub.publish.evaluate import tvd

    pairs = list(itertools.combinations(data.domain.attrs, 2))
    return sum(tvd(data.project(list(p)), cache.marginal(list(p))) for p in pairs) / len(pairs)


def _fit(reports, cache, phi: float = PHI, **kw):
    """``fit`` (warnings silenced): the model and the report as a dict."""
    from lopub.pipeline.steps import fit

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fit(reports, phi=phi, estimator=cache, **kw)
    return res.model, res.report.to_dict()


def compare(data, reports, method: str, seed: int = 0) -> dict:
    """The four releases of one set of reports (shared estimator session)."""
    from lopub.dependency import MarginalCache
    from lopub.publish.evaluate import average_tvd
    from lopub.pipeline.steps import independence_model, make_estimator
    from lopub.publish.synthesize import sample_codes

    cache = MarginalCache(make_estimator(reports, method))
    row = {"method": method, "n": reports.n, "epsilon_per_record": reports.spec.epsilon,
           "f": reports.spec.f}
    t0 = time.perf_counter()
    pgm, rep = _fit(reports, cache)
    row["seconds_pgm"] = time.perf_counter() - t0
    row["pgm_fit"] = {k: rep.get(k) for k in ("structure", "release", "edges", "model_fit")}
    row["max_clique_cells_pgm"] = max(rep["clique_cells"])
    paper, rep_p = _fit(reports, cache, release="cliques", structure="phi")
    row["max_clique_cells_paper"] = max(rep_p["clique_cells"])
    indep = independence_model(cache, n=reports.n)
    row["tvd_pairs"] = _pair_tvd(data, cache)
    for name, model, s in (("pgm", pgm, 1), ("paper", paper, 2), ("independent", indep, 3)):
        row[f"tvd_model_{name}"] = average_tvd(data, model, 2)["mean"]
        row[f"tvd_synthetic_{name}"] = average_tvd(data, sample_codes(model, rng=seed + s), 2)["mean"]
    return row


def part_f(fs, methods, seed) -> list[dict]:
    data = datasets.load("adult")
    rows = []
    for f in fs:
        from lopub.client import encode

        reports = encode(data, _spec(data.domain, f=f), rng=seed)
        for method in methods:
            row = {"part": "f", "dataset": "adult", "h": H, **compare(data, reports, method, seed)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def part_grid(epsilons, hs, methods, names, seed) -> list[dict]:
    from lopub.client import encode

    rows = []
    for ds in names:
        data = datasets.load(ds, None, seed)
        for eps, h in itertools.product(epsilons, hs):
            spec = _spec(data.domain, epsilon=eps, h=h)
            reports = encode(data, spec, rng=seed)
            for method in methods:
                row = {"part": "grid", "dataset": ds, "h": h, "m_max": max(spec.m),
                       **compare(data, reports, method, seed)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def part_structure(seed, methods) -> list[dict]:
    from lopub.client import encode
    from lopub.datasets import embedded_model
    from lopub.dependency import MarginalCache
    from lopub.publish.evaluate import correlation_identification
    from lopub.pipeline.steps import make_estimator

    bn = embedded_model()
    data = bn.sample(20000, rng=seed)
    reports = encode(data, _spec(data.domain, f=0.5), rng=seed + 1)
    rows = []
    for method in methods:
        model, rep = _fit(reports, MarginalCache(make_estimator(reports, method)))
        truth = {frozenset(e) for e in bn.dependency_edges()}
        found = {frozenset(e) for e in model.graph.edges}
        ci = correlation_identification(model.graph.edges, bn.dependency_edges(), data.domain.attrs)
        row = {"part": "structure", "dataset": "embedded", "method": method, "f": 0.5,
               "recall": len(truth & found) / len(truth),
               "precision": len(truth & found) / max(1, len(found)),
               "true_edges": len(truth), "found_edges": len(found), "accuracy": ci["accuracy"]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def part_timing(methods, seed) -> list[dict]:
    from lopub.client import encode
    from lopub.dependency import MarginalCache
    from lopub.pipeline.steps import make_estimator

    data = datasets.load("adult")
    reports = encode(data, _spec(data.domain, f=0.5), rng=seed)
    rows = []
    for method in methods:
        out = {"part": "timing", "method": method}
        for name, kw in (("paper", {"release": "cliques", "structure": "phi"}), ("pgm", {})):
            t0 = time.process_time()
            _, rep = _fit(reports, MarginalCache(make_estimator(reports, method)), **kw)
            out[f"cpu_{name}"] = time.process_time() - t0
            if name == "pgm":
                out["model_fit"] = rep.get("model_fit")
        out["ratio_pgm_over_paper"] = out["cpu_pgm"] / out["cpu_paper"]
        rows.append(out)
        print(json.dumps(out), flush=True)
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
def _adult_reports(data, f: float, seed: int):
    from lopub.client import encode
    from lopub.reports.spec import CollectionSpec

    return encode(data, CollectionSpec.from_domain(data.domain, f=f, m=M, h=H), rng=seed)


def one_run(method: str, f: float, seed: int = 0, model_phi: float | None = None,
            options: dict | None = None) -> dict:
    """The paper's whole pipeline once: seconds per stage and peak memory of this process."""
    from lopub.dependency import MarginalCache
    from lopub.pipeline.steps import make_estimator
    from lopub.publish.synthesize import sample_codes

    data = datasets.load("adult")
    t0 = time.perf_counter()
    reports = _adult_reports(data, f, seed)
    t1 = time.perf_counter()
    cache = MarginalCache(make_estimator(reports, method, options))
    model, rep = _fit(reports, cache, model_phi=model_phi, **PAPER)
    t2 = time.perf_counter()
    sample_codes(model, rng=seed + 1)
    t3 = time.perf_counter()
    return {"part": "paper-timing", "method": method, "f": f, "records": data.n, "model_phi": model_phi or PHI,
            "options": options or {},
            "seconds": {"encode": t1 - t0, **rep["seconds"], "synthesize": t3 - t2, "pipeline": t3 - t0},
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "edges": rep["edges"], "cliques": rep["cliques"], "clique_cells": rep["clique_cells"]}


def part_paper_timing(methods, model_phi, tol) -> list[dict]:
    rows = []
    for method in methods:
        extra = (["--model-phi", str(model_phi)] if model_phi else []) + (["--tol", str(tol)] if tol else [])
        out = subprocess.run([sys.executable, __file__, "--one", method, "0.5", *extra], check=True,
                             capture_output=True, text=True, env=os.environ).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        print(json.dumps({k: rows[-1][k] for k in ("method", "model_phi", "seconds", "peak_mb")}), flush=True)
    return rows


def part_paper(methods, fs, seed: int = 0, model_phi: float | None = None, options: dict | None = None):
    """Per f and method: the paper's release vs independence (2-way TVD), correlation identification."""
    from lopub.dependency import MarginalCache
    from lopub.pipeline.steps import independence_model, make_estimator
    from lopub.publish.evaluate import average_tvd, correlation_identification
    from lopub.publish.synthesize import sample_codes

    data = datasets.load("adult")
    true_edges = _fit(None, data, **PAPER)[0].graph.edges
    rows = []
    for f in fs:
        reports = _adult_reports(data, f, seed)
        for method in methods:
            cache = MarginalCache(make_estimator(reports, method, options))
            model, rep = _fit(reports, cache, model_phi=model_phi, **PAPER)
            syn = sample_codes(model, rng=seed + 1)
            base = sample_codes(independence_model(cache), rng=seed + 2)
            ci = correlation_identification(model.graph.edges, true_edges, data.domain.attrs)
            row = {"part": "paper", "f": f, "method": method, "model_phi": model_phi or PHI,
                   "max_clique_cells": max(rep["clique_cells"]), "tvd_synthetic": average_tvd(data, syn, 2)["mean"],
                   "tvd_independent": average_tvd(data, base, 2)["mean"],
                   "tvd_model": average_tvd(data, model, 2)["mean"],
                   "accuracy": ci["accuracy"], "added": ci["added"], "lost": ci["lost"],
                   "true_edges": ci["true_edges"], "found_edges": ci["found_edges"],
                   "seconds": rep["seconds"]["total"]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def part_phi_sweep(phis, f: float, method: str, seed: int = 0) -> list[dict]:
    """TVD floor (true graph, exact marginals) and the LDP release, per release-graph phi."""
    from lopub.dependency import MarginalCache
    from lopub.pipeline.steps import make_estimator
    from lopub.publish.evaluate import average_tvd
    from lopub.publish.synthesize import sample_codes

    data = datasets.load("adult")
    reports = _adult_reports(data, f, seed)
    cache = MarginalCache(make_estimator(reports, method))
    rows = []
    for phi in phis:
        exact, rep_exact = _fit(None, data, phi=phi, **PAPER)
        model, rep = _fit(reports, cache, model_phi=phi, **PAPER)
        row = {"part": "phi-sweep", "model_phi": phi, "f": f, "method": method, "edges_true": rep_exact["edges"],
               "edges_found": rep["graph"].get("model_edges", rep["edges"]),
               "max_clique_cells": max(rep["clique_cells"]),
               "tvd_exact_model": average_tvd(data, exact, 2)["mean"],
               "tvd_synthetic": average_tvd(data, sample_codes(model, rng=seed + 1), 2)["mean"]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", default="f,grid,structure,timing")
    p.add_argument("--fs", default="0.1,0.3,0.5,0.7,0.9")
    p.add_argument("--methods", default="em,moment")
    p.add_argument("--epsilons", default="2,4,8,16,64")
    p.add_argument("--hs", default="1,2,4")
    p.add_argument("--grid-methods", default="moment")
    p.add_argument("--grid-datasets", default="adult,embedded")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--phis", default="0.4,0.3,0.2,0.15", help="phi-sweep: release-graph thresholds")
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
    parts = a.parts.split(",")
    methods = a.methods.split(",")
    rows: list[dict] = []
    if "f" in parts:
        rows += part_f([float(x) for x in a.fs.split(",")], methods, a.seed)
    if "grid" in parts:
        rows += part_grid([float(x) for x in a.epsilons.split(",")], [int(x) for x in a.hs.split(",")],
                          a.grid_methods.split(","), a.grid_datasets.split(","), a.seed)
    if "structure" in parts:
        rows += part_structure(a.seed, methods)
    if "timing" in parts:
        rows += part_timing(methods, a.seed)
    if "paper-timing" in parts:
        rows += part_paper_timing(methods, a.model_phi, a.tol)
    if "paper" in parts:
        rows += part_paper(methods, [float(x) for x in a.fs.split(",")], a.seed, a.model_phi, opts)
    if "phi-sweep" in parts:
        rows += part_phi_sweep([float(x) for x in a.phis.split(",")], 0.5, methods[0], a.seed)
    v = {"model": verdicts(rows, "model"), "synthetic": verdicts(rows, "synthetic")}
    print(json.dumps({"verdicts": v}, indent=2))
    from lopub.io import atomic_write_text

    atomic_write_text(a.out, json.dumps({"rows": rows, "verdicts": v, "cpus": os.cpu_count(),
                                         "load": os.getloadavg()}, indent=2, default=str) + "\n")
    print(f"written {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
