"""What the two-phase screen's pilot costs where it continues, and the loss to one attribute per user.

Per seed, on one dataset and epsilon: the planned release with its pilot, with the pilot off, with the
pilot told to continue unmeasured, and one attribute per user (:mod:`pipelines.harness.methods`), then the
paired differences against the planned release.  docs/BENCHMARKS.md, "The pilot's cost was seed noise".
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # after PYTHONPATH: its lopub wins

from pipelines.harness.runner import Grid, run

METHODS = ("planned", "planned-no-pilot", "planned-pilot-continues", "one-attribute")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="bn-water", help="a suite dataset (pipelines.harness.datasets)")
    ap.add_argument("--n", type=int, default=10**6, help="records of a generated dataset")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seeds", type=int, default=6, help="seeds 0 .. SEEDS-1")
    args = ap.parse_args(argv)
    grid = Grid({args.dataset: args.n}, list(METHODS), [args.epsilon], list(range(args.seeds)))
    tvd = {m: {} for m in METHODS}
    for r in run(grid, log=lambda s: print(s, file=sys.stderr, flush=True)):
        if r["status"] == "ok":
            tvd[r["method"]][r["seed"]] = r["tvd"]
    print(f"{args.dataset}, {args.n} records, epsilon {args.epsilon:g}: mean 2-way TVD per seed")
    for m in METHODS:
        print(f"  {m:24s} " + " ".join(f"{tvd[m].get(s, float('nan')):.4f}" for s in range(args.seeds))
              + f"  mean {np.nanmean(list(tvd[m].values()) or [np.nan]):.4f}")
    for m in METHODS[1:]:
        seeds = sorted(set(tvd[m]) & set(tvd["planned"]))
        d = np.array([tvd[m][s] - tvd["planned"][s] for s in seeds])
        if d.size > 1:
            print(f"  {m} - planned: mean {d.mean():+.4f} (se {d.std(ddof=1) / np.sqrt(d.size):.4f}), "
                  f"lower on {int(np.sum(d < 0))} of {d.size} seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
