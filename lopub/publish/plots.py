"""Pictures of the correlation structure (matplotlib figures drawn off screen; pyplot and the backend are left alone).

* :func:`plot_mi` -- heatmap of MI / tau per pair with attribute names; cells
  at or above 1 are edges (ratio, so pairs with different thresholds compare);
  edges are outlined (dashed orange when dropped for the clique budget), pairs
  not computed (pruning) hatched grey, the diagonal white; a legend says so.
* :func:`plot_graph` -- left: the dependency graph (edge width ~ MI / tau,
  edges dropped for the clique budget dashed red, triangulation fill-in
  dashed grey, nodes coloured by the first clique that holds them, clique
  members listed, legend); right: the junction tree, one node per clique,
  edges labelled with their separators (wrapped, never clipped).

Files are written atomically.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 4 (dependency graph), Sec. V-B
(junction tree), Sec. VII-C (correlation identification).
"""
from __future__ import annotations

import os
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
import networkx as nx
import numpy as np

from lopub.dependency.graph import DependencyGraph
from lopub.dependency.junction import JunctionTree
from lopub.io import atomic_write


def _save(fig, path: str | os.PathLike) -> None:
    fmt = os.path.splitext(os.fspath(path))[1].lstrip(".").lower() or "png"
    atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=120, bbox_inches="tight"))


def plot_mi(dg: DependencyGraph, path: str | os.PathLike) -> None:
    """Heatmap of MI / tau with attribute names; edges outlined (Eq. 24, 26).

    Colour: log10(MI / tau), clipped below at -2 (>= 0 means MI >= tau, an
    edge).  Pairs not computed (pruning) are hatched grey, the diagonal is
    white, edges are outlined in red and edges dropped for the clique budget
    in dashed orange; a legend explains each mark.
    """
    attrs = list(dg.domain.attrs)
    d = len(attrs)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(dg.thresholds > 0, dg.mi / dg.thresholds, np.nan)
    np.fill_diagonal(ratio, np.nan)
    size = max(4.0, 0.45 * d + 2)
    fig = Figure(figsize=(size + 1.5, size + 1.0))
    ax = fig.subplots()
    shown = np.ma.masked_invalid(np.log10(np.clip(ratio, 1e-2, None)))
    im = ax.imshow(shown, cmap=matplotlib.colormaps["viridis"], vmin=-2,
                   vmax=max(1.0, float(shown.max()) if shown.count() else 1.0))
    for i, j in zip(*np.nonzero(np.isnan(dg.mi))):
        if i != j:
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fc="#c8c8c8", ec="#888", hatch="///", lw=0))
    for i in range(d):
        ax.add_patch(Rectangle((i - 0.5, i - 0.5), 1, 1, fc="white", ec="#999", lw=0.5))
    dropped = {frozenset(e) for e in dg.dropped}
    for a, b in dg.edges:
        style: dict[str, Any] = dict(ec="orange", ls="--", lw=2.0) if frozenset((a, b)) in dropped else dict(ec="red", lw=1.5)
        for i, j in ((attrs.index(a), attrs.index(b)), (attrs.index(b), attrs.index(a))):
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, **style))
    ax.set_xticks(range(d), attrs, rotation=90, fontsize=8)
    ax.set_yticks(range(d), attrs, fontsize=8)
    fig.colorbar(im, ax=ax, extend="min", shrink=0.8,
                 label="log10(MI / tau)   (>= 0: MI reaches tau, an edge)")
    handles = [Patch(fc="none", ec="red", lw=1.5, label="edge (MI >= tau)"),
               Patch(fc="white", ec="#999", label="diagonal (attribute itself)")]
    if np.isnan(dg.mi[~np.eye(d, dtype=bool)]).any():
        handles.append(Patch(fc="#c8c8c8", ec="#888", hatch="///", label="not computed (pruned)"))
    if dropped:
        handles.append(Patch(fc="none", ec="orange", ls="--", lw=2.0, label="edge dropped for clique budget"))
    below = (5.5 * max(len(a) for a in attrs) + 12) / (72 * size * 0.8)  # rotated tick labels
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -below),
              ncol=2, fontsize=8, frameon=False)
    ax.set_title(f"Mutual information vs threshold, phi = {dg.phi:g}")
    _save(fig, path)


def plot_graph(graph: nx.Graph, tree: JunctionTree, path: str | os.PathLike, *,
               title: str = "Dependency graph", extra_edges=(), dropped_edges=None) -> None:
    """Dependency graph with cliques marked, and the junction tree.

    Solid edges are held by some clique; ``dropped_edges`` (dashed red) were
    dropped for the clique budget -- no clique, hence no release, contains
    them.  ``None`` means: every edge of ``graph`` that no clique holds.
    Triangulation fill-in edges are dashed grey; ``extra_edges`` (dotted blue)
    are edges the release graph holds beyond ``graph`` (``fit(model_phi=...)``).
    """
    fig = Figure(figsize=(16, 8))
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.1]})
    g = nx.Graph(graph)
    if dropped_edges is None:
        dropped_edges = [e for e in g.edges if not any(set(e) <= set(c) for c in tree.cliques)]
    gone = {frozenset(e) for e in dropped_edges}
    _draw_graph(ax1, g, tree, gone, list(extra_edges))
    n_gone = sum(frozenset(e) in gone for e in g.edges)
    extra = f", {len(extra_edges)} release-only" if extra_edges else ""
    ax1.set_title(f"{title}\n{g.number_of_edges()} edges, {n_gone} dropped for clique budget{extra}")
    _draw_tree(ax2, tree)
    _save(fig, path)


def _draw_graph(ax, g: nx.Graph, tree: JunctionTree, gone: set, extra: list) -> None:
    pos = nx.circular_layout(list(g.nodes))
    colors = matplotlib.colormaps["tab20"]
    home: dict[str, int] = {}
    for k, i in enumerate(tree.order):
        for a in tree.cliques[i]:
            home.setdefault(a, k)
    kept = [e for e in g.edges if frozenset(e) not in gone]
    strength = []
    for a, b in kept:
        m, t = g.edges[a, b].get("mi"), g.edges[a, b].get("tau")
        strength.append(1.0 if m is None or not t else float(np.clip(m / t, 0.5, 8)))
    nx.draw_networkx_edges(g, pos, edgelist=kept, ax=ax, width=[0.6 + 0.5 * s for s in strength],
                           edge_color="#444")
    nx.draw_networkx_edges(g, pos, edgelist=list(tree.fill_edges), ax=ax, style="dashed",
                           edge_color="#999", width=1.0)
    nx.draw_networkx_edges(g, pos, edgelist=[e for e in g.edges if frozenset(e) in gone], ax=ax,
                           style="dashed", edge_color="#d62728", width=2.2)
    nx.draw_networkx_edges(g, pos, edgelist=extra, ax=ax, style="dotted", edge_color="#36c", width=1.2)
    nx.draw_networkx_nodes(g, pos, ax=ax, node_size=500,
                           node_color=[colors(home.get(a, 0) % 20) for a in g.nodes])
    nx.draw_networkx_labels(g, pos, ax=ax, font_size=8,
                            bbox=dict(fc="white", ec="none", alpha=0.7, pad=0.5))
    handles = [Line2D([], [], color="#444", lw=1.5, label="edge (MI >= tau), in a clique"),
               Line2D([], [], color="#d62728", lw=2.2, ls="--", label="dropped for clique budget"),
               Line2D([], [], color="#999", lw=1.0, ls="--", label="triangulation fill-in")]
    if extra:
        handles.append(Line2D([], [], color="#36c", lw=1.2, ls=":", label="release-only (model_phi)"))
    ax.legend(handles=handles, loc="upper left", fontsize=7, frameon=False)
    cliques = "\n".join(f"C{k}: {', '.join(tree.cliques[i])}" for k, i in enumerate(tree.order))
    ax.text(0.0, -0.02, cliques, transform=ax.transAxes, va="top", fontsize=7, family="monospace")
    ax.margins(0.12)
    ax.axis("off")


def _draw_tree(ax, tree: JunctionTree) -> None:
    t = nx.DiGraph()
    label = {i: f"C{k}" for k, i in enumerate(tree.order)}
    t.add_nodes_from(label.values())
    t.add_edges_from((label[p], label[c]) for p, c in tree.edges)
    tpos = _tree_layout(t, [label[r] for r in tree.roots])
    nx.draw_networkx(t, tpos, ax=ax, node_color="#9cf", node_size=700, font_size=8, arrows=False)
    for p, c in tree.edges:  # separator labels: horizontal, wrapped, never clipped
        (x0, y0), (x1, y1) = tpos[label[p]], tpos[label[c]]  # 60% of the way: fans spread out
        ax.text(x0 + 0.6 * (x1 - x0), y0 + 0.6 * (y1 - y0), _wrap(tree.separator(c)), fontsize=6.5,
                ha="center",
                va="center", clip_on=False, bbox=dict(fc="#fffbe6", ec="#cc9", lw=0.5, pad=1.5))
    ax.margins(x=0.15, y=0.1)
    ax.set_title(f"Junction tree ({len(tree.cliques)} cliques, {len(tree.roots)} component(s)); "
                 f"boxes: separators")
    ax.axis("off")


def _wrap(attrs, width: int = 14) -> str:
    lines, cur = [], ""
    for a in attrs:
        if cur and len(cur) + len(a) + 2 > width:
            lines.append(cur + ",")
            cur = a
        else:
            cur = f"{cur}, {a}" if cur else a
    return "\n".join(lines + [cur]) if cur else "(none)"


def _tree_layout(t: nx.DiGraph, roots: list[str]) -> dict:
    """Layered layout: depth on y, leaves spread on x (no graphviz needed)."""
    pos, x = {}, [0.0]

    def place(v: str, depth: int) -> float:
        kids = list(t.successors(v))
        if not kids:
            pos[v] = (x[0], -depth)
            x[0] += 1.0
        else:
            xs = [place(k, depth + 1) for k in kids]
            pos[v] = (sum(xs) / len(xs), -depth)
        return pos[v][0]

    for r in roots:
        place(r, 0)
    return pos
