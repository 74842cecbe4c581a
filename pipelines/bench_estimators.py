"""Benchmark the joint-distribution estimators on UCI Adult or FIMI retail (issue 3).

Per flip probability f the data are encoded once (seed 0; m = 128 Adult / 32 retail, h = 4); every method
estimates the k-way joint of each attribute set (all pairs for k = 2, 100 seeded sets for k >= 3) in one
:class:`lopub.estimate.Estimator` session: seconds per set and AVD (Ren et al. 2018, Eq. 32) beside the
independence baselines (true and EM-estimated one-way marginals), one CSV row per set (``--out``;
``--summarize`` prints the tables of such CSVs).  ``--probe-stop info|moment --probe-c C``: the hybrid
stopping-rule probe (25 seeded Adult pairs).  Run e.g. ``python pipelines/bench_estimators.py --dataset adult
--k 2 --f 0.5 --methods em``; commands and figures: docs/bench_estimators.md (summary: docs/BENCHMARKS.md,
"Joint-distribution estimators").
"""
from __future__ import annotations

import argparse
import csv
import itertools
import sys
import time
from functools import partial, reduce
from pathlib import Path

import numpy as np

from lopub.estimate import METHODS, Estimator
from lopub.publish.evaluate import k_subsets

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repository root

from pipelines.harness import common, datasets

FIELDS = ["dataset", "n", "k", "f", "method", "attrs", "seconds", "cpu_seconds", "avd", "avd_ind_true",
          "avd_ind_est", "iterations", "converged", "support_size", "cells", "peak_rss_mb"]
#: the summary table's columns and their formats
TABLE = {"f": "", "method": "", "median s": ".3f", "max s": ".3f", "total s": ".1f", "mean AVD": ".4f",
         "ind. true 1-way": ".4f", "ind. est. 1-way": ".4f", "AVD / EM": "", "EM CPU / CPU": "",
         "median CPU s": ".3f", "peak MB": ".0f"}


def avd(p, q) -> float:
    """Average variation distance: half the L1 distance of two tables."""
    return 0.5 * float(np.abs(p - q).sum())


def run_f(data, m: int, f: float, sets, methods, writer, name: str, k: int, opts: dict) -> None:
    """Encode at ``f`` (seed 0); each method (``opts[method]``: its options) estimates every set in one
    session; a CSV row per set."""
    rep = common.bloom_reports(data, 0, f=f, m=m, h=4)
    truth = {s: data.project(list(s)).values for s in sets}
    attrs = sorted({a for s in sets for a in s}, key=data.domain.index)
    em1 = Estimator(rep, "em")
    one_true = {a: data.project([a]).values for a in attrs}
    one_est = {a: em1.one_way(a).values for a in attrs}
    base = {s: [avd(reduce(np.multiply.outer, [one[a] for a in s]), truth[s]) for one in (one_true, one_est)]
            for s in sets}
    for method in methods:
        est = Estimator(rep, method, **opts.get(method, {}))
        t_all, avds = time.perf_counter(), []
        for s in sets:
            mg, dt, cpu = common.timed(partial(est.marginal, list(s)))
            avds.append(avd(mg.values, truth[s]))
            writer.writerow({"dataset": name, "n": rep.n, "k": k, "f": f, "method": method, "attrs": "|".join(s),
                             "seconds": f"{dt:.4f}", "cpu_seconds": f"{cpu:.4f}", "avd": f"{avds[-1]:.5f}",
                             "avd_ind_true": f"{base[s][0]:.5f}", "avd_ind_est": f"{base[s][1]:.5f}",
                             "iterations": mg.meta["iterations"], "converged": mg.meta["converged"],
                             "support_size": mg.meta.get("support_size", ""), "cells": mg.values.size,
                             "peak_rss_mb": f"{common.peak_mb():.0f}"})
        del est
        print(f"  f={f:<4} {method:<13} total {time.perf_counter() - t_all:8.1f}s  AVD {np.mean(avds):.4f}",
              flush=True)


def summarize(paths) -> None:
    """Print the summary tables of per-set CSVs (also of an interrupted run), one per (dataset, k)."""
    import pandas as pd

    df = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    for (name, k), part in df.groupby(["dataset", "k"], sort=False):
        rows = [{"f": f, "method": method, "median s": g.seconds.median(), "max s": g.seconds.max(),
                 "total s": g.seconds.sum(), "mean AVD": g.avd.mean(), "ind. true 1-way": g.avd_ind_true.mean(),
                 "ind. est. 1-way": g.avd_ind_est.mean(), "median CPU s": g.cpu_seconds.median(),
                 "peak MB": g.peak_rss_mb.max(), "sets": len(g)}
                for (f, method), g in part.groupby(["f", "method"], sort=False)]
        em = {r["f"]: r for r in rows if r["method"] == "em"}
        for r in rows:
            ref = em.get(r["f"])
            r["AVD / EM"] = f"{r['mean AVD'] / ref['mean AVD']:.2f}" if ref else "-"
            speed = ref and r["median CPU s"] > 0
            r["EM CPU / CPU"] = f"{ref['median CPU s'] / r['median CPU s']:.1f}x" if speed else "-"
        print(f"\n{name}, k={k}  (sets per row: {sorted({r['sets'] for r in rows})})\n")
        print(common.md_table(rows, list(TABLE), {c: fmt for c, fmt in TABLE.items() if fmt}))


def _info_se(data, p):
    """1 / sqrt(diag I): EM's observed information at ``p`` (a lower bound on the MLE's cell SE)."""
    q = data.to_internal(p)
    info = np.zeros_like(q)
    for z, last in data.blocks():
        denom = np.maximum(np.einsum("us,us->u", z @ q, last), 1e-300)
        w = z / denom[:, None]
        info += (w * w).T @ (last * last)
    return data.from_internal(1.0 / np.sqrt(np.maximum(info, 1e-300)))


def probe_stop(f: float, c: float, mode: str) -> None:
    """Hybrid EM stopped below ``c`` standard errors (EM's information or the moment's) vs EM, 25 pairs."""
    from lopub.estimate import hybrid
    from lopub.estimate.hybrid_estimator import HybridEstimator
    from lopub.estimate.postprocess import postprocess

    class Probe(HybridEstimator):  # uses the estimator's internals: a probe, not a shipped option
        def _fit(self, attrs):
            attrs = tuple(attrs)
            p_ols, var = self.moment_variance(attrs, self.options.design)
            se = np.sqrt(var)
            fast, _ = self._fast(attrs, p_ols)
            _, start = hybrid.support_start(postprocess(fast, "clip").values, threshold=0.0, mix=0.05,
                                            keep=p_ols > -2.0 * se)
            if mode == "info":
                scale = _info_se(self._kway([self.cache.likelihood(a).values for a in attrs], attrs), start)
            else:
                scale = np.maximum(se, 1e-12)
            p, meta, data = self._em(attrs, start, tol=c, scale=scale)
            return p, meta, self._variance(attrs, p, data, meta)

    ds = datasets.load("adult")
    rep = common.bloom_reports(ds, 0, f=f)
    pairs = list(itertools.combinations(ds.domain.attrs, 2))
    pairs = [pairs[i] for i in np.random.default_rng(0).choice(len(pairs), 25, replace=False)]  # drawn order
    ests = {"em": Estimator(rep, "em", information_cells=0), "hy": Probe(rep, information_cells=0)}
    for a in ds.domain.attrs:
        ests["em"].cache.likelihood(a)
        ests["hy"].cache.likelihood(a)
        ests["hy"].cache.projected(a)
    res: dict = {"em": [], "hy": []}
    for pr in pairs:
        for name, est in ests.items():
            mg, _, cpu = common.timed(partial(est.marginal, list(pr)))
            res[name].append((avd(mg.values, ds.project(list(pr)).values), cpu, mg.meta["iterations"]))
    em, hy = np.array(res["em"]), np.array(res["hy"])
    for name, r in (("em", em), ("hy", hy)):
        print(f"f={f} {name} {mode} c={c}: AVD {r[:, 0].mean():.5f} medCPU {np.median(r[:, 1]):.4f} "
              f"medIt {np.median(r[:, 2]):.0f}")
    print("  ratio median EM/hy", np.median(em[:, 1]) / np.median(hy[:, 1]),
          " AVD ratio", hy[:, 0].mean() / em[:, 0].mean())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="adult", choices=("adult", "retail", "embedded"))
    ap.add_argument("--k", type=int, default=2, help="attributes per joint (2: all pairs; k >= 3: 100 seeded sets)")
    ap.add_argument("--f", default="0.1,0.3,0.5,0.7,0.9", help="comma-separated flip probabilities")
    ap.add_argument("--methods", type=common.names, default="em,lasso,moment,hybrid,hybrid-lasso",
                    help=f"comma-separated, from {METHODS}")
    ap.add_argument("--out", default="bench_estimators.csv", help="CSV of per-set rows")
    ap.add_argument("--support-z", type=float, help="hybrid: support_z option")
    ap.add_argument("--stop-se", type=float, help="hybrid: stop_se option (stop EM at this fraction of the SEs)")
    ap.add_argument("--shrink", help="moment: shrink option (js, global or none; default js)")
    ap.add_argument("--summarize", nargs="+", metavar="CSV", help="only print the table of these CSVs")
    ap.add_argument("--probe-stop", choices=("info", "moment"),
                    help="only the hybrid stopping-rule probe at --f (one value): whose standard errors scale it")
    ap.add_argument("--probe-c", type=float, default=0.5, help="the probe's stop, in standard errors")
    a = ap.parse_args(argv)
    if a.probe_stop:
        if "," in a.f:
            ap.error(f"--probe-stop takes one --f, got {a.f!r}")
        probe_stop(float(a.f), a.probe_c, a.probe_stop)
        return 0
    if a.summarize:
        summarize(a.summarize)
        return 0
    if bad := [x for x in a.methods if x not in METHODS]:
        ap.error(f"--methods {bad} not in {METHODS}")
    data, m = datasets.load(a.dataset, None, 0), 32 if a.dataset == "retail" else 128
    sets = k_subsets(data.domain.attrs, a.k, None if a.k == 2 else 100, rng=0)  # all pairs, 100 seeded k-sets
    opts = {"hybrid": {k: v for k, v in (("support_z", a.support_z), ("stop_se", a.stop_se)) if v is not None},
            "moment": {} if a.shrink is None else {"shrink": a.shrink}}
    print(f"{a.dataset}: n={data.n}, d={len(data.domain)}, k={a.k}, {len(sets)} sets, m={m}, h=4", flush=True)
    with open(a.out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        for f in common.floats(a.f):
            run_f(data, m, f, sets, a.methods, writer, a.dataset, a.k, opts)
            fh.flush()
    summarize([a.out])
    return 0


if __name__ == "__main__":
    sys.exit(main())
