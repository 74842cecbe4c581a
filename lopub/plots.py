"""Pictures of the correlation structure (matplotlib, Agg backend, no display).

* :func:`plot_mi` -- heatmap of MI / tau per pair with attribute names; cells
  at or above 1 are edges (ratio, so pairs with different thresholds compare);
  edges are outlined, pairs not computed (pruning) are grey.
* :func:`plot_graph` -- left: the dependency graph (edge width ~ MI / tau,
  triangulation fill-in edges dashed, nodes coloured by the first clique that
  holds them, clique members listed); right: the junction tree, one node per
  clique, edges labelled with their separators.

Files are written atomically.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 4 (dependency graph), Sec. V-B
(junction tree), Sec. VII-C (correlation identification).
"""
from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402

from .dependency.graph import DependencyGraph  # noqa: E402
from .dependency.junction import JunctionTree  # noqa: E402
from .io import atomic_write  # noqa: E402


def _save(fig, path: str | os.PathLike) -> None:
    fmt = os.path.splitext(os.fspath(path))[1].lstrip(".").lower() or "png"
    atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=120, bbox_inches="tight"))
    plt.close(fig)


def plot_mi(dg: DependencyGraph, path: str | os.PathLike) -> None:
    """Heatmap of MI / tau with attribute names; edges outlined (Eq. 24, 26).

    References
    ----------
    Ren et al., IEEE TIFS 2018, Eq. 24 and Eq. 26.
    """
    attrs = list(dg.domain.attrs)
    d = len(attrs)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(dg.thresholds > 0, dg.mi / dg.thresholds, np.nan)
    np.fill_diagonal(ratio, np.nan)
    size = max(4.0, 0.45 * d + 2)
    fig, ax = plt.subplots(figsize=(size + 1.5, size))
    shown = np.ma.masked_invalid(np.log10(np.clip(ratio, 1e-3, None)))
    cmap = plt.get_cmap("viridis").with_extremes(bad="#dddddd")
    im = ax.imshow(shown, cmap=cmap, vmin=-2, vmax=max(1.0, float(np.nanmax(shown)) if shown.count() else 1))
    for a, b in dg.edges:
        for i, j in ((attrs.index(a), attrs.index(b)), (attrs.index(b), attrs.index(a))):
            ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="red", lw=1.5))
    ax.set_xticks(range(d), attrs, rotation=90, fontsize=8)
    ax.set_yticks(range(d), attrs, fontsize=8)
    fig.colorbar(im, ax=ax, label="log10(MI / tau)  (>= 0: edge, outlined)")
    ax.set_title(f"Mutual information vs threshold, phi = {dg.phi:g}")
    _save(fig, path)


def plot_graph(graph: nx.Graph, tree: JunctionTree, path: str | os.PathLike, *,
               title: str = "Dependency graph", extra_edges=()) -> None:
    """Dependency graph with cliques marked, and the junction tree.

    ``extra_edges`` (dotted blue) are edges the release graph holds beyond
    ``graph`` (``fit(model_phi=...)``).

    References
    ----------
    Ren et al., IEEE TIFS 2018, Alg. 4 and Sec. V-B.
    """
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(15, 7))
    g = nx.Graph(graph)
    pos = nx.circular_layout(sorted(g.nodes, key=list(g.nodes).index))
    colors = plt.get_cmap("tab20")
    home = {}
    for k, i in enumerate(tree.order):
        for a in tree.cliques[i]:
            home.setdefault(a, k)
    strength = []
    for a, b in g.edges:
        m, t = g.edges[a, b].get("mi"), g.edges[a, b].get("tau")
        strength.append(1.0 if m is None or not t else float(np.clip(m / t, 0.5, 8)))
    nx.draw_networkx_edges(g, pos, ax=ax1, width=[0.6 + 0.5 * s for s in strength], edge_color="#444")
    nx.draw_networkx_edges(nx.Graph(list(tree.fill_edges)), pos, ax=ax1, style="dashed",
                           edge_color="#c33", width=1.0)
    if extra_edges:
        nx.draw_networkx_edges(nx.Graph(list(extra_edges)), pos, ax=ax1, style="dotted",
                               edge_color="#36c", width=1.2)
    nx.draw_networkx_nodes(g, pos, ax=ax1, node_size=500,
                           node_color=[colors(home.get(a, 0) % 20) for a in g.nodes])
    nx.draw_networkx_labels(g, pos, ax=ax1, font_size=8)
    legend = "\n".join(f"C{k}: {', '.join(tree.cliques[i])}" for k, i in enumerate(tree.order))
    ax1.text(0.0, -0.02, legend, transform=ax1.transAxes, va="top", fontsize=7, family="monospace")
    extra = f", {len(extra_edges)} release-only dotted" if extra_edges else ""
    ax1.set_title(f"{title} ({g.number_of_edges()} edges{extra}, fill-in dashed)")
    ax1.axis("off")
    t = nx.DiGraph()
    label = {i: f"C{k}" for k, i in enumerate(tree.order)}
    t.add_nodes_from(label.values())
    t.add_edges_from((label[p], label[c]) for p, c in tree.edges)
    tpos = _tree_layout(t, [label[r] for r in tree.roots])
    nx.draw_networkx(t, tpos, ax=ax2, node_color="#9cf", node_size=700, font_size=8, arrows=False)
    sep = {(label[p], label[c]): ",".join(tree.separator(c)) for p, c in tree.edges}
    nx.draw_networkx_edge_labels(t, tpos, edge_labels=sep, ax=ax2, font_size=6)
    ax2.set_title(f"Junction tree ({len(tree.cliques)} cliques, {len(tree.roots)} component(s))")
    ax2.axis("off")
    _save(fig, path)


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
