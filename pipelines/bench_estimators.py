"""Benchmark the joint-distribution estimators on UCI Adult or FIMI retail.

For each flip probability f the dataset is encoded once (seeded), then every
method estimates the k-way joint of every attribute set (all pairs for k = 2,
``--sets`` seeded random subsets for k >= 3) through one
:class:`lopub.estimate.Estimator` session per method (per-attribute caches are
built on first use and their time is included in the call that builds them).
Per (f, method) it prints the median / max / total wall time per set and the
mean AVD against the true joint, beside two independence baselines: the
product of the true one-way marginals and the product of the one-way
marginals estimated by EM from the same reports.  Rows go to a CSV as they are
computed; peak memory is the process's peak resident set (ru_maxrss).

Usage::

    LOPUB_DATA_DIR=/work/shared/datasets python pipelines/bench_estimators.py \\
        --dataset adult --k 2 --f 0.1,0.3,0.5,0.7,0.9 --out bench_adult_k2.csv

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Sec. VII (AVD, Eq. 32; Adult with
m = 128, h = 4; retail with m = 32, h = 4).
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


def run_f(data, m: int, f: float, sets, methods, seed: int, writer, name: str, k: int, opts=None):
    opts = opts or {}
    spec = CollectionSpec.from_domain(data.domain, f=f, m=m, h=4)
    rep = encode(data, spec, rng=seed)
    truth = {s: data.project(list(s)).values for s in sets}
    attrs = sorted({a for s in sets for a in s}, key=data.domain.index)
    one_true = {a: data.project([a]).values for a in attrs}
    em1 = Estimator(rep, "em")
    one_est = {a: em1.one_way(a).values for a in attrs}
    base = {s: (0.5 * np.abs(product([one_true[a] for a in s]) - truth[s]).sum(),
                0.5 * np.abs(product([one_est[a] for a in s]) - truth[s]).sum()) for s in sets}
    summary = []
    for method in methods:
        mopts = {k: v for k, v in opts.items() if k.startswith("shrink")}
        hopts = {k: v for k, v in opts.items() if not k.startswith("shrink")}
        est = Estimator(rep, method, **(hopts if method == "hybrid" else mopts if method == "moment" else {}))
        times, cpus, avds = [], [], []
        t_all = time.perf_counter()
        for s in sets:
            t0, c0 = time.perf_counter(), time.process_time()
            mg = est.marginal(list(s))
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
            avd = 0.5 * float(np.abs(mg.values - truth[s]).sum())
            times.append(dt)
            cpus.append(cpu)
            avds.append(avd)
            writer.writerow({"dataset": name, "n": rep.n, "k": k, "f": f, "method": method,
                             "attrs": "|".join(s), "seconds": f"{dt:.4f}", "cpu_seconds": f"{cpu:.4f}", "avd": f"{avd:.5f}",
                             "avd_ind_true": f"{base[s][0]:.5f}", "avd_ind_est": f"{base[s][1]:.5f}",
                             "iterations": mg.meta["iterations"], "converged": mg.meta["converged"],
                             "support_size": mg.meta.get("support_size", ""), "cells": mg.values.size,
                             "peak_rss_mb": f"{peak_mb():.0f}"})
        total = time.perf_counter() - t_all
        del est
        summary.append({"f": f, "method": method, "median_s": float(np.median(times)),
                        "max_s": float(np.max(times)), "total_s": total,
                        "median_cpu": float(np.median(cpus)), "avd": float(np.mean(avds)),
                        "ind_true": float(np.mean([base[s][0] for s in sets])),
                        "ind_est": float(np.mean([base[s][1] for s in sets])), "peak_mb": peak_mb()})
        row = summary[-1]
        print(f"  f={f:<4} {method:<13} median {row['median_s']:7.3f}s  max {row['max_s']:7.3f}s  "
              f"total {row['total_s']:8.1f}s  cpu-median {row['median_cpu']:7.3f}s  AVD {row['avd']:.4f}  (ind-true {row['ind_true']:.4f}, "
              f"ind-est {row['ind_est']:.4f})  peak {row['peak_mb']:.0f} MB", flush=True)
    return summary


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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="adult", help="adult, retail or embedded")
    ap.add_argument("--k", type=int, default=2, help="attributes per joint (default 2)")
    ap.add_argument("--f", default="0.1,0.3,0.5,0.7,0.9", help="comma-separated flip probabilities")
    ap.add_argument("--methods", default="em,lasso,moment,hybrid,hybrid-lasso",
                    help=f"comma-separated, from {METHODS}")
    ap.add_argument("--sets", type=int, default=None,
                    help="random attribute sets (default: all pairs for k=2, 100 for k>=3)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="f=0.5 only, 10 sets")
    ap.add_argument("--out", default="bench_estimators.csv", help="CSV of per-set rows")
    ap.add_argument("--support-z", type=float, default=None, help="hybrid: support_z option")
    ap.add_argument("--stop-se", type=float, default=None,
                    help="hybrid: stop_se option (stop EM at this fraction of the cells' standard errors)")
    ap.add_argument("--shrink", default=None, help="moment: shrink option (js, global or none; default js)")
    ap.add_argument("--summarize", nargs="+", metavar="CSV", help="only print the table of these CSVs")
    a = ap.parse_args(argv)
    if a.summarize:
        summarize(a.summarize)
        return 0
    fs = [0.5] if a.quick else [float(x) for x in a.f.split(",")]
    methods = [x.strip() for x in a.methods.split(",") if x.strip()]
    bad = [x for x in methods if x not in METHODS]
    if bad:
        ap.error(f"--methods {bad} not in {METHODS}")
    data, m = load(a.dataset)
    count = 10 if a.quick else (a.sets if a.sets is not None else (None if a.k == 2 else 100))
    sets = attribute_sets(data.domain.attrs, a.k, count, a.seed)
    print(f"{a.dataset}: n={data.n}, d={len(data.domain)}, k={a.k}, {len(sets)} sets, m={m}, h=4", flush=True)
    rows = []
    with open(a.out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        for f in fs:
            extra = {} if a.support_z is None else {"support_z": a.support_z}
            if a.stop_se is not None:
                extra["stop_se"] = a.stop_se
            if a.shrink is not None:
                extra["shrink"] = a.shrink
            rows += run_f(data, m, f, sets, methods, a.seed, writer, a.dataset, a.k, extra)
            fh.flush()
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
