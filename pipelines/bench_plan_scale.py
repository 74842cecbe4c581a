"""Plan and simulated-collect time against the number of binary attributes d and of users N.

``lopub.collect.plan`` and ``lopub.collect.collect`` (what ``lopub collect --protocol auto`` runs) on N chain
records: CPU and wall seconds, with the ratios to the smallest d (same N) and the smallest N (same d).
Run ``python pipelines/bench_plan_scale.py --d 10,50,100,300 --n 10000,100000,1000000 --epsilon 4``;
figures: docs/BENCHMARKS.md, "Planning and collection at scale".
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repository root

from lopub.collect import collect, plan
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from pipelines.harness.common import floats, ints, md_table, timed


def records(domain: Domain, n: int, seed: int) -> Dataset:
    """``n`` records: each attribute copies the previous one w.p. 0.5, else a fair coin (a chain)."""
    rng = np.random.default_rng(seed)
    codes = np.empty((n, len(domain)), dtype=np.uint8)
    codes[:, 0] = rng.integers(0, 2, n, dtype=np.uint8)
    for j in range(1, len(domain)):  # columns, not records
        fresh = rng.integers(0, 2, n, dtype=np.uint8)
        codes[:, j] = np.where(rng.random(n) < 0.5, codes[:, j - 1], fresh)
    return Dataset(codes, domain)


def run(d: int, n: int, eps: float, seed: int = 0) -> dict:
    """Plan and collect for ``n`` users x ``d`` binary attributes: seconds, the plan's pick and its groups."""
    dom = Domain.from_categories({f"a{i}": ["0", "1"] for i in range(d)})
    report, plan_wall, plan_cpu = timed(lambda: plan(dom, n, eps), collect=True)
    pick = report.option(report.recommended)
    groups = (f"h={pick.params['h']}" if report.recommended == "bloom"
              else f"{pick.params.get('strategy', 'one-way')}, {len(pick.params['subsets'])} subsets")
    data = records(dom, n, seed)
    _, collect_wall, collect_cpu = timed(lambda: collect(data, eps, rng=seed), collect=True)
    print(f"d={d} n={n} eps={eps:g}: plan {plan_cpu:.2f} s CPU ({plan_wall:.2f} s wall), pick "
          f"{report.recommended} ({groups}); collect {collect_cpu:.2f} s CPU ({collect_wall:.2f} s wall)", flush=True)
    return {"d": d, "n": n, "eps": eps, "pick": f"{report.recommended} ({groups})", "plan_cpu": plan_cpu,
            "plan_wall": plan_wall, "collect_cpu": collect_cpu, "collect_wall": collect_wall}


def table(rows: list[dict]) -> str:
    """Markdown table with ratios to the smallest d (same N) and the smallest N (same d)."""
    base_d = {(r["n"], r["eps"]): r for r in rows if r["d"] == min(x["d"] for x in rows)}
    base_n = {(r["d"], r["eps"]): r for r in rows if r["n"] == min(x["n"] for x in rows)}

    def ratio(r: dict, base: dict | None, key: str) -> str:
        return "-" if base is None or base[key] <= 0 else f"{r[key] / base[key]:.2f}x"

    cells = [[r["d"], f"{r['n']:,}", f"{r['eps']:g}", r["pick"], f"{r['plan_cpu']:.2f}", f"{r['plan_wall']:.2f}",
              ratio(r, base_d.get((r["n"], r["eps"])), "plan_cpu"),
              ratio(r, bn := base_n.get((r["d"], r["eps"])), "plan_cpu"), f"{r['collect_cpu']:.2f}",
              f"{r['collect_wall']:.2f}", ratio(r, bn, "collect_cpu")] for r in rows]
    head = ["d", "N", "epsilon", "pick", "plan CPU s", "plan wall s", "plan / smallest d", "plan / smallest N",
            "collect CPU s", "collect wall s", "collect / smallest N"]
    return md_table([dict(zip(head, c)) for c in cells], head)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", type=ints, default="10,50,100,300", help="numbers of binary attributes")
    ap.add_argument("--n", type=ints, default="10000,100000,1000000", help="numbers of users")
    ap.add_argument("--epsilon", type=floats, default="4", help="per-record budgets (comma-separated)")
    a = ap.parse_args()
    rows = [run(d, n, eps) for eps in a.epsilon for d in a.d for n in a.n]
    print("\n" + table(rows))


if __name__ == "__main__":
    main()
