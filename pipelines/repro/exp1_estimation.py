"""Experiment 1: estimation time and AVD of k-way marginals vs f, per estimator (Alg. 1-3, Eq. 32).

Per dataset, sampling (the paper's 10% of Adult / 50% of retail, or all records) and f, each estimator
estimates the joint of ``--subsets`` random k-subsets.  Results: docs/RESULTS.md, section 1.
Run ``python -m pipelines.repro.exp1_estimation --help``.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter

from lopub.io import atomic_write_text
from pipelines.harness.common import timed

from . import runner

NAME = "exp1_estimation"
KEY = ("dataset", "sampling", "k", "f", "method", "subset")
PAPER_NOTE = "paper (VI-B): retail EM AVD ~0.28 at f=0.9, Lasso ~0.1;\n  Lasso ~1000x faster than EM"


def estimate(job: dict, part, reports, seed: int) -> dict:
    """One marginal of a seeded random k-subset of attributes (the same for every f and method), from a
    fresh estimator session: AVD, time, meta."""
    rng = np.random.default_rng(runner.seed_for(seed, "subset", job["dataset"], job["k"], job["subset"]))
    attrs = [part.domain.attrs[j] for j in np.sort(rng.choice(len(part.domain), size=job["k"], replace=False))]
    truth = part.project(attrs)
    est, sec, _ = timed(lambda: runner.make_estimator(reports, job["method"]).marginal(attrs))
    return {**job, "attrs": "|".join(attrs), "n": part.n, "avd": truth.avd(est), "seconds": sec,
            "iterations": est.meta.get("iterations", ""), "converged": est.meta.get("converged", ""),
            "cells": int(np.prod(truth.values.shape)), "eps_per_attribute": max(reports.spec.epsilon_per_attribute),
            "eps_per_record": reports.spec.epsilon}


def plot(s, out) -> None:
    """One PNG per dataset and k: AVD and time vs f, paper sampling and full data side by side."""
    for (name, k), g in s.groupby(["dataset", "k"]):
        samplings = sorted(g.sampling.unique(), reverse=True)
        fig, axes = plt.subplots(2, len(samplings), figsize=(max(6.5, 5 * len(samplings)), 7), squeeze=False)
        for (top, bottom), smp in zip(axes.T, samplings):
            h = g[g.sampling == smp]
            for method, mm in h.groupby("method"):
                mm = mm.sort_values("f")
                top.errorbar(mm.f, mm.avd_mean, yerr=mm.avd_std, marker="o", capsize=3, label=method)
            runner.curves(bottom, h, "method", "f", "seconds_median")
            top.set(title=f"{name} k={k}, {smp} (n={int(h.n.iloc[0])}, {int(h.subsets.min())} subsets)",
                    xlabel="f", ylabel="AVD (Eq. 32)")
            bottom.set(xlabel="f", ylabel="median seconds per marginal", yscale="log")
            bottom.yaxis.set_minor_formatter(NullFormatter())
            top.legend(fontsize=7)
            bottom.legend(fontsize=7)
        fig.subplots_adjust(hspace=0.35)
        caption = runner.privacy_caption([name], sorted(s.f.unique())) + "\n" + PAPER_NOTE
        runner.save_figure(fig, out / f"avd_time_{name}_k{k}.png", caption)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = runner.parser(NAME, __doc__, samplings=["paper", "full"])
    p.add_argument("--subsets", type=int, default=100, help="random attribute subsets per (dataset, k)")
    p.add_argument("--ks", nargs="+", type=int, default=None, help="override k (default: Adult 2 3, retail 3 5)")
    args, log = runner.start(p, argv, "estimation.csv", KEY, quick={"subsets": 2, "samplings": ["paper"]})
    jobs = [{"dataset": name, "sampling": smp, "k": k, "f": f, "method": m, "subset": i}
            for name in args.datasets for smp in args.samplings for f in args.fs
            for k in args.ks or runner.DATA[name].ks for i in range(args.subsets) for m in args.methods]
    runner.run(args, log, NAME, jobs, lambda job, part, reports, _: estimate(job, part, reports, args.seed))
    g = log.frame().groupby(["dataset", "sampling", "k", "f", "method"])
    summary = g.agg(subsets=("avd", "size"), avd_mean=("avd", "mean"), avd_std=("avd", "std"),
                    seconds_mean=("seconds", "mean"), seconds_median=("seconds", "median"),
                    n=("n", "first"), eps_per_record=("eps_per_record", "first")).reset_index()
    atomic_write_text(args.out / "summary.csv", summary.to_csv(index=False, float_format="%.6g"))
    return runner.finish(args, log, lambda _, out: plot(summary, out))


if __name__ == "__main__":
    raise SystemExit(main())
