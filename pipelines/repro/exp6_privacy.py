"""Experiment 6: the privacy each setting gives (epsilon per attribute and per record).

LoPub Eq. 8 (an attribute's Bloom filter with h hashes and flip probability f is
2 h ln((2 - f) / f)-LDP; a record sums its attributes), computed from the actual
``CollectionSpec`` of each dataset and f, written as ``privacy.csv`` and plotted.
Run ``python -m pipelines.repro.exp6_privacy --help``.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Eq. 8.
"""
from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import runner

NAME = "exp6_privacy"


def plot(df: pd.DataFrame, out) -> object:
    """Epsilon per attribute and per record vs f (log scale)."""
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for name, g in df.groupby("dataset"):
        g = g.sort_values("f")
        ax.plot(g.f, g.eps_per_record, "o-", label=f"{name}: per record (d={int(g.d.iloc[0])})")
    g = df[df.dataset == df.dataset.iloc[0]].sort_values("f")
    ax.plot(g.f, g.eps_per_attribute, "k^--", label="per attribute (h=4, any dataset)")
    ax.set(xlabel="f", ylabel="epsilon (Eq. 8)", yscale="log", title="Privacy of each setting")
    ax.legend(fontsize=7)
    return runner.save_figure(fig, out / "privacy.png")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = runner.base_parser(NAME, __doc__.splitlines()[0])
    args, _ = runner.start(p, argv)
    fs = runner.resolve_fs(args) if args.fs or args.quick else tuple(np.round(np.arange(0.1, 0.91, 0.1), 2))
    path = runner.write_privacy(args.out, args.datasets, fs)
    df = pd.read_csv(path)
    print(df.to_string(index=False), file=sys.stderr)
    if not args.no_plot:
        plot(df, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
