"""Pictures of a release report as PNG bytes (matplotlib figures drawn off screen, nothing on disk; pyplot and the backend are left alone).

The dependency graph and junction tree come from :func:`lopub.publish.plots.plot_graph`
(drawn once into a temporary folder, read back, the folder removed).
"""
from __future__ import annotations

import io
import os
import tempfile
from typing import Any, Mapping, Sequence, cast

import matplotlib
from matplotlib.figure import Figure
import networkx as nx
import numpy as np

from lopub.publish.plots import plot_graph, short_labels

MAX_BARS = 30
COLORS = {"real": "#4c72b0", "synthetic": "#dd8452", "model": "#55a868", "independence": "#8172b2"}
DPI = 100


def png(fig: Any) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    return buf.getvalue()


def bars(attr: str, labels: Sequence[str], series: Mapping[str, np.ndarray]) -> bytes:
    """:func:`bars_figure` as PNG bytes."""
    return png(bars_figure(attr, labels, series))


def bars_figure(attr: str, labels: Sequence[str], series: Mapping[str, np.ndarray]) -> Figure:
    """Grouped bars of one attribute's distribution per source (``series``: name -> probabilities).

    More than ``MAX_BARS`` categories: the most frequent ones (largest share in
    any source) are shown and the rest summed into one "other" bar.
    """
    labels = list(labels)
    table = np.array([np.asarray(v, dtype=float) for v in series.values()])
    if len(labels) > MAX_BARS:
        keep = np.sort(np.argsort(-table.max(axis=0), kind="stable")[:MAX_BARS - 1])
        rest = np.setdiff1d(np.arange(len(labels)), keep)
        table = np.column_stack([table[:, keep], table[:, rest].sum(axis=1)])
        labels = [labels[i] for i in keep] + [f"other ({len(rest)})"]
    k, width = len(labels), 0.8 / max(len(series), 1)
    upright = k <= 6 and max(len(_short(lab)) for lab in labels) * k <= 48
    fig = Figure(figsize=(min(11.0, max(4.5, 0.16 * k * max(len(series), 1) + 2.6)), 3.4))
    ax = fig.subplots()
    for s, (name, row) in enumerate(zip(series, table)):
        ax.bar(np.arange(k) + (s - (len(series) - 1) / 2) * width, row, width,
               label=name, color=COLORS.get(name, None))
    # tick labels upright only when few and short; else vertical (their boxes never collide)
    ax.set_xticks(range(k), [_short(lab) for lab in labels], rotation=0 if upright else 90,
                  ha="center", fontsize=7)
    ax.set_xlim(-0.6, k - 0.4)
    ax.set_ylabel("share of records")
    ax.set_title(attr, fontsize=10)
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # off the bars
    return fig


def heatmaps(panels: Mapping[str, np.ndarray], attrs: Sequence[str], *, label: str,
             cmap: str = "viridis", suptitle: str = "") -> bytes:
    """:func:`heatmaps_figure` as PNG bytes."""
    return png(heatmaps_figure(panels, attrs, label=label, cmap=cmap, suptitle=suptitle))


def heatmaps_figure(panels: Mapping[str, np.ndarray], attrs: Sequence[str], *, label: str,
                    cmap: str = "viridis", suptitle: str = "") -> Figure:
    """Heatmaps of d x d matrices on one colour scale (NaN cells grey, annotated when d <= 12).

    Up to ``SIDE_BY_SIDE`` attributes the panels stand side by side; more
    are stacked, each the width of the page (about ``PAGE_INCHES``), so the
    picture is shown near its drawn size.  Tick labels are shortened to
    distinct names (:func:`short_labels`); where the cells get narrower than
    a label line only every k-th attribute is labelled
    (:func:`tick_step`), and the figure says so.
    """
    attrs = list(attrs)
    d = len(attrs)
    finite = [m[np.isfinite(m)] for m in panels.values()]
    vmax = max([float(f.max()) for f in finite if f.size] + [1e-9])
    stacked = d > SIDE_BY_SIDE and len(panels) > 1
    size = (PAGE_INCHES - 2.6) if d > SIDE_BY_SIDE else max(3.5, 0.42 * d + 1.8)
    step = tick_step(d)
    if stacked:
        fig = Figure(figsize=(PAGE_INCHES, (size + 1.6) * len(panels)))
        axes = fig.subplots(len(panels), 1, squeeze=False).T
    else:
        fig = Figure(figsize=(size * len(panels) + 1.2, size))
        axes = fig.subplots(1, len(panels), squeeze=False)
    cm = matplotlib.colormaps[cmap].with_extremes(bad="#d0d0d0")
    names = short_labels(attrs, 14)
    ticks = list(range(0, d, step))
    im = None
    for k, (ax, (title, m)) in enumerate(zip(axes[0], panels.items())):
        im = ax.imshow(np.ma.masked_invalid(m), cmap=cm, vmin=0.0, vmax=vmax)
        ax.set_xticks(ticks, [names[i] for i in ticks], rotation=90, fontsize=7)
        ax.set_yticks(ticks, [names[i] for i in ticks] if k == 0 or stacked else [], fontsize=7)
        ax.set_title(title, fontsize=9)
        if d <= 12:
            for i, j in zip(*np.nonzero(np.isfinite(m))):
                r, g, b, _ = cm(m[i, j] / vmax)
                ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=6,
                        color="black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white")
    fig.colorbar(cast(Any, im), ax=list(axes[0]), shrink=0.8 if not stacked else 0.5, label=label)
    note = tick_note(d)
    if suptitle or note:
        fig.suptitle("\n".join(t for t in (suptitle, note) if t), fontsize=9 if note else 10)
    return fig


#: attributes up to which heatmap panels stand side by side (more: stacked, one per row)
SIDE_BY_SIDE = 12
#: width of a report's pictures shown at their drawn size (the page is 1,100 CSS px, pictures at 100 dpi)
PAGE_INCHES = 10.5
#: smallest distance between two tick labels (inches; a 7-point line)
TICK_INCHES = 0.11


def tick_step(d: int) -> int:
    """Label every k-th of ``d`` heatmap rows: 1 while a row is at least a label line high."""
    if d <= SIDE_BY_SIDE:
        return 1
    cell = (PAGE_INCHES - 2.6) / d
    return max(1, int(np.ceil(TICK_INCHES / cell - 1e-9)))


def tick_note(d: int) -> str:
    """What a heatmap of ``d`` attributes leaves out of its tick labels ("" when every one is labelled)."""
    k = tick_step(d)
    if k == 1:
        return ""
    return f"{d} attributes: every {k}{_ordinal(k)} one labelled (from the first, in domain order)"


def _ordinal(k: int) -> str:
    return "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")


def structure(model: Any) -> bytes:
    """Dependency graph (cliques, dropped edges, fill-in) and junction tree of ``model``."""
    dg = getattr(model, "graph", None)
    if dg is not None:
        graph, dropped, title = dg.graph, dg.dropped, f"Dependency graph (phi = {dg.phi:g})"
        rule = dg.stats.get("structure")
    else:
        graph = nx.Graph()
        graph.add_nodes_from(model.domain.attrs)
        fill = {frozenset(e) for e in model.tree.fill_edges}
        graph.add_edges_from(e for c in model.tree.cliques for e in _pairs(c) if frozenset(e) not in fill)
        dropped, title, rule = [], "Model graph (no dependency graph stored)", None
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "structure.png")
        plot_graph(graph, model.tree, path, title=title, dropped_edges=dropped, rule=rule)
        with open(path, "rb") as fh:
            return fh.read()


def _pairs(clique: Sequence[str]) -> list[tuple[str, str]]:
    c = list(clique)
    return [(c[i], c[j]) for i in range(len(c)) for j in range(i + 1, len(c))]


def _short(text: str, width: int = 18) -> str:
    text = str(text)
    return text if len(text) <= width else text[:width - 1] + "\u2026"
