"""The release model against the naive pair tables of the same reports (issue 24 item 1).

All pairs measured, one pair per user (best oracle per pair); per shape, epsilon and seed: the mean
2-way TVD of the fitted model (``fit``'s defaults), of its synthetic release (n records) and of the
naive pair tables (CALM consistency + Norm-Sub, no model), with the fit's convergence fields
(:func:`pipelines.harness.methods.pairs_model`).  Shapes: ``latent20``, ``alarm20`` (the seed draws
the data too) and ``adult``.  Run it with another lopub first on ``PYTHONPATH`` for "before" figures
(the reports depend only on the data, epsilon and seed); docs/BENCHMARKS.md, "Release model".
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # after PYTHONPATH: its lopub wins

from pipelines.harness.runner import Grid, run  # noqa: E402

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
