"""Release quality through HTTP vs the in-process simulation (issue 27's "done when").

Usage::

    nice python pipelines/bench_serve_quality.py [--n 100000] [--epsilon 2] [--seeds 0,1,2]

For every seed: the embedded census-like dataset (13 attributes, ``--n``
records) and the planner's marginal plan at ``--epsilon``.

* ``collect``: :func:`lopub.collect.collect_records` (the simulation).
* ``http``: the same records randomized as devices would
  (:func:`lopub.serve.client.wire_reports`), sent through a real ``lopub
  serve`` process's relay endpoint in batches of 10,000 with minted tokens,
  exported by ``lopub serve-export`` (shuffled) and read back.

Both are fitted with ``Synthesizer(epsilon).fit_reports`` and scored by the
mean 2-way TVD of a synthetic sample of ``--n`` records against the data.
The two figures should agree within seed-to-seed variation.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from serve_live import running  # noqa: E402

from lopub import Dataset, Synthesizer  # noqa: E402
from lopub.cli import main as lopub_main  # noqa: E402
from lopub.collect import MarginalReports, collect_records, plan_marginals  # noqa: E402
from lopub.serve import tokens  # noqa: E402
from lopub.serve.client import post_batch, wire_reports  # noqa: E402
from lopub.serve.protocol import Collection  # noqa: E402

RELAY = "quality-relay-key-0123456789"


def score(reports, data: Dataset, epsilon: float, seed: int) -> float:
    from lopub.publish.evaluate import average_tvd  # not a stable import path (the package is being reshaped)

    syn = Synthesizer(epsilon=epsilon).fit_reports(reports)
    sample = Dataset.from_pandas(syn.sample(data.n, seed=seed), data.domain)
    return float(average_tvd(data, sample, k=2)["mean"])


def through_http(data: Dataset, plan, work: Path, seed: int):
    plan.to_json(work / "plan.json")
    (work / "relay.key").write_text(RELAY)
    secret = tokens.load_secret(work / "secret")
    rng = np.random.default_rng(seed + 1000)
    subsets = rng.integers(0, plan.n_subsets, data.n)
    wire = wire_reports(Collection("q", plan), np.asarray(data.codes), subsets, rng=rng)
    items = [{"token": tokens.issue(secret, "q", int(s)), "subset": int(s), "report": w}
             for s, w in zip(subsets.tolist(), wire)]
    with running({"q": work / "plan.json"}, work / "store.sqlite", "--relay-key-file",
                 str(work / "relay.key"), "--secret-file", str(work / "secret")) as (base, _):
        stored = sum(post_batch(base, "q", items[i:i + 10_000], RELAY)["stored"]
                     for i in range(0, len(items), 10_000))
    assert stored == data.n, stored
    assert lopub_main(["serve-export", f"q={work / 'plan.json'}", str(work / "x.npz"),
                       "--store", str(work / "store.sqlite"), "--quiet"]) == 0
    return MarginalReports.load(work / "x.npz", plan=plan)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--epsilon", type=float, default=2.0)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if not 1000 <= a.n <= 2_000_000:
        ap.error(f"--n ({a.n}) must be in [1000, 2000000]")
    from lopub.datasets.embedded import embedded  # not a stable import path

    rows = []
    for seed in [int(s) for s in a.seeds.split(",")]:
        data = embedded(a.n, rng=seed)
        plan = plan_marginals(data.domain, a.n, a.epsilon)
        t = time.perf_counter()
        sim = score(collect_records(data, plan, rng=seed), data, a.epsilon, seed)
        with tempfile.TemporaryDirectory() as tmp:
            http = score(through_http(data, plan, Path(tmp), seed), data, a.epsilon, seed)
        rows.append({"seed": seed, "n": a.n, "epsilon": a.epsilon, "subsets": plan.n_subsets,
                     "tvd_collect": round(sim, 4), "tvd_http": round(http, 4),
                     "seconds": round(time.perf_counter() - t, 1)})
        print(json.dumps(rows[-1]), flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main()
