"""Benchmark the release model against the naive per-set tables from the same reports (issue 24 item 1).

All pairs measured, one pair per user (best oracle per pair), on a few
shapes; per epsilon: the fitted model's mean 2-way TVD over all pairs
(``fit``'s defaults), its synthetic release's (``sample_codes``, n records),
the naive pair tables (CALM consistency + Norm-Sub, no model) and the fit's
convergence fields.  Run it once with this worktree and once with an older
lopub on ``PYTHONPATH`` to compare "before" and "after" on the same reports
(the reports depend only on the data, epsilon and seed)::

    PYTHONPATH=$PWD python pipelines/bench_model.py --label after
    PYTHONPATH=/path/to/old python pipelines/bench_model.py --label before

Shapes: ``latent20`` (20 binary survey-like answers driven by a 3-class
latent variable, every pair dependent), ``alarm20`` (the first 20 non-constant
nodes of pgmpy's ALARM network sampled, each binarized as "most frequent
value or not"), ``adult`` (UCI Adult from LOPUB_DATA_DIR, 15 attributes).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # after PYTHONPATH: its lopub wins

from pipelines.harness.methods import naive_tvd, pair_reports

N = 20_000


def latent20(seed: int):
    from lopub.data.dataset import Dataset
    from lopub.data.domain import Domain

    g = np.random.default_rng(seed)
    z = g.integers(0, 3, N)
    p = g.beta(0.7, 0.7, size=(3, 20))
    x = (g.random((N, 20)) < p[z]).astype(int)
    cols = [f"q{j:02d}" for j in range(20)]
    dom = Domain.from_categories({c: ["0", "1"] for c in cols})
    return Dataset.from_pandas(pd.DataFrame({c: x[:, j].astype(str) for j, c in enumerate(cols)}), dom)


def alarm20(seed: int):
    from pgmpy.sampling import BayesianModelSampling
    from pgmpy.utils import get_example_model

    from lopub.data.dataset import Dataset
    from lopub.data.domain import Domain

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = BayesianModelSampling(get_example_model("alarm")).forward_sample(
            size=N, seed=seed, show_progress=False)
    cols = [c for c in df.columns if df[c].nunique() > 1][:20]
    out = pd.DataFrame({c: np.where(df[c] == df[c].mode()[0], "1", "0") for c in cols})
    return Dataset.from_pandas(out, Domain.from_categories({c: ["0", "1"] for c in cols}))


def adult(seed: int):
    from lopub.datasets import load_adult

    return load_adult()


SHAPES = {"latent20": latent20, "alarm20": alarm20, "adult": adult}


def cell(data, eps: float, seed: int) -> dict:
    from lopub.pipeline.steps import fit
    from lopub.publish.evaluate import average_tvd
    from lopub.publish.synthesize import sample_codes

    reports = pair_reports(data, eps, seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fit(reports)
    secs = time.perf_counter() - t0
    synth = sample_codes(res.model, data.n, rng=seed + 7)
    mf = res.report.model_fit or {}
    return {"model": average_tvd(data, res.model, 2)["mean"], "synthetic": average_tvd(data, synth, 2)["mean"],
            "naive": naive_tvd(data, reports), "fit_seconds": round(secs, 2),
            "converged": mf.get("converged"), "chi2": mf.get("chi2"), "dof": mf.get("dof"),
            "iterations": mf.get("iterations"), "regions": mf.get("regions", 0)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    ap.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 4.0, 8.0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--label", default="after")
    args = ap.parse_args(argv)
    for shape in args.shapes:
        for seed in args.seeds:
            data = SHAPES[shape](seed)
            for eps in args.epsilons:
                row = {"label": args.label, "shape": shape, "n": data.n, "d": len(data.domain),
                       "epsilon": eps, "seed": seed, **cell(data, eps, seed)}
                print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
