"""Experiment 3: dependencies found and pairs computed with and without pruning (Alg. 5).

For each dataset and phi, the dependency graph (Alg. 4, edge iff MI >= tau of
Eq. 26) is built once from all pairs and once from the pairs Alg. 5 selects;
the script logs the number of dependencies (edges) of each, the pairs
computed, and the edges pruning loses or adds.  The MI comes from the true
data (``--sources data``) and/or from LDP estimates (``--sources em`` etc.,
reports encoded at ``--source-f``).  The paper's Table VII (Adult) is written
beside our numbers.

Run ``python -m pipelines.repro.exp3_pruning --help``.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 4, Alg. 5, Eq. 26, Tables VII-IX.
"""
from __future__ import annotations

import sys
import time

import matplotlib.pyplot as plt
import pandas as pd

from . import runner

NAME = "exp3_pruning"
#: Table VII of the paper (Adult), phi = 0.1 ... 0.5.
PAPER = {
    "adult": {"phi": (0.1, 0.2, 0.3, 0.4, 0.5), "without": (102, 42, 24, 14, 8),
              "with": (88, 38, 22, 12, 6), "pairs_without": 105, "pairs_with": (91, 66, 55, 36, 28)},
}
KEY = ("dataset", "source", "f", "phi", "rounding")


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


def one_row(ds, name: str, src: str, f: float, phi: float, rounding: str, seed: int) -> dict:
    """Both graphs for one configuration (a fresh cache each, so pairs are counted honestly)."""
    from lopub.dependency.graph import dependency_graph
    from lopub.dependency.pruning import pruned_dependency_graph

    t0 = time.perf_counter()
    full_cache = source_for(ds, src, f, seed)
    full = dependency_graph(full_cache, phi)
    t1 = time.perf_counter()
    pr = pruned_dependency_graph(source_for(ds, src, f, seed), phi, rounding=rounding)
    t2 = time.perf_counter()
    ef, ep = set(full.edges), set(pr.edges)
    return {"dataset": name, "source": src, "f": f if src != "data" else 0.0, "phi": phi,
            "rounding": rounding, "variant": pr.stats["variant"], "n": ds.n,
            "pairs_without": full.stats["pairs_computed"], "deps_without": len(ef),
            "pairs_with": pr.stats["pairs_computed"], "deps_with": len(ep),
            "lost_by_pruning": len(ef - ep), "added_by_pruning": len(ep - ef),
            "seconds_without": t1 - t0, "seconds_with": t2 - t1,
            "paper_deps_without": paper_value(name, phi, "without"),
            "paper_deps_with": paper_value(name, phi, "with"),
            "paper_pairs_with": paper_value(name, phi, "pairs_with")}


def plot(df: pd.DataFrame, out, caption: str) -> list:
    """One PNG per dataset: dependencies and pairs vs phi, ours and the paper's."""
    paths = []
    for name, g in df.groupby("dataset"):
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for (src, rnd), h in g.groupby(["source", "rounding"]):
            h = h.sort_values("phi")
            lab = ("true data" if src == "data" else f"{src} f={h.f.iloc[0]:g}") + f" ({rnd})"
            axes[0].plot(h.phi, h.deps_without, "o-", label=f"without pruning, {lab}")
            axes[0].plot(h.phi, h.deps_with, "s--", label=f"with pruning, {lab}")
            axes[1].plot(h.phi, h.pairs_with, "s--", label=f"with pruning, {lab}")
        if name in PAPER:
            p = PAPER[name]
            axes[0].plot(p["phi"], p["without"], "k^:", label="paper, without")
            axes[0].plot(p["phi"], p["with"], "kv:", label="paper, with")
            axes[1].plot(p["phi"], p["pairs_with"], "kv:", label="paper, with")
        d = int(g.pairs_without.iloc[0])
        axes[1].axhline(d, color="grey", lw=0.8, label=f"without pruning ({d})")
        axes[0].set(xlabel="phi", ylabel="dependencies (edges)", title=f"{name}: dependencies")
        axes[1].set(xlabel="phi", ylabel="pairs computed", title=f"{name}: MI computations")
        for ax in axes:
            ax.legend(fontsize=6)
        paths.append(runner.save_figure(fig, out / f"pruning_{name}.png", caption))
    return paths


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = runner.base_parser(NAME, __doc__.splitlines()[0])
    p.add_argument("--sources", nargs="+", default=["data", "em"],
                   help="'data' (MI of the true data) and/or estimator names (MI of LDP estimates)")
    p.add_argument("--source-f", type=float, default=0.5, help="f of the reports for estimator sources")
    p.add_argument("--roundings", nargs="+", default=["ceil", "floor"], choices=["ceil", "floor"],
                   help="k = ceil/floor(d (1 - phi)) in Alg. 5; ceil matches the paper's pair counts")
    args = p.parse_args(argv)
    sources = ["data"] if args.quick else args.sources
    runner.record_run(args.out, NAME, sys.argv[1:] if argv is None else argv)
    log = runner.ResultLog(args.out / "pruning.csv", KEY, fresh=args.fresh)
    todo = [(n, s, phi, r) for n in args.datasets for s in sources
            for phi in runner.DATA[n].phis for r in args.roundings]
    prog = runner.Progress(len(todo), NAME)
    data = {}
    for name, src, phi, rnd in todo:
        f = args.source_f if src != "data" else 0.0
        if log.done(dataset=name, source=src, f=f, phi=phi, rounding=rnd):
            prog.step(skipped=True)
            continue
        if name not in data:
            data[name] = runner.load_data(name, rows=args.rows, seed=args.seed)
        row = one_row(data[name], name, src, args.source_f, phi, rnd,
                      runner.seed_for(args.seed, NAME, name, src, args.source_f))
        log.append(row)
        prog.step(f"{name} {src} phi={phi} {rnd}: {row['deps_without']} deps without, "
                  f"{row['deps_with']} with, {row['pairs_with']} pairs")
    runner.write_privacy(args.out, args.datasets, [args.source_f])
    if not args.no_plot:
        plot(log.frame(), args.out, runner.privacy_caption(args.datasets, [args.source_f])
             if any(s != "data" for s in sources) else "MI of the true data: no privacy cost")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
