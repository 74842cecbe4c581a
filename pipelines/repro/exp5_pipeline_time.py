"""Experiment 5: whole-pipeline time per estimator and f (Alg. 1-6, Sec. VI).

Per dataset, sampling, f and estimator the server side runs end to end (``fit``, then synthesis) and the
seconds of every stage are logged.  Results: docs/RESULTS.md, section 5.
Run ``python -m pipelines.repro.exp5_pipeline_time --help``.
"""
from __future__ import annotations

import matplotlib.pyplot as plt

from lopub.pipeline.steps import fit
from lopub.publish.synthesize import sample_codes
from pipelines.harness.common import timed

from . import runner

NAME = "exp5_pipeline_time"
KEY = ("dataset", "sampling", "f", "method", "prune")


def time_pipeline(job: dict, part, reports, encode_seconds: float, seed: int) -> dict:
    """Fit (the paper's release, no pruning: that is experiment 3) and synthesize once; seconds per
    stage and the model size."""
    phi = runner.DATA[job["dataset"]].phi
    res, fit_sec, _ = timed(lambda: fit(reports, estimator=runner.make_estimator(reports, job["method"]), phi=phi,
                                        prune=False, release="cliques", structure="phi"))
    rep = res.report.to_dict()
    rng = runner.seed_for(seed, "synth", job["dataset"], job["f"], job["method"])
    _, synth_sec, _ = timed(lambda: sample_codes(res.model, reports.n, rng=rng))
    s = rep["seconds"]
    return {**job, "n": part.n, "phi": phi, "encode_seconds": encode_seconds,
            "fit_seconds": fit_sec, "synth_seconds": synth_sec, "total_seconds": fit_sec + synth_sec,
            "estimation_seconds": s.get("estimation"), "graph_seconds": s.get("graph"),
            "junction_tree_seconds": s.get("junction_tree"), "clique_seconds": s.get("clique_joints"),
            "estimates": rep["estimates"], "pairs_computed": rep["pairs_computed"], "edges": rep["edges"],
            "cliques": len(rep["cliques"]), "max_clique_cells": max(rep["clique_cells"]),
            "eps_per_record": reports.spec.epsilon}


def plot(df, out) -> None:
    """One PNG per dataset/sampling: total server time vs f per estimator (log scale)."""
    for (name, smp), g in df.groupby(["dataset", "sampling"]):
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        runner.curves(ax, g, "method", "f", "total_seconds")
        ax.set(xlabel="f", ylabel="seconds (fit + synthesize)", yscale="log",
               title=f"{name} ({smp}, n={int(g.n.iloc[0])}): whole pipeline")
        ax.legend(fontsize=7)
        runner.save_figure(fig, out / f"pipeline_time_{name}_{smp}.png",
                           runner.privacy_caption([name], sorted(g.f.unique())))


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = runner.parser(NAME, __doc__, samplings=["full"])
    args, log = runner.start(p, argv, "pipeline_time.csv", KEY, quick={"samplings": ["paper"]})
    jobs = [{"dataset": name, "sampling": smp, "f": f, "method": m, "prune": False}
            for name in args.datasets for smp in args.samplings for f in args.fs for m in args.methods]
    runner.run(args, log, NAME, jobs, lambda *block: time_pipeline(*block, seed=args.seed))
    return runner.finish(args, log, plot)


if __name__ == "__main__":
    raise SystemExit(main())
