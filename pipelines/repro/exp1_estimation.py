"""Experiment 1: estimation time and AVD of k-way marginals vs f, per estimator.

Per dataset, sampling ("paper": 10% of Adult / 50% of retail; "full") and f the
records are encoded once; for each k and each of ``--subsets`` seeded random
k-subsets every estimator estimates the joint from a fresh session, and its AVD
(Eq. 32) and wall time are logged.  Method, the paper's figures and ours:
docs/RESULTS.md, section 1.  Run ``python -m pipelines.repro.exp1_estimation --help``.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 1-3, Eq. 32, Sec. VI-B.
"""
from __future__ import annotations

import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import NullFormatter

from . import runner

NAME = "exp1_estimation"
KEY = ("dataset", "sampling", "k", "f", "method", "subset")
PAPER_NOTE = "paper (VI-B): retail EM AVD ~0.28 at f=0.9, Lasso ~0.1;\n  Lasso ~1000x faster than EM"


def subsets(ds, name: str, k: int, count: int, seed: int) -> list[list[str]]:
    """``count`` seeded random k-subsets of the attributes (shared by all f and methods)."""
    attrs = list(ds.domain.attrs)
    out = []
    for i in range(count):
        rng = np.random.default_rng(runner.seed_for(seed, "subset", name, k, i))
        idx = np.sort(rng.choice(len(attrs), size=k, replace=False))
        out.append([attrs[j] for j in idx])
    return out


def estimate_row(reports, truth, attrs: list[str], method: str) -> dict:
    """Estimate one marginal with ``method`` from a fresh session; AVD, time, meta."""
    t0 = time.perf_counter()
    est = runner.make_estimator(reports, method).marginal(attrs)
    sec = time.perf_counter() - t0
    meta = est.meta
    return {"avd": truth.avd(est), "seconds": sec,
            "iterations": meta.get("iterations", ""), "converged": meta.get("converged", ""),
            "cells": int(np.prod(truth.values.shape))}


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Mean/std AVD and time per configuration, with the number of subsets behind each mean."""
    g = df.groupby(["dataset", "sampling", "k", "f", "method"])
    s = g.agg(subsets=("avd", "size"), avd_mean=("avd", "mean"), avd_std=("avd", "std"),
              seconds_mean=("seconds", "mean"), seconds_median=("seconds", "median"),
              n=("n", "first"), eps_per_record=("eps_per_record", "first"))
    return s.reset_index()


def plot(summary: pd.DataFrame, out, fs) -> list:
    """One PNG per dataset and k: AVD and time vs f, paper sampling and full data side by side."""
    paths = []
    for (name, k), g in summary.groupby(["dataset", "k"]):
        samplings = sorted(g.sampling.unique(), reverse=True)
        fig, axes = plt.subplots(2, len(samplings), figsize=(max(6.5, 5 * len(samplings)), 7),
                                 squeeze=False)
        for c, smp in enumerate(samplings):
            h = g[g.sampling == smp]
            for method, mm in h.groupby("method"):
                mm = mm.sort_values("f")
                axes[0, c].errorbar(mm.f, mm.avd_mean, yerr=mm.avd_std, marker="o", capsize=3,
                                    label=method)
            runner.curves(axes[1, c], h, "method", "f", "seconds_median")
            nsub = int(h.subsets.min())
            axes[0, c].set(title=f"{name} k={k}, {smp} (n={int(h.n.iloc[0])}, {nsub} subsets)",
                           xlabel="f", ylabel="AVD (Eq. 32)")
            axes[1, c].set(xlabel="f", ylabel="median seconds per marginal", yscale="log")
            axes[1, c].yaxis.set_minor_formatter(NullFormatter())
            axes[0, c].legend(fontsize=7)
            axes[1, c].legend(fontsize=7)
        fig.subplots_adjust(hspace=0.35)
        paths.append(runner.save_figure(fig, out / f"avd_time_{name}_k{k}.png",
                                        runner.privacy_caption([name], fs) + "\n" + PAPER_NOTE))
    return paths


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = runner.base_parser(NAME, __doc__.splitlines()[0], methods=runner.METHODS)
    p.add_argument("--subsets", type=int, default=None,
                   help="random attribute subsets per (dataset, k) (paper: 100; --quick: 2)")
    p.add_argument("--samplings", nargs="+", default=["paper", "full"], choices=["paper", "full"])
    p.add_argument("--ks", nargs="+", type=int, default=None,
                   help="override k (default: Adult 2 3, retail 3 5)")
    args, log = runner.start(p, argv, "estimation.csv", KEY)
    count = args.subsets or (2 if args.quick else 100)
    samplings = ["paper"] if args.quick and args.samplings == ["paper", "full"] else args.samplings
    fs = runner.resolve_fs(args)
    if args.redo:
        log.drop(dataset=args.datasets, sampling=samplings, f=fs, method=args.methods)
    ks = {n: tuple(args.ks or runner.DATA[n].ks) for n in args.datasets}
    total = sum(len(ks[n]) * count * len(args.methods) * len(fs) * len(samplings) for n in args.datasets)
    prog = runner.Progress(total, NAME)

    def jobs(name, smp, f):
        return [{"dataset": name, "sampling": smp, "k": k, "f": f, "method": m, "subset": i}
                for k in ks[name] for i in range(count) for m in args.methods]

    for name, smp, f, part, reports, left, _ in runner.blocks(args, log, prog, samplings, fs, jobs):
        attrs = {k: subsets(part, name, k, count, args.seed) for k in ks[name]}
        spec = reports.spec
        for job in left:
            a = attrs[job["k"]][job["subset"]]
            row = {**job, "attrs": "|".join(a), "n": part.n,
                   **estimate_row(reports, part.project(a), a, job["method"]),
                   "eps_per_attribute": max(spec.epsilon_per_attribute), "eps_per_record": spec.epsilon}
            log.append(row)
            prog.step(f"{name} {smp} f={f:g} k={job['k']} #{job['subset']} {job['method']}: "
                      f"AVD {row['avd']:.3f} in {row['seconds']:.2f}s")
    summary = summarize(log.frame())
    runner.write_table(summary, args.out / "summary.csv")
    return runner.finish(args, fs, log, lambda _, out: plot(summary, out, sorted(summary.f.unique())))


if __name__ == "__main__":
    raise SystemExit(main())
