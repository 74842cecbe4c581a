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
import textwrap
from typing import Any, Sequence

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
    """Write :func:`mi_figure` of ``dg`` to ``path`` (format from the suffix, PNG by default)."""
    _save(mi_figure(dg), path)


def mi_figure(dg: DependencyGraph) -> Figure:
    """Heatmap of MI / tau with attribute names; edges outlined (Eq. 24, 26).

    Colour: log10(MI / tau), clipped below at -2 (>= 0 means MI >= tau, an
    edge under the paper's rule "phi"; under "auto" and "tree" the edges are
    the rule's, outlined, and the legend names the rule's test).  Pairs not computed (pruning) are hatched grey, the diagonal is
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
    rule = dg.stats.get("structure", "phi")
    fig.colorbar(im, ax=ax, extend="min", shrink=0.8,
                 label="log10(MI / tau)   (>= 0: MI reaches tau" + (", an edge)" if rule == "phi" else ")"))
    handles = [Patch(fc="none", ec="red", lw=1.5, label=edge_label(rule)),
               Patch(fc="white", ec="#999", label="diagonal (attribute itself)")]
    if np.isnan(dg.mi[~np.eye(d, dtype=bool)]).any():
        handles.append(Patch(fc="#c8c8c8", ec="#888", hatch="///", label="not computed (pruned)"))
    if dropped:
        handles.append(Patch(fc="none", ec="orange", ls="--", lw=2.0, label="edge dropped for clique budget"))
    below = (5.5 * max(len(a) for a in attrs) + 12) / (72 * size * 0.8)  # rotated tick labels
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -below),
              ncol=2, fontsize=8, frameon=False)
    ax.set_title(f"Mutual information vs threshold, phi = {dg.phi:g}")
    return fig


def plot_graph(graph: nx.Graph, tree: JunctionTree, path: str | os.PathLike, *,
               title: str = "Dependency graph", extra_edges=(), dropped_edges=None,
               rule: str | None = None) -> None:
    """Write :func:`graph_figure` to ``path`` (format from the suffix, PNG by default)."""
    _save(graph_figure(graph, tree, title=title, extra_edges=extra_edges, dropped_edges=dropped_edges,
                       rule=rule), path)


def graph_figure(graph: nx.Graph, tree: JunctionTree, *, title: str = "Dependency graph", extra_edges=(),
                 dropped_edges=None, rule: str | None = None) -> Figure:
    """Dependency graph with cliques marked, and the junction tree.

    Solid edges are held by some clique; ``dropped_edges`` (dashed red) were
    dropped for the clique budget -- no clique, hence no release, contains
    them.  ``None`` means: every edge of ``graph`` that no clique holds.
    Other edges of ``graph`` that no clique holds (given ``dropped_edges``)
    are dotted grey: the model was built on a different graph (structure
    "auto" with release "pgm" re-runs the rule with a larger size bound, where
    a path can explain the pair).  Triangulation fill-in edges are dashed
    grey; edges the model holds beyond ``graph`` (dotted blue: ``extra_edges``
    and every clique pair that is neither an edge of ``graph`` nor fill-in)
    are edges of the model's graph only.  ``rule`` (``"phi"``, ``"auto"``,
    ``"tree"``; default ``"phi"``) names the edge test in the legend.
    """
    g = nx.Graph(graph)
    held = {frozenset(e) for c in tree.cliques for e in _pairs(c)}
    if dropped_edges is None:
        dropped_edges = [e for e in g.edges if frozenset(e) not in held]
    gone = {frozenset(e) for e in dropped_edges}
    left = [e for e in g.edges if frozenset(e) not in held and frozenset(e) not in gone]
    fill = {frozenset(e) for e in tree.fill_edges}
    extra = list(extra_edges) + [tuple(sorted(e)) for e in held - fill
                                 if not g.has_edge(*e) and tuple(sorted(e)) not in
                                 {tuple(sorted(x)) for x in extra_edges}]
    extra.sort()
    linked = {a for e in [*g.edges, *extra, *held] for a in e}
    alone = [a for a in g.nodes if a not in linked]  # no edge, a clique of its own
    drawn = list(g.nodes) if len(g) <= MAX_RING else [a for a in g.nodes if a in linked]
    draw_tree = len(tree.cliques) <= MAX_TREE
    side = 4.5 if not drawn else 8.0 if len(drawn) <= MAX_RING else min(16.0, 8.0 + 0.2 * (len(drawn) - MAX_RING))
    fig = Figure(figsize=(side + 8.0, side + 0.5))
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [side, 8.8]})
    cliques = _draw_graph(ax1, g.subgraph(drawn), tree, gone, extra, left, rule)
    _finish_graph_axes(ax1)
    if not drawn:
        ax1.text(0.5, 0.5, f"no edges: each of the {len(g)} attributes\nis independent of the others\n"
                 "in the model (listed at right)", ha="center", va="center", fontsize=11,
                 transform=ax1.transAxes)
    n_gone = sum(frozenset(e) in gone for e in g.edges)
    more = f", {len(extra)} model-only" if extra else ""
    more += f", {len(left)} not modelled (explained by a path)" if left else ""
    more += (f"\n{len(alone)} attributes with no edge not drawn (listed at right)"
             if len(drawn) < len(g) and drawn else "")
    ax1.set_title(f"{title}\n{g.number_of_edges()} edges, {n_gone} dropped for clique budget{more}",
                  fontsize=11)
    if draw_tree:
        _draw_tree(ax2, tree)
        box = ax2.get_position()  # clique list under the tree (a figure text: the tree's texts are its labels)
        fig.text(box.x0, box.y0 - 0.02, cliques, va="top", fontsize=7, family="monospace")
    else:
        _list_tree(ax2, tree, alone)
    return fig


#: nodes drawn on a ring (more: a force-directed layout, isolated attributes listed instead of drawn)
MAX_RING = 16
#: cliques drawn as a tree (more: a compact listing, one line per clique of two or more attributes)
MAX_TREE = 16


def _spread_labels(pos: dict, names: dict, side: float, rounds: int = 200) -> dict:
    """Positions moved apart until no two label boxes (8-point text, estimated) overlap.

    ``pos`` spans about [-1, 1] on a panel of ``side`` inches; overlapping
    pairs are pushed apart along the axis where they overlap least.
    """
    keys = list(pos)
    xy = np.array([pos[k] for k in keys], dtype=float)
    scale = 2.5 / (0.75 * side)  # data units per inch (the layout spans [-1, 1], margins 12 %)
    w = np.array([(len(names[k]) + 2) * 0.08 for k in keys]) * scale
    h = np.full(len(keys), 0.3 * scale)
    for _ in range(rounds):
        dx = xy[:, None, 0] - xy[None, :, 0]
        dy = xy[:, None, 1] - xy[None, :, 1]
        ox = (w[:, None] + w[None, :]) / 2 - np.abs(dx)
        oy = (h[:, None] + h[None, :]) / 2 - np.abs(dy)
        hit = (ox > 0) & (oy > 0)
        np.fill_diagonal(hit, False)
        if not hit.any():
            break
        along_y = oy <= ox
        sy = np.where(dy >= 0, 1.0, -1.0)
        sx = np.where(dx >= 0, 1.0, -1.0)
        xy[:, 1] += 0.5 * np.where(hit & along_y, sy * (oy + 1e-3), 0).sum(axis=1)
        xy[:, 0] += 0.5 * np.where(hit & ~along_y, sx * (ox + 1e-3), 0).sum(axis=1)
    return {k: tuple(p) for k, p in zip(keys, xy)}


def _list_tree(ax, tree: JunctionTree, alone: Sequence[str]) -> None:
    """The junction tree as text: cliques of two or more attributes with parent and separator,
    then the attributes that are cliques of their own (no edge), wrapped; names shortened
    (:func:`short_labels`) when the full listing would run past ``MAX_LIST_LINES`` lines."""
    text = _tree_lines(tree, alone, {})
    short = len(text) > MAX_LIST_LINES
    if short:
        attrs = sorted({a for c in tree.cliques for a in c})
        text = _tree_lines(tree, alone, dict(zip(attrs, short_labels(attrs, 14))))
    ax.text(0.0, 1.0, "\n".join(text), va="top", ha="left", fontsize=7, family="monospace",
            transform=ax.transAxes, wrap=False)
    ax.set_title(f"Junction tree: {len(tree.cliques)} cliques in {len(tree.roots)} component(s), "
                 f"too many to draw; listed" + (" (names shortened)" if short else ""), fontsize=11)
    ax.axis("off")


#: lines of a junction-tree listing before names are shortened
MAX_LIST_LINES = 70


def _tree_lines(tree: JunctionTree, alone: Sequence[str], name: dict) -> list[str]:
    label = {i: f"C{k}" for k, i in enumerate(tree.order)}
    parent = {c: p for p, c in tree.edges}

    def join(attrs) -> str:
        return ", ".join(name.get(a, a) for a in attrs)

    lines = [f"{label[i]}: {join(tree.cliques[i])}"
             + (f"  [parent {label[parent[i]]}; separator {join(tree.separator(i))}]" if i in parent else "  [root]")
             for i in tree.order if len(tree.cliques[i]) > 1]
    lone = set(alone)
    singles = [tree.cliques[i][0] for i in tree.order if len(tree.cliques[i]) == 1 and tree.cliques[i][0] in lone]
    if singles:
        lines.append(f"{len(singles)} attributes in no edge, each a clique of its own: {join(singles)}")
    others = [tree.cliques[i][0] for i in tree.order if len(tree.cliques[i]) == 1 and tree.cliques[i][0] not in lone]
    if others:
        lines.append(f"{len(others)} more single-attribute cliques: {join(others)}")
    return [w for line in lines for w in textwrap.wrap(line, 100, subsequent_indent="    ")]


def _pairs(clique) -> list[tuple[str, str]]:
    c = list(clique)
    return [(c[i], c[j]) for i in range(len(c)) for j in range(i + 1, len(c))]


#: the edge test of each structure rule, as the legends name it
EDGE_RULES = {"phi": "MI >= tau", "auto": "chi-square test of dependence",
              "tree": "Chow-Liu tree"}


def edge_label(rule: str | None) -> str:
    """Legend text of an edge under structure rule ``rule`` (default ``"phi"``)."""
    return f"edge ({EDGE_RULES.get(rule or 'phi', rule)})"


def _draw_graph(ax, g: nx.Graph, tree: JunctionTree, gone: set, extra: list, left: list,
                rule: str | None) -> str:
    """Draw the graph on ``ax``; return the clique list (drawn under the junction tree)."""
    nodes = list(g.nodes)
    if len(nodes) <= MAX_RING:
        pos = nx.circular_layout(nodes) if nodes else {}
    else:  # spread: linked attributes near each other (graph, fill-in and model edges), no ring of names
        h = nx.Graph(g)
        h.add_edges_from([*tree.fill_edges, *extra])
        h.add_edges_from(e for c in tree.cliques for e in _pairs(c) if all(a in g for a in e))
        pos = (nx.kamada_kawai_layout(h) if nx.is_connected(h)
               else nx.spring_layout(h, seed=0, k=2.5 / np.sqrt(len(nodes)), iterations=200))
    names = dict(zip(nodes, short_labels(nodes, 18 if len(nodes) <= MAX_RING else 12)))
    if len(nodes) > MAX_RING:
        pos = _spread_labels(pos, names, ax.figure.get_figheight() - 0.5)
    if pos:  # the node boxes are texts: the axes' limits come from these points
        ax.scatter(*np.array(list(pos.values())).T, s=0)
    colors = matplotlib.colormaps["tab20"]
    home: dict[str, int] = {}
    for k, i in enumerate(tree.order):
        for a in tree.cliques[i]:
            home.setdefault(a, k)
    out = gone | {frozenset(e) for e in left}
    kept = [e for e in g.edges if frozenset(e) not in out]
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
    nx.draw_networkx_edges(g, pos, edgelist=left, ax=ax, style="dotted", edge_color="#aaa", width=2.0)
    nx.draw_networkx_edges(g, pos, edgelist=extra, ax=ax, style="dotted", edge_color="#36c", width=1.2)
    for a in nodes:  # each node is its label's box: a name never runs out of its node
        r, gg, b, _ = colors(home.get(a, 0) % 20)
        ax.text(*pos[a], names[a], ha="center", va="center", fontsize=8, zorder=3, clip_on=False,
                color="black" if 0.299 * r + 0.587 * gg + 0.114 * b > 0.5 else "white",
                bbox=dict(boxstyle="round,pad=0.35", fc=(r, gg, b), ec="#333", lw=0.6))
    handles = [Line2D([], [], color="#444", lw=1.5, label=edge_label(rule) + ", in a clique"),
               Line2D([], [], color="#d62728", lw=2.2, ls="--", label="dropped for clique budget"),
               Line2D([], [], color="#999", lw=1.0, ls="--", label="triangulation fill-in")]
    if left:
        handles.append(Line2D([], [], color="#aaa", lw=2.0, ls=":",
                              label="not modelled: explained by a path of the model's graph"))
    if extra:
        handles.append(Line2D([], [], color="#36c", lw=1.2, ls=":", label="model-only edge"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.0, -0.01), fontsize=7, frameon=False)
    cliques = "\n".join(textwrap.fill(f"C{k}: {', '.join(tree.cliques[i])}", 56, subsequent_indent="    ")
                        for k, i in enumerate(tree.order))
    return cliques


def _finish_graph_axes(ax) -> None:
    ax.margins(0.12)
    ax.axis("off")


def _draw_tree(ax, tree: JunctionTree) -> None:
    t = nx.DiGraph()
    label = {i: f"C{k}" for k, i in enumerate(tree.order)}
    t.add_nodes_from(label.values())
    t.add_edges_from((label[p], label[c]) for p, c in tree.edges)
    tpos = _tree_layout(t, [label[r] for r in tree.roots])
    nx.draw_networkx_edges(t, tpos, ax=ax, arrows=False)
    nx.draw_networkx_nodes(t, tpos, ax=ax, node_color="#9cf", node_size=700)
    nx.draw_networkx_labels(t, tpos, ax=ax, font_size=8)  # inside the margins (tests check the boxes)
    sibling: dict[Any, int] = {}
    for p, c in tree.edges:  # separator labels: horizontal, wrapped, never clipped
        (x0, y0), (x1, y1) = tpos[label[p]], tpos[label[c]]
        k = sibling[p] = sibling.get(p, -1) + 1  # neighbouring siblings' labels staggered in height
        at = 0.5 if k % 2 == 0 else 0.78
        ax.text(x0 + at * (x1 - x0), y0 + at * (y1 - y0), _wrap(tree.separator(c)), fontsize=6.5,
                ha="center",
                va="center", clip_on=False, bbox=dict(fc="#fffbe6", ec="#cc9", lw=0.5, pad=1.5))
    ax.margins(x=0.15, y=0.1)
    ax.set_title(f"Junction tree ({len(tree.cliques)} cliques, {len(tree.roots)} component(s)); "
                 f"boxes: separators")
    ax.axis("off")


def _wrap(attrs, width: int = 12) -> str:
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


def short_labels(names: Sequence[str], width: int = 14) -> list[str]:
    """``names`` cut to ``width`` characters, still told apart.

    The end is cut first; if two names then read alike, the middle is cut
    (names that differ only in their tail: ``a_very\u2026mber_07``); if they
    still collide, each is numbered by its position.
    """
    names = [str(n) for n in names]
    out = [_cut(n, width) for n in names]
    if len(set(out)) == len(out):
        return out
    head = max(1, (width - 1) // 2 - 1)
    tail = width - 1 - head
    out = [n if len(n) <= width else n[:head] + "\u2026" + n[-tail:] for n in names]
    if len(set(out)) == len(out):
        return out
    return [f"{i}:{_cut(n, max(4, width - len(str(i)) - 1))}" for i, n in enumerate(names)]


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "\u2026"
