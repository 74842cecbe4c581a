"""Real data as people have it, through the CLI defaults (issue 23).

UCI Adult as shipped (``?`` kept, the column names of ``adult.names``) goes through ``lopub schema``,
``collect --epsilon E --seed S``, ``fit`` and ``synthesize --seed S``; the release's mean 2-way TVD is printed
beside two baselines on the same schema: one random attribute per user at the whole epsilon (GRR or OUE, simplex
projection, product of the one-way estimates) and the uniform distribution.  ``python
pipelines/bench_raw_data.py --epsilon 4 --seeds 0,1,2``; figures: docs/BENCHMARKS.md, "Real data as shipped".
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ADULT_COLUMNS = ("age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
                 "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
                 "hours_per_week", "native_country", "income")


def pair_tables(codes: np.ndarray, sizes) -> dict:
    """Exact 2-way tables (probabilities) of integer codes, every pair of columns."""
    out = {}
    for i, j in itertools.combinations(range(codes.shape[1]), 2):
        flat = codes[:, i].astype(np.int64) * sizes[j] + codes[:, j]
        out[i, j] = np.bincount(flat, minlength=sizes[i] * sizes[j]).reshape(sizes[i], sizes[j]) / codes.shape[0]
    return out


def mean_pair_tvd(truth: dict, tables) -> float:
    """Mean 2-way TVD of ``tables`` (dict of pair -> table, or a callable pair -> table)."""
    get = tables if callable(tables) else tables.__getitem__
    return float(np.mean([0.5 * np.abs(t - get(p)).sum() for p, t in truth.items()]))


def one_attribute_marginals(codes: np.ndarray, sizes, epsilon: float, *, rng) -> list[np.ndarray]:
    """One-way estimates when each user reports one random attribute at ``epsilon``."""
    from lopub.estimate.postprocess import project_simplex

    gen = np.random.default_rng(rng)
    which = gen.integers(0, codes.shape[1], size=codes.shape[0])
    e = np.exp(epsilon)
    out = []
    for j, k in enumerate(sizes):  # loop over attributes
        x = codes[which == j, j].astype(np.int64)
        m = max(x.size, 1)
        if k == 1:
            out.append(np.ones(1))
        elif k < 3 * e + 2:  # GRR
            p, q = e / (e + k - 1), 1.0 / (e + k - 1)
            y = np.where(gen.random(x.size) < p - q, x, gen.integers(0, k, size=x.size))
            out.append(project_simplex((np.bincount(y, minlength=k) / m - q) / (p - q)))
        else:  # OUE: bit x kept w.p. 1/2, others set w.p. 1/(e+1)
            p, q = 0.5, 1.0 / (e + 1.0)
            own = np.bincount(x, minlength=k)
            counts = (gen.binomial(own, p) + gen.binomial(m - own, q)) / m
            out.append(project_simplex((counts - q) / (p - q)))
    return out


def independence_tables(marginals: list[np.ndarray]):
    """Pair -> outer product of two one-way tables."""
    return lambda pair: np.outer(marginals[pair[0]], marginals[pair[1]])


def _lopub(workdir: str, *args: str) -> None:
    res = subprocess.run([sys.executable, "-m", "lopub", *args], cwd=workdir, capture_output=True, text=True,
                         check=False)
    if res.returncode != 0:
        raise RuntimeError(f"lopub {' '.join(args)} failed: {res.stderr.strip()}")


def run(epsilon: float, seed: int, workdir: str) -> dict:
    """The four default commands on Adult as shipped; release and baseline TVDs on the schema they wrote."""
    from lopub.cli._common import read_csv
    from lopub.data.dataset import Dataset
    from lopub.data.domain import Domain

    with open(os.path.join(os.environ.get("LOPUB_DATA_DIR", ""), "adult", "adult.data"), encoding="utf-8") as fh:
        rows = [line.strip() for line in fh if line.strip()]
    with open(os.path.join(workdir, "adult.csv"), "w", encoding="utf-8") as out:
        out.write(",".join(ADULT_COLUMNS) + "\n" + "\n".join(rows) + "\n")
    _lopub(workdir, "schema", "adult.csv", "--out", "dom.json")
    _lopub(workdir, "collect", "adult.csv", "--domain", "dom.json", "--epsilon", str(epsilon), "--out", "r.npz",
           "--seed", str(seed))
    _lopub(workdir, "fit", "r.npz" if os.path.exists(os.path.join(workdir, "r.npz")) else "r.parquet",
           "--out", "m.json")  # Bloom reports (protocol auto) are written as .parquet
    _lopub(workdir, "synthesize", "m.json", "--out", "s.csv", "--seed", str(seed))
    dom = Domain.from_json(os.path.join(workdir, "dom.json"))
    real, syn = (Dataset.from_pandas(read_csv(os.path.join(workdir, f)), dom) for f in ("adult.csv", "s.csv"))
    truth = pair_tables(real.codes, dom.sizes)
    ones = one_attribute_marginals(real.codes, dom.sizes, epsilon, rng=seed)
    return {"epsilon": epsilon, "seed": seed, "sizes": dict(zip(dom.attrs, dom.sizes)),
            "release": mean_pair_tvd(truth, pair_tables(syn.codes, dom.sizes)),
            "one_attribute": mean_pair_tvd(truth, independence_tables(ones)),
            "uniform": mean_pair_tvd(truth, independence_tables([np.full(k, 1.0 / k) for k in dom.sizes]))}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epsilon", type=float, default=4.0)
    p.add_argument("--seeds", default="0")
    p.add_argument("--json")
    a = p.parse_args(argv)
    rows = []
    for seed in [int(s) for s in a.seeds.split(",")]:
        with tempfile.TemporaryDirectory(prefix="lopub-raw-") as wd:
            rows.append(run(a.epsilon, seed, wd))
        print(f"epsilon {a.epsilon:g} seed {seed}: release {rows[-1]['release']:.4f}, one attribute + "
              f"independence {rows[-1]['one_attribute']:.4f}, uniform {rows[-1]['uniform']:.4f}; "
              f"sizes {rows[-1]['sizes']}", flush=True)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
