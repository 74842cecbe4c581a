"""lopub vs the reference library multi-freq-ldpy: MSE and time, same data, epsilon and seeds.

The reference runs when ``multi_freq_ldpy`` is importable (a private venv; nothing is installed).  Both
sides clip and renormalize; times are collection + estimation averaged over ``--runs`` (wall and CPU of
this process; the speed-up uses CPU).  ``--ref-n 100000,200000`` times the reference on those prefixes
and extrapolates linearly to ``--n`` (EXTRAPOLATED).  ``--equal-epsilon``: one-way marginals at equal
epsilon on Adult's 9 categorical attributes and the embedded data (``lopub.collect.compare``) and the
mean gain of ALLOMFREE over L-SUE and L-OUE (SMP).  Commands and figures: docs/bench_oracles.md.
"""
import argparse
import functools
import importlib.util
import sys
import types
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[1]))  # run as a script: the repository root

from lopub.estimate.postprocess import clip_normalize
from lopub.oracles.allomfree import Allomfree
from lopub.oracles.longitudinal import make_longitudinal
from lopub.oracles.oneshot import make_oracle
from pipelines.harness.common import floats, ints, names, timed


def lopub_run(name, values, a, seed):
    if name == "allomfree":  # the full scheme with one attribute (n_1 = n), like the reference's L-ADP
        proto = Allomfree(a.eps, a.eps1, (a.k,))
        return clip_normalize(proto.estimate(proto.perturb(values.reshape(-1, 1), rng=seed))[0])
    proto = make_longitudinal(name, a.eps, a.eps1, a.k) if name.startswith("l-") else make_oracle(name, a.eps, a.k)
    return clip_normalize(proto.estimate(proto.perturb(values, rng=seed)))


@functools.cache
def numba_seed():
    """A jitted ``np.random.seed``: the reference's numba clients draw from numba's own random state."""
    from numba import njit

    @njit
    def seed(s):
        np.random.seed(s)
    return seed


def reference_run(name, values, a, seed):
    import xxhash
    from multi_freq_ldpy.long_freq_est import L_ADP, L_GRR, L_OSUE
    from multi_freq_ldpy.pure_frequency_oracles import GRR, LH, UE

    def xxh32(data, seed=0):  # xxhash >= 3 refuses str, which old xxhash hashed as UTF-8
        return xxhash.xxh32(data.encode() if isinstance(data, str) else data, seed=int(seed) & 0xFFFFFFFF)

    LH.xxhash = types.SimpleNamespace(xxh32=xxh32)
    np.random.seed(seed)
    numba_seed()(seed)
    k, eps, eps1 = a.k, a.eps, a.eps1
    client, client_args, aggregate, args = {  # name: (client, its arguments, aggregator, its arguments)
        "grr": (GRR.GRR_Client, (k, eps), GRR.GRR_Aggregator_MI, (k, eps)),
        "oue": (UE.UE_Client, (k, eps, True), UE.UE_Aggregator_MI, (eps, True)),
        "sue": (UE.UE_Client, (k, eps, False), UE.UE_Aggregator_MI, (eps, False)),
        "olh": (LH.LH_Client, (k, eps, True), LH.LH_Aggregator_MI, (k, eps, True)),
        "l-grr": (L_GRR.L_GRR_Client, (k, eps, eps1), L_GRR.L_GRR_Aggregator_MI, (k, eps, eps1)),
        "l-osue": (L_OSUE.L_OSUE_Client, (k, eps, eps1), L_OSUE.L_OSUE_Aggregator_MI, (eps, eps1)),
        "allomfree": (L_ADP.L_ADP_Client, (k, eps, eps1), L_ADP.L_ADP_Aggregator_MI, (k, eps, eps1))}[name]
    return aggregate([client(int(v), *client_args) for v in values], *args)


def measure(fn, name, values, a):
    """Mean MSE (vs the empirical frequencies of ``values``), mean wall s, mean CPU s."""
    f = np.bincount(values, minlength=a.k) / values.size
    fn(name, values[:50], a, 1)  # warm-up (numba JIT of the reference)
    out = []
    for r in range(a.runs):  # perturbation seeds differ from the data seed (one stream would correlate them)
        est, wall, cpu = timed(functools.partial(fn, name, values, a, a.seed + 1000 + r))
        out.append((float(np.mean((np.asarray(est) - f) ** 2)), wall, cpu))
    return tuple(float(np.mean(column)) for column in zip(*out))


def row(label, lo, ref, note=""):
    speed = ref[2] / lo[2] if lo[2] > 0 else float("nan")
    print(f"{label:<20}{lo[0]:>11.3e}{ref[0]:>11.3e}{lo[1]:>9.3f}{lo[2]:>9.3f}"
          f"{ref[1]:>10.3f}{ref[2]:>10.3f}{speed:>9.1f} {note}".rstrip(), flush=True)


def extrapolated(name, values, a):
    """The reference timed on the ``--ref-n`` prefixes, its time fitted linearly and extrapolated to ``--n``."""
    times = []
    for m in a.ref_n:
        ref = measure(reference_run, name, values[:m], a)
        row(f"{name} @n={m}", measure(lopub_run, name, values[:m], a), ref)
        times.append(ref[1:])
        print(f"{'':<20}reference CPU per user: {1e6 * ref[2] / m:.2f} us", flush=True)
    if len(times) == 1:  # one point: proportional
        (bw, bc), (aw, ac) = np.divide(times[0], a.ref_n[0]), (0.0, 0.0)
    else:
        (bw, bc), (aw, ac) = np.polyfit(a.ref_n, times, 1)
    print(f"{'':<20}reference fit cpu = {ac:.3f} + {1e6 * bc:.3f}e-6 n s", flush=True)
    return float("nan"), aw + bw * a.n, ac + bc * a.n


def equal_epsilon(a) -> None:
    from lopub.collect import compare as cmp
    from pipelines.harness import datasets

    for name in a.datasets:
        data = datasets.load(name, seed=a.seed)
        data = data.select(list(cmp.ADULT_CATEGORICAL)) if name == "adult" else data
        print(f"\n== {name}: n={data.n}, d={len(data.domain.sizes)}, k={list(data.domain.sizes)}, runs={a.runs}, "
              f"eps_1={a.eps1_ratio} eps_inf for longitudinal, L-GRR {a.lgrr_variant} ==", flush=True)
        rows = cmp.compare(data.codes, data.domain.sizes, a.epsilons, a.protocols or cmp.DEFAULT_PROTOCOLS, runs=a.runs,
                           eps1_ratio=a.eps1_ratio, dataset=data, lgrr_variant=a.lgrr_variant, rng=a.seed + 1)
        print(cmp.format_table(rows))
        mse = {(r["protocol"], r["epsilon"]): r["mse_avg"] for r in rows}
        for base in ("smp-l-sue", "smp-l-oue"):
            gain = [1 - mse[("allomfree", e)] / mse[(base, e)] for e in a.epsilons
                    if mse.get((base, e)) and mse.get(("allomfree", e))]
            if gain:
                print(f"mean gain of ALLOMFREE over {base}: {100 * np.mean(gain):.1f}% "
                      f"(per epsilon: {', '.join(f'{100 * x:.0f}%' for x in gain)})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--eps", type=float, default=1.0, help="epsilon (eps_inf for longitudinal)")
    ap.add_argument("--eps1-ratio", type=float, default=0.6)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--protocols", type=names, help="default grr,oue,sue,olh,l-grr,l-osue,allomfree "
                                                     "(--equal-epsilon: all of lopub.collect.compare)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ref-n", type=ints, default=[], help="time the reference only on these prefixes, "
                                                           "extrapolate linearly to --n (labelled)")
    ap.add_argument("--skip-reference", action="store_true")
    ap.add_argument("--equal-epsilon", action="store_true", help="the comparison on Adult and embedded data")
    ap.add_argument("--epsilons", type=floats, default="0.5,1,2,4,8", help="--equal-epsilon")
    ap.add_argument("--lgrr-variant", choices=("paper", "exact"), default="paper",
                    help="--equal-epsilon: L-GRR 'paper' (Eq. 13) or 'exact' (spends eps_1 fully)")
    ap.add_argument("--datasets", type=names, default="adult,embedded", help="--equal-epsilon")
    a = ap.parse_args()
    if a.equal_epsilon:
        return equal_epsilon(a)
    have_ref = importlib.util.find_spec("multi_freq_ldpy") is not None and not a.skip_reference
    if any(m > a.n for m in a.ref_n):
        ap.error("--ref-n sizes must be <= --n")
    rng = np.random.default_rng(a.seed)
    weights = 1 / np.arange(1, a.k + 1) ** 1.1
    values = rng.choice(a.k, size=a.n, p=weights / weights.sum())
    a.eps1 = a.eps1_ratio * a.eps
    print(f"n={a.n} k={a.k} eps={a.eps} eps_1={a.eps1:g} runs={a.runs} "
          f"reference={'yes' if have_ref else 'not installed'}"
          + (f" ref-n={a.ref_n} (reference extrapolated to n)" if a.ref_n and have_ref else ""))
    print("times: mean seconds per run (collection + estimation); wall = perf_counter, "
          "cpu = process_time; speedup = ref cpu / lopub cpu")
    print(f"{'protocol':<20}{'lopub MSE':>11}{'ref MSE':>11}{'lo wall':>9}{'lo cpu':>9}"
          f"{'ref wall':>10}{'ref cpu':>10}{'speedup':>9}")
    for name in a.protocols or names("grr,oue,sue,olh,l-grr,l-osue,allomfree"):
        lo = measure(lopub_run, name, values, a)
        if have_ref and a.ref_n:
            row(f"{name} @n={a.n}", lo, extrapolated(name, values, a), "(ref EXTRAPOLATED, ref MSE not measured)")
        else:
            row(name, lo, measure(reference_run, name, values, a) if have_ref else (float("nan"),) * 3)


if __name__ == "__main__":
    main()
