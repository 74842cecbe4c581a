"""Benchmark the joint-distribution estimators on UCI Adult or FIMI retail (issue 3).

Per flip probability f the data are encoded once (seeded, m = 128 Adult / 32 retail, h = 4); every
method estimates the k-way joint of each attribute set (all pairs for k = 2, 100 seeded subsets
for k >= 3) in one :class:`lopub.estimate.Estimator` session.  Per (f, method): wall / CPU seconds per
set and mean AVD (Ren et al. 2018, Eq. 32) beside the independence baselines (true and EM-estimated
one-way marginals); per-set rows go to ``--out`` (``--summarize`` prints the tables of such CSVs).
``--probe-stop info|moment --probe-c C`` is the hybrid stopping-rule probe of docs/bench_estimators.md,
"Hybrid speed" (25 seeded Adult pairs, hybrid EM stopped at C standard errors vs converged EM).
"""
from __future__ import annotations

import argparse
import csv
import itertools
import resource
import sys
import time
from pathlib import Path

import numpy as np

from lopub.client.encode import encode
from lopub.estimate import METHODS, Estimator
from lopub.reports.spec import CollectionSpec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repository root

from pipelines.harness import datasets  # noqa: E402

FIELDS = ["dataset", "n", "k", "f", "method", "attrs", "seconds", "cpu_seconds", "avd", "avd_ind_true",
          "avd_ind_est", "iterations", "converged", "support_size", "cells", "peak_rss_mb"]


def load(name: str):
    """The dataset and the paper's Bloom filter size m for it."""
    if name not in ("adult", "retail", "embedded"):
        raise SystemExit(f"--dataset ({name!r}) must be adult, retail or embedded")
    return datasets.load(name, None, 0), 32 if name == "retail" else 128


def attribute_sets(attrs, k: int, count: int | None, seed: int):
    combos = list(itertools.combinations(attrs, k))
    if count is None or count >= len(combos):
        return combos
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(combos), size=count, replace=False)
    return [combos[i] for i in sorted(pick)]


def product(tables):
    out = tables[0]
    for t in tables[1:]:
        out = np.multiply.outer(out, t)
    return out


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_f(data, m: int, f: float, sets, methods, writer, name: str, k: int, opts: dict) -> None:
    """Encode at ``f`` (seed 0); each method (``opts[method]``: its options) estimates every set in one
    session; a CSV row per set."""
    spec = CollectionSpec.from_domain(data.domain, f=f, m=m, h=4)
    rep = encode(data, spec, rng=0)
    truth = {s: data.project(list(s)).values for s in sets}
    attrs = sorted({a for s in sets for a in s}, key=data.domain.index)
    one_true = {a: data.project([a]).values for a in attrs}
    em1 = Estimator(rep, "em")
    one_est = {a: em1.one_way(a).values for a in attrs}
    base = {s: (0.5 * np.abs(product([one_true[a] for a in s]) - truth[s]).sum(),
                0.5 * np.abs(product([one_est[a] for a in s]) - truth[s]).sum()) for s in sets}
    for method in methods:
        est = Estimator(rep, method, **opts.get(method, {}))
        t_all, avds = time.perf_counter(), []
        for s in sets:
            t0, c0 = time.perf_counter(), time.process_time()
            mg = est.marginal(list(s))
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
            avds.append(0.5 * float(np.abs(mg.values - truth[s]).sum()))
            writer.writerow({"dataset": name, "n": rep.n, "k": k, "f": f, "method": method,
                             "attrs": "|".join(s), "seconds": f"{dt:.4f}", "cpu_seconds": f"{cpu:.4f}",
                             "avd": f"{avds[-1]:.5f}",
                             "avd_ind_true": f"{base[s][0]:.5f}", "avd_ind_est": f"{base[s][1]:.5f}",
                             "iterations": mg.meta["iterations"], "converged": mg.meta["converged"],
                             "support_size": mg.meta.get("support_size", ""), "cells": mg.values.size,
                             "peak_rss_mb": f"{peak_mb():.0f}"})
        del est
        print(f"  f={f:<4} {method:<13} total {time.perf_counter() - t_all:8.1f}s  AVD {np.mean(avds):.4f}",
              flush=True)


def print_table(rows) -> None:
    em = {r["f"]: r for r in rows if r["method"] == "em"}
    print("\n| f | method | median s | max s | total s | mean AVD | ind. true 1-way | ind. est. 1-way "
          "| AVD / EM | EM CPU / CPU | median CPU s | peak MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ref = em.get(r["f"])
        ratio = f"{r['avd'] / ref['avd']:.2f}" if ref else "-"
        speed = (f"{ref['median_cpu'] / r['median_cpu']:.1f}x" if ref and r["median_cpu"] > 0 else "-")
        print(f"| {r['f']} | {r['method']} | {r['median_s']:.3f} | {r['max_s']:.3f} | {r['total_s']:.1f} "
              f"| {r['avd']:.4f} | {r['ind_true']:.4f} | {r['ind_est']:.4f} | {ratio} | {speed} "
              f"| {r['median_cpu']:.3f} | {r['peak_mb']:.0f} |")


def summarize(paths) -> None:
    """Print the summary table from per-set CSV rows (also of an interrupted run)."""
    import pandas as pd

    df = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    for (name, k), part in df.groupby(["dataset", "k"], sort=False):
        rows = []
        for (f, method), g in part.groupby(["f", "method"], sort=False):
            rows.append({"f": f, "method": method, "median_s": g.seconds.median(), "max_s": g.seconds.max(),
                         "total_s": g.seconds.sum(), "median_cpu": g.cpu_seconds.median(),
                         "avd": g.avd.mean(), "ind_true": g.avd_ind_true.mean(),
                         "ind_est": g.avd_ind_est.mean(), "peak_mb": g.peak_rss_mb.max(), "sets": len(g)})
        print(f"\n{name}, k={k}  (sets per row: {sorted({r['sets'] for r in rows})})")
        print_table(rows)


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
    rep = encode(ds, CollectionSpec.from_domain(ds.domain, f=f), rng=0)
    pairs = list(itertools.combinations(ds.domain.attrs, 2))
    pairs = [pairs[i] for i in np.random.default_rng(0).choice(len(pairs), 25, replace=False)]
    ests = {"em": Estimator(rep, "em", information_cells=0), "hy": Probe(rep, information_cells=0)}
    for a in ds.domain.attrs:
        ests["em"].cache.likelihood(a)
        ests["hy"].cache.likelihood(a)
        ests["hy"].cache.projected(a)
    res: dict = {"em": [], "hy": []}
    for pr in pairs:
        truth = ds.project(list(pr)).values
        for name, est in ests.items():
            c0 = time.process_time()
            mg = est.marginal(list(pr))
            res[name].append((0.5 * np.abs(mg.values - truth).sum(), time.process_time() - c0,
                              mg.meta["iterations"]))
    em, hy = np.array(res["em"]), np.array(res["hy"])
    for name, r in (("em", em), ("hy", hy)):
        print(f"f={f} {name} {mode} c={c}: AVD {r[:, 0].mean():.5f} medCPU {np.median(r[:, 1]):.4f} "
              f"medIt {np.median(r[:, 2]):.0f}")
    print("  ratio median EM/hy", np.median(em[:, 1]) / np.median(hy[:, 1]),
          " AVD ratio", hy[:, 0].mean() / em[:, 0].mean())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="adult", help="adult, retail or embedded")
    ap.add_argument("--k", type=int, default=2, help="attributes per joint (default 2: all pairs; k >= 3: 100 "
                                                     "seeded sets)")
    ap.add_argument("--f", default="0.1,0.3,0.5,0.7,0.9", help="comma-separated flip probabilities")
    ap.add_argument("--methods", default="em,lasso,moment,hybrid,hybrid-lasso",
                    help=f"comma-separated, from {METHODS}")
    ap.add_argument("--out", default="bench_estimators.csv", help="CSV of per-set rows")
    ap.add_argument("--support-z", type=float, default=None, help="hybrid: support_z option")
    ap.add_argument("--stop-se", type=float, default=None,
                    help="hybrid: stop_se option (stop EM at this fraction of the cells' standard errors)")
    ap.add_argument("--shrink", default=None, help="moment: shrink option (js, global or none; default js)")
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
    methods = [x.strip() for x in a.methods.split(",") if x.strip()]
    bad = [x for x in methods if x not in METHODS]
    if bad:
        ap.error(f"--methods {bad} not in {METHODS}")
    data, m = load(a.dataset)
    sets = attribute_sets(data.domain.attrs, a.k, None if a.k == 2 else 100, 0)
    opts = {"hybrid": {k: v for k, v in (("support_z", a.support_z), ("stop_se", a.stop_se)) if v is not None},
            "moment": {} if a.shrink is None else {"shrink": a.shrink}}
    print(f"{a.dataset}: n={data.n}, d={len(data.domain)}, k={a.k}, {len(sets)} sets, m={m}, h=4", flush=True)
    with open(a.out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        for f in (float(x) for x in a.f.split(",")):
            run_f(data, m, f, sets, methods, writer, a.dataset, a.k, opts)
            fh.flush()
    summarize([a.out])
    return 0


if __name__ == "__main__":
    sys.exit(main())
