"""``lopub graph MODEL|REPORTS [--plot out.png] [--json]``: the dependency graph and junction tree.

The MI heatmap goes to ``out_mi.png`` beside the graph picture; the source kind is read from the
file's first bytes.  The command is registered by :mod:`lopub.cli.pipeline` (its ``REGISTER``),
which also takes the defaults of ``lopub fit`` and the pictures (:func:`_plots`) from here.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from lopub.estimate import METHODS
from lopub.io import atomic_write_text
from lopub.pipeline.options import FitOptions
from lopub.pipeline.steps import STRUCTURES, default_clique_budget, dependency, model_structure_options
from lopub.progress import note
from lopub.cli._commands import add_command
from lopub.cli._common import add_verbosity, emit, load_bloom_reports, progress, refuse_npz
from lopub.cli._outputs import Suffixes, check_suffix

__all__ = ["source_kind"]
FIT_DEFAULTS = FitOptions()  # every default of lopub fit / graph, from one place
DEFAULT_METHOD = FIT_DEFAULTS.method
QUIET_HELP = "no progress output and no notes on stderr"


def _note_dropped(edges, budget) -> None:
    if edges:
        listed = ", ".join(f"{x} - {y}" for x, y in edges)
        note(f"clique budget ({budget} cells) exceeded: {len(edges)} edge(s) of the dependency "
             f"graph were dropped and are in no clique, hence in neither the model nor a "
             f"release: {listed}")


def check_plot(path: str | os.PathLike) -> None:
    """Refuse a ``--plot`` path whose suffix matplotlib cannot write, before any work (the error
    came from matplotlib after the whole fit, naming no option)."""
    from matplotlib.figure import Figure

    kinds = sorted(Figure().canvas.get_supported_filetypes())
    check_suffix(path, "--plot", Suffixes(tuple("." + k for k in kinds), "a picture is written in "
                                          "the format of its suffix (PNG without one)", closed=True))


def _plots(dg, tree, path: str | os.PathLike) -> list[str]:
    from lopub.dependency.graph import rethreshold
    from lopub.publish.plots import plot_graph, plot_mi

    p = Path(path)
    mi_path = p.with_name(p.stem + "_mi" + (p.suffix or ".png"))
    extra = []
    if dg.stats.get("model_phi") is not None and "rethresholded_from" not in dg.stats:
        release = rethreshold(dg, dg.stats["model_phi"])
        extra = [e for e in release.edges if not dg.graph.has_edge(*e)]
    plot_graph(dg.graph, tree, p, extra_edges=extra, dropped_edges=dg.dropped, rule=dg.stats.get("structure"))
    plot_mi(dg, mi_path)
    return [str(p), str(mi_path)]


def source_kind(path: str) -> str:
    """``"reports"`` (Parquet magic ``PAR1``, or a folder: a reports dataset) or ``"model"``
    (gzip magic, or JSON text).

    Decided by content, not by the file name; ``ValueError`` when it is neither.
    """
    if os.path.isdir(path):
        return "reports"
    with open(path, "rb") as fh:
        head = fh.read(64)
    if head.startswith(b"PAR1"):
        return "reports"
    if head.startswith(b"\x1f\x8b") or head.lstrip().startswith(b"{"):
        return "model"
    if head.startswith(b"PK"):
        refuse_npz(path, "graph")
    raise ValueError(f"{path!r} is neither a lopub model (JSON, optionally gzip) nor a reports file "
                     f"(Parquet, starting with PAR1); it starts with {head[:8]!r}")


def _graph_of_model(a: argparse.Namespace):
    from lopub.model.graphical import Model

    model = Model.load(a.source)
    if model.graph is None:
        raise ValueError(f"model {a.source!r} carries no dependency graph")
    dg = model.graph
    if dg.stats.get("dropped_for_budget"):  # files of older versions also listed re-covered edges
        dg.stats["dropped_for_budget"] = [e for e in dg.stats["dropped_for_budget"]
                                          if not any(set(e) <= set(c) for c in model.tree.cliques)]
    if a.phi is not None and a.phi != dg.phi:
        dg = dg.at_phi(a.phi)
        note(f"graph re-thresholded at phi {dg.phi:g} from the MI stored in the model (fitted at "
             f"phi {dg.stats['rethresholded_from']:g}); the junction tree and cliques are the "
             f"model's, unchanged")
    budget = (model.meta.get("fit") or {}).get("clique_budget")
    return dg, model.tree, budget, model.collection


def _graph_of_reports(a: argparse.Namespace):
    from lopub.dependency import MarginalCache
    from lopub.pipeline.steps import collection_parameters, make_estimator
    shown = progress(a)
    reports = load_bloom_reports(a.source, "graph")
    cache = MarginalCache(make_estimator(reports, a.method, progress=shown))
    phi = FIT_DEFAULTS.phi if a.phi is None else a.phi
    structure = "phi" if (a.prune or a.structure == "auto" and a.phi is not None) else a.structure
    budget = (default_clique_budget(FIT_DEFAULTS.release, reports.n) if a.clique_budget is None
              else a.clique_budget)
    model = model_structure_options(FIT_DEFAULTS.release, structure, budget)
    options = FitOptions(phi=phi, prune=a.prune, clique_budget=budget, structure=structure)
    dg, tree, _, _ = dependency(cache, options, progress=shown, warn=False, n=reports.n,
                                model_options=model)
    return dg, tree, budget, collection_parameters(reports)


def _note_ignored(a: argparse.Namespace) -> None:
    ignored = [o for o, on in (("--method", a.method != DEFAULT_METHOD), ("--prune", a.prune),
                               ("--structure", a.structure != FIT_DEFAULTS.structure),
                               ("--clique-budget", a.clique_budget is not None)) if on]
    if ignored:
        note(f"{', '.join(ignored)} ignored: {a.source} is a fitted model "
             "(they apply to a reports file)")


def cmd_graph(a: argparse.Namespace) -> None:
    from lopub.dependency.graph import check_phi

    if a.phi is not None:
        check_phi(a.phi)
    if a.plot:
        check_plot(a.plot)
    if a.clique_budget is not None and a.clique_budget < 1:
        raise ValueError(f"--clique-budget ({a.clique_budget}) must be an integer >= 1")
    if not os.path.exists(a.source):
        raise FileNotFoundError(f"model or reports file {a.source!r} does not exist")
    kind = source_kind(a.source)
    if kind == "model":
        _note_ignored(a)
    dg, tree, budget, collection = (_graph_of_model if kind == "model" else _graph_of_reports)(a)
    dropped = dg.dropped
    out = {"source": kind, "graph": dg.to_dict(), "junction_tree": tree.to_dict(),
           "clique_budget": budget, "dropped_for_budget": [list(e) for e in dropped],
           "collection": collection}
    if a.plot:
        out["pictures"] = _plots(dg, tree, a.plot)
    if a.out_json:
        atomic_write_text(a.out_json, json.dumps(out, indent=2) + "\n")
    _note_dropped(dropped, budget)
    emit(out, a.json, _graph_text(dg, tree, budget, out.get("pictures")))


def _graph_text(dg, tree, budget, pictures) -> str:
    gone = {frozenset(e) for e in dg.dropped}
    rule = {"phi": f"phi {dg.phi:g} (MI >= tau)", "auto": "structure auto (significant dependence)",
            "tree": "structure tree (Chow-Liu)"}.get(dg.structure, f"structure {dg.structure}")
    text = [f"{rule}: {len(dg.edges)} edges ({dg.stats.get('pairs_computed')} pairs computed)"]
    text += [f"  {x} - {y}" + ("   [dropped for clique budget: in no clique]" if frozenset((x, y)) in gone
                                else "") for x, y in dg.edges]
    if gone:
        text.append(f"clique budget {budget} cells: {len(gone)} edge(s) dropped, marked above")
    text += ["cliques:"] + [f"  {', '.join(c)}" for c in tree.cliques]
    if pictures:
        text.append("pictures: " + ", ".join(pictures))
    return "\n".join(text)


def _register_graph(sub: argparse._SubParsersAction) -> None:
    g = add_command(sub, "graph", description="Show the MI matrix, threshold decisions, dependency graph and junction tree; --plot draws them. The source is recognized by content: a Parquet file is a reports file, JSON (optionally gzip) a model. Edges dropped for the clique budget are marked (text, JSON, dashed red in the picture) and listed in a note on stderr.")
    g.add_argument("source", help="model file or reports file")
    g.add_argument("--plot", help="graph picture path (PNG); MI heatmap written as <name>_mi.png")
    g.add_argument("--out-json", help="write the graph/junction-tree JSON here (.json; another format's suffix (.csv, .pdf, ...) is refused)")
    g.add_argument("--phi", type=float, help=f"dependency degree in (0, 1]; reports file: default {FIT_DEFAULTS.phi}; model: re-threshold the stored MI at this phi (the junction tree stays the model's)")
    g.add_argument("--method", choices=METHODS, default=DEFAULT_METHOD, help="for a reports file")
    g.add_argument("--structure", choices=STRUCTURES, default=FIT_DEFAULTS.structure,
                   help="for a reports file: the edge rule, as in lopub fit (default auto; --phi or "
                        "--prune imply phi)")
    g.add_argument("--prune", action="store_true", help="for a reports file")
    g.add_argument("--clique-budget", type=int, default=None,
                   help="for a reports file (default: the pgm release's, from the number of reports)")
    add_verbosity(g, quiet_help=QUIET_HELP)
    g.add_argument("--json", action="store_true")
    g.set_defaults(func=cmd_graph)
