"""Experiment 2: correlation identification vs f (accuracy, added, lost edges) per estimator.

For each dataset and f the records are encoded once; each estimator's pairwise
joints give a dependency graph (Alg. 4 at the dataset's phi), compared with the
graph of the true data.  Method and results: docs/RESULTS.md, section 2.
Run ``python -m pipelines.repro.exp2_correlation --help``.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 4, Eq. 24, Eq. 26, Sec. VI-C.
"""
from __future__ import annotations

import time

import matplotlib.pyplot as plt
import pandas as pd

from . import runner

NAME = "exp2_correlation"
KEY = ("dataset", "sampling", "f", "method")


def true_graph(ds, phi: float):
    """Dependency graph of the true data (the reference)."""
    from lopub.dependency.cache import MarginalCache
    from lopub.dependency.graph import dependency_graph

    return dependency_graph(MarginalCache(ds), phi)


def identify(reports, method: str, phi: float, truth) -> dict:
    """Estimated dependency graph of one estimator and its agreement with ``truth``."""
    from lopub.dependency.cache import MarginalCache
    from lopub.dependency.graph import dependency_graph
    from lopub.publish.evaluate import correlation_identification

    t0 = time.perf_counter()
    g = dependency_graph(MarginalCache(runner.make_estimator(reports, method)), phi)
    sec = time.perf_counter() - t0
    ci = correlation_identification(g.edges, truth.edges, truth.domain.attrs)
    return {**{k: ci[k] for k in ("accuracy", "added", "lost", "true_edges", "found_edges", "pairs")},
            "seconds": sec, **{k: ";".join("-".join(e) for e in ci[k]) for k in ("added_edges", "lost_edges")}}


def plot(df: pd.DataFrame, out) -> list:
    """One PNG per dataset and sampling: accuracy, added and lost edges vs f per method."""
    paths = []
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
        paths.append(runner.save_figure(fig, out / f"correlation_{name}_{smp}.png",
                                        runner.privacy_caption([name], sorted(g.f.unique()))))
    return paths


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = runner.base_parser(NAME, __doc__.splitlines()[0], methods=runner.METHODS)
    p.add_argument("--samplings", nargs="+", default=["full"], choices=["paper", "full"],
                   help="records used: all ('full') or the paper's share ('paper')")
    p.add_argument("--phi", type=float, default=None, help="override phi (default Adult 0.4, retail 0.25)")
    args, log = runner.start(p, argv, "correlation.csv", KEY)
    fs = runner.resolve_fs(args)
    samplings = ["paper"] if args.quick and args.samplings == ["full"] else args.samplings
    if args.redo:
        log.drop(dataset=args.datasets, sampling=samplings, f=fs, method=args.methods)
    prog = runner.Progress(len(args.datasets) * len(samplings) * len(fs) * len(args.methods), NAME)

    def jobs(name, smp, f):
        return [{"dataset": name, "sampling": smp, "f": f, "method": m} for m in args.methods]

    truths: dict = {}
    for name, smp, f, part, rep, left, _ in runner.blocks(args, log, prog, samplings, fs, jobs):
        phi = args.phi or runner.DATA[name].phi
        if (name, smp) not in truths:
            truths[name, smp] = true_graph(part, phi)
        for job in left:
            row = {**job, "phi": phi, "n": part.n, **identify(rep, job["method"], phi, truths[name, smp]),
                   "eps_per_record": rep.spec.epsilon}
            log.append(row)
            prog.step(f"{name} {smp} f={f:g} {job['method']}: accuracy {row['accuracy']:.3f}, "
                      f"+{row['added']} -{row['lost']} ({row['seconds']:.1f}s)")
    return runner.finish(args, fs, log, plot)


if __name__ == "__main__":
    raise SystemExit(main())
