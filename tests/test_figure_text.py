"""No text in any figure overlaps other text or the bars, or is clipped (bounding boxes with a renderer).

Every picture the package draws (the report's bars and heatmaps, the
dependency graph and junction tree, the MI heatmap) is drawn with an Agg
renderer and the window extents of its visible text compared: two texts
overlap when their boxes intersect by more than ``SLACK`` pixels in both
directions (glyph boxes include the font's ascent/descent padding, so
neighbouring tick labels of one axis touch at 0 px); a text with clipping on
must lie inside its clip box; a legend must not cover a bar.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from lopub.client import encode
from lopub.datasets import embedded, embedded_model
from lopub.pipeline.steps import fit
from lopub.publish import plots
from lopub.publish.report import figures
from lopub.reports.spec import CollectionSpec

SLACK = 1.0  # pixels


def _texts(fig):
    out = []
    for t in fig.findobj(Text):
        if t.get_visible() and t.get_text().strip() and t.figure is not None:
            out.append(t)
    return out


def text_problems(fig) -> list[str]:
    """Overlapping or clipped text in ``fig`` (empty when it reads cleanly)."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [(t, t.get_window_extent(renderer)) for t in _texts(fig)]
    problems = []
    for (t1, b1), (t2, b2) in itertools.combinations(boxes, 2):
        w = min(b1.x1, b2.x1) - max(b1.x0, b2.x0)
        h = min(b1.y1, b2.y1) - max(b1.y0, b2.y0)
        if w > SLACK and h > SLACK:
            problems.append(f"overlap: {t1.get_text()!r} and {t2.get_text()!r} ({w:.0f} x {h:.0f} px)")
    for t, b in boxes:
        clip = t.get_clip_box() if t.get_clip_on() else None
        if clip is not None and (b.x0 < clip.x0 - SLACK or b.x1 > clip.x1 + SLACK
                                 or b.y0 < clip.y0 - SLACK or b.y1 > clip.y1 + SLACK):
            problems.append(f"clipped: {t.get_text()!r}")
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        frame = legend.get_window_extent(renderer)
        for p in ax.patches:
            if isinstance(p, Rectangle) and p.get_height() > 0 and p.get_width() > 0:
                b = p.get_window_extent(renderer)
                if frame.overlaps(b) and min(frame.x1, b.x1) - max(frame.x0, b.x0) > SLACK \
                        and min(frame.y1, b.y1) - max(frame.y0, b.y0) > SLACK:
                    problems.append(f"legend covers a bar in {ax.get_title()!r}")
                    break
    return problems


@pytest.fixture(scope="module")
def model():
    real = embedded(3000, rng=1)
    reports = encode(real, CollectionSpec.from_domain(real.domain, f=0.5), rng=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit(reports=reports, phi=0.4, method="moment").model


def test_checker_finds_overlap_and_clipping():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    ax = fig.subplots()
    ax.text(0.5, 0.5, "first label")
    ax.text(0.52, 0.5, "second label")
    assert any(p.startswith("overlap") for p in text_problems(fig))
    fig = Figure(figsize=(3, 2))
    ax = fig.subplots()
    ax.text(0.95, 0.5, "runs past the axes edge", clip_on=True)
    assert any(p.startswith("clipped") for p in text_problems(fig))


def test_checker_finds_the_old_crowded_bars():
    # 12 categories with long labels on a 4-inch figure, unrotated, legend over the tallest bar
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 3))
    ax = fig.subplots()
    ax.bar(range(12), np.linspace(1, 0.1, 12), label="model")
    ax.set_xticks(range(12), [f"category number {i}" for i in range(12)])
    ax.legend(loc="upper left")
    problems = text_problems(fig)
    assert any(p.startswith("overlap") for p in problems) and any("legend" in p for p in problems)


@pytest.mark.parametrize("k", [2, 7, 16, 40])
@pytest.mark.parametrize("sources", [1, 3])
def test_bars_read_cleanly(k, sources):
    rng = np.random.default_rng(k)
    labels = [f"value {i} of a long category name" if i % 3 == 0 else f"v{i}" for i in range(k)]
    series = {name: rng.dirichlet(np.ones(k)) for name in ["model", "synthetic", "real"][:sources]}
    series[next(iter(series))][0] = 5.0  # one tall bar where a legend used to sit
    fig = figures.bars_figure("attribute with a long name", labels, series)
    assert text_problems(fig) == []


def test_heatmaps_read_cleanly(model):
    attrs = list(model.domain.attrs)
    rng = np.random.default_rng(0)
    d = len(attrs)
    m = rng.random((d, d))
    for dd in (5, d):
        fig = figures.heatmaps_figure({"release vs real": m[:dd, :dd], "baseline vs real": m[:dd, :dd]},
                                      attrs[:dd], label="mutual information (nats)", suptitle="title")
        assert text_problems(fig) == []


def test_graph_and_tree_read_cleanly(model):
    fig = plots.graph_figure(model.graph.graph, model.tree, title="Dependency graph",
                             dropped_edges=model.graph.dropped, rule=model.graph.stats.get("structure"))
    assert text_problems(fig) == []


def test_graph_of_the_exact_network_reads_cleanly():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit(estimator=embedded_model(), phi=0.4, clique_budget=5000, structure="phi").model
    fig = plots.graph_figure(model.graph.graph, model.tree, dropped_edges=model.graph.dropped, rule="phi")
    assert text_problems(fig) == []


def test_mi_heatmap_reads_cleanly(model):
    assert text_problems(plots.mi_figure(model.graph)) == []
