"""lopub vs the reference library multi-freq-ldpy: MSE and time, same data, epsilon and seeds.

Installs nothing: the reference runs when ``multi_freq_ldpy`` is importable (a private venv).  Both
sides use clip-and-renormalize; times are collection + estimation averaged over ``--runs``, wall and
CPU of this process (the speed-up uses CPU).  ``--ref-n 100000,200000`` times the reference on those
prefixes only and extrapolates linearly to ``--n`` (marked EXTRAPOLATED).  The reference's numba
clients keep their own random state: both states are seeded (``_seed_reference``).  Commands and
figures: docs/bench_oracles.md.

``--equal-epsilon``: one-way marginals at equal epsilon on Adult's 9 categorical attributes and the
embedded dataset, LoPub's Bloom reports vs the SPL / SMP oracles vs ALLOMFREE (MSE_avg, time), with
the mean gain of ALLOMFREE over L-SUE and L-OUE (SMP) as in the ALLOMFREE paper.
"""
from __future__ import annotations

import argparse
import importlib.util
import time

import numpy as np

from lopub.oracles.allomfree import Allomfree
from lopub.oracles.longitudinal import LGRR, LOSUE
from lopub.oracles.oneshot import GRR, OLH, OUE, SUE
from lopub.estimate.postprocess import clip_normalize


def lopub_run(name, values, k, eps, eps1, seed):
    proto = {"grr": lambda: GRR(eps, k), "oue": lambda: OUE(eps, k), "sue": lambda: SUE(eps, k),
             "olh": lambda: OLH(eps, k), "l-grr": lambda: LGRR(eps, eps1, k),
             "l-osue": lambda: LOSUE(eps, eps1, k),
             "allomfree": lambda: Allomfree(eps, eps1, (k,))}[name]()
    if name == "allomfree":  # the full scheme with one attribute (n_1 = n), like the reference's L-ADP
        return clip_normalize(proto.estimate(proto.perturb(values.reshape(-1, 1), rng=seed))[0])
    return clip_normalize(proto.estimate(proto.perturb(values, rng=seed)))


class _XXHashShim:
    """xxhash >= 3 refuses str input; old xxhash hashed str as UTF-8, which we replicate."""

    def __init__(self, module):
        self._m = module

    def xxh32(self, data, seed=0):
        data = data.encode() if isinstance(data, str) else data
        return self._m.xxh32(data, seed=int(seed) & 0xFFFFFFFF)


_NUMBA_SEED = None


def _seed_reference(seed):
    """Seed NumPy's legacy global state and numba's separate one (jitted clients)."""
    global _NUMBA_SEED
    np.random.seed(seed)
    if _NUMBA_SEED is None:
        from numba import njit

        @njit
        def _numba_seed(s):
            np.random.seed(s)

        _NUMBA_SEED = _numba_seed
    _NUMBA_SEED(seed)


def reference_run(name, values, k, eps, eps1, seed):
    import xxhash
    from multi_freq_ldpy.long_freq_est import L_ADP, L_GRR, L_OSUE
    from multi_freq_ldpy.pure_frequency_oracles import GRR as R_GRR, LH, UE

    LH.xxhash = _XXHashShim(xxhash)

    _seed_reference(seed)
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


def measure(fn, name, values, k, eps, eps1, runs, seed):
    """Mean MSE (vs the empirical frequencies of ``values``), mean wall s, mean CPU s."""
    f = np.bincount(values, minlength=k) / values.size
    fn(name, values[:50], k, eps, eps1, 1)  # warm-up (numba JIT of the reference)
    mses, walls, cpus = [], [], []
    for r in range(runs):
        w0, c0 = time.perf_counter(), time.process_time()
        # perturbation seeds differ from the data seed (same stream would correlate them)
        est = fn(name, values, k, eps, eps1, seed + 1000 + r)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
        mses.append(float(np.mean((np.asarray(est) - f) ** 2)))
    return float(np.mean(mses)), float(np.mean(walls)), float(np.mean(cpus))


def _row(label, lo, ref, note=""):
    speed = ref[2] / lo[2] if lo[2] > 0 else float("nan")
    print(f"{label:<20}{lo[0]:>11.3e}{ref[0]:>11.3e}{lo[1]:>9.3f}{lo[2]:>9.3f}"
          f"{ref[1]:>10.3f}{ref[2]:>10.3f}{speed:>9.1f} {note}".rstrip(), flush=True)


def gains(rows: list[dict]) -> str:
    by = {(r["protocol"], r["epsilon"]): r["mse_avg"] for r in rows}
    eps = sorted({r["epsilon"] for r in rows})
    out = []
    for base in ("smp-l-sue", "smp-l-oue"):
        g = [1 - by[("allomfree", e)] / by[(base, e)] for e in eps
             if by.get((base, e)) and by.get(("allomfree", e))]
        if g:
            out.append(f"mean gain of ALLOMFREE over {base}: {100 * np.mean(g):.1f}% "
                       f"(per epsilon: {', '.join(f'{100 * x:.0f}%' for x in g)})")
    return "\n".join(out)


def equal_epsilon(a) -> None:
    from lopub.collect.compare import ADULT_CATEGORICAL, DEFAULT_PROTOCOLS, compare, format_table
    from lopub.datasets import embedded, load_adult

    eps = [float(x) for x in a.epsilons.split(",")]
    for name in a.datasets.split(","):
        data = (load_adult().select(list(ADULT_CATEGORICAL)) if name == "adult"
                else embedded(20000, rng=a.seed))
        print(f"\n== {name}: n={data.n}, d={len(data.domain.sizes)}, k={list(data.domain.sizes)}, "
              f"runs={a.runs}, eps_1={a.eps1_ratio} eps_inf for longitudinal, "
              f"L-GRR {a.lgrr_variant} ==", flush=True)
        rows = compare(data.codes, data.domain.sizes, eps, (a.protocols or ",".join(DEFAULT_PROTOCOLS)).split(","),
                       runs=a.runs, eps1_ratio=a.eps1_ratio, dataset=data, lgrr_variant=a.lgrr_variant,
                       rng=a.seed + 1)
        print(format_table(rows))
        print(gains(rows), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--eps", type=float, default=1.0, help="epsilon (eps_inf for longitudinal)")
    ap.add_argument("--eps1-ratio", type=float, default=0.6)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--protocols", help="default grr,oue,sue,olh,l-grr,l-osue,allomfree (--equal-epsilon: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ref-n", default="",
                    help="comma-separated subsample sizes: time the reference only on these "
                         "prefixes and extrapolate linearly to --n (clearly labelled)")
    ap.add_argument("--skip-reference", action="store_true")
    ap.add_argument("--equal-epsilon", action="store_true", help="the comparison on Adult and embedded data")
    ap.add_argument("--epsilons", default="0.5,1,2,4,8", help="--equal-epsilon")
    ap.add_argument("--lgrr-variant", choices=("paper", "exact"), default="paper",
                    help="--equal-epsilon: L-GRR 'paper' (Eq. 13) or 'exact' (spends eps_1 fully)")
    ap.add_argument("--datasets", default="adult,embedded", help="--equal-epsilon")
    a = ap.parse_args()
    if a.equal_epsilon:
        equal_epsilon(a)
        return
    a.protocols = a.protocols or "grr,oue,sue,olh,l-grr,l-osue,allomfree"
    have_ref = importlib.util.find_spec("multi_freq_ldpy") is not None and not a.skip_reference
    ref_ns = [int(x) for x in a.ref_n.split(",") if x.strip()]
    if any(m > a.n for m in ref_ns):
        ap.error("--ref-n sizes must be <= --n")
    rng = np.random.default_rng(a.seed)
    weights = 1 / np.arange(1, a.k + 1) ** 1.1
    values = rng.choice(a.k, size=a.n, p=weights / weights.sum())
    eps1 = a.eps1_ratio * a.eps
    nan = (float("nan"),) * 3
    print(f"n={a.n} k={a.k} eps={a.eps} eps_1={eps1:g} runs={a.runs} "
          f"reference={'yes' if have_ref else 'not installed'}"
          + (f" ref-n={ref_ns} (reference extrapolated to n)" if ref_ns and have_ref else ""))
    print("times: mean seconds per run (collection + estimation); wall = perf_counter, "
          "cpu = process_time; speedup = ref cpu / lopub cpu")
    print(f"{'protocol':<20}{'lopub MSE':>11}{'ref MSE':>11}{'lo wall':>9}{'lo cpu':>9}"
          f"{'ref wall':>10}{'ref cpu':>10}{'speedup':>9}")
    for name in a.protocols.split(","):
        lo = measure(lopub_run, name, values, a.k, a.eps, eps1, a.runs, a.seed)
        if not have_ref:
            _row(name, lo, nan)
            continue
        if not ref_ns:
            _row(name, lo, measure(reference_run, name, values, a.k, a.eps, eps1, a.runs, a.seed))
            continue
        ref_cpu, ref_wall = [], []
        for m in ref_ns:
            sub = values[:m]
            ref = measure(reference_run, name, sub, a.k, a.eps, eps1, a.runs, a.seed)
            _row(f"{name} @n={m}", measure(lopub_run, name, sub, a.k, a.eps, eps1, a.runs, a.seed), ref)
            ref_wall.append(ref[1])
            ref_cpu.append(ref[2])
            print(f"{'':<20}reference CPU per user: {1e6 * ref[2] / m:.2f} us", flush=True)
        if len(ref_ns) >= 2:
            bw, aw = np.polyfit(ref_ns, ref_wall, 1)
            bc, ac = np.polyfit(ref_ns, ref_cpu, 1)
        else:  # one point: proportional
            aw, bw, ac, bc = 0.0, ref_wall[0] / ref_ns[0], 0.0, ref_cpu[0] / ref_ns[0]
        print(f"{'':<20}reference fit cpu = {ac:.3f} + {1e6 * bc:.3f}e-6 n s", flush=True)
        _row(f"{name} @n={a.n}", lo, (float("nan"), aw + bw * a.n, ac + bc * a.n),
             "(ref EXTRAPOLATED, ref MSE not measured)")


if __name__ == "__main__":
    main()
