"""Issue 12's naive CALM-style baseline as the issue defines it, beside lopub's planned release.

Usage::

    LOPUB_DATA_DIR=/path/to/datasets python pipelines/bench_calm_naive.py \
        [--datasets adult-1m] [--epsilons 4,8,16] [--seeds 0,1,2] [--out calm_naive.json]
    python pipelines/bench_calm_naive.py --quick      # tiny cell, a few seconds

On the very same pair reports as ``bench_budgets`` (``rng = seed + 300``):
the naive release (every pair table by its oracle, CALM's consistency and
Norm-Sub, scored on the tables: :func:`pipelines.harness.methods.pairs_naive`),
the same reports through lopub's fitted model, and lopub's planned release
(the same seed as ``bench_budgets``), side by side.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repository root

from pipelines.bench_budgets import load
from pipelines.harness import methods as hm
from pipelines.harness.methods import ROUNDS, consistent_pairs, naive_tvd  # noqa: F401  (re-exported)


def run_cell(data, dataset: str, eps: float, seed: int) -> dict:
    reports = hm.pair_reports(data, eps, seed)
    naive = hm.pairs_naive(data, eps, seed, reports)["tvd"]
    fitted = hm.pairs_fitted(data, eps, seed, reports)["tvd"]
    model, report, _ = hm.planned_release(data, eps, seed)
    planned = hm.score(data, model)
    return {"dataset": dataset, "n": data.n, "epsilon": eps, "seed": seed,
            "planned": planned, "planned_protocol": report.recommended,
            "pairs_naive_consistency": naive, "pairs_fitted_model": fitted,
            "ratio_planned_to_naive": planned / naive,
            "ratio_planned_to_fitted_pairs": planned / fitted,
            "ratio_planned_to_best_pairs": planned / min(naive, fitted)}


def summary(rows: list[dict]) -> list[dict]:
    """Seed means per (dataset, epsilon)."""
    out = []
    for key in dict.fromkeys((r["dataset"], r["epsilon"]) for r in rows):
        rs = [r for r in rows if (r["dataset"], r["epsilon"]) == key]
        mean = {f: float(np.mean([r[f] for r in rs]))
                for f in ("planned", "pairs_naive_consistency", "pairs_fitted_model")}
        out.append({"dataset": key[0], "epsilon": key[1], "seeds": len(rs), **mean,
                    "ratio_planned_to_naive": mean["planned"] / mean["pairs_naive_consistency"],
                    "ratio_planned_to_fitted_pairs": mean["planned"] / mean["pairs_fitted_model"]})
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="adult-1m", help="comma-separated: adult, adult-1m, embedded")
    ap.add_argument("--epsilons", default="4,8,16")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--n-embedded", type=int, default=20_000)
    ap.add_argument("--quick", action="store_true", help="embedded, 3,000 records, epsilon 4, seed 0")
    ap.add_argument("--out", help="write rows and seed means as JSON here")
    a = ap.parse_args(argv)
    if a.quick:
        a.datasets, a.epsilons, a.seeds, a.n_embedded = "embedded", "4", "0", 3000
    try:
        eps_list = [float(x) for x in a.epsilons.split(",")]
        seeds = [int(x) for x in a.seeds.split(",")]
    except ValueError as exc:
        ap.error(f"--epsilons / --seeds must be comma-separated numbers: {exc}")
    rows = []
    for ds in a.datasets.split(","):
        for seed in seeds:
            data = load(ds, seed, a.n_embedded)
            for eps in eps_list:
                rows.append(run_cell(data, ds, eps, seed))
                print(json.dumps(rows[-1]), flush=True)
    means = summary(rows)
    print(json.dumps(means, indent=2))
    if a.out:
        Path(a.out).write_text(json.dumps({"rows": rows, "means": means}, indent=2) + "\n")


if __name__ == "__main__":
    main()
