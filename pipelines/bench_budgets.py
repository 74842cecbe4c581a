"""Issue 12's benchmark: useful releases at deployed privacy budgets (protocol planner).

Mean 2-way TVD (exact on each model) per dataset, epsilon per record and seed of lopub's planned release, each
lopub protocol forced, the issue's baselines, the fitted all-pairs baseline and the central reference
(:mod:`pipelines.harness.methods`); ``--report FILES`` re-prints tables and verdicts of saved runs, ``--calm-naive``
runs only the pairs baselines beside the planned release (for ``--naive``).  ``python pipelines/bench_budgets.py
--quick``: a tiny grid.  Commands and figures: docs/BENCHMARKS.md, "Budgets and protocols".
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repository root

from pipelines.harness import datasets, tables
from pipelines.harness import methods as hm
from pipelines.harness.common import floats, ints, md_table, names, timed, write_json

OWN = ("marginals", "one-attribute", "bloom")
ISSUE_BASELINES = ("bloom-best-h", "one-attribute", "pairs-naive")  # the issue's targets are against these
BASELINES = (*ISSUE_BASELINES, "pairs")  # and lopub's all-pairs protocol with its fitted model
LARGE_N = 1_000_000
COLUMNS = ("dataset", "eps", "seeds", "planner's pick", "planned", "lopub marginals", "lopub one-attr",
           "lopub bloom", "base: bloom best h", "base: one-attr", "base: pairs, naive", "base: pairs, fitted",
           "central", "ratio", "ratio incl. fitted pairs")


def _tm(res: dict) -> dict:
    """A harness result with its ``tvd`` under this script's key ``tvd_model``."""
    return {("tvd_model" if k == "tvd" else k): v for k, v in res.items()}


def run_cell(data, dataset: str, eps: float, seed: int, *, bloom: bool = True) -> dict:
    """One grid cell: lopub's planned release and forced protocols, the baselines, the reference."""
    from lopub.collect import MarginalReports, collect
    from lopub.publish.synthesize import sample_codes

    (model, report, reports), wall, cpu = timed(lambda: hm.planned_release(data, eps, seed))
    tvd, rec = hm.score(data, model), report.recommended
    mp = report.option("marginals").params if report.marginal_plan is not None else None
    plan_marginals = None if mp is None else {"strategy": mp["strategy"], "subsets": len(mp["subsets"]),
                                              "max_subset_size": max(len(s) for s in mp["subsets"])}
    got = [len(s) for s in reports.plan.subsets] if isinstance(reports, MarginalReports) else None
    collected = None if got is None else {"subsets": len(got), "pairs": got.count(2), "max_subset_size": max(got)}
    row = {"dataset": dataset, "n": data.n, "d": len(data.domain), "epsilon": eps, "seed": seed,
           "bloom_skipped": not bloom, "recommended": rec,
           "predicted": {o.protocol: o.predicted_tvd for o in report.options},
           "plan_params": {"bloom_h": report.option("bloom").params["h"], "marginals": plan_marginals},
           "collected": collected,
           "planned": {"tvd_model": tvd, "tvd_synthetic": hm.score(data, sample_codes(model, rng=seed + 7)),
                       "seconds": wall, "cpu_seconds": cpu},
           "own": {rec: {"tvd_model": tvd, "seconds": wall, "cpu_seconds": cpu}}}
    for p in [p for p in OWN if p != rec]:
        if p == "bloom" and not bloom:
            row["own"][p] = {"skipped": True}
            continue
        m, wall, cpu = timed(lambda p=p: hm.fit_model(collect(data, eps, protocol=p, rng=seed)[0]))
        row["own"][p] = {"tvd_model": hm.score(data, m), "seconds": wall, "cpu_seconds": cpu}
    pairs = hm.pair_reports(data, eps, seed)
    base = {"one-attribute": hm.one_attribute(data, eps, seed), "pairs-naive": hm.pairs_naive(data, eps, seed, pairs),
            "pairs": hm.pairs_fitted(data, eps, seed, pairs),
            "bloom-best-h": hm.bloom_best_h(data, eps, seed) if bloom else {"skipped": True}}
    row["base"] = {k: _tm(v) for k, v in base.items()}
    row["central"] = _tm(hm.central(data, eps, seed))
    row["independence_true"] = hm.true_independence(data)
    return score_row(row)


def score_row(row: dict) -> dict:
    """Best baselines and ratios of a row: against the issue's baselines and with fitted pairs."""
    planned = row["planned"]["tvd_model"]
    for names_, suffix in ((ISSUE_BASELINES, ""), (BASELINES, "_incl_fitted_pairs")):
        scored = {k: row["base"][k]["tvd_model"] for k in names_ if "tvd_model" in row["base"].get(k, {})}
        best = min(scored, key=scored.get)
        row["best_baseline" + suffix], row["best_baseline_tvd" + suffix] = best, scored[best]
        row["ratio_planned_to_best_baseline" + suffix] = planned / scored[best]
    own = {k: v["tvd_model"] for k, v in row["own"].items() if "tvd_model" in v}
    row["best_own"] = min(own, key=own.get)
    row["ratio_planned_to_best_own"] = planned / own[row["best_own"]]
    return row


def attach_naive(rows: list[dict], naive_rows: list[dict]) -> int:
    """Fill ``base["pairs-naive"]`` of saved rows from ``--calm-naive`` rows of the same cell (dataset, epsilon,
    seed) and planned TVD (else ``ValueError``: another code version); returns how many."""
    index = {(r["dataset"], float(r["epsilon"]), int(r["seed"])): r for r in naive_rows}
    done = 0
    for row in rows:
        nv = index.get((row["dataset"], float(row["epsilon"]), int(row["seed"])))
        if nv is None or "pairs-naive" in row["base"]:
            continue
        if not math.isclose(nv["planned"], row["planned"]["tvd_model"], rel_tol=1e-9, abs_tol=1e-12):
            raise ValueError(f"naive row {row['dataset']} eps {row['epsilon']} seed {row['seed']}: planned "
                             f"{nv['planned']} differs from the saved row's {row['planned']['tvd_model']} "
                             "(another code version); re-run the cell")
        row["base"]["pairs-naive"] = {"tvd_model": nv["pairs_naive_consistency"],
                                      "scored_on": "consistent pair tables (no model)"}
        done += 1
    return done


def timing(data, seed: int) -> dict:
    """Collection + fit with marginal sampling (the planner's marginal plan), wall and CPU."""
    from lopub.collect import collect

    _, wall, cpu = timed(lambda: hm.fit_model(collect(data, 8.0, protocol="marginals", rng=seed)[0]))
    return {"n": data.n, "d": len(data.domain), "epsilon": 8.0, "seconds": wall, "cpu_seconds": cpu}


def by_cell(rows: list[dict]) -> list[tuple[tuple, list[dict]]]:
    """((dataset, epsilon), its rows) in sorted order."""
    out: dict = {}
    for r in rows:
        out.setdefault((r["dataset"], r["epsilon"]), []).append(r)
    return sorted(out.items())


def _means(cell: list[dict], keys, part: str | None = None) -> dict:
    """Seed means of ``r[part][key]["tvd_model"]`` (``r[key][...]`` without part) for keys every row has."""
    vals = {k: [(r[part] if part else r).get(k, {}).get("tvd_model") for r in cell] for k in keys}
    return {k: float(np.mean(v)) for k, v in vals.items() if None not in v}


def verdicts(rows: list[dict], timings: list[dict]) -> dict:
    """The issue's targets over the rows (misses listed with figures): against the issue's baselines, and
    under ``"incl_fitted_pairs"`` with lopub's fitted all-pairs protocol as one more baseline."""
    rows = [score_row(r) for r in rows]
    v = _baseline_verdicts(rows, ISSUE_BASELINES, "")
    v["incl_fitted_pairs"] = _baseline_verdicts(rows, BASELINES, "_incl_fitted_pairs")
    measured = [r for r in rows if r["bloom_skipped"]]
    v["planner_pick_best_measured_own_without_bloom"] = {
        "pass": sum(r["best_own"] == r["recommended"] for r in measured), "cells": len(measured),
        "note": "rows whose Bloom runs were skipped: best of the protocols measured (marginals, one-attribute)"}
    picks = [r for r in rows if not r["bloom_skipped"]]
    ok = sum(r["best_own"] == r["recommended"] for r in picks)
    v["planner_pick_best_own"] = {
        "pass": ok, "cells": len(picks), "share": ok / len(picks) if picks else None,
        "target_share": 0.9, "met": bool(picks) and ok >= 0.9 * len(picks),
        "misses": [_miss(r, "") | {"best_own": r["best_own"],
                                   "ratio_to_best_own": round(r["ratio_planned_to_best_own"], 3)}
                   for r in picks if r["best_own"] != r["recommended"]]}
    v["planner_pick_best_own_seed_mean"] = pick_seed_means(rows)
    v["measured_over_predicted"] = {
        p: [round(r["own"][p]["tvd_model"] / r["predicted"][p], 2) for r in rows
            if "tvd_model" in r["own"][p] and r["predicted"].get(p)] for p in OWN}
    syn = [abs(r["planned"]["tvd_synthetic"] - r["planned"]["tvd_model"]) for r in rows]
    v["synthetic_minus_model_max_abs"] = round(max(syn), 4) if syn else None
    v["timing"] = [t | {"met_30s": t["seconds"] <= 30.0} for t in timings]
    return v


def _baseline_verdicts(rows: list[dict], names_: tuple, suffix: str) -> dict:
    """The targets against the baselines ``names_`` (the rows' best of them: fields ending in ``suffix``)."""
    ratio = "ratio_planned_to_best_baseline" + suffix
    worse = [_miss(r, suffix) for r in rows if r[ratio] > 1.0]
    means = seed_means(rows, names_)
    big = [r for r in rows if r["n"] >= LARGE_N and 4 <= r["epsilon"] <= 16]
    return {
        "planned_le_every_ldp_baseline": {"pass": len(rows) - len(worse), "cells": len(rows), "misses": worse},
        "seed_means": means,
        "planned_le_every_ldp_baseline_seed_mean": {"pass": sum(m["ratio"] <= 1.0 for m in means),
                                                    "cells": len(means),
                                                    "misses": [m for m in means if m["ratio"] > 1.0]},
        "ge_10pct_better_at_1M_eps_4_16": {"pass": sum(r[ratio] <= 0.9 for r in big), "cells": len(big),
                                           "ratios": [round(r[ratio], 3) for r in big],
                                           "seed_mean_ratios": {f"{m['epsilon']:g}": m["ratio"] for m in means
                                                                if m["n"] >= LARGE_N and 4 <= m["epsilon"] <= 16}},
        "planned_vs_best_baseline_beyond_noise": {
            "rule": "seed-mean miss counted only where mean(planned - baseline) > 2 SE over seeds",
            "misses": [m for m in means if m["ratio"] > 1.0 and m["diff_se"] is not None
                       and m["diff_mean"] > 2 * m["diff_se"]],
            "cells": len(means)},
        "baselines": list(names_)}


def seed_means(rows: list[dict], names_: tuple = ISSUE_BASELINES) -> list[dict]:
    """Per (dataset, epsilon): planned and the best of the baselines ``names_`` averaged over the seeds."""
    out = []
    for (ds, eps), cell in by_cell(rows):
        base = _means(cell, names_, "base")
        best = min(base, key=base.get)
        planned = [r["planned"]["tvd_model"] for r in cell]
        diff, se = tables.mean_se([p - r["base"][best]["tvd_model"] for p, r in zip(planned, cell)])
        out.append({"dataset": ds, "n": cell[0]["n"], "epsilon": eps, "seeds": len(cell),
                    "diff_mean": round(diff, 5), "diff_se": None if math.isnan(se) else round(se, 5),
                    "planned": round(float(np.mean(planned)), 4),
                    "planned_sd": round(float(np.std(planned, ddof=1)), 4) if len(cell) > 1 else None,
                    "best_baseline": best, "best_baseline_tvd": round(base[best], 4),
                    "ratio": round(float(np.mean(planned)) / base[best], 3)})
    return out


def pick_seed_means(rows: list[dict]) -> dict:
    """Per (dataset, epsilon) where the planner picked one protocol on every seed: is it the best of lopub's
    protocols measured on every seed, on the seed means?"""
    out = []
    for (ds, eps), cell in by_cell(rows):
        picks = {r["recommended"] for r in cell}
        if len(picks) != 1:
            continue
        own, (pick,) = _means(cell, OWN, "own"), picks
        best = min(own, key=own.get)
        out.append({"dataset": ds, "epsilon": eps, "seeds": len(cell), "pick": pick, "best_own": best,
                    "ratio_to_best_own": round(own[pick] / own[best], 4)})
    ok = sum(c["pick"] == c["best_own"] for c in out)
    return {"pass": ok, "cells": len(out), "share": ok / len(out) if out else None,
            "misses": [c for c in out if c["pick"] != c["best_own"]]}


def _miss(r: dict, suffix: str = "") -> dict:
    return {"dataset": r["dataset"], "epsilon": r["epsilon"], "seed": r["seed"],
            "recommended": r["recommended"], "planned": round(r["planned"]["tvd_model"], 4),
            "best_baseline": r["best_baseline" + suffix],
            "best_baseline_tvd": round(r["best_baseline_tvd" + suffix], 4)}


def mean_table(rows: list[dict]) -> str:
    """Markdown table of the seed means per (dataset, epsilon), with the planner's picks."""
    lines = []
    for (ds, eps), cell in by_cell(rows):
        ref, own = _means(cell, ("planned", "central")), _means(cell, OWN, "own")
        base = _means(cell, BASELINES, "base")
        issue = min(base[b] for b in ISSUE_BASELINES if b in base)
        figures = [ref["planned"], *(own.get(p) for p in OWN), *(base.get(b) for b in BASELINES), ref["central"]]
        lines.append([ds, f"{eps:g}", len(cell), "/".join(sorted({r["recommended"] for r in cell})),
                      *("skip" if x is None else f"{x:.3f}" for x in figures),
                      f"{ref['planned'] / issue:.2f}", f"{ref['planned'] / min(base.values()):.2f}"])
    return md_table([dict(zip(COLUMNS, line)) for line in lines], COLUMNS)


def naive_cell(data, dataset: str, eps: float, seed: int) -> dict:
    """The naive pairs baseline, the same reports through lopub's model and the planned release."""
    reports = hm.pair_reports(data, eps, seed)
    naive = hm.pairs_naive(data, eps, seed, reports)["tvd"]
    fitted = hm.pairs_fitted(data, eps, seed, reports)["tvd"]
    model, report, _ = hm.planned_release(data, eps, seed)
    planned = hm.score(data, model)
    return {"dataset": dataset, "n": data.n, "epsilon": eps, "seed": seed,
            "planned": planned, "planned_protocol": report.recommended,
            "pairs_naive_consistency": naive, "pairs_fitted_model": fitted,
            "ratio_planned_to_naive": planned / naive, "ratio_planned_to_fitted_pairs": planned / fitted,
            "ratio_planned_to_best_pairs": planned / min(naive, fitted)}


def naive_means(rows: list[dict]) -> list[dict]:
    """Seed means of :func:`naive_cell` rows per (dataset, epsilon)."""
    out = []
    for ds, eps in tables.cells(rows):  # in the order run
        cell = [r for r in rows if (r["dataset"], float(r["epsilon"])) == (ds, eps)]
        m = {f: float(np.mean([r[f] for r in cell])) for f in ("planned", "pairs_naive_consistency",
                                                                  "pairs_fitted_model")}
        out.append({"dataset": ds, "epsilon": eps, "seeds": len(cell), **m,
                    "ratio_planned_to_naive": m["planned"] / m["pairs_naive_consistency"],
                    "ratio_planned_to_fitted_pairs": m["planned"] / m["pairs_fitted_model"]})
    return out


def report(a) -> tuple[list[dict], list[dict]]:
    """Rows and timings of the ``--report`` files: cells named by ``--only`` from their file alone, only the
    ``--datasets`` / ``--epsilons`` given, the naive pairs filled from the ``--naive`` files."""
    owner: dict[tuple[str, float], str] = {}
    for spec in a.only:
        cell, _, path = spec.partition("=")
        ds, _, eps = cell.partition(":")
        if not (ds and eps and path) or path not in a.report:
            raise SystemExit(f"--only {spec!r}: expected DATASET:EPS=FILE with FILE one of the --report files")
        owner[(ds, float(eps))] = path
    saved = {path: json.loads(Path(path).read_text()) for path in a.report}
    rows = [r for path in a.report for r in saved[path]["rows"]
            if owner.get((r["dataset"], float(r["epsilon"])), path) == path
            and (not a.datasets or r["dataset"] in a.datasets)
            and (not a.epsilons or float(r["epsilon"]) in a.epsilons)]
    attach_naive(rows, [r for path in a.naive for r in json.loads(Path(path).read_text())["rows"]])
    lacking = sorted({(r["dataset"], r["epsilon"]) for r in rows if "pairs-naive" not in r["base"]})
    if lacking:
        print(f"note: no naive pairs baseline for {lacking} (pass --naive)", file=sys.stderr)
    return rows, [t for path in a.report for t in saved[path]["timings"]]


def run(a) -> tuple[list[dict], list[dict]]:
    """Rows and timings of the grid (written to ``--out`` after each cell); with --calm-naive only naive cells."""
    if a.quick:
        a.datasets, a.epsilons, a.seeds = ["embedded"], [4.0], [0]
    rows, timings = [], []
    for ds in a.datasets or ["adult", "embedded", "adult-1m"]:
        for seed in a.seeds:
            data = datasets.load(ds, 1000 if a.quick and ds == "embedded" else None, seed)
            if ds == "adult-1m" and not a.calm_naive:  # collection + fit time at 10^6 users, once per seed
                timings.append({"dataset": ds, "seed": seed, **timing(data, seed)})
                print(json.dumps(timings[-1]), flush=True)
            for eps in a.epsilons or floats("0.5,1,2,4,8,16,64"):
                if a.calm_naive:
                    rows.append(naive_cell(data, ds, eps, seed))
                else:
                    bloom = a.skip_bloom_above is None or data.n <= a.skip_bloom_above
                    rows.append(run_cell(data, ds, eps, seed, bloom=bloom))
                    write_json(a.out, {"rows": rows, "timings": timings, "verdicts": None, "cpus": os.cpu_count(),
                                       "load": os.getloadavg()})
                print(json.dumps(rows[-1]), flush=True)
    return rows, timings


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", type=names, help="default adult,embedded,adult-1m (--report: keep only these)")
    p.add_argument("--epsilons", type=floats, help="default 0.5,1,2,4,8,16,64 (--report: keep only these)")
    p.add_argument("--seeds", type=ints, default="0")
    p.add_argument("--skip-bloom-above", type=int, metavar="N", help="no Bloom runs on datasets of more than N users")
    p.add_argument("--quick", action="store_true", help="tiny grid: embedded, 1,000 users, epsilon 4, seed 0")
    p.add_argument("--out", default="bench_budgets.json")
    p.add_argument("--report", metavar="JSON", nargs="+", help="only the tables and verdicts of --out files (merged)")
    p.add_argument("--naive", metavar="JSON", nargs="+", default=[],
                   help="with --report: --calm-naive --out files giving the naive pairs of rows saved without it")
    p.add_argument("--only", metavar="DATASET:EPS=FILE", nargs="+", default=[],
                   help="with --report: take the rows of cell DATASET:EPS only from FILE, e.g. adult:64=new.json")
    p.add_argument("--calm-naive", action="store_true", help="only the naive and fitted pairs and the planned release")
    p.add_argument("--save", metavar="JSON", help="with --report: also write the merged rows and verdicts here")
    a = p.parse_args(argv)
    rows, timings = report(a) if a.report else run(a)
    if a.calm_naive and not a.report:
        print(json.dumps(naive_means(rows), indent=2))
        write_json(a.out, {"rows": rows, "means": naive_means(rows)})
        return 0
    v = verdicts(rows, timings)  # scores every row (score_row) for the table too
    print(mean_table(rows))
    print(json.dumps({"verdicts": v}, indent=2))
    if not a.report:
        write_json(a.out, {"rows": rows, "timings": timings, "verdicts": v, "cpus": os.cpu_count(),
                           "load": os.getloadavg()})
        print(f"written {a.out}")
    elif a.save:
        write_json(a.save, {"rows": rows, "timings": timings, "verdicts": v,
                            "sources": {"report": a.report, "naive": a.naive, "only": a.only}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
