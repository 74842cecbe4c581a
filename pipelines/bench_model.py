"""The release model against the naive pair tables of the same reports (issue 24 item 1).

All pairs, one per user: per shape (latent20, alarm20: the seed draws the data too; adult), epsilon and seed,
the mean 2-way TVD of ``fit``'s model, of its synthetic release and of the naive pair tables, with the fit's
convergence fields (:func:`pipelines.harness.methods.pairs_model`).  With another lopub first on ``PYTHONPATH``
it gives "before" figures (the same reports); docs/BENCHMARKS.md, "Release model".
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # after PYTHONPATH: its lopub wins

from pipelines.harness.runner import Grid, run

SHAPES = ("latent20", "alarm20", "adult")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 4.0, 8.0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--label", default="after")
    args = ap.parse_args(argv)
    grid = Grid(dict.fromkeys(SHAPES), ["pairs-model"], args.epsilons, args.seeds, data_seed=None)
    for r in run(grid, log=lambda s: print(s, file=sys.stderr, flush=True)):
        out = {"label": args.label, "shape": r["dataset"], "n": r["n"], "d": r["d"], "epsilon": r["epsilon"],
               "seed": r["seed"], "model": r["tvd"], **json.loads(r["extra"])}
        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in out.items()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
