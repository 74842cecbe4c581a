"""Experiment 2: correlation identification vs f (accuracy, added, lost edges) per estimator (Alg. 4).

For each dataset and f the records are encoded once; each estimator's pairwise joints give a
dependency graph at the dataset's phi, compared with the graph of the true data.
Results: docs/RESULTS.md, section 2.  Run ``python -m pipelines.repro.exp2_correlation --help``.
"""
from __future__ import annotations

import matplotlib.pyplot as plt

from lopub.dependency.cache import MarginalCache
from lopub.dependency.graph import dependency_graph
from lopub.publish.evaluate import correlation_identification
from pipelines.harness.common import timed

from . import runner

NAME = "exp2_correlation"
KEY = ("dataset", "sampling", "f", "method")


def identify(job: dict, part, reports, truths: dict) -> dict:
    """One estimator's dependency graph and its agreement with the graph of the true data."""
    phi = runner.DATA[job["dataset"]].phi
    if (job["dataset"], job["sampling"]) not in truths:
        truths[job["dataset"], job["sampling"]] = dependency_graph(MarginalCache(part), phi)
    truth = truths[job["dataset"], job["sampling"]]
    g, sec, _ = timed(lambda: dependency_graph(MarginalCache(runner.make_estimator(reports, job["method"])), phi))
    ci = correlation_identification(g.edges, truth.edges, truth.domain.attrs)
    return {**job, "phi": phi, "n": part.n,
            **{k: ci[k] for k in ("accuracy", "added", "lost", "true_edges", "found_edges", "pairs")},
            "seconds": sec, **{k: ";".join("-".join(e) for e in ci[k]) for k in ("added_edges", "lost_edges")},
            "eps_per_record": reports.spec.epsilon}


def plot(df, out) -> None:
    """One PNG per dataset and sampling: accuracy, added and lost edges vs f per method."""
    for (name, smp), g in df.groupby(["dataset", "sampling"]):
        fig, axes = plt.subplots(1, 3, figsize=(13, 4))
        te = int(g.true_edges.iloc[0])
        for ax, col, title in zip(axes, ("accuracy", "added", "lost"), ("accuracy", "added edges", "lost edges")):
            runner.curves(ax, g, "method", "f", col)
            ax.set(xlabel="f", ylabel=title, title=title)
            ax.legend(fontsize=7)
        fig.suptitle(f"{name}: correlation identification ({smp} data, n={int(g.n.iloc[0])}, "
                     f"phi={g.phi.iloc[0]:g}, {te} true edges)")
        axes[2].axhline(te, color="grey", lw=0.8)
        axes[2].text(g.f.min(), te, f" true edges: {te}", fontsize=7, va="bottom")
        runner.save_figure(fig, out / f"correlation_{name}_{smp}.png",
                           runner.privacy_caption([name], sorted(g.f.unique())))


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = runner.parser(NAME, __doc__, samplings=["full"])
    args, log = runner.start(p, argv, "correlation.csv", KEY, quick={"samplings": ["paper"]})
    jobs = [{"dataset": name, "sampling": smp, "f": f, "method": m}
            for name in args.datasets for smp in args.samplings for f in args.fs for m in args.methods]
    truths: dict = {}
    runner.run(args, log, NAME, jobs, lambda job, part, reports, _: identify(job, part, reports, truths))
    return runner.finish(args, log, plot)


if __name__ == "__main__":
    raise SystemExit(main())
