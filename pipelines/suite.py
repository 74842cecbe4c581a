"""The suite of data shapes (issue 24 item 6): lopub's planned release against the baselines.

A configuration of :mod:`pipelines.harness`: the shapes of ``FULL`` / ``QUICK`` x epsilons x seeds;
lopub's planned release (``collect(protocol="auto")`` + ``fit``) against one attribute per user,
naive all-pairs with CALM's consistency and Bloom at its best h; central noise on all pairs is the
reference.  Each call runs under ``--timeout``; rows go to ``--out`` (CSV + Parquet, ``--resume``
continues), ``--table`` prints the tables of saved runs and ``--docs`` rewrites the suite's section
of docs/BENCHMARKS.md (commands there).
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from pipelines.harness import tables
from pipelines.harness.runner import Grid, load_rows, run, save_rows

BASELINES = ["one-attribute", "pairs-naive", "bloom-best-h"]
METHODS = ["planned", *BASELINES, "central-tables"]
NETWORKS_FULL = ("asia", "sachs", "survey", "alarm", "water", "mildew", "barley", "hailfinder", "hepar2", "andes")
#: small shapes first, so that a run stopped early (``--resume`` continues it) covers the most datasets
FULL = {"wine": None, "diabetes": None, "breast_cancer": None, "bn-asia": 50_000, "bn-survey": 50_000,
        "bn-sachs": 50_000, "stress": 20_000, "retail20": None, "adult-missing": None, "digits": None,
        **{f"bn-{m}": 50_000 for m in NETWORKS_FULL[3:]}, "retail100": None}
#: the networks again at 10^6 records (issue 24 item 6: "sampled at 50,000 and 10^6 rows")
LARGE = {f"bn-{m}": 10**6 for m in NETWORKS_FULL}
QUICK = {"adult-missing": None, "retail20": None, "wine": None, "stress": 5_000, "bn-asia": 10_000,
         "bn-sachs": 10_000}
EPSILONS = (0.5, 1, 2, 4, 8, 16)


def config(quick: bool, bloom_max_d: int, timeout: float | None, large: bool = False) -> Grid:
    """The suite's grid (``quick``: 6 small shapes, epsilon 1 and 8, 2 seeds; ``large``: the networks at
    10^6 records, every epsilon, 3 seeds)."""
    def skip(name, data, method):
        if method == "bloom-best-h" and len(data.domain) > bloom_max_d:
            return f"Bloom fits skipped above {bloom_max_d} attributes (--bloom-max-d)"
        return None
    if quick:
        return Grid(QUICK, METHODS, (1.0, 8.0), (0, 1), timeout=timeout, skip=skip)
    return Grid(LARGE if large else FULL, METHODS, EPSILONS, (0, 1, 2), timeout=timeout, skip=skip)


def report(rows: list[dict], command: str) -> str:
    """The Markdown written into BENCHMARKS.md: the command, the tally and the table."""
    present = dict.fromkeys(r["method"] for r in rows)
    shown = [m for m in METHODS if m in present] + [m for m in present if m not in METHODS]
    return "\n\n".join([
        (f"Command: `{command}`. Mean 2-way TVD over the seeds ± its standard error; "
         "`*`: some seeds failed; verdict of lopub's planned release against the best baseline "
         "(paired over seeds: win / loss beyond 2 standard errors, else tie)."),
        tables.tally_markdown(rows, "planned", BASELINES),
        tables.markdown(rows, shown, "planned", BASELINES), prediction_note(rows), naive_note(rows),
        budget_note(rows)])


def budget_note(rows: list[dict]) -> str:
    """Issue 24 item 3, more budget never hurts: each epsilon's planned release against the best of the
    smaller epsilons of its dataset (mean over seeds; unpaired, the collections are independent)."""
    runs: dict = {}
    for r in rows:
        if r["method"] == "planned" and r["status"] == "ok":
            runs.setdefault(r["dataset"], {}).setdefault(float(r["epsilon"]), []).append(float(r["tvd"]))
    worse, beyond, steps = [], [], 0
    for ds, by_eps in runs.items():
        stats = {e: tables.mean_se(v) for e, v in sorted(by_eps.items())}
        eps = list(stats)
        for i, e in enumerate(eps[1:], start=1):
            ref = min(eps[:i], key=lambda x: stats[x][0])
            (m, se), (m0, se0) = stats[e], stats[ref]
            steps += 1
            if m > m0:
                worse.append(f"{ds} at epsilon {e:g} {m:.4f} against {m0:.4f} at {ref:g}")
                if np.isfinite(se) and np.isfinite(se0) and m - m0 > 2 * np.hypot(se, se0):  # one seed: no SE
                    beyond.append(worse[-1])
    return (f"More budget (each epsilon's planned release against the best smaller epsilon of its dataset, "
            f"{steps} steps): worse in {len(worse)}, beyond 2 standard errors in {len(beyond)}"
            + (f" ({'; '.join(beyond)})" if beyond else "") + ".")


def prediction_note(rows: list[dict]) -> str:
    """The planner's predicted TVD of its pick against the measured one, per cell (mean over seeds)."""
    cells: dict = {}
    for r in rows:
        extra = json.loads(r["extra"]) if isinstance(r.get("extra"), str) and r["extra"] else {}
        if r["method"] == "planned" and r["status"] == "ok" and extra.get("predicted") is not None:
            cells.setdefault((r["dataset"], float(r["epsilon"])), []).append((extra["predicted"], float(r["tvd"])))
    if not cells:
        return "Planner predictions: none recorded in these rows."
    rel = np.array([abs(np.mean([p for p, _ in v]) / np.mean([t for _, t in v]) - 1) for v in cells.values()])
    return (f"Planner predictions (the pick's predicted mean 2-way TVD, from the screen after a two-phase "
            f"collection, from the collected tables after a single-phase one that measures every pair, else "
            f"from the uniform prior) against the measured TVD over {len(rel)} cells: median "
            f"relative error {np.median(rel):.0%}, within 25 % in {np.mean(rel <= 0.25):.0%} of the cells.")


def naive_note(rows: list[dict]) -> str:
    """The fitted model against the naive per-set tables of the same reports, per cell (mean over seeds)."""
    cells: dict = {}
    for r in rows:
        extra = json.loads(r["extra"]) if isinstance(r.get("extra"), str) and r["extra"] else {}
        if r["method"] == "planned" and r["status"] == "ok" and extra.get("naive") is not None:
            cells.setdefault((r["dataset"], float(r["epsilon"])), []).append((float(r["tvd"]), extra["naive"]))
    if not cells:
        return "Model against the naive per-set tables: none recorded in these rows."
    ratio = {c: np.mean([t for t, _ in v]) / np.mean([n for _, n in v]) for c, v in cells.items()}
    worse = sorted((c for c, x in ratio.items() if x > 1), key=lambda c: -ratio[c])
    listed = ", ".join(f"{d} at epsilon {e:g} {ratio[(d, e)]:.2f}x" for d, e in worse) or "none"
    diff = {c: tables.mean_se([t - n for t, n in v]) for c, v in cells.items()}
    beyond = [c for c in worse if diff[c][0] > 2 * diff[c][1]]
    named = ", ".join(f"{d} at epsilon {e:g}" for d, e in beyond) or "none"
    return (f"Model against the naive per-set tables of the same reports (each pair from the measured sets "
            f"holding it, else the product of its one-way tables) over {len(ratio)} cells: geometric mean "
            f"ratio {np.exp(np.mean(np.log(list(ratio.values())))):.2f}, model worse in {len(worse)} "
            f"({listed}); worse beyond 2 standard errors of the paired difference over the seeds in "
            f"{len(beyond)} ({named}).")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="6 small shapes, epsilon 1 and 8, 2 seeds")
    size.add_argument("--large", action="store_true", help="the networks at 10^6 records (Bloom up to 8 attributes)")
    ap.add_argument("--datasets", help="comma-separated, replaces the configuration's (n as configured)")
    ap.add_argument("--epsilons", help="comma-separated, replaces the configuration's")
    ap.add_argument("--seeds", help="comma-separated, replaces the configuration's")
    ap.add_argument("--methods", help="comma-separated, replaces the configuration's (e.g. planned,planned-no-shrink)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per call (default 300)")
    ap.add_argument("--bloom-max-d", type=int, default=None,
                    help="skip the Bloom baseline above this many attributes (default 11; --large: 8)")
    ap.add_argument("--out", default=None, help="rows as CSV (default suite-quick.csv / suite-large.csv / suite.csv)")
    ap.add_argument("--resume", action="store_true", help="keep the rows already in --out, run the others")
    ap.add_argument("--table", metavar="CSV", nargs="+", help="only print the tables of saved runs (merged)")
    ap.add_argument("--docs", metavar="MD", help="write the table into this file's suite section")
    ap.add_argument("--command", help="the command cited above the table (default: this one)")
    a = ap.parse_args(argv)
    command = "python -m pipelines.suite" + (" " + " ".join(argv if argv is not None else sys.argv[1:]))
    if a.table:
        seen: dict = {}  # a cell run twice (two partial runs): the first file's row
        for r in (r for path in a.table for r in load_rows(path)):
            seen.setdefault((r["dataset"], float(r["epsilon"]), int(r["seed"]), r["method"]), r)
        rows = list(seen.values())
    else:
        bloom_max_d = a.bloom_max_d if a.bloom_max_d is not None else 8 if a.large else 11  # 0: no Bloom
        grid = config(a.quick, bloom_max_d, a.timeout or 300.0, a.large)
        try:
            if a.datasets:
                src = LARGE if a.large else FULL | QUICK if a.quick else QUICK | FULL
                grid.datasets = {d: src.get(d) for d in a.datasets.split(",")}
            if a.epsilons:
                grid.epsilons = tuple(float(e) for e in a.epsilons.split(","))
            if a.seeds:
                grid.seeds = tuple(int(s) for s in a.seeds.split(","))
            if a.methods:
                grid.methods = a.methods.split(",")
            grid.__post_init__()
        except ValueError as exc:
            ap.error(str(exc))
        out = a.out or ("suite-quick.csv" if a.quick else "suite-large.csv" if a.large else "suite.csv")
        rows = run(grid, done=load_rows(out) if a.resume else (), save=lambda rs: save_rows(rs, out),
                   log=lambda s: print(s, file=sys.stderr, flush=True))
    text = report(rows, a.command or command.strip())
    print(text)
    if a.docs:
        tables.replace_section(a.docs, "suite-quick" if a.quick else "suite-large" if a.large else "suite", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
