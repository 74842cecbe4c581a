"""Experiment 3: dependencies found and pairs computed with and without pruning (Alg. 5).

Per dataset and phi the dependency graph (Alg. 4) is built from all pairs and
from the pairs Alg. 5 selects (k = ceil and floor(d (1 - phi)); ceil matches the
paper's pair counts), with the MI of the true data (``--sources data``) and/or of
LDP estimates (reports at f = 0.5, 0.9); the paper's Table VII (Adult) is logged
beside.  Results: docs/RESULTS.md, section 3.  Run ``python -m pipelines.repro.exp3_pruning --help``.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 4, Alg. 5, Eq. 26, Tables VII-IX.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from . import runner

NAME = "exp3_pruning"
#: Table VII of the paper (Adult), phi = 0.1 ... 0.5.
PAPER = {
    "adult": {"phi": (0.1, 0.2, 0.3, 0.4, 0.5), "without": (102, 42, 24, 14, 8),
              "with": (88, 38, 22, 12, 6), "pairs_without": 105, "pairs_with": (91, 66, 55, 36, 28)},
}
KEY = ("dataset", "sampling", "source", "f", "phi", "rounding")
SOURCE_FS = (0.5, 0.9)  # f of the reports of estimator sources


def paper_value(dataset: str, phi: float, col: str):
    """The paper's number for a cell of Table VII, or None when we have none."""
    p = PAPER.get(dataset)
    if p is None or phi not in p["phi"]:
        return None
    v = p[col]
    return v[p["phi"].index(phi)] if isinstance(v, tuple) else v


def source_for(ds, src: str, f: float, seed: int):
    """A marginal source: the data itself or an estimator over LDP reports of it."""
    from lopub.dependency.cache import MarginalCache

    if src == "data":
        return MarginalCache(ds)
    return MarginalCache(runner.make_estimator(runner.encode(ds, f, seed), src))


def one_row(cache, name: str, smp: str, src: str, f: float, phi: float, rounding: str, n: int) -> dict:
    """Both graphs for one configuration.

    ``cache`` is shared across phi and rounding (the pairwise estimates do not
    depend on them); the pairs each variant computes are counted by the graph
    functions themselves, not by cache misses.
    """
    from lopub.dependency.graph import dependency_graph
    from lopub.dependency.pruning import pruned_dependency_graph

    full = dependency_graph(cache, phi)
    pr = pruned_dependency_graph(cache, phi, rounding=rounding)
    ef, ep = set(full.edges), set(pr.edges)
    return {"dataset": name, "sampling": smp, "source": src, "f": f if src != "data" else 0.0, "phi": phi,
            "rounding": rounding, "variant": pr.stats["variant"], "n": n,
            "pairs_without": full.stats["pairs_computed"], "deps_without": len(ef),
            "pairs_with": pr.stats["pairs_computed"], "deps_with": len(ep),
            "lost_by_pruning": len(ef - ep), "added_by_pruning": len(ep - ef),
            "lost_edges": ";".join("-".join(e) for e in sorted(ef - ep)),
            # attributes ranked after the first k (nonbinary: no pair touching them is tested;
            # binary: no pair among them is tested)
            "beyond_k": ";".join(pr.stats["ranking"][pr.stats["k"]:]),
            "paper_deps_without": paper_value(name, phi, "without"),
            "paper_deps_with": paper_value(name, phi, "with"),
            "paper_pairs_with": paper_value(name, phi, "pairs_with")}


def _caption(name: str, g: pd.DataFrame) -> str:
    fs = sorted(g.f[g.source != "data"].unique())
    return runner.privacy_caption([name], fs) if fs else "MI of the true data: no privacy cost"


def plot(df: pd.DataFrame, out) -> list:
    """One PNG per dataset: dependencies (ceil rounding) and pairs computed vs phi, with the paper's."""
    paths = []
    for name, g in df.groupby("dataset"):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
        for i, ((smp, src, f), h) in enumerate(g[g.rounding == "ceil"].groupby(["sampling", "source", "f"])):
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
        paths.append(runner.save_figure(fig, out / f"pruning_{name}.png", _caption(name, g)))
    return paths


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = runner.base_parser(NAME, __doc__.splitlines()[0])
    p.add_argument("--sources", nargs="+", default=["data", "em"],
                   help="'data' (MI of the true data) and/or estimator names (MI of LDP estimates)")
    p.add_argument("--samplings", nargs="+", default=["full", "paper"], choices=["full", "paper"],
                   help="all records and/or the paper's sampling (10%% Adult, 50%% retail)")
    args, log = runner.start(p, argv, "pruning.csv", KEY)
    sources = ["data"] if args.quick else args.sources
    smps = ["full"] if args.quick else args.samplings
    todo = [(n, smp, s, f, phi, r) for n in args.datasets for smp in smps for s in sources
            for f in ([0.0] if s == "data" else SOURCE_FS)
            for phi in runner.DATA[n].phis for r in ("ceil", "floor")]
    prog = runner.Progress(len(todo), NAME)
    data, caches = {}, {}
    for name, smp, src, f, phi, rnd in todo:
        if log.done(dataset=name, sampling=smp, source=src, f=f, phi=phi, rounding=rnd):
            prog.step(skipped=True)
            continue
        if (name, smp) not in data:
            full = runner.load_data(name, rows=args.rows, seed=args.seed)
            data[name, smp] = runner.paper_sample(full, name, smp, args.seed)
        ds = data[name, smp]
        if (name, smp, src, f) not in caches:
            caches[name, smp, src, f] = source_for(ds, src, f, runner.seed_for(args.seed, "encode", name, smp, f))
        row = one_row(caches[name, smp, src, f], name, smp, src, f, phi, rnd, ds.n)
        log.append(row)
        prog.step(f"{name} {smp} {src} f={f:g} phi={phi} {rnd}: {row['deps_without']} deps without, "
                  f"{row['deps_with']} with, {row['pairs_with']} pairs")
    return runner.finish(args, SOURCE_FS, log, plot)


if __name__ == "__main__":
    raise SystemExit(main())
