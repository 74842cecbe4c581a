"""One-way marginals at equal epsilon: LoPub Bloom reports vs SPL/SMP oracles vs ALLOMFREE.

Prints MSE_avg = (1/d) sum_j (1/k_j) sum_v (f - f_hat)^2 (clip-and-renormalize)
and the time of collection + estimation, on Adult's 9 categorical attributes
and on the embedded dataset, for epsilon in 0.5 ... 8.  Also prints the mean
gain of ALLOMFREE over L-SUE and L-OUE (SMP, r = 1) as in the ALLOMFREE paper.

    LOPUB_DATA_DIR=/work/shared/datasets python pipelines/compare_protocols.py --runs 5
"""
from __future__ import annotations

import argparse

import numpy as np

from lopub.datasets import embedded, load_adult
from lopub.collect.compare import ADULT_CATEGORICAL, DEFAULT_PROTOCOLS, compare, format_table


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epsilons", default="0.5,1,2,4,8")
    ap.add_argument("--protocols", default=",".join(DEFAULT_PROTOCOLS))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--eps1-ratio", type=float, default=0.6)
    ap.add_argument("--lgrr-variant", choices=("paper", "exact"), default="paper",
                    help="L-GRR for smp-l-grr and allomfree: 'paper' (Eq. 13) or 'exact' "
                    "(spends eps_1 fully)")
    ap.add_argument("--n-embedded", type=int, default=20000)
    ap.add_argument("--datasets", default="adult,embedded")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    eps = [float(x) for x in a.epsilons.split(",")]
    for name in a.datasets.split(","):
        data = (load_adult().select(list(ADULT_CATEGORICAL)) if name == "adult"
                else embedded(a.n_embedded, rng=a.seed))
        print(f"\n== {name}: n={data.n}, d={len(data.domain.sizes)}, k={list(data.domain.sizes)}, "
              f"runs={a.runs}, eps_1={a.eps1_ratio} eps_inf for longitudinal, "
              f"L-GRR {a.lgrr_variant} ==", flush=True)
        rows = compare(data.codes, data.domain.sizes, eps, a.protocols.split(","), runs=a.runs,
                       eps1_ratio=a.eps1_ratio, dataset=data, lgrr_variant=a.lgrr_variant,
                       rng=a.seed + 1)
        print(format_table(rows))
        print(gains(rows), flush=True)


if __name__ == "__main__":
    main()
