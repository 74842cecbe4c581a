"""Plan and simulated-collect time against the number of binary attributes d and of users N.

``lopub.collect.plan`` and ``lopub.collect.collect`` (what ``lopub collect --protocol auto`` runs) on
N chain records: CPU and wall seconds, with the ratios to the smallest d (same N) and the smallest N
(same d).  Commands and figures: docs/BENCHMARKS.md, "Planning and collection at scale".
"""
from __future__ import annotations

import argparse
import gc
import time

import numpy as np

from lopub.collect import collect, plan
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain


def binary_domain(d: int) -> Domain:
    return Domain.from_categories({f"a{i}": ["0", "1"] for i in range(d)})


def records(domain: Domain, n: int, seed: int) -> Dataset:
    """``n`` records: each attribute copies the previous one w.p. 0.5, else a fair coin (a chain)."""
    rng = np.random.default_rng(seed)
    d = len(domain)
    codes = np.empty((n, d), dtype=np.uint8)
    codes[:, 0] = rng.integers(0, 2, n, dtype=np.uint8)
    for j in range(1, d):  # columns, not records
        fresh = rng.integers(0, 2, n, dtype=np.uint8)
        codes[:, j] = np.where(rng.random(n) < 0.5, codes[:, j - 1], fresh)
    return Dataset(codes, domain)


def timed(fn):
    gc.collect()
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0


def run(ds: list[int], ns: list[int], eps: float, seed: int = 0) -> list[dict]:
    rows = []
    for d in ds:
        dom = binary_domain(d)
        for n in ns:
            report, pc, pw = timed(lambda dom=dom, n=n: plan(dom, n, eps))
            row = {"d": d, "n": n, "eps": eps, "plan_cpu": pc, "plan_wall": pw,
                   "pick": report.recommended, "groups": _groups(report)}
            data = records(dom, n, seed)
            (reports, _), cc, cw = timed(lambda data=data: collect(data, eps, rng=seed))
            row.update(collect_cpu=cc, collect_wall=cw, reports=reports.n)
            del data, reports
            rows.append(row)
            print(_line(row), flush=True)
    return rows


def _groups(report) -> str:
    if report.recommended == "bloom":
        return f"h={report.option('bloom').params['h']}"
    opt = report.option(report.recommended)
    return f"{opt.params.get('strategy', 'one-way')}, {len(opt.params['subsets'])} subsets"


def _line(r: dict) -> str:
    return (f"d={r['d']} n={r['n']} eps={r['eps']:g}: plan {r['plan_cpu']:.2f} s CPU "
            f"({r['plan_wall']:.2f} s wall), pick {r['pick']} ({r['groups']}); "
            f"collect {r['collect_cpu']:.2f} s CPU ({r['collect_wall']:.2f} s wall)")


def table(rows: list[dict]) -> str:
    """Markdown table with ratios to the smallest d (same N) and the smallest N (same d)."""
    base_d = {(r["n"], r["eps"]): r for r in rows if r["d"] == min(x["d"] for x in rows)}
    base_n = {(r["d"], r["eps"]): r for r in rows if r["n"] == min(x["n"] for x in rows)}
    head = ("| d | N | epsilon | pick | plan CPU s | plan wall s | plan / smallest d | plan / smallest N |"
            " collect CPU s | collect wall s | collect / smallest N |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        bd, bn = base_d.get((r["n"], r["eps"])), base_n.get((r["d"], r["eps"]))
        cells = [str(r["d"]), f"{r['n']:,}", f"{r['eps']:g}", f"{r['pick']} ({r['groups']})",
                 f"{r['plan_cpu']:.2f}", f"{r['plan_wall']:.2f}", _ratio(r, bd, "plan_cpu"),
                 _ratio(r, bn, "plan_cpu"), f"{r['collect_cpu']:.2f}", f"{r['collect_wall']:.2f}",
                 _ratio(r, bn, "collect_cpu")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _ratio(r: dict, base: dict | None, key: str) -> str:
    if base is None or key not in r or key not in base or base[key] <= 0:
        return "-"
    return f"{r[key] / base[key]:.2f}x"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", default="10,50,100,300", help="numbers of binary attributes")
    ap.add_argument("--n", default="10000,100000,1000000", help="numbers of users")
    ap.add_argument("--epsilon", default="4", help="per-record budgets (comma-separated)")
    a = ap.parse_args()
    ds = [int(x) for x in a.d.split(",")]
    ns = [int(x) for x in a.n.split(",")]
    rows = []
    for eps in (float(x) for x in a.epsilon.split(",")):
        rows += run(ds, ns, eps)
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
