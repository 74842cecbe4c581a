"""Experiment 4: classification on the synthetic release (ML efficacy; Alg. 4-6, Sec. VI-D).

A linear SVM (binary targets) and a random forest (every attribute), trained on a release fitted to the
encoded training split, are tested on the real test split, beside baselines.  Nothing is tuned.
Results: docs/RESULTS.md, section 4.  Run ``python -m pipelines.repro.exp4_classification --help``.
"""
from __future__ import annotations

import time

import matplotlib.pyplot as plt
import numpy as np

from lopub.dependency import MarginalCache
from lopub.pipeline.steps import fit, independence_model
from lopub.publish.evaluate import baseline_accuracy, classification_accuracy
from lopub.publish.synthesize import sample_codes
from pipelines.harness.common import bloom_reports, bloom_spec

from . import runner

NAME = "exp4_classification"
KEY = ("dataset", "f", "release", "classifier")
PAPER_NOTE = "paper (VI-D): worst RF accuracy 67% retail, 42% Adult; random guessing 50% / 15%"


def classify(train, test, *, trees: int, max_train: int, seed: int) -> dict[str, dict[str, float]]:
    """Accuracy per target attribute for the SVM (binary targets) and the random forest (a seed per target)."""
    return classification_accuracy(train, test, trees=trees, max_train=max_train, rng=seed, random_state={
        a: runner.seed_for(seed, "rf", a) % 2**31 for a in train.domain.attrs})


def baselines(train, test) -> dict[str, dict[str, dict[str, float]]]:
    """Majority-class rate (train's mode scored on test) and random guessing, per target."""
    binary = [a for a, s in zip(train.domain.attrs, train.domain.sizes) if s == 2]
    return {rel: {"rf": acc, "svm": {a: acc[a] for a in binary}} for rel, acc in baseline_accuracy(train, test).items()}


def releases(train, f: float, methods, phi: float, seed: int, independent: bool, budget: int):
    """Yield (label, synthetic Dataset, fit seconds, model facts) per method (the paper's release),
    and after the first one the independence release of its one-way marginals."""
    reports = bloom_reports(train, runner.seed_for(seed, "encode-train", f), f=f)
    for m in methods:
        t0 = time.perf_counter()
        cache = MarginalCache(runner.make_estimator(reports, m))
        res = fit(reports, estimator=cache, phi=phi, clique_budget=budget, release="cliques", structure="phi")
        rep = res.report.to_dict()
        syn = sample_codes(res.model, train.n, rng=runner.seed_for(seed, "synth", f, m))
        yield m, syn, time.perf_counter() - t0, {"edges": rep["edges"], "clique_budget": budget,
                                                 "dropped_edges": len(rep["dropped_edges"]),
                                                 "max_clique_cells": max(rep["clique_cells"])}
        if independent and m == methods[0]:
            ind = independence_model(cache, n=train.n)
            yield "independent", sample_codes(ind, train.n, rng=runner.seed_for(seed, "ind", f)), 0.0, {}


def log_rows(log, name, f, release, accs: dict, n_train, extra=None) -> None:
    """One row per classifier not yet logged: mean and worst accuracy over targets, per-target list."""
    for clf in ("svm", "rf"):
        acc = accs[clf]
        if not acc or log.done(dataset=name, f=f, release=release, classifier=clf):
            continue
        vals = np.array(list(acc.values()))
        log.append({"dataset": name, "f": f, "release": release, "classifier": clf,
                    "mean_accuracy": float(vals.mean()), "worst_accuracy": float(vals.min()),
                    "targets": len(vals), "n_train": n_train,
                    "fit_seconds": "", "edges": "", "eps_per_record": "", "clique_budget": "",
                    "dropped_edges": "", "max_clique_cells": "", **(extra or {}),
                    "per_target": ";".join(f"{a}={v:.4f}" for a, v in acc.items())})


def plot(df, out) -> None:
    """One PNG per dataset: mean RF and SVM accuracy vs f per release, baselines as lines."""
    for name, g in df.groupby("dataset"):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for ax, clf, what in zip(axes, ("svm", "rf"), ("SVM, binary targets", "random forest, all targets")):
            h = g[g.classifier == clf]
            runner.curves(ax, h[h.f > 0], "release", "f", "mean_accuracy", lambda r: "x:" if "indep" in r else "o-")
            for rel, style in (("real", "-"), ("majority", "--"), ("random", ":")):
                v = h[h.release == rel].mean_accuracy
                if len(v):
                    ax.axhline(float(v.iloc[0]), ls=style, color="k", lw=0.9, label=f"{rel} ({float(v.iloc[0]):.3f})")
            ax.set(xlabel="f", ylabel="mean test accuracy", title=f"{name}: {what}")
            ax.legend(fontsize=6)
        caption = runner.privacy_caption([name], sorted(g.f[g.f > 0].unique())) + "\n" + PAPER_NOTE
        runner.save_figure(fig, out / f"classification_{name}.png", caption)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = runner.parser(NAME, __doc__)
    p.add_argument("--trees", type=int, default=50, help="random forest size (fixed, not tuned)")
    p.add_argument("--clique-budget", type=int, default=50000,
                   help="largest clique joint in cells (lopub.pipeline.steps.fit; its default is 50,000)")
    p.add_argument("--max-train", type=int, default=20000,
                   help="classifiers see at most this many (seeded) training records")
    args, log = runner.start(p, argv, "classification.csv", KEY, quick={"methods": list(runner.METHODS)[:2]})
    methods = args.methods
    if args.redo:  # the method releases only; baselines and the independence release stay
        log.drop(dataset=args.datasets, f=args.fs, release=methods)
    step = runner.progress(NAME, len(args.datasets) * (len(args.fs) + 1))
    for name in args.datasets:
        tr, te = runner.train_test(name, rows=args.rows, seed=args.seed)
        kw = {"trees": args.trees, "max_train": args.max_train, "seed": runner.seed_for(args.seed, name)}
        for rel, accs in baselines(tr, te).items():
            log_rows(log, name, 0.0, rel, accs, tr.n)
        if not log.done(dataset=name, f=0.0, release="real", classifier="rf"):
            log_rows(log, name, 0.0, "real", classify(tr, te, **kw), tr.n)
        step()
        for f in args.fs:
            left = [m for m in methods if not log.done(dataset=name, f=f, release=m, classifier="rf")]
            ind = not log.done(dataset=name, f=f, release="independent", classifier="rf")
            if left or ind:  # (the independence release needs one estimator session)
                eps = bloom_spec(tr.domain, f=f).epsilon
                for rel, syn, sec, info in releases(tr, f, left or methods[:1], runner.DATA[name].phi, args.seed,
                                                    ind, args.clique_budget):
                    if not log.done(dataset=name, f=f, release=rel, classifier="rf"):
                        extra = {"fit_seconds": sec, "eps_per_record": eps, **info}
                        log_rows(log, name, f, rel, classify(syn, te, **kw), tr.n, extra)
            step()
    return runner.finish(args, log, plot)


if __name__ == "__main__":
    raise SystemExit(main())
