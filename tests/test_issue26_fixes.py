"""Issue 26, item 5: the demo's summary, figure and legend agree; UAI export round-trips through
pgmpy; Synthesizer.load reads fit's model; the progress bar's first ETA is honest."""
from __future__ import annotations

import json

import numpy as np

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


def _eta_lines(monkeypatch, costs, overhead, reported):
    """Plain progress lines of items taking ``costs`` seconds (on a fake clock, the first
    ``overhead`` seconds more), whose work is reported as ``reported``; (time, eta) pairs."""
    import lopub.progress as progress_module
    from lopub.progress import ConsoleProgress

    class Stream:
        text = ""

        def isatty(self):
            return False

        def write(self, s):
            self.text += s

        def flush(self):
            pass

    now = [0.0]
    monkeypatch.setattr(progress_module, "_clock", lambda: now[0])
    stream = Stream()
    p = ConsoleProgress(stream, line_interval=0.0)
    p("pairwise joints", 0, len(costs))
    out, done_work = [], 0.0
    for k, c in enumerate(costs):
        now[0] += c + (overhead if k == 0 else 0.0)
        done_work += reported[k]
        p.work("pairwise joints", done_work, sum(reported))
        before = stream.text
        p("pairwise joints", k + 1, len(costs))
        line = stream.text[len(before):]
        if " left" in line:
            mm, ss = line.split("about ")[1].split(" left")[0].split(":")[-2:]
            out.append((now[0], 60 * int(mm) + int(ss)))
    p.close()
    return out, now[0]


def test_progress_eta_within_2x_from_its_first_print(monkeypatch):
    # items largest first (as parallel workers take them), cost ~ cells, a start-up on the first:
    # the first ETA was 6x-17x the real time when it counted items
    cells = sorted([320, 128, 112, 56, 56, 48, 48, 40, 40, 16, 16, 16] * 6, reverse=True)
    costs = [c * 0.5 for c in cells]
    etas, end = _eta_lines(monkeypatch, costs, overhead=150.0, reported=cells)
    assert etas, "no time left was ever printed"
    for t, eta in etas[:3]:
        real = end - t
        assert real / 2 <= eta <= 2 * real, (t, eta, real)
    # the check can fail: items counted as equal work give a first ETA far from the truth
    etas, end = _eta_lines(monkeypatch, costs, overhead=150.0, reported=[1] * len(cells))
    t, eta = etas[0]
    assert not (end - t) / 2 <= eta <= 2 * (end - t)
