"""Benchmark of the whole LoPub pipeline on UCI Adult (issue 4 targets).

Usage::

    LOPUB_DATA_DIR=/path/to/datasets python pipelines/bench_pipeline.py \
        [--fs 0.1,0.3,0.5,0.7,0.9] [--methods em,moment] [--out bench_pipeline.json]

Three parts, m = 128, h = 4, phi = 0.4 unless stated:

1. Time and peak memory of encode -> all pairs -> graph -> junction tree ->
   clique joints -> synthesis of 45,222 records at f = 0.5, per method, each
   in a fresh subprocess (peak RSS is the subprocess's ``ru_maxrss``).
2. At every f: average TVD over all 105 2-way marginals, synthetic vs real,
   and the independence release (each attribute from its own estimated
   one-way marginal, same reports, same estimator session).
3. At every f: correlation identification against the graph computed from
   the true data with the same phi (accuracy, added, lost edges).

Plus a sweep of ``model_phi`` at f = 0.5 (the release built on the MI graph
at a lower threshold, the reported graph staying at phi = 0.4), with the TVD
floor of each graph: the model from the *true* data's graph and *exact*
clique marginals.  ``--model-phi X`` runs part 2-3 with that release graph.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Sec. VII (Adult, Eq. 32, Tables IV-VI).
"""
from __future__ import annotations

import argparse
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
# this benchmark measures the paper's release (each clique's joint estimated, Alg. 4 graph);
# pipelines/bench_release.py compares it with the default fitted-model release
PAPER = {"release": "cliques", "structure": "phi"}


def _fit(*args, **kw):
    from lopub.pipeline.steps import fit

    res = fit(*args, **PAPER, **kw)
    return res.model, res.report.to_dict()


def one_run(method: str, f: float, seed: int = 0, model_phi: float | None = None,
            options: dict | None = None) -> dict:
    """Whole pipeline once; seconds per stage and peak memory of this process."""
    from lopub.client import encode
    from lopub.dependency import MarginalCache
    from lopub.pipeline.steps import make_estimator
    from lopub.reports.spec import CollectionSpec
    from lopub.publish.synthesize import sample_codes

    data = datasets.load("adult")
    t0 = time.perf_counter()
    reports = encode(data, CollectionSpec.from_domain(data.domain, f=f, m=M, h=H), rng=seed)
    t1 = time.perf_counter()
    cache = MarginalCache(make_estimator(reports, method, options))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, rep = _fit(reports, phi=PHI, estimator=cache, model_phi=model_phi)
    t2 = time.perf_counter()
    sample_codes(model, rng=seed + 1)
    t3 = time.perf_counter()
    return {"method": method, "f": f, "records": data.n, "model_phi": model_phi or PHI,
            "options": options or {},
            "seconds": {"encode": t1 - t0, **rep["seconds"], "synthesize": t3 - t2, "pipeline": t3 - t0},
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "edges": rep["edges"], "cliques": rep["cliques"], "clique_cells": rep["clique_cells"]}


def utility(methods: list[str], fs: list[float], seed: int = 0,
            model_phi: float | None = None, options: dict | None = None) -> list[dict]:
    """TVD (synthetic / independence) and correlation identification per f and method."""
    from lopub.client import encode
    from lopub.dependency import MarginalCache
    from lopub.publish.evaluate import average_tvd, correlation_identification
    from lopub.pipeline.steps import independence_model, make_estimator
    from lopub.reports.spec import CollectionSpec
    from lopub.publish.synthesize import sample_codes

    data = datasets.load("adult")
    attrs = data.domain.attrs
    true_model, _ = _fit(estimator=data, phi=PHI)
    true_edges = true_model.graph.edges
    rows = []
    for f in fs:
        reports = encode(data, CollectionSpec.from_domain(data.domain, f=f, m=M, h=H), rng=seed)
        for method in methods:
            cache = MarginalCache(make_estimator(reports, method, options))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model, rep = _fit(reports, phi=PHI, estimator=cache, model_phi=model_phi)
            syn = sample_codes(model, rng=seed + 1)
            base = sample_codes(independence_model(cache), rng=seed + 2)
            ci = correlation_identification(model.graph.edges, true_edges, attrs)
            row = {"f": f, "method": method, "model_phi": model_phi or PHI,
                   "max_clique_cells": max(rep["clique_cells"]), "tvd_synthetic": average_tvd(data, syn, 2)["mean"],
                   "tvd_independent": average_tvd(data, base, 2)["mean"],
                   "tvd_model": average_tvd(data, model, 2)["mean"],
                   "accuracy": ci["accuracy"], "added": ci["added"], "lost": ci["lost"],
                   "true_edges": ci["true_edges"], "found_edges": ci["found_edges"],
                   "seconds": rep["seconds"]["total"]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def phi_sweep(phis: list[float], f: float, method: str, seed: int = 0) -> list[dict]:
    """TVD floor (true graph, exact marginals) and the LDP release, per phi."""
    from lopub.client import encode
    from lopub.dependency import MarginalCache
    from lopub.publish.evaluate import average_tvd
    from lopub.pipeline.steps import make_estimator
    from lopub.reports.spec import CollectionSpec
    from lopub.publish.synthesize import sample_codes

    data = datasets.load("adult")
    reports = encode(data, CollectionSpec.from_domain(data.domain, f=f, m=M, h=H), rng=seed)
    cache = MarginalCache(make_estimator(reports, method))
    rows = []
    for phi in phis:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exact, rep_exact = _fit(estimator=data, phi=phi)
            model, rep = _fit(reports, phi=PHI, model_phi=phi, estimator=cache)
        row = {"model_phi": phi, "f": f, "method": method, "edges_true": rep_exact["edges"],
               "edges_found": rep["graph"].get("model_edges", rep["edges"]), "max_clique_cells": max(rep["clique_cells"]),
               "tvd_exact_model": average_tvd(data, exact, 2)["mean"],
               "tvd_synthetic": average_tvd(data, sample_codes(model, rng=seed + 1), 2)["mean"]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fs", default="0.1,0.3,0.5,0.7,0.9")
    p.add_argument("--methods", default="em,moment")
    p.add_argument("--phis", default="0.4,0.3,0.2,0.15")
    p.add_argument("--model-phi", type=float,
                   help="release built on the MI graph at this phi (fit(model_phi=)); graph stays 0.4")
    p.add_argument("--tol", type=float, help="estimator tolerance (default: the estimator's)")
    p.add_argument("--skip-timing", action="store_true")
    p.add_argument("--skip-sweep", action="store_true")
    p.add_argument("--out", default="bench_pipeline.json")
    p.add_argument("--one", nargs=2, metavar=("METHOD", "F"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    opts = {} if a.tol is None else {"tol": a.tol}
    if a.one:
        print(json.dumps(one_run(a.one[0], float(a.one[1]), model_phi=a.model_phi, options=opts)))
        return 0
    methods = a.methods.split(",")
    timing = []
    for method in [] if a.skip_timing else methods:
        extra = (["--model-phi", str(a.model_phi)] if a.model_phi else []) + \
            (["--tol", str(a.tol)] if a.tol else [])
        out = subprocess.run([sys.executable, __file__, "--one", method, "0.5", *extra], check=True,
                             capture_output=True, text=True, env=os.environ).stdout
        timing.append(json.loads(out.strip().splitlines()[-1]))
        print(json.dumps({k: timing[-1][k] for k in ("method", "model_phi", "seconds", "peak_mb")}),
              flush=True)
    rows = utility(methods, [float(x) for x in a.fs.split(",")], model_phi=a.model_phi, options=opts)
    sweep = [] if a.skip_sweep else phi_sweep([float(x) for x in a.phis.split(",")], 0.5, methods[0])
    from lopub.io import atomic_write_text

    atomic_write_text(a.out, json.dumps({"timing": timing, "utility": rows, "phi_sweep": sweep,
                                         "cpus": os.cpu_count(), "load": os.getloadavg()},
                                        indent=2) + "\n")
    print(f"written {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
