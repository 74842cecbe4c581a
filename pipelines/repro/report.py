"""Build ``docs/RESULTS.md`` from the result CSVs under ``results/`` (no number is typed by hand).

The tables and the comparisons with the paper are computed from those files; the prose that
interprets them is ``pipelines/repro/notes.md``, whose ``{name}`` fields :func:`figures` fills in.
Run ``python -m pipelines.repro.report`` after the experiments.
"""
from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from lopub.io import atomic_write_text

from . import runner

DOCS = runner.ROOT / "docs" / "RESULTS.md"
NOTES = Path(__file__).with_name("notes.md")


def load_notes(path: Path = NOTES) -> dict[str, str]:
    """The prose sections of ``notes.md`` by name (a line ``<!-- section NAME -->`` starts each)."""
    parts = re.split(r"^<!-- section ([A-Z0-9_]+) -->\n", path.read_text(), flags=re.MULTILINE)
    return {name: text[:-1] for name, text in zip(parts[1::2], parts[2::2])}  # [:-1]: the separating newline


def md_table(df: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub markdown table (floats rounded to ``digits``, trailing zeros dropped)."""
    def cell(v):
        if not isinstance(v, (float, np.floating)):
            return str(v)
        return "" if np.isnan(v) else f"{v:.{digits}f}".rstrip("0").rstrip(".") if abs(v) < 1e4 else f"{v:.3g}"

    lines = ["| " + " | ".join(map(str, df.columns)) + " |", "|" + "|".join("---" for _ in df.columns) + "|"]
    return "\n".join(lines + ["| " + " | ".join(map(cell, r)) + " |" for r in df.itertuples(index=False)])


def _read(res: Path, exp: str, name: str) -> pd.DataFrame | None:
    p = res / exp / name
    return pd.read_csv(p) if p.exists() and p.stat().st_size else None


def _img(res: Path, exp: str, png: str) -> str:
    p = res / exp / png
    if not p.exists():
        return f"*(plot {png} not generated)*"
    return f"![{png}]({Path(os.path.relpath(p, DOCS.parent)).as_posix()})"


def section(exp: str, csv: str, intro: str | None = None, discussion: str | None = None):
    """A section built by ``body(res, df, T) -> parts`` from ``results/<exp>/<csv>``: framed by the
    notes' ``intro`` and ``discussion`` and the run's commands, or ``*(not run)*`` without the file."""
    def wrap(body):
        def build(res: Path, T=None) -> str:
            df = _read(res, exp, csv)
            if df is None:
                return "*(not run)*"
            parts = [getattr(T, intro)] if intro else []
            parts += body(res, df, T) + ([getattr(T, discussion)] if discussion else [])
            cmds = res / exp / "COMMANDS.txt"
            if intro:
                parts.append("Runs behind these numbers (from `COMMANDS.txt`; a later line whose rows were all "
                             "in the log recomputed nothing and only redrew the plots):\n\n```\n"
                             + cmds.read_text().strip() + "\n```" if cmds.exists() else "*(no committed run)*")
            return "\n\n".join(parts)
        return build
    return wrap


@section("exp6_privacy", "privacy.csv")
def privacy_section(res: Path, df, T) -> list:
    t = df.pivot_table(index="f", columns="dataset", values="eps_per_record").reset_index()
    t.columns = ["f"] + [f"eps/record {c}" for c in t.columns[1:]]
    t.insert(1, "eps/attribute (h=4)", df.groupby("f").eps_per_attribute.first().values)
    return [md_table(t, 2), _img(res, "exp6_privacy", "privacy.png")]


def exp1_headline(s: pd.DataFrame) -> dict:
    """Retail EM/Lasso AVD at the largest f, and EM/Lasso time ratios."""
    out = {}
    for (smp, k), g in s[(s.dataset == "retail") & (s.f == s.f.max())].groupby(["sampling", "k"]):
        for m in ("em", "lasso"):
            v = g[g.method == m].avd_mean
            out[f"retail_{m}_{smp}_k{k}"] = float(v.iloc[0]) if len(v) else np.nan
    piv = s.pivot_table(index=["dataset", "sampling", "k", "f"], columns="method", values="seconds_median")
    if {"em", "lasso"} <= set(piv.columns):
        ratio = piv.em / piv.lasso
        out.update(time_ratio_median=ratio.median(), time_ratio_min=ratio.min(), time_ratio_max=ratio.max())
    return out


@section("exp1_estimation", "summary.csv", "EXP1_INTRO")
def exp1_section(res: Path, s, T) -> list:
    h = exp1_headline(s)

    def ours(m: str) -> str:
        return ", ".join(f"k={key.rsplit('_k', 1)[1]} ({key.split('_')[2]} sampling): {v:.3f}"
                         for key, v in h.items() if key.startswith(f"retail_{m}_") and not np.isnan(v))

    rows = [{"claim": "retail EM AVD at f=0.9", "paper": "~0.28", "ours": ours("em")},
            {"claim": "retail Lasso AVD at f=0.9", "paper": "~0.1", "ours": ours("lasso")}]
    if "time_ratio_median" in h:
        rows.append({"claim": "EM time / Lasso time", "paper": "~1000",
                     "ours": f"median {h['time_ratio_median']:.1f} (range {h['time_ratio_min']:.1f}"
                             f"-{h['time_ratio_max']:.1f}) over all dataset/sampling/k/f"})
    parts = ["**Headline against the paper**", md_table(pd.DataFrame(rows)), T.EXP1_DISCUSSION]
    for (name, k), g in s.groupby(["dataset", "k"]):
        parts.append(f"#### {name}, k = {k}")
        for smp, gg in g.groupby("sampling", sort=False):
            cells = [f"{m:.4f} ± {sd:.4f}" if not np.isnan(sd) else f"{m:.4f}"
                     for m, sd in zip(gg.avd_mean, gg.avd_std)]
            t = gg.assign(cell=cells).pivot(index="f", columns="method", values="cell").reset_index()
            parts.append(f"AVD, {smp} sampling (n = {int(gg.n.iloc[0])}, {int(gg.subsets.min())} random attribute "
                         f"subsets; mean ± sd):\n\n" + md_table(t))
            t = gg.pivot(index="f", columns="method", values="seconds_median").reset_index()
            parts.append(f"Median seconds per marginal, {smp} sampling:\n\n" + md_table(t, 4))
        parts.append(_img(res, "exp1_estimation", f"avd_time_{name}_k{k}.png"))
    return parts


@section("exp2_correlation", "correlation.csv", "EXP2_INTRO", "EXP2_DISCUSSION")
def exp2_section(res: Path, df, T) -> list:
    parts = []
    for (name, smp), g in df.groupby(["dataset", "sampling"]):
        g = g.assign(cell=[f"{a:.3f} (+{ad}/-{lo})" for a, ad, lo in zip(g.accuracy, g.added, g.lost)])
        t = g.pivot(index="f", columns="method", values="cell").reset_index()
        parts.append(f"#### {name} ({smp} data, n = {int(g.n.iloc[0])}, phi = {g.phi.iloc[0]:g}, "
                     f"{int(g.true_edges.iloc[0])} true edges of {int(g.pairs.iloc[0])} pairs)\n\n"
                     "accuracy (+added / -lost edges):\n\n" + md_table(t))
        parts.append(_img(res, "exp2_correlation", f"correlation_{name}_{smp}.png"))
    return parts


@section("exp3_pruning", "pruning.csv", "EXP3_INTRO", "EXP3_DISCUSSION")
def exp3_section(res: Path, df, T) -> list:
    parts = []
    for (name, smp, src, f), g in df.groupby(["dataset", "sampling", "source", "f"], sort=False):
        cols = ["phi", "rounding", "deps_without", "deps_with", "pairs_with", "pairs_without",
                "lost_by_pruning", "added_by_pruning"]
        if g.paper_deps_without.notna().any():
            cols += ["paper_deps_without", "paper_deps_with", "paper_pairs_with"]
        if not (smp == "full" and src == "data"):
            g = g[g.rounding == "ceil"]  # floor only for the reference table (pair counts)
        label = "MI of the true data" if src == "data" else f"MI of {src} estimates, f = {f:g}"
        parts.append(f"#### {name}, {smp} records (n = {int(g.n.iloc[0])}): {label}\n\n"
                     + md_table(g.sort_values(["rounding", "phi"])[cols].astype(object)))
    return parts + [_img(res, "exp3_pruning", f"pruning_{name}.png") for name in df.dataset.unique()]


@section("exp4_classification", "classification.csv", "EXP4_INTRO", "EXP4_DISCUSSION")
def exp4_section(res: Path, df, T) -> list:
    parts = []
    for name, g in df.groupby("dataset"):
        base = g[g.f == 0]
        bt = base.pivot(index="release", columns="classifier", values="mean_accuracy").reset_index()
        wt = base[base.classifier == "rf"][["release", "worst_accuracy"]].rename(columns={"worst_accuracy": "rf worst"})
        parts.append(f"#### {name} (train n = {int(g.n_train.iloc[0])})\n\nBaselines (mean accuracy "
                     "over targets):\n\n" + md_table(bt.merge(wt, on="release")))
        for clf, label in (("rf", "Random forest, mean over all attributes (worst attribute)"),
                           ("svm", "SVM, mean over binary attributes")):
            h = g[(g.f > 0) & (g.classifier == clf)]
            if len(h):
                cell = [f"{m:.3f} ({w:.3f})" if clf == "rf" else f"{m:.3f}"
                        for m, w in zip(h.mean_accuracy, h.worst_accuracy)]
                t = h.assign(cell=cell).pivot(index="f", columns="release", values="cell").reset_index()
                parts.append(f"{label}, trained on the synthetic release:\n\n" + md_table(t))
        parts.append(_img(res, "exp4_classification", f"classification_{name}.png"))
    return parts


@section("exp5_pipeline_time", "pipeline_time.csv", "EXP5_INTRO", "EXP5_DISCUSSION")
def exp5_section(res: Path, df, T) -> list:
    parts = []
    for (name, smp), g in df.groupby(["dataset", "sampling"]):
        t = g.pivot_table(index="f", columns="method", values="total_seconds").reset_index()
        e = g[g.f == g.f.max()][["method", "estimation_seconds", "graph_seconds", "clique_seconds",
                                 "synth_seconds", "edges", "max_clique_cells"]]
        parts.append(f"#### {name} ({smp}, n = {int(g.n.iloc[0])})\n\nSeconds, fit + synthesis:\n\n"
                     + md_table(t, 2) + f"\n\nBy stage at f = {g.f.max():g} (estimation = graph + clique "
                     "joints; edges of the dependency graph; largest clique in cells):\n\n"
                     + md_table(e.astype(object), 2))
        parts.append(_img(res, "exp5_pipeline_time", f"pipeline_time_{name}_{smp}.png"))
    return parts


class _Figures(dict):
    """Named numbers for the prose; a figure that was not computed reads "n/a"."""

    def __missing__(self, key: str) -> str:
        return "n/a"


def figures(res: Path) -> _Figures:
    """Every number the prose quotes, computed from the result files."""
    out = _Figures()

    def put(name, value, fmt=None):
        if value is not None and not (isinstance(value, float) and np.isnan(value)):
            out[name] = (fmt or ("{:.4f}" if abs(value) < 0.01 else "{:.3f}")).format(value)

    def tenths(x) -> int:
        return round(float(x) * 10)

    s = _read(res, "exp1_estimation", "summary.csv")
    if s is not None:
        for r in s.itertuples():  # one row per configuration
            put(f"avd_{r.dataset}_{r.sampling}_k{r.k}_{r.method.replace('+', '')}_{int(r.f * 10)}", r.avd_mean)
        for k in (3, 5):  # the paper's ~0.28 for EM on retail at f = 0.9
            em = s[(s.dataset == "retail") & (s.sampling == "paper") & (s.k == k) & (s.method == "em") & (s.f == 0.9)]
            put(f"paper_over_em_retail_k{k}", 0.28 / em.avd_mean.mean() if len(em) else np.nan, "{:.1f}")
        for key, v in exp1_headline(s).items():
            if key.startswith("time_ratio"):
                put(key, float(v), "{:.0f}")
    p = _read(res, "exp3_pruning", "pruning.csv")
    if p is not None:
        for r in p[p.rounding == "ceil"].itertuples():
            base = f"{r.dataset}_{r.sampling}_{r.source}_{tenths(r.f)}_{tenths(r.phi)}"
            out["deps_without_" + base], out["deps_with_" + base] = str(r.deps_without), str(r.deps_with)
        ref = p[(p.sampling == "full") & (p.source == "data")]
        for ds, g in ref[ref.rounding == "ceil"].groupby("dataset"):
            w = g.loc[g.lost_by_pruning.idxmax()]
            out[f"maxlost_{ds}"], out[f"maxlost_phi_{ds}"] = str(w.lost_by_pruning), f"{w.phi:g}"
            out[f"maxlost_edges_{ds}"] = str(w.lost_edges).replace(";", ", ")
        for ds, g in ref.groupby("dataset"):
            saved = g.pairs_without - g.pairs_with
            out[f"saved_min_{ds}"], out[f"saved_max_{ds}"] = str(saved.min()), str(saved.max())
    c2 = _read(res, "exp2_correlation", "correlation.csv")
    for r in c2[c2.sampling == "full"].itertuples() if c2 is not None else ():
        tag = f"{r.dataset}_{r.method.replace('+', '')}_{tenths(r.f)}"
        put("acc2_" + tag, r.accuracy)
        out["added2_" + tag], out["lost2_" + tag] = str(r.added), str(r.lost)
        out[f"true_edges_{r.dataset}"] = str(r.true_edges)
    t5 = _read(res, "exp5_pipeline_time", "pipeline_time.csv")
    if t5 is not None:
        for r in t5.itertuples():
            put(f"t5_{r.dataset}_{r.sampling}_{r.method.replace('+', '')}_{tenths(r.f)}", r.total_seconds, "{:.1f}")
        piv = t5.pivot_table(index=["dataset", "sampling", "f"], columns="method", values="total_seconds")
        if {"em", "lasso"} <= set(piv.columns):
            ratio = (piv.em / piv.lasso).dropna()
            put("t5ratio_min", ratio.min(), "{:.1f}")
            put("t5ratio_max", ratio.max(), "{:.0f}")
            ds, smp, f = ratio.idxmax()
            out["t5ratio_max_at"] = f"{ds}, {smp} sampling, f = {f:g}"
    c = _read(res, "exp4_classification", "classification.csv")
    if c is not None:
        for (ds, rel, clf), g in c.groupby(["dataset", "release", "classifier"]):
            put(f"acc_{ds}_{rel.replace('+', '')}_{clf}", g.mean_accuracy.mean())
            put(f"worst_{ds}_{rel.replace('+', '')}_{clf}", g.worst_accuracy.min())
        syn = c[(c.f > 0) & (c.release != "independent") & (c.classifier == "rf")]
        for ds, g in syn.groupby("dataset"):
            put(f"rfworst_{ds}", g.worst_accuracy.min())
            for tag, h in (("", g), ("_nolasso", g[g.release.isin(["em", "lasso+em", "hybrid"])])):
                if len(h):
                    w = h.loc[h.mean_accuracy.idxmin()]
                    put(f"rfmin{tag}_{ds}", w.mean_accuracy)
                    out[f"rfmin{tag}_at_{ds}"] = f"{w.release}, f = {w.f:g}"
    return out


def build(res: Path = runner.RESULTS) -> str:
    """The whole RESULTS.md text."""
    fig = figures(res)
    T = SimpleNamespace(**{k: v.format_map(fig) for k, v in load_notes().items()})
    sec = [T.HEADER,
           "## 6. Privacy of every setting (Eq. 8)\n\n" + T.PRIVACY + "\n\n" + privacy_section(res),
           "## 1. Estimation: AVD and time vs f\n\n" + exp1_section(res, T),
           "## 2. Correlation identification vs f\n\n" + exp2_section(res, T),
           "## 3. Pruning tables (Alg. 5)\n\n" + exp3_section(res, T),
           "## 4. Classification on the synthetic release\n\n" + exp4_section(res, T),
           "## 5. Whole-pipeline time\n\n" + exp5_section(res, T),
           T.FOOTER]
    return "\n\n".join(sec).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = argparse.ArgumentParser(prog="python -m pipelines.repro.report", description=__doc__.splitlines()[0])
    p.add_argument("--results", type=Path, default=runner.RESULTS)
    p.add_argument("--out", type=Path, default=DOCS)
    args = p.parse_args(argv)
    atomic_write_text(args.out, build(args.results))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
