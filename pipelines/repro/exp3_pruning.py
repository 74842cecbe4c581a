"""Experiment 3: dependencies found and pairs computed with and without pruning (Alg. 4, 5; Tables VII-IX).

The dependency graph from all pairs and from the pairs Alg. 5 selects (k = ceil or floor(d (1 - phi))), with
the MI of the true data and/or of LDP estimates, beside the paper's Table VII (Adult).
Results: docs/RESULTS.md, section 3.  Run ``python -m pipelines.repro.exp3_pruning --help``.
"""
from __future__ import annotations

import matplotlib.pyplot as plt

from lopub.dependency.cache import MarginalCache
from lopub.dependency.graph import dependency_graph
from lopub.dependency.pruning import pruned_dependency_graph

from . import runner

NAME = "exp3_pruning"
#: Table VII of the paper (Adult), phi = 0.1 ... 0.5.
PAPER = {
    "adult": {"phi": (0.1, 0.2, 0.3, 0.4, 0.5), "without": (102, 42, 24, 14, 8), "with": (88, 38, 22, 12, 6),
              "pairs_with": (91, 66, 55, 36, 28)},  # and 105 pairs without pruning
}
KEY = ("dataset", "sampling", "source", "f", "phi", "rounding")


def paper_value(dataset: str, phi: float, col: str):
    """The paper's number for a cell of Table VII, or None when we have none."""
    p = PAPER.get(dataset)
    if p is None or phi not in p["phi"]:
        return None
    return p[col][p["phi"].index(phi)]


def compare(job: dict, part, reports, caches: dict) -> dict:
    """Both graphs for one configuration; the marginals are shared across phi and rounding, and the
    pairs each variant computes are counted by the graph functions, not by cache misses."""
    source = tuple(job[c] for c in ("dataset", "sampling", "source", "f"))
    if source not in caches:
        caches[source] = MarginalCache(part if reports is None else runner.make_estimator(reports, job["source"]))
    full = dependency_graph(caches[source], job["phi"])
    pr = pruned_dependency_graph(caches[source], job["phi"], rounding=job["rounding"])
    ef, ep = set(full.edges), set(pr.edges)
    return {**job, "variant": pr.stats["variant"], "n": part.n,
            "pairs_without": full.stats["pairs_computed"], "deps_without": len(ef),
            "pairs_with": pr.stats["pairs_computed"], "deps_with": len(ep),
            "lost_by_pruning": len(ef - ep), "added_by_pruning": len(ep - ef),
            "lost_edges": ";".join("-".join(e) for e in sorted(ef - ep)),
            # attributes ranked after the first k (nonbinary: no pair touching them is tested;
            # binary: no pair among them is tested)
            "beyond_k": ";".join(pr.stats["ranking"][pr.stats["k"]:]),
            "paper_deps_without": paper_value(job["dataset"], job["phi"], "without"),
            "paper_deps_with": paper_value(job["dataset"], job["phi"], "with"),
            "paper_pairs_with": paper_value(job["dataset"], job["phi"], "pairs_with")}


def plot(df, out) -> None:
    """One PNG per dataset: dependencies (ceil rounding) and pairs computed vs phi, with the paper's."""
    for name, g in df.groupby("dataset"):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
        for (smp, src, f), h in g[g.rounding == "ceil"].groupby(["sampling", "source", "f"]):
            h = h.sort_values("phi")
            lab = ("true data" if src == "data" else f"{src} f={f:g}") + f", {smp}"
            line, = axes[0].plot(h.phi, h.deps_without, "o-", label=f"without: {lab}")
            axes[0].plot(h.phi, h.deps_with, "s--", color=line.get_color(), label=f"with: {lab}")
        for rnd, h in g.groupby("rounding"):
            h = h.drop_duplicates("phi").sort_values("phi")
            axes[1].plot(h.phi, h.pairs_with, "s--", label=f"with pruning ({rnd})")
        if name in PAPER:
            p = PAPER[name]
            axes[0].plot(p["phi"], p["without"], "k^:", lw=2, label="paper, without")
            axes[0].plot(p["phi"], p["with"], "kv:", lw=2, label="paper, with")
            axes[1].plot(p["phi"], p["pairs_with"], "kv:", label="paper, with")
        d = int(g.pairs_without.iloc[0])
        axes[1].axhline(d, color="grey", lw=0.8, label=f"without pruning ({d})")
        axes[0].set(xlabel="phi", ylabel="dependencies (edges)", title=f"{name}: dependencies (k by ceil)")
        axes[1].set(xlabel="phi", ylabel="pairs computed", title=f"{name}: MI computations")
        for ax in axes:
            ax.legend(fontsize=6)
        fs = sorted(g.f[g.source != "data"].unique())
        caption = runner.privacy_caption([name], fs) if fs else "MI of the true data: no privacy cost"
        runner.save_figure(fig, out / f"pruning_{name}.png", caption)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = runner.parser(NAME, __doc__, methods=False, fs=(0.5, 0.9), samplings=["full", "paper"])
    p.add_argument("--sources", nargs="+", default=["data", "em"],
                   help="'data' (MI of the true data) and/or estimator names (MI of LDP estimates)")
    args, log = runner.start(p, argv, "pruning.csv", KEY, quick={"sources": ["data"], "samplings": ["full"]})
    jobs = [{"dataset": name, "sampling": smp, "source": src, "f": f, "phi": phi, "rounding": rnd}
            for name in args.datasets for smp in args.samplings for src in args.sources
            for f in ([0.0] if src == "data" else args.fs) for phi in runner.DATA[name].phis
            for rnd in ("ceil", "floor")]
    caches: dict = {}
    runner.run(args, log, NAME, jobs, lambda job, part, reports, _: compare(job, part, reports, caches))
    return runner.finish(args, log, plot)


if __name__ == "__main__":
    raise SystemExit(main())
