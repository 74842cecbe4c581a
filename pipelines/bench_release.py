"""The release on UCI Adult (issues 4 and 11): the fitted model against the paper's release, and the paper's
whole pipeline.  Run e.g. ``python pipelines/bench_release.py --parts f,structure,timing --out br_f.json``;
commands and figures: docs/BENCHMARKS.md, "Whole pipeline" and "Release model fitted to the measurements"
(details: docs/bench_pipeline.md).  Parts (``--parts``), each yielding rows (printed, then saved in ``--out``):

``f``            Adult, m = 128, h = 4, per f in ``--fs``: mean 2-way TVD (exact on the model and of a synthetic
                 sample) of the default ``pgm`` release, the ``paper``'s (cliques on the phi = 0.4 graph),
                 ``independent`` and the estimated ``pairs`` themselves, all from one estimator session.
``grid``         the same at equal per-record budgets: ``--epsilons`` x h = 1, 2, 4, Adult and embedded.
``structure``    embedded data at f = 0.5: recall / precision of the structure against the true DAG.
``timing``       Adult at f = 0.5: CPU of the default ``fit`` over the paper's release.
``paper-timing`` the paper's pipeline at f = 0.5 per method in a fresh process: seconds per stage, peak RSS.
``paper``        per f: the paper's release against independence, its graph against the true data's.
``phi-sweep``    f = 0.5: the release graph at phi = 0.4 ... 0.15 and each graph's TVD floor (exact marginals).
``--model-phi`` / ``--tol``: the paper parts' release graph threshold and estimator tolerance.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repository root

from pipelines.harness import common, datasets
from pipelines.harness.methods import score

M, H, PHI = 128, 4, 0.4
#: the paper's release: each clique's joint estimated on the Alg. 4 graph
PAPER = {"release": "cliques", "structure": "phi"}
SHOWN = ("method", "model_phi", "seconds", "peak_mb")  # what is printed of a paper-timing row


def reports_of(data, seed: int, **spec):
    """Bloom reports at m = 128, h = 4 unless ``spec`` says otherwise."""
    return common.bloom_reports(data, seed, **{"m": M, "h": H, **spec})


def session(reports, method: str, options: dict | None = None):
    """One estimator session over ``reports`` (shared by every release fitted from it)."""
    from lopub.dependency import MarginalCache
    from lopub.pipeline.steps import make_estimator

    return MarginalCache(make_estimator(reports, method, options))


def fit(reports, estimator, phi: float = PHI, **kw):
    """``fit`` (warnings silenced): the model and the report as a dict."""
    res = common.quiet_fit(reports, phi=phi, estimator=estimator, **kw)
    return res.model, res.report.to_dict()


def sample(model, seed: int):
    from lopub.publish.synthesize import sample_codes

    return sample_codes(model, rng=seed)


def compare(data, reports, method: str, seed: int = 0) -> dict:
    """The four releases of one set of reports (shared estimator session)."""
    from lopub.pipeline.steps import independence_model
    from lopub.publish.evaluate import tvd

    cache = session(reports, method)
    row = {"method": method, "n": reports.n, "epsilon_per_record": reports.spec.epsilon, "f": reports.spec.f}
    (pgm, rep), row["seconds_pgm"], _ = common.timed(lambda: fit(reports, cache))
    row["pgm_fit"] = {k: rep.get(k) for k in ("structure", "release", "edges", "model_fit")}
    row["max_clique_cells_pgm"] = max(rep["clique_cells"])
    paper, rep_p = fit(reports, cache, **PAPER)
    row["max_clique_cells_paper"] = max(rep_p["clique_cells"])
    indep = independence_model(cache, n=reports.n)
    pairs = list(itertools.combinations(data.domain.attrs, 2))
    row["tvd_pairs"] = sum(tvd(data.project(list(p)), cache.marginal(list(p))) for p in pairs) / len(pairs)
    for name, model, s in (("pgm", pgm, 1), ("paper", paper, 2), ("independent", indep, 3)):
        row[f"tvd_model_{name}"] = score(data, model)
        row[f"tvd_synthetic_{name}"] = score(data, sample(model, seed + s))
    return row


def part_releases(cells, methods, seed: int = 0):
    """``compare`` per (part, dataset, Bloom spec) cell and method."""
    loaded: dict = {}
    for part, ds, spec in cells:
        data = loaded[ds] = loaded.get(ds) or datasets.load(ds, None, seed)
        reports = reports_of(data, seed, **spec)
        extra = {"m_max": max(reports.spec.m)} if part == "grid" else {}
        for method in methods:
            yield {"part": part, "dataset": ds, "h": spec.get("h", H), **extra,
                   **compare(data, reports, method, seed)}


def part_structure(methods, seed: int = 0):
    from lopub.datasets import embedded_model
    from lopub.publish.evaluate import correlation_identification

    bn = embedded_model()
    data = bn.sample(20000, rng=seed)
    reports = reports_of(data, seed + 1, f=0.5)
    for method in methods:
        model, _ = fit(reports, session(reports, method))
        ci = correlation_identification(model.graph.edges, bn.dependency_edges(), data.domain.attrs)
        yield {"part": "structure", "dataset": "embedded", "method": method, "f": 0.5, "recall": ci["recall"],
               "precision": (ci["found_edges"] - ci["added"]) / max(1, ci["found_edges"]),
               **{k: ci[k] for k in ("true_edges", "found_edges", "accuracy")}}


def part_timing(methods, seed: int = 0):
    reports = reports_of(datasets.load("adult"), seed, f=0.5)
    for method in methods:
        out = {"part": "timing", "method": method}
        for name, kw in (("paper", PAPER), ("pgm", {})):  # the last report is pgm's
            c0 = time.process_time()
            _, rep = fit(reports, session(reports, method), **kw)
            out[f"cpu_{name}"] = time.process_time() - c0
        out["model_fit"] = rep.get("model_fit")
        out["ratio_pgm_over_paper"] = out["cpu_pgm"] / out["cpu_paper"]
        yield out


def verdicts(rows: list[dict], kind: str = "model") -> dict:
    """The issue's checks over every row that has them; ``kind`` "model": exact TVD of each release model
    (the checks compare releases), "synthetic": TVD of one sample (+/- about 0.001 of sampling noise)."""
    def tvd(r, name):
        return r[f"tvd_{kind}_{name}"]

    rel = [r for r in rows if f"tvd_{kind}_pgm" in r]
    v: dict = {"kind": kind}
    if f5 := [r for r in rel if r["part"] == "f" and abs(r["f"] - 0.5) < 1e-9]:
        v["tvd_at_f05_le_0.025"] = {r["method"]: (round(tvd(r, "pgm"), 4), tvd(r, "pgm") <= 0.025) for r in f5}
    for part in ("f", "grid"):
        if not (sub := [r for r in rel if r["part"] == part]):
            continue
        for other in ("independent", "paper"):
            v[f"{part}_no_worse_than_{other}"] = sum(tvd(r, "pgm") <= tvd(r, other) for r in sub), len(sub)
        hi = [r for r in sub if r["f"] >= 0.7]
        v[f"{part}_within_1.1x_pairs_at_f>=0.7"] = sum(tvd(r, "pgm") <= 1.1 * r["tvd_pairs"] for r in hi), len(hi)
        v[f"{part}_misses"] = [{k: r.get(k) for k in ("dataset", "method", "h", "epsilon_per_record", "f")}
                               | {k: round(tvd(r, k), 4) for k in ("pgm", "independent", "paper")}
                               | {"pairs": round(r["tvd_pairs"], 4)}
                               for r in sub if tvd(r, "pgm") > min(tvd(r, "independent"), tvd(r, "paper"))
                               or (r["f"] >= 0.7 and tvd(r, "pgm") > 1.1 * r["tvd_pairs"])]
    for r in rows:
        if r["part"] == "structure":
            v[f"structure_{r['method']}"] = {"recall": round(r["recall"], 3), "precision": round(r["precision"], 3)}
        if r["part"] == "timing":
            v[f"timing_{r['method']}"] = {"ratio": round(r["ratio_pgm_over_paper"], 2), "model_fit": r.get("model_fit")}
    return v


# the paper's pipeline ------------------------------------------------------------------------------
def one_run(method: str, f: float, seed: int = 0, model_phi: float | None = None,
            options: dict | None = None) -> dict:
    """The paper's whole pipeline once: seconds per stage and peak memory of this process."""
    data = datasets.load("adult")
    t0 = time.perf_counter()
    reports = reports_of(data, seed, f=f)
    t1 = time.perf_counter()
    model, rep = fit(reports, session(reports, method, options), model_phi=model_phi, **PAPER)
    t2 = time.perf_counter()
    sample(model, seed + 1)
    t3 = time.perf_counter()
    return {"part": "paper-timing", "method": method, "f": f, "records": data.n, "model_phi": model_phi or PHI,
            "options": options or {},
            "seconds": {"encode": t1 - t0, **rep["seconds"], "synthesize": t3 - t2, "pipeline": t3 - t0},
            "peak_mb": common.peak_mb(), "edges": rep["edges"], "cliques": rep["cliques"],
            "clique_cells": rep["clique_cells"]}


def part_paper_timing(methods, model_phi, tol):
    """:func:`one_run` per method in a fresh process (``--one``)."""
    extra = (["--model-phi", str(model_phi)] if model_phi else []) + (["--tol", str(tol)] if tol else [])
    for method in methods:
        out = subprocess.run([sys.executable, __file__, "--one", method, "0.5", *extra], check=True,
                             capture_output=True, text=True, env=os.environ).stdout
        yield json.loads(out.strip().splitlines()[-1])


def part_paper(methods, fs, seed: int = 0, model_phi: float | None = None, options: dict | None = None):
    """Per f and method: the paper's release vs independence (2-way TVD), correlation identification."""
    from lopub.pipeline.steps import independence_model
    from lopub.publish.evaluate import correlation_identification

    data = datasets.load("adult")
    true_edges = fit(None, data, **PAPER)[0].graph.edges
    for f in fs:
        reports = reports_of(data, seed, f=f)
        for method in methods:
            cache = session(reports, method, options)
            model, rep = fit(reports, cache, model_phi=model_phi, **PAPER)
            syn = sample(model, seed + 1)
            base = sample(independence_model(cache), seed + 2)
            ci = correlation_identification(model.graph.edges, true_edges, data.domain.attrs)
            yield {"part": "paper", "f": f, "method": method, "model_phi": model_phi or PHI,
                   "max_clique_cells": max(rep["clique_cells"]), "tvd_synthetic": score(data, syn),
                   "tvd_independent": score(data, base), "tvd_model": score(data, model),
                   **{k: ci[k] for k in ("accuracy", "added", "lost", "true_edges", "found_edges")},
                   "seconds": rep["seconds"]["total"]}


def part_phi_sweep(phis, f: float, method: str, seed: int = 0):
    """TVD floor (true graph, exact marginals) and the LDP release, per release-graph phi."""
    data = datasets.load("adult")
    reports = reports_of(data, seed, f=f)
    cache = session(reports, method)
    for phi in phis:
        exact, rep_exact = fit(None, data, phi=phi, **PAPER)
        model, rep = fit(reports, cache, model_phi=phi, **PAPER)
        yield {"part": "phi-sweep", "model_phi": phi, "f": f, "method": method,
               "edges_true": rep_exact["edges"], "edges_found": rep["graph"].get("model_edges", rep["edges"]),
               "max_clique_cells": max(rep["clique_cells"]), "tvd_exact_model": score(data, exact),
               "tvd_synthetic": score(data, sample(model, seed + 1))}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", type=common.names, default="f,grid,structure,timing")
    p.add_argument("--fs", type=common.floats, default="0.1,0.3,0.5,0.7,0.9")
    p.add_argument("--methods", type=common.names, default="em,moment")
    p.add_argument("--epsilons", type=common.floats, default="2,4,8,16,64",
                   help="grid: per-record budgets (x h = 1, 2, 4)")
    p.add_argument("--model-phi", type=float, help="paper parts: release graph at this phi (graph stays 0.4)")
    p.add_argument("--tol", type=float, help="paper parts: estimator tolerance (default: the estimator's)")
    p.add_argument("--one", nargs=2, metavar=("METHOD", "F"), help=argparse.SUPPRESS)
    p.add_argument("--out", default="bench_release.json")
    p.add_argument("--verdicts", metavar="JSON", nargs="+", help="only recompute the verdicts of earlier --out files")
    a = p.parse_args(argv)
    opts = {} if a.tol is None else {"tol": a.tol}
    if a.one:
        print(json.dumps(one_run(a.one[0], float(a.one[1]), model_phi=a.model_phi, options=opts)))
        return 0
    if a.verdicts:
        rows = [r for path in a.verdicts for r in json.loads(Path(path).read_text())["rows"]]
        print(json.dumps({"model": verdicts(rows, "model"), "synthetic": verdicts(rows, "synthetic")}, indent=2))
        return 0
    grid = [("grid", ds, {"epsilon": e, "h": h}) for ds in ("adult", "embedded") for e in a.epsilons
            for h in (1, 2, 4)]
    parts = {"f": part_releases([("f", "adult", {"f": f}) for f in a.fs], a.methods),  # generators: lazy
             "grid": part_releases(grid, ["moment"]),  # equal per-record budgets, moment
             "structure": part_structure(a.methods),
             "timing": part_timing(a.methods),
             "paper-timing": part_paper_timing(a.methods, a.model_phi, a.tol),
             "paper": part_paper(a.methods, a.fs, 0, a.model_phi, opts),
             "phi-sweep": part_phi_sweep([0.4, 0.3, 0.2, 0.15], 0.5, a.methods[0])}
    rows = []
    for row in itertools.chain.from_iterable(part for name, part in parts.items() if name in a.parts):
        rows.append(row)
        shown = {k: row[k] for k in SHOWN} if row["part"] == "paper-timing" else row
        print(json.dumps(shown), flush=True)
    v = {"model": verdicts(rows, "model"), "synthetic": verdicts(rows, "synthetic")}
    print(json.dumps({"verdicts": v}, indent=2))
    common.write_json(a.out, {"rows": rows, "verdicts": v, "cpus": os.cpu_count(), "load": os.getloadavg()})
    print(f"written {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
