"""Experiment 4: classification on the synthetic release (ML efficacy).

The training split is encoded, a LoPub model fitted and a release of the
training split's size sampled (Alg. 4-6); a linear SVM (each binary attribute)
and a random forest (every attribute) trained on it are tested on the real
test split, beside the real training data, the independence release, the
majority class and random guessing.  Nothing is tuned.  Splits: Adult's
official files; retail 50/50 by ``runner.SPLIT_SEED``.  Method and results:
docs/RESULTS.md, section 4.  Run ``python -m pipelines.repro.exp4_classification --help``.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 4-6, Sec. VI-D.
"""
from __future__ import annotations

import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import runner

NAME = "exp4_classification"
KEY = ("dataset", "f", "release", "classifier")
PAPER_NOTE = "paper (VI-D): worst RF accuracy 67% retail, 42% Adult; random guessing 50% / 15%"


def _onehot(codes: np.ndarray, sizes) -> np.ndarray:
    """One-hot encode integer codes (n, c) with per-column sizes -> float32 (n, sum sizes)."""
    off = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    out = np.zeros((codes.shape[0], int(np.sum(sizes))), dtype=np.float32)
    out[np.arange(codes.shape[0])[:, None], codes.astype(np.int64) + off] = 1.0
    return out


def classify(train, test, *, trees: int, max_train: int, seed: int) -> dict[str, dict[str, float]]:
    """Accuracy per target attribute for the SVM (binary targets) and the random forest."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.svm import LinearSVC

    dom = train.domain
    sizes = np.asarray(dom.sizes)
    tr = train.codes
    if tr.shape[0] > max_train:
        tr = tr[np.sort(np.random.default_rng(seed).choice(tr.shape[0], max_train, replace=False))]
    te = test.codes
    out: dict[str, dict[str, float]] = {"svm": {}, "rf": {}}
    for j, a in enumerate(dom.attrs):
        rest = [i for i in range(len(dom)) if i != j]
        y, yt = tr[:, j], te[:, j]
        if np.unique(y).size < 2:  # a release with one label: predict it
            out["rf"][a] = float(np.mean(yt == y[0]))
            if sizes[j] == 2:
                out["svm"][a] = out["rf"][a]
            continue
        rf = RandomForestClassifier(n_estimators=trees, min_samples_leaf=5, n_jobs=1,
                                    random_state=runner.seed_for(seed, "rf", a) % 2**31)
        rf.fit(tr[:, rest], y)
        out["rf"][a] = float(np.mean(rf.predict(te[:, rest]) == yt))
        if sizes[j] == 2:
            svm = LinearSVC(C=1.0, dual="auto", max_iter=2000)
            svm.fit(_onehot(tr[:, rest], sizes[rest]), y)
            out["svm"][a] = float(np.mean(svm.predict(_onehot(te[:, rest], sizes[rest])) == yt))
    return out


def baselines(train, test) -> dict[str, dict[str, dict[str, float]]]:
    """Majority-class rate (train's mode scored on test) and random guessing, per target."""
    maj, rnd = {}, {}
    for j, a in enumerate(train.domain.attrs):
        mode = np.bincount(train.codes[:, j], minlength=train.domain.sizes[j]).argmax()
        maj[a] = float(np.mean(test.codes[:, j] == mode))
        rnd[a] = 1.0 / train.domain.sizes[j]
    binary = [a for a, s in zip(train.domain.attrs, train.domain.sizes) if s == 2]
    return {"majority": {"rf": maj, "svm": {a: maj[a] for a in binary}},
            "random": {"rf": rnd, "svm": {a: rnd[a] for a in binary}}}


def releases(train, f: float, methods, phi: float, seed: int, independent: bool, budget: int):
    """Yield (label, synthetic Dataset, fit seconds, edges) per method, plus the independence release."""
    from lopub.dependency import MarginalCache
    from lopub.pipeline.steps import fit, independence_model
    from lopub.publish.synthesize import sample_codes

    reports = runner.encode(train, f, runner.seed_for(seed, "encode-train", f))
    for m in methods:
        t0 = time.perf_counter()
        cache = MarginalCache(runner.make_estimator(reports, m))
        res = fit(reports, estimator=cache, phi=phi, clique_budget=budget, release="cliques", structure="phi")
        model, rep = res.model, res.report.to_dict()  # the paper's release, reproduced
        syn = sample_codes(model, train.n, rng=runner.seed_for(seed, "synth", f, m))
        yield m, syn, time.perf_counter() - t0, {"edges": rep["edges"], "clique_budget": budget,
                                                 "dropped_edges": len(rep["dropped_edges"]),
                                                 "max_clique_cells": max(rep["clique_cells"])}
        if independent and m == methods[0]:  # same reports, this estimator's one-way marginals
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


def plot(df: pd.DataFrame, out) -> list:
    """One PNG per dataset: mean RF and SVM accuracy vs f per release, baselines as lines."""
    paths = []
    for name, g in df.groupby("dataset"):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for ax, clf in zip(axes, ("svm", "rf")):
            h = g[g.classifier == clf]
            runner.curves(ax, h[h.f > 0], "release", "f", "mean_accuracy", lambda r: "x:" if "indep" in r else "o-")
            for rel, style in (("real", "k-"), ("majority", "k--"), ("random", "k:")):
                v = h[h.release == rel].mean_accuracy
                if len(v):
                    ax.axhline(float(v.iloc[0]), ls=style[1:], color="k", lw=0.9,
                               label=f"{rel} ({float(v.iloc[0]):.3f})")
            ax.set(xlabel="f", ylabel="mean test accuracy",
                   title=f"{name}: {'SVM, binary targets' if clf == 'svm' else 'random forest, all targets'}")
            ax.legend(fontsize=6)
        paths.append(runner.save_figure(fig, out / f"classification_{name}.png",
                                        runner.privacy_caption([name], sorted(g.f[g.f > 0].unique()))
                                        + "\n" + PAPER_NOTE))
    return paths


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = runner.base_parser(NAME, __doc__.splitlines()[0], methods=runner.METHODS)
    p.add_argument("--trees", type=int, default=50, help="random forest size (fixed, not tuned)")
    p.add_argument("--clique-budget", type=int, default=50000,
                   help="largest clique joint in cells (lopub.pipeline.steps.fit; its default is 50,000)")
    p.add_argument("--max-train", type=int, default=20000,
                   help="classifiers see at most this many (seeded) training records")
    args, log = runner.start(p, argv, "classification.csv", KEY)
    fs = runner.resolve_fs(args)
    methods = list(args.methods)[:2] if args.quick else list(args.methods)
    if args.redo:  # the method releases only; baselines and the independence release stay
        log.drop(dataset=args.datasets, f=fs, release=methods)
    prog = runner.Progress(len(args.datasets) * (len(fs) * (len(methods) + 1) + 3), NAME)
    for name in args.datasets:
        tr, te = runner.train_test(name, rows=args.rows, seed=args.seed)
        kw = {"trees": args.trees, "max_train": args.max_train, "seed": runner.seed_for(args.seed, name)}
        for rel, accs in baselines(tr, te).items():
            log_rows(log, name, 0.0, rel, accs, tr.n)
            prog.step(f"{name} {rel}")
        if not log.done(dataset=name, f=0.0, release="real", classifier="rf"):
            log_rows(log, name, 0.0, "real", classify(tr, te, **kw), tr.n)
        prog.step(f"{name} real")
        for f in fs:
            left = [m for m in methods if not log.done(dataset=name, f=f, release=m, classifier="rf")]
            ind = not log.done(dataset=name, f=f, release="independent", classifier="rf")
            if not left and not ind:
                prog.skip(len(methods) + 1)
                continue
            eps = runner.make_spec(tr, f).epsilon
            left = left or methods[:1]  # the independence release needs one estimator session
            for rel, syn, sec, info in releases(tr, f, left, runner.DATA[name].phi, args.seed, ind,
                                                args.clique_budget):
                if log.done(dataset=name, f=f, release=rel, classifier="rf"):
                    continue
                acc = classify(syn, te, **kw)
                log_rows(log, name, f, rel, acc, tr.n, {"fit_seconds": sec, "eps_per_record": eps, **info})
                prog.step(f"{name} f={f:g} {rel}: RF {np.mean(list(acc['rf'].values())):.3f}")
    return runner.finish(args, fs, log, plot)


if __name__ == "__main__":
    raise SystemExit(main())
