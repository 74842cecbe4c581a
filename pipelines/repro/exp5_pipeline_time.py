"""Experiment 5: whole-pipeline time per estimator and f.

Per dataset, sampling and f the records are encoded once (the users' work, timed
apart); per estimator the server side runs end to end (``fit``: joints, MI,
graph, junction tree, clique joints; then synthesis, Alg. 6) and the seconds of
every stage are logged.  Results: docs/RESULTS.md, section 5.
Run ``python -m pipelines.repro.exp5_pipeline_time --help``.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 1-6, Sec. VI.
"""
from __future__ import annotations

import time

import matplotlib.pyplot as plt
import pandas as pd

from . import runner

NAME = "exp5_pipeline_time"
KEY = ("dataset", "sampling", "f", "method", "prune")


def time_pipeline(reports, method: str, phi: float, seed: int) -> dict:
    """Fit + synthesize once; seconds per stage and the model size."""
    from lopub.pipeline.steps import fit
    from lopub.publish.synthesize import sample_codes

    t0 = time.perf_counter()
    res = fit(reports, estimator=runner.make_estimator(reports, method), phi=phi, prune=False,
              release="cliques", structure="phi")  # the paper's release, reproduced
    model, rep = res.model, res.report.to_dict()
    t1 = time.perf_counter()
    sample_codes(model, reports.n, rng=seed)
    t2 = time.perf_counter()
    s = rep["seconds"]
    return {"fit_seconds": t1 - t0, "synth_seconds": t2 - t1, "total_seconds": t2 - t0,
            "estimation_seconds": s.get("estimation"), "graph_seconds": s.get("graph"),
            "junction_tree_seconds": s.get("junction_tree"), "clique_seconds": s.get("clique_joints"),
            "estimates": rep["estimates"], "pairs_computed": rep["pairs_computed"], "edges": rep["edges"],
            "cliques": len(rep["cliques"]), "max_clique_cells": max(rep["clique_cells"])}


def plot(df: pd.DataFrame, out) -> list:
    """One PNG per dataset/sampling: total server time vs f per estimator (log scale)."""
    paths = []
    for (name, smp), g in df.groupby(["dataset", "sampling"]):
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        runner.curves(ax, g, "method", "f", "total_seconds")
        ax.set(xlabel="f", ylabel="seconds (fit + synthesize)", yscale="log",
               title=f"{name} ({smp}, n={int(g.n.iloc[0])}): whole pipeline")
        ax.legend(fontsize=7)
        paths.append(runner.save_figure(fig, out / f"pipeline_time_{name}_{smp}.png",
                                        runner.privacy_caption([name], sorted(g.f.unique()))))
    return paths


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = runner.base_parser(NAME, __doc__.splitlines()[0], methods=runner.METHODS)
    p.add_argument("--samplings", nargs="+", default=["full"], choices=["paper", "full"])
    args, log = runner.start(p, argv, "pipeline_time.csv", KEY)
    fs = runner.resolve_fs(args)
    samplings = ["paper"] if args.quick and args.samplings == ["full"] else args.samplings
    if args.redo:
        log.drop(dataset=args.datasets, sampling=samplings, f=fs, method=args.methods)
    prog = runner.Progress(len(args.datasets) * len(samplings) * len(fs) * len(args.methods), NAME)

    def jobs(name, smp, f):  # (Alg. 5 pruning: experiment 3)
        return [{"dataset": name, "sampling": smp, "f": f, "method": m, "prune": False} for m in args.methods]

    for name, smp, f, part, rep, left, enc in runner.blocks(args, log, prog, samplings, fs, jobs):
        for job in left:
            m = job["method"]
            row = {**job, "n": part.n, "phi": runner.DATA[name].phi, "encode_seconds": enc,
                   **time_pipeline(rep, m, runner.DATA[name].phi, runner.seed_for(args.seed, "synth", name, f, m)),
                   "eps_per_record": rep.spec.epsilon}
            log.append(row)
            prog.step(f"{name} {smp} f={f:g} {m}: {row['total_seconds']:.1f}s ({row['edges']} edges)")
    return runner.finish(args, fs, log, plot)


if __name__ == "__main__":
    raise SystemExit(main())
