"""Experiment 6: the privacy each setting gives (epsilon per attribute and per record, Eq. 8).

From the ``CollectionSpec`` of each dataset and f (an attribute costs 2 h ln((2 - f) / f)).
Results: docs/RESULTS.md, section 6.  Run ``python -m pipelines.repro.exp6_privacy --help``.
"""
from __future__ import annotations

import matplotlib.pyplot as plt

from . import runner

NAME = "exp6_privacy"


def plot(df, out) -> None:
    """Epsilon per attribute and per record vs f (log scale)."""
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for name, g in df.groupby("dataset"):
        g = g.sort_values("f")
        ax.plot(g.f, g.eps_per_record, "o-", label=f"{name}: per record (d={int(g.d.iloc[0])})")
    g = df[df.dataset == df.dataset.iloc[0]].sort_values("f")
    ax.plot(g.f, g.eps_per_attribute, "k^--", label="per attribute (h=4, any dataset)")
    ax.set(xlabel="f", ylabel="epsilon (Eq. 8)", yscale="log", title="Privacy of each setting")
    ax.legend(fontsize=7)
    runner.save_figure(fig, out / "privacy.png")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = runner.parser(NAME, __doc__, methods=False, fs=[i / 10 for i in range(1, 10)])
    args, _ = runner.start(p, argv)
    return runner.finish(args, None, plot)


if __name__ == "__main__":
    raise SystemExit(main())
