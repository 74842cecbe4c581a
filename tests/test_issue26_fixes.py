"""Issue 26, item 5: the demo's summary, figure and legend agree; UAI export round-trips through
pgmpy; Synthesizer.load reads fit's model; the progress bar's first ETA is honest."""
from __future__ import annotations

import json

import numpy as np
import pytest

from lopub.cli import main

GREY_DOTTED = (0xaa / 255,) * 3
RED = (0xd6 / 255, 0x27 / 255, 0x28 / 255)


def _segments(ax, rgb):
    return sum(len(c.get_segments()) for c in ax.collections if hasattr(c, "get_segments")
               and len(c.get_segments()) and np.allclose(c.get_edgecolor()[0][:3], rgb))


def test_demo_summary_figure_and_legend_agree(tmp_path, monkeypatch):
    import lopub.publish.plots as plots

    figs = []
    real_save = plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, path: (figs.append(fig), real_save(fig, path)))
    assert main(["demo", "--out", str(tmp_path), "--n", "4000", "--quiet"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    graph_fig, mi_fig = figs
    ax = graph_fig.axes[0]
    assert _segments(ax, RED) == len(summary["dropped_for_clique_budget"])
    assert _segments(ax, GREY_DOTTED) == len(summary["not_modelled_explained_by_path"])
    assert f"{len(summary['dropped_for_clique_budget'])} dropped for clique budget" in ax.get_title()
    legend = " | ".join(t.get_text() for t in ax.get_legend().get_texts())
    mi_legend = " | ".join(t.get_text() for t in mi_fig.axes[0].get_legend().get_texts())
    assert summary["structure"] == "auto"
    for text in (legend, mi_legend):
        assert "chi-square" in text and "MI >= tau" not in text


def test_report_reads_the_csv_collect_read(tmp_path, capsys):
    # the real-data CSV may hold columns the schema left out (collect ignores them): the report too
    import warnings

    from lopub.datasets import embedded
    from lopub.pipeline.steps import fit

    real = embedded(2000, rng=0).select(["sex", "race", "income"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit(estimator=real, phi=0.4).model
    model.save(tmp_path / "model.json")
    real.to_pandas().assign(weight="7").to_csv(tmp_path / "real.csv", index=False)
    assert main(["report", str(tmp_path / "model.json"), "--real", str(tmp_path / "real.csv"),
                 "--out", str(tmp_path / "r.html")]) == 0
    assert "columns ['weight'] are not in the model's domain; left out" in capsys.readouterr().err
    assert (tmp_path / "r.html").read_text().count("<section") > 5
