"""``lopub report`` (HTML release report) and ``lopub export`` (UAI / pgmpy files) of a model."""
from __future__ import annotations

import argparse

from lopub.cli._commands import add_command
from lopub.cli._common import add_na_values, add_verbosity, csv_options, emit, read_csv

FORMATS = ("uai", "pgmpy")


def cmd_report(a: argparse.Namespace) -> None:
    from lopub.model.graphical import Model
    from lopub.publish.report import write_report

    model = Model.load(a.model)
    syn = None if a.synthetic is None else _frame(a.synthetic, "--synthetic", a.na_values, csv_options(a, header=True))
    real = None if a.real is None else _model_columns(_frame(a.real, "--real", a.na_values, csv_options(a)), model)
    write_report(a.out, model, syn, real, title=a.title)
    emit({"report": a.out}, a.json, f"written {a.out}")


def _frame(path: str, flag: str, na_values: list[str], options: dict):
    try:
        return read_csv(path, na_values, **options)
    except (OSError, ValueError) as exc:
        raise type(exc)(f"{flag}: {exc}") from None


def _model_columns(df, model):
    """The real data, noting the columns the model does not hold (the CSV ``collect`` read may hold
    more); the report leaves them out and names them in its summary."""
    from lopub.progress import note

    extra = [c for c in df.columns if c not in model.domain]
    if extra and all(a in df.columns for a in model.domain.attrs):
        note(f"--real: columns {extra} are not in the model's domain; left out")
    return df


def cmd_export(a: argparse.Namespace) -> None:
    from lopub.publish.export import export_model
    from lopub.model.graphical import Model

    if a.kind is not None and a.format != "pgmpy":
        raise ValueError(f"--kind {a.kind} does not apply to --format {a.format}: the UAI MARKOV "
                         f"file has one kind only (--kind picks the pickled pgmpy object)")
    export_model(Model.load(a.model), a.out, a.format, kind=a.kind or "markov")
    emit({"export": a.out, "format": a.format}, a.json, f"written {a.out} ({a.format})")


def _register_report(sub: argparse._SubParsersAction) -> None:
    r = add_command(
        sub, "report",
        description="Write one HTML file with embedded pictures: privacy statement, "
                    "protocol and parameters, real-vs-synthetic distributions, pairwise "
                    "TVD and MI heatmaps, dependency graph and junction tree, SDMetrics-style "
                    "scores next to the independence of the model's one-way marginals, and warnings.  Without --real "
                    "the report shows what the model alone can show.")
    r.add_argument("model", help="model file (lopub fit)")
    r.add_argument("--synthetic", help="synthetic release, CSV or Parquet (lopub synthesize); default: the model's exact marginals")
    r.add_argument("--real", help="real data, CSV or Parquet (the report then must not be published)")
    r.add_argument("--title", help="page title")
    add_na_values(r, "--real; a release --synthetic has its header row")
    r.add_argument("--out", required=True, help="output HTML file (.html or .htm; another format's suffix (.csv, .pdf, ...) is refused)")
    r.add_argument("--json", action="store_true", help="print the result as JSON")
    add_verbosity(r)
    r.set_defaults(func=cmd_report)


def _register_export(sub: argparse._SubParsersAction) -> None:
    e = add_command(
        sub, "export",
        description="UAI: the model's clique potentials in the UAI MARKOV format (variables "
                    "numbered in domain order, states in category order).  pgmpy: a pickled "
                    "pgmpy DiscreteMarkovNetwork or JunctionTree with the original state names "
                    "(needs `pip install lopub[pgmpy]`).")
    e.add_argument("model", help="model file (lopub fit)")
    e.add_argument("--format", required=True, choices=FORMATS, help="uai or pgmpy")
    e.add_argument("--kind", default=None, choices=("markov", "junction"),
                   help="pgmpy object: Markov network or junction tree (default markov)")
    e.add_argument("--out", required=True, help="output file: .uai for --format uai, .pkl or "
                   ".pickle for pgmpy (the other's suffix, or .json, .csv, ..., is refused)")
    e.add_argument("--json", action="store_true", help="print the result as JSON")
    add_verbosity(e)
    e.set_defaults(func=cmd_export)


#: command -> function adding its parser (see :mod:`lopub.cli._commands`)
REGISTER = {"report": _register_report, "export": _register_export}


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``report`` and ``export`` to an argparse ``subparsers``."""
    for register_command in REGISTER.values():
        register_command(sub)
