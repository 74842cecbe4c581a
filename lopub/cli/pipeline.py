"""``lopub fit | synthesize | query | graph | evaluate | demo``: the server pipeline.

* ``fit REPORTS [--release pgm|cliques] [--structure auto|phi|tree] [--method ...] --out model.json``
* ``synthesize MODEL --n N --seed S [--where a=x ...] --out synthetic.csv|.parquet``
* ``query MODEL --attrs a,b[,c] [--where a=x ...] [--json]``
* ``graph MODEL|REPORTS [--plot out.png] [--json]`` (the command is in
  :mod:`lopub.cli.graph`; registered here)
* ``evaluate --real real.csv --synthetic synthetic.csv --domain domain.json [--k 2] [--json]``
* ``demo``: the whole pipeline on the embedded census-like dataset
"""
from __future__ import annotations

import argparse
import os

from lopub.pipeline.demo import DEFAULT_EPSILON
from lopub.dependency.junction import HEURISTICS
from lopub.estimate import METHODS
from lopub.publish.evaluate import evaluate_release
from lopub.formats._io import npz_format
from lopub.pipeline.steps import (DEFAULT_CLIQUE_BUDGET, PGM_CLIQUE_BUDGET, PGM_USERS_PER_CELL, RELEASES, STRUCTURES,
                        fit)
from lopub.model.pgm.fit import DEFAULT_MAX_ITER
from lopub.model.verdict import NOT_USABLE, Verdict
from lopub.publish.report.notes import not_converged as _not_converged
from lopub.pipeline.options import FitOptions
from lopub.progress import warning
from lopub.cli._commands import add_command
from lopub.cli._common import (add_na_values, add_verbosity, csv_options, default, emit, progress, read_csv, seed_arg,
                      sep_arg, split_list)
from lopub.cli._outputs import check_output_path, staged_outputs
from lopub.cli._scale import add_scale_options, check_work_memory, reports_for, scale_options
from lopub.cli.graph import (DEFAULT_METHOD, FIT_DEFAULTS, QUIET_HELP, _note_dropped, _plots, check_plot,  # noqa: F401 (source_kind re-exported)
                             _register_graph, source_kind)

__all__ = ["REGISTER", "register", "register_demo", "source_kind"]


def _fit_text(rep: dict) -> str:
    s = rep["seconds"]
    lines = [(f"reports: {rep['n']}{_screened_text(rep)}, attributes: {rep['attributes']}, "
              f"method: {rep['method']}, phi: {rep['phi']}"),
             f"{_pairs_text(rep)}, edges: {rep['edges']}"
             + ((f" (model graph at phi {rep['model_phi']}: " if "model_phi" in rep["graph"] else
                 " (model graph: ") + f"{rep['graph']['model_edges']} edges)" if "model_edges" in rep["graph"] else ""),
             f"cliques: {len(rep['cliques'])}, largest: {max(rep['clique_cells'])} cells "
             f"(budget {rep['clique_budget']})"]
    for d in rep["dropped_edges"]:
        fate = ("both ends still share a clique after re-triangulation" if d["in_clique"]
                else "in no clique: not modelled")
        lines.append(f"  over budget: dropped edge {d['a']} - {d['b']} (clique of {d['cells']} cells; {fate})")
    lines.append(f"release: {rep['release']}, structure: {rep['structure']}")
    mf = rep.get("model_fit")
    if mf:
        lines.append(f"model fit: loss {mf['loss']:.6g}, {mf['iterations']} iterations, "
                     f"{'converged' if mf['converged'] else _not_converged(mf, rep.get('verdict'))}, "
                     f"{len(rep['measurements'])} measurements"
                     + (f"; one-way tables shrunk towards {' or '.join(mf.get('shrinkage_targets') or ['uniform'])}, "
                        f"{mf['shrinkage']:.0%} of their measured "
                        "deviation kept (the rest is within their noise)" if mf.get("shrinkage") is not None
                        and mf["shrinkage"] < 0.995 else ""))
    col = rep.get("collection")
    if col and col.get("protocol") == "marginals":
        lines.append(f"collection: marginal sampling, {len(col['subsets'])} attribute sets, "
                     f"epsilon per record {col['epsilon_per_record']:.4g}")
    elif col:
        lines.append(f"collection: f {col['f']}, epsilon per record {col['epsilon_per_record']:.4g}")
    lines += [f"warning: {w}" for w in rep.get("warnings", [])]
    verdict = Verdict.from_dict(rep.get("verdict"))
    if verdict is not None:
        lines.append(f"verdict: {verdict.level}")
        lines += [f"  - {r}" for r in verdict.reasons]
    lines.append("seconds: " + ", ".join(f"{k} {v}" for k, v in s.items()))
    return "\n".join(lines)


def _screened_text(rep: dict) -> str:
    """`` (of U users: ...)`` where a detection screen's users took part beside the reports fitted."""
    users = (rep.get("collection") or {}).get("users")
    if not isinstance(users, int) or not isinstance(rep.get("n"), int) or users <= rep["n"]:
        return ""
    return (f" of {users} users (the {users - rep['n']} reports of the screen that chose the plan are "
            "not part of the release; lopub synthesize writes one record per user)")


def _pairs_text(rep: dict) -> str:
    """Pairs the graph looked at, and how many the collection measured (the rest derived)."""
    measured, total = rep.get("pairs_measured"), rep["pairs_total"]
    if measured is None or measured >= total:
        return f"pairs computed: {rep['pairs_computed']}/{total}"
    return (f"pairs measured: {measured}/{total} ({total - measured} derived from one-way tables "
            "as independent)")


def load_any_reports(path: str):
    """Bloom reports (Parquet file or dataset folder) or marginal-sampling reports (``.npz``)."""
    from lopub.collect import MarginalReports
    from lopub.reports.bloom import Reports

    if os.path.isfile(path):
        with open(path, "rb") as fh:
            zipped = fh.read(2) == b"PK"
        if zipped:
            kind = npz_format(path)
            if kind == "lopub-oracle-reports":
                raise ValueError(f"reports file {path!r} holds one-way oracle reports (lopub collect "
                                 f"--protocol grr|oue|...), read by lopub estimate-freq; lopub fit "
                                 f"needs Bloom reports or marginal-sampling reports (lopub collect "
                                 f"--protocol auto|marginals|one-attribute)")
            if kind != "lopub-marginal-reports":
                raise ValueError(f"reports file {path!r} is a zip archive but not lopub reports (its "
                                 f"metadata names format {kind!r}); expected Bloom reports (Parquet "
                                 f"or a dataset folder) or marginal-sampling reports (.npz)")
            return MarginalReports.load(path)
    return Reports.load(path)


def _refuse_estimator_options(a: argparse.Namespace, reports, method_given: bool) -> None:
    """Marginal-sampling reports are measured by their oracles: the Bloom estimator's options
    do not apply to them and are refused, naming the option and the file type."""
    from lopub.collect import MarginalReports

    if not isinstance(reports, MarginalReports):
        return
    given = [o for o, on in (("--method", method_given), ("--scheduler", a.scheduler is not None),
                             ("--tol", a.tol is not None), ("--jobs", a.jobs is not None),
                             ("--memory-budget-mb", a.memory_budget_mb is not None)) if on]
    if given:
        raise ValueError(f"{', '.join(given)} {'does' if len(given) == 1 else 'do'} not apply to {a.reports!r}: it holds marginal-"
                         f"sampling reports (.npz), measured by their frequency oracles; these "
                         f"options set the estimator of Bloom reports (Parquet or dataset folder)")


def cmd_fit(a: argparse.Namespace) -> None:
    outputs = [(a.out, "--out")] + ([(a.plot, "--plot")] if a.plot else [])
    for path, option in outputs:  # fail before the (long) fit, not after it
        check_output_path(path, option)
    if a.plot:
        check_plot(a.plot)
    fit_options = _fit_options(a)
    check_work_memory(a, a.reports)
    method_given = a.method is not None
    a.method = a.method or DEFAULT_METHOD
    reports = reports_for(a, a.reports, load_any_reports)
    _refuse_estimator_options(a, reports, method_given)
    if getattr(reports, "n", 1) == 0:
        raise ValueError(f"reports file {a.reports!r} holds no reports (n = 0); nothing to estimate from")
    opts = {} if a.tol is None else {"tol": a.tol}
    opts.update(scale_options(a, a.reports))
    options = FitOptions(phi=a.phi, method=a.method, prune=a.prune, model_phi=a.model_phi,
                         release=a.release, structure=a.structure, estimator_options=opts,
                         clique_budget=a.clique_budget, heuristic=a.heuristic, shrink=a.shrink,
                         fit_options=fit_options)
    res = fit(reports, options, progress=progress(a), warn=False)
    model, rep = res.model, res.report.to_dict()
    with staged_outputs(*outputs) as staged:  # the model and pictures all, or none replaced
        model.save(staged[0])
        if a.plot:
            _plots(model.graph, model.tree, staged[1])
    _note_dropped([(d["a"], d["b"]) for d in rep["dropped_edges"] if not d["in_clique"]],
                  rep["clique_budget"])
    _warn_verdict(rep.get("verdict"))
    emit(rep, a.json, _fit_text(rep) + f"\nmodel written to {a.out}")


def _fit_options(a: argparse.Namespace) -> dict:
    """The model fit's options from ``--max-iter`` (checked before any work)."""
    if a.max_iter is None:
        return {}
    if a.max_iter < 1:
        raise ValueError(f"--max-iter ({a.max_iter}) must be an integer >= 1")
    if a.release != "pgm":
        raise ValueError(f"--max-iter ({a.max_iter}) applies to --release pgm (the model fit), "
                         f"not --release {a.release}")
    return {"max_iter": a.max_iter}


def _warn_verdict(obj) -> None:
    """A "not usable" verdict and its reasons as warnings on stderr (shown even with --quiet).

    Caveats are printed with the fit's text (and ``--json``'s ``verdict``), not on stderr.
    """
    verdict = Verdict.from_dict(obj)
    if verdict is None or verdict.level != NOT_USABLE:
        return
    warning(f"release verdict: {verdict.level}", command="fit")
    for w in verdict.warnings:
        warning(w, command="fit")


def cmd_synthesize(a: argparse.Namespace) -> None:
    from lopub.model.graphical import Model, condition_labels
    from lopub.publish.synthesize import dates_as_written, synthesize, write_release

    csv = os.path.splitext(a.out)[1].lower() == ".csv"
    if not csv and (a.sep or a.decimal):
        warning("--sep and --decimal apply to a CSV release: ignored for Parquet", command="synthesize")
    model = Model.load(a.model)
    sep, decimal = _release_dialect(a, model.domain) if csv else (None, None)
    where = condition_labels(model.domain, _parse_where(a.where))  # age=37: the bin's label
    df = synthesize(model, a.n, labels=a.labels, rng=a.seed, where=where or None)
    write_release(dates_as_written(df, model.domain) if csv else df, a.out, sep=sep, decimal=decimal)
    cond = f" with {', '.join(f'{k}={v}' for k, v in where.items())}" if where else ""
    emit({"records": len(df), "out": a.out, **({"condition": where} if where else {})}, a.json,
         f"{len(df)} synthetic records{cond} written to {a.out}")


def _release_dialect(a: argparse.Namespace, domain) -> tuple[str, str]:
    """``sep`` and ``decimal`` of a CSV release: ``--sep``/``--decimal``, else the input's as the
    domain recorded it; refused before sampling when the two are the same character."""
    from lopub.publish.synthesize import release_dialect

    sep, decimal = release_dialect(domain, a.sep, a.decimal)
    if sep == decimal:
        whose = "--sep" if a.sep else "the input's, recorded in the domain"
        raise ValueError(f"--decimal ({decimal!r}) is the release's delimiter ({sep!r}, {whose}); give "
                         f"another --sep or --decimal")
    return sep, decimal


def _parse_where(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        attr, sep, label = item.partition("=")
        if not sep or not attr:
            raise ValueError(f"--where {item!r} must look like attribute=label")
        attr = attr.strip()
        if attr in out:
            raise ValueError(f"--where names attribute {attr!r} twice ({attr}={out[attr]}, "
                             f"{item.strip()}); a record has one value per attribute: give it once")
        out[attr] = label.strip()
    return out


def cmd_query(a: argparse.Namespace) -> None:
    from lopub.model.graphical import Model, condition_labels

    model = Model.load(a.model)
    attrs = split_list(a.attrs)
    where = condition_labels(model.domain, _parse_where(a.where))  # age=37: the bin's label
    m = model.query(attrs, where)
    if a.json:
        out = m.to_dict()
        if where:
            out["condition"], out["condition_probability"] = where, m.meta["condition_mass"]
        out["collection"] = model.collection
        emit(out, True, "")
        return
    if where:
        cond = ", ".join(f"{k}={v}" for k, v in where.items())
        about = "" if m.n is None else f" (about {m.n} of {model.n} records)"
        print(f"P({', '.join(attrs)} | {cond}); estimated P({cond}) = "
              f"{m.meta['condition_mass']:.6g}{about}")
    df = m.to_frame()
    print(df.to_string(index=False, float_format=lambda v: f"{v:.6f}"))


def cmd_evaluate(a: argparse.Namespace) -> None:
    from lopub.data.domain import Domain

    domain = Domain.from_json(a.domain)
    real = _dataset(a.real, "--real", domain, a.na_values, csv_options(a))
    syn = _dataset(a.synthetic, "--synthetic", domain, a.na_values, csv_options(a, header=True))
    res = evaluate_release(real, syn, k=a.k, subsets=a.subsets, rng=a.seed)
    if not a.json:
        res.pop("per_subset")
    per = res["per_attribute"]
    text = [f"average TVD over {res['subsets']} {a.k}-way marginals: {res['mean']:.4f} (max {res['max']:.4f})",
            "per-attribute TVD:"] + [f"  {k}: {v:.4f}" for k, v in per.items()]
    emit(res, a.json, "\n".join(text))


def _dataset(path: str, flag: str, domain, na_values: list[str], options: dict):
    """Read ``path`` against ``domain``; errors name the option and the file."""
    from lopub.data.dataset import Dataset
    from lopub.errors import DomainError

    try:
        return Dataset.from_pandas(read_csv(path, na_values, **options), domain)
    except DomainError as exc:
        raise DomainError(f"{flag} {path}: {exc}") from None


def cmd_demo(a: argparse.Namespace) -> None:
    from lopub.pipeline.demo import run_demo

    run_demo(a)


def _register_fit(sub: argparse._SubParsersAction) -> None:
    phi, heuristic = FIT_DEFAULTS.phi, FIT_DEFAULTS.heuristic
    f = add_command(sub, "fit", description="Estimate all one- and two-way marginals, select the dependency graph, build the junction tree and fit the release model (a graphical model fitted to the estimates, or with --release cliques the paper's clique joints); write the model (lopub-model JSON).  REPORTS: Bloom reports (Parquet file or dataset folder) or marginal-sampling reports (.npz of lopub collect).")
    f.add_argument("reports")
    f.add_argument("--phi", type=float, default=phi, help=f"dependency degree phi in (0, 1] (Eq. 26; default {phi})")
    f.add_argument("--method", choices=METHODS, default=None, help=f"marginal estimator of Bloom reports (default {DEFAULT_METHOD})")
    f.add_argument("--release", choices=RELEASES, default=FIT_DEFAULTS.release,
                   help="pgm (default): a graphical model fitted to all one- and two-way estimates; "
                        "cliques: the paper's release, each clique's joint estimated directly")
    f.add_argument("--structure", choices=STRUCTURES, default=FIT_DEFAULTS.structure,
                   help="auto (default): edges whose dependence is significant against the estimates' "
                        "noise, model size bounded by N and the noise; phi: the paper's MI >= tau(phi); "
                        "tree: a Chow-Liu tree (tiny budgets).  --prune and --model-phi imply phi")
    f.add_argument("--prune", action="store_true", help="entropy-based pruning of the pairs (Alg. 5)")
    f.add_argument("--no-shrink", dest="shrink", action="store_false",
                   help="release pgm: fit the measurements alone, without the empirical-Bayes priors that pull "
                        "one-way tables lost in their noise towards uniform, their shared shape or, in a mixed group, the shape of the tables like them (lopub.model.pgm.shrink)")
    f.add_argument("--model-phi", type=float, help="build the junction tree / release on the MI graph at this phi instead (default: --phi); the reported graph stays at --phi")
    f.add_argument("--clique-budget", type=int, default=None,
                   help=f"largest clique joint in cells (default: {DEFAULT_CLIQUE_BUDGET:,} with --release "
                        f"cliques; with pgm one cell per {PGM_USERS_PER_CELL} users, {DEFAULT_CLIQUE_BUDGET:,} "
                        f"to {PGM_CLIQUE_BUDGET:,}); larger cliques are split by dropping the weakest edges")
    f.add_argument("--heuristic", choices=HEURISTICS, default=heuristic)
    f.add_argument("--tol", type=float, help="estimator stopping tolerance (largest cell change; default: the estimator's)")
    f.add_argument("--max-iter", type=int, default=None,
                   help=f"release pgm: most iterations of the model fit (default {DEFAULT_MAX_ITER:,}); raise it "
                        "when fit reports the model fit did not converge")
    add_scale_options(f)
    f.add_argument("--out", required=True, help="model file (.json, or .json.gz; another format's suffix (.csv, .pdf, ...) is refused)")
    f.add_argument("--plot", help="also draw the graph here (PNG; MI heatmap beside it)")
    add_verbosity(f, quiet_help=QUIET_HELP)
    f.add_argument("--json", action="store_true")
    f.set_defaults(func=cmd_fit)


def _register_synthesize(sub: argparse._SubParsersAction) -> None:
    s = add_command(sub, "synthesize", description="Sample records along the junction tree; CSV or Parquet (by "
                    "suffix) in the input's shape: numbers drawn uniformly within their bin (integers among "
                    "the bin's integers, other numbers to the input's decimal places, a point-mass bin its "
                    "point), integers, booleans and dates as such, "
                    "missing values as empty cells (columns of a schema without types: their labels).")
    s.add_argument("model")
    s.add_argument("--labels", action="store_true", help="write every column's category labels (a binned "
                   "number as its bin, e.g. \"[33, 36)\") instead of values")
    s.add_argument("--n", type=int, help="records (default: the number of users: the model's reports, plus "
                   "those of a detection screen that only chose the plan, as lopub collect counted them)")
    s.add_argument("--seed", type=seed_arg, help="seed; the same seed gives the same release")
    s.add_argument("--where", action="append", metavar="ATTR=LABEL",
                   help="sample conditioned on this value (repeatable; exact under the model's junction "
                        "tree: every record has it, the rest drawn from P(. | conditions); a model's "
                        "relaxed regions then update the records, see docs/guide/conditional.md)")
    s.add_argument("--out", required=True, help="output .csv or .parquet (.pq); any other suffix is refused")
    s.add_argument("--sep", type=sep_arg, metavar="CHAR",
                   help="delimiter of a CSV release (',', ';', 'tab', '|', ...; default: the input's, as "
                        "lopub schema recorded it in the domain, else ',')")
    s.add_argument("--decimal", choices=(".", ","),
                   help="decimal mark of a CSV release's numbers (default: the input's, as recorded in "
                        "the domain; with --sep given, ',' for ';', else '.')")
    s.add_argument("--json", action="store_true")
    add_verbosity(s)
    s.set_defaults(func=cmd_synthesize)


def _register_query(sub: argparse._SubParsersAction) -> None:
    q = add_command(sub, "query", description="Joint distribution of --attrs from the model (a clique directly, otherwise exact inference over the junction tree), optionally conditioned with --where.")
    q.add_argument("model")
    q.add_argument("--attrs", required=True, help="comma-separated attributes")
    q.add_argument("--where", action="append", metavar="ATTR=LABEL", help="condition (repeatable); the output shows its estimated probability, and a condition of estimated probability 0 is an error (the conditional is undefined)")
    q.add_argument("--json", action="store_true")
    add_verbosity(q)
    q.set_defaults(func=cmd_query)


def _register_evaluate(sub: argparse._SubParsersAction) -> None:
    e = add_command(sub, "evaluate", description="Average TVD (Eq. 32) over all (or --subsets sampled) k-way marginals and per-attribute TVD.")
    e.add_argument("--real", required=True, help="real data (CSV, or Parquet by suffix)")
    e.add_argument("--synthetic", required=True, help="synthetic release (CSV, or Parquet by suffix)")
    e.add_argument("--domain", required=True)
    e.add_argument("--k", type=int, default=default(evaluate_release, "k"))
    e.add_argument("--subsets", type=int, help="sample this many k-subsets (default all)")
    e.add_argument("--seed", type=seed_arg, default=0, help="seed of the subset sample")
    add_na_values(e, "--real; a release --synthetic has its header row")
    e.add_argument("--json", action="store_true")
    add_verbosity(e)
    e.set_defaults(func=cmd_evaluate)


def register_demo(sub: argparse._SubParsersAction) -> None:
    d = add_command(sub, "demo", description="Generate the embedded dataset, collect it under LDP at a per-record budget with the protocol the planner recommends (or the paper's Bloom reports with --f), run the pipeline; writes everything into --out.")
    d.add_argument("--out", default="lopub-demo", help="output folder (default ./lopub-demo)")
    d.add_argument("--n", type=int, default=20000, help="records to generate (default 20000)")
    d.add_argument("--epsilon", type=float, default=None,
                   help=f"privacy budget per record (default {DEFAULT_EPSILON:g}); the protocol is the planner's choice")
    d.add_argument("--f", type=float, default=None,
                   help="instead of --epsilon: the paper's Bloom reports at this flip probability (m = 128, h = 4)")
    d.add_argument("--seed", type=seed_arg, default=0, help="seed of the simulation (default 0)")
    add_verbosity(d, quiet_help="no progress output")
    d.set_defaults(func=cmd_demo)


def register(sub: argparse._SubParsersAction) -> None:
    """Add fit, synthesize, query, graph and evaluate to an argparse ``subparsers``."""
    for name in ("fit", "synthesize", "query", "graph", "evaluate"):
        REGISTER[name](sub)


#: command -> function adding its parser (see :mod:`lopub.cli._commands`)
REGISTER = {"demo": register_demo, "fit": _register_fit, "synthesize": _register_synthesize,
            "query": _register_query, "graph": _register_graph, "evaluate": _register_evaluate}
