"""lopub vs the reference library multi-freq-ldpy: MSE and time, same data/epsilon/seeds.

Installs nothing.  When ``multi_freq_ldpy`` is importable, runs both on the
same values (n users, domain k, Zipf-like frequencies) for GRR, OUE, SUE,
OLH, L-GRR, L-OSUE and ALLOMFREE (single attribute: L-GRR or L-OSUE by the
variance rule).  Both sides use clip-and-renormalize (the reference's MI
estimator), so MSE compares like with like.  The reference runs its client
once per user (Python/numba loop) and its aggregators loop over users.

    python pipelines/bench_vs_multifreq.py --n 100000 --k 20 --eps 1 --runs 3
    python pipelines/bench_vs_multifreq.py --n 1000000 --k 100 --eps 1 --protocols olh --runs 1
"""
from __future__ import annotations

import argparse
import importlib.util
import time

import numpy as np

from lopub.oracles.allomfree import Allomfree
from lopub.oracles.longitudinal import LGRR, LOSUE
from lopub.oracles.oneshot import GRR, OLH, OUE, SUE
from lopub.oracles.postprocess import clip_normalize


def lopub_run(name, values, k, eps, eps1, seed):
    proto = {"grr": lambda: GRR(eps, k), "oue": lambda: OUE(eps, k), "sue": lambda: SUE(eps, k),
             "olh": lambda: OLH(eps, k), "l-grr": lambda: LGRR(eps, eps1, k),
             "l-osue": lambda: LOSUE(eps, eps1, k),
             "allomfree": lambda: Allomfree(eps, eps1, (k,)).protocols[0]}[name]()
    return clip_normalize(proto.estimate(proto.perturb(values, rng=seed)))


class _XXHashShim:
    """xxhash >= 3 refuses str input; old xxhash hashed str as UTF-8, which we replicate."""

    def __init__(self, module):
        self._m = module

    def xxh32(self, data, seed=0):
        data = data.encode() if isinstance(data, str) else data
        return self._m.xxh32(data, seed=int(seed) & 0xFFFFFFFF)


def reference_run(name, values, k, eps, eps1, seed):
    import xxhash
    from multi_freq_ldpy.long_freq_est import L_ADP, L_GRR, L_OSUE
    from multi_freq_ldpy.pure_frequency_oracles import GRR as R_GRR, LH, UE

    LH.xxhash = _XXHashShim(xxhash)

    np.random.seed(seed)  # the reference draws from NumPy's legacy global state
    vals = [int(v) for v in values]
    if name == "grr":
        return R_GRR.GRR_Aggregator_MI([R_GRR.GRR_Client(v, k, eps) for v in vals], k, eps)
    if name in ("oue", "sue"):
        opt = name == "oue"
        return UE.UE_Aggregator_MI([UE.UE_Client(v, k, eps, opt) for v in vals], eps, opt)
    if name == "olh":
        return LH.LH_Aggregator_MI([LH.LH_Client(v, k, eps, True) for v in vals], k, eps, True)
    if name == "l-grr":
        return L_GRR.L_GRR_Aggregator_MI([L_GRR.L_GRR_Client(v, k, eps, eps1) for v in vals], k, eps, eps1)
    if name == "l-osue":
        return L_OSUE.L_OSUE_Aggregator_MI([L_OSUE.L_OSUE_Client(v, k, eps, eps1) for v in vals], eps, eps1)
    return L_ADP.L_ADP_Aggregator_MI([L_ADP.L_ADP_Client(v, k, eps, eps1) for v in vals], k, eps, eps1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--eps", type=float, default=1.0, help="epsilon (eps_inf for longitudinal)")
    ap.add_argument("--eps1-ratio", type=float, default=0.6)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--protocols", default="grr,oue,sue,olh,l-grr,l-osue,allomfree")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-reference", action="store_true")
    a = ap.parse_args()
    have_ref = importlib.util.find_spec("multi_freq_ldpy") is not None and not a.skip_reference
    rng = np.random.default_rng(a.seed)
    weights = 1 / np.arange(1, a.k + 1) ** 1.1
    values = rng.choice(a.k, size=a.n, p=weights / weights.sum())
    f = np.bincount(values, minlength=a.k) / a.n
    eps1 = a.eps1_ratio * a.eps
    print(f"n={a.n} k={a.k} eps={a.eps} eps_1={eps1:g} runs={a.runs} reference={'yes' if have_ref else 'not installed'}")
    print(f"{'protocol':<10}{'lopub MSE':>12}{'ref MSE':>12}{'lopub s':>10}{'ref s':>10}{'speedup':>9}")
    for name in a.protocols.split(","):
        res = {}
        for side, fn in (("lopub", lopub_run), ("ref", reference_run)):
            if side == "ref" and not have_ref:
                continue
            fn(name, values[:50], a.k, a.eps, eps1, 1)  # warm-up (numba JIT of the reference)
            mses, secs = [], []
            for r in range(a.runs):
                t0 = time.perf_counter()
                # perturbation seeds differ from the data seed (same stream would correlate them)
                est = fn(name, values, a.k, a.eps, eps1, a.seed + 1000 + r)
                secs.append(time.perf_counter() - t0)
                mses.append(float(np.mean((np.asarray(est) - f) ** 2)))
            res[side] = (np.mean(mses), np.mean(secs))
        ref = res.get("ref", (float("nan"), float("nan")))
        print(f"{name:<10}{res['lopub'][0]:>12.3e}{ref[0]:>12.3e}{res['lopub'][1]:>10.3f}"
              f"{ref[1]:>10.3f}{ref[1] / res['lopub'][1]:>9.1f}", flush=True)


if __name__ == "__main__":
    main()
