"""What a share of fake users can do to the estimates (manipulation attacks), measured.

Usage::

    nice python pipelines/bench_serve_manipulation.py [--n 100000] [--k 36] [--epsilon 2]
        [--shares 0.001,0.01,0.05] [--seed 0]

``--n`` honest users with uniform values report one subset of ``k`` values
through GRR, OUE or OLH at ``--epsilon``; a share of fake users (accounts
that enrolled and got valid tokens) send crafted reports that pass the
service's validation (:meth:`lopub.serve.protocol.Collection.validate`):

* ``target``: support one value ``t`` as strongly as possible (GRR: report
  ``t``; OUE: only bit ``t``; OLH: a hash seed and ``y = h(t)``).  Each fake
  report moves ``f_t`` by ``(1 - q) / ((p - q) N)``, ``1/(p - q)`` times
  what an honest user holding ``t`` moves it (Cheu, Smith, Ullman, IEEE S&P
  2021: the price of local privacy under manipulation).
* ``spread`` (OUE): support as many values as validation lets one report
  (every bit before the cap on ones; ``cap`` bits after): the total
  absolute error summed over all values.

Printed per protocol and share: the mean shift of ``f_t`` against the
analytic ``share (1 - q)/(p - q)``, and the total error of ``spread``.
"""
from __future__ import annotations

import argparse
import json

import numpy as np

from lopub import Attribute, Domain
from lopub.collect import MarginalPlan
from lopub.serve.client import to_wire
from lopub.serve.protocol import Collection


def fake_reports(oracle: str, obj, m: int, t: int, attack: str, cap: int) -> np.ndarray:
    """``m`` crafted reports in the oracle's format."""
    if oracle == "grr":
        return np.full(m, t, dtype=np.int64)
    if oracle == "olh":
        a = np.arange(1, m + 1, dtype=np.int64)
        return np.column_stack([a, np.zeros(m, np.int64), (a * t % ((1 << 31) - 1)) % obj.g])
    bits = np.zeros((m, obj.k), dtype=bool)
    bits[:, :cap if attack == "spread" else 0] = True
    bits[:, t] = True
    return bits


def run(oracle: str, n: int, k: int, eps: float, share: float, attack: str, rng) -> dict:
    dom = Domain([Attribute("x", [str(i) for i in range(k)])])
    plan = MarginalPlan(dom, (("x",),), eps, oracles=(oracle,))
    c, obj = Collection("m", plan), plan.oracle(0)
    honest_values = rng.integers(0, k, n)
    honest = obj.perturb(honest_values, rng=rng)
    m, t = int(round(share * n)), 0
    uncapped = fake_reports(oracle, obj, m, t, attack, k)
    items = [{"subset": 0, "report": w} for w in to_wire(oracle, uncapped)]
    _, errors = c.validate(items, np.zeros(m, dtype=np.int64))
    cap = c.max_ones(0) if oracle == "oue" else k
    fakes = fake_reports(oracle, obj, m, t, attack, cap)
    truth = np.bincount(honest_values, minlength=k) / n
    est_clean = obj.estimate(honest)
    est = obj.estimate(np.concatenate([honest, fakes]))
    return {"oracle": oracle, "attack": attack, "share": share, "fake": m,
            "uncapped_refused": len(errors), "cap": cap,
            "shift_target": round(float(est[t] - est_clean[t] * n / (n + m)), 4),
            "analytic_target": round(share / (1 + share) * (1 - obj.q) / (obj.p - obj.q), 4),
            "total_abs_error": round(float(np.abs(est - truth).sum()), 3),
            "total_abs_error_uncapped": round(float(np.abs(
                obj.estimate(np.concatenate([honest, uncapped])) - truth).sum()), 3),
            "total_abs_error_clean": round(float(np.abs(est_clean - truth).sum()), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--k", type=int, default=36)
    ap.add_argument("--epsilon", type=float, default=2.0)
    ap.add_argument("--shares", default="0.001,0.01,0.05")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if not (1000 <= a.n <= 10**7 and 2 <= a.k <= 4096):
        ap.error(f"--n ({a.n}) must be in [1000, 10^7] and --k ({a.k}) in [2, 4096]")
    rng = np.random.default_rng(a.seed)
    for share in [float(s) for s in a.shares.split(",")]:
        for oracle, attack in (("grr", "target"), ("oue", "target"), ("olh", "target"), ("oue", "spread")):
            print(json.dumps(run(oracle, a.n, a.k, a.epsilon, share, attack, rng)), flush=True)


if __name__ == "__main__":
    main()
