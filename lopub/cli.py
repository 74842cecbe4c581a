"""The ``lopub`` command line.

Subcommands of this module: ``schema``, ``encode``, ``privacy``,
``inspect-reports``, ``demo``.  Other modules add theirs through a
``register(subparsers)`` function (estimation, the pipeline, frequency
oracles).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
from typing import Any, Sequence

import pandas as pd

from . import __version__, privacy
from ._util import seed_arg
from .dataset import Dataset, infer_domain
from .domain import Domain
from .errors import BudgetError
from .reports import Reports
from .spec import CollectionSpec

PLUGINS = ("lopub.cli_estimate", "lopub.cli_pipeline", "lopub.cli_oracles")


def _emit(obj: Any, as_json: bool, text: str) -> None:
    print(json.dumps(obj, indent=2, default=str) if as_json else text)


def _spec_text(summary: dict) -> str:
    lines = [f"{k}: {v}" for k, v in summary.items() if k != "epsilon_per_attribute"]
    eps = summary.get("epsilon_per_attribute", {})
    lines += [f"  epsilon[{a}] = {e:.4f}" for a, e in eps.items()]
    return "\n".join(lines)


def read_csv(path: str) -> pd.DataFrame:
    """Read a CSV with a header row; clear error when the file is missing or empty."""
    try:
        df = pd.read_csv(path, skipinitialspace=True)
    except FileNotFoundError:
        raise FileNotFoundError(f"CSV file {path!r} does not exist") from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"CSV file {path!r} is empty") from None
    return df


# --- schema -------------------------------------------------------------------
def cmd_schema(a: argparse.Namespace) -> None:
    df = read_csv(a.csv)
    edges = {}
    for item in a.edges or []:
        col, _, spec = item.partition("=")
        if not spec:
            raise ValueError(f"--edges {item!r} must look like column=e0,e1,e2")
        try:
            edges[col] = [float(x) for x in spec.split(",")]
        except ValueError:
            raise ValueError(f"--edges {item!r}: the edges must be numbers, like column=e0,e1,e2") from None
    cols = a.columns.split(",") if a.columns else None
    domain = infer_domain(df, bins=a.bins, edges=edges, max_categories=a.max_categories, columns=cols)
    missing = {c: int(n) for c, n in df[list(domain.attrs)].isna().sum().items() if n}
    if missing:  # not an error here: the schema is valid, but encoding these rows will fail
        print("warning: missing values ignored when inferring categories ("
              + ", ".join(f"{c}: {n}" for c, n in missing.items())
              + "); drop or impute them before `lopub encode`", file=sys.stderr)
    if a.out:
        domain.to_json(a.out)
    sizes = dict(zip(domain.attrs, domain.sizes))
    _emit(domain.to_dict() if a.json else sizes, a.json,
          "\n".join(f"{k}: {v} categories" for k, v in sizes.items())
          + f"\ntotal cells: {domain.cells()}" + (f"\nwritten to {a.out}" if a.out else ""))


# --- encode -------------------------------------------------------------------
def build_spec(domain: Domain, a: argparse.Namespace) -> CollectionSpec:
    return CollectionSpec.from_domain(
        domain, f=a.f, epsilon=a.epsilon, m=a.m, h=a.h, fp_rate=a.fp_rate,
        **({"key": a.key} if a.key is not None else {}),
    )


def cmd_encode(a: argparse.Namespace) -> None:
    from .client import encode

    domain = Domain.from_json(a.domain)
    data = Dataset.from_pandas(read_csv(a.csv), domain)
    spec = build_spec(domain, a)
    reports = encode(data, spec, rng=a.seed)
    reports.save(a.out)
    s = reports.summary()
    _emit(s, a.json, f"encoded {reports.n} records -> {a.out}\n" + _spec_text(s))


def cmd_privacy(a: argparse.Namespace) -> None:
    if (a.f is None) == (a.epsilon is None):
        raise ValueError("give exactly one of --f or --epsilon")
    if a.f is not None:
        per_attr = privacy.epsilon_per_attribute(a.f, a.h)
        out = {"f": a.f, "h": a.h, "d": a.d, "epsilon_per_attribute": per_attr,
               "epsilon_per_record": privacy.epsilon_per_record(a.f, a.h, a.d)}
    else:
        f = privacy.f_for_epsilon(a.epsilon, a.h, a.d)
        out = {"epsilon_per_record": a.epsilon, "h": a.h, "d": a.d, "f": f,
               "epsilon_per_attribute": a.epsilon / a.d}
    _emit(out, a.json, "\n".join(f"{k}: {v:.6g}" if isinstance(v, float) else f"{k}: {v}" for k, v in out.items()))


def cmd_inspect(a: argparse.Namespace) -> None:
    r = Reports.load(a.reports)
    s = r.summary()
    s["attribute_names"] = list(r.spec.domain.attrs)
    _emit(s, a.json, _spec_text(s))


def cmd_demo(a: argparse.Namespace) -> None:
    from .demo import run_demo

    run_demo(a)


# --- parser -------------------------------------------------------------------
def add_spec_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("collection spec (public parameters)")
    x = g.add_mutually_exclusive_group(required=True)
    x.add_argument("--f", type=float, help="flip probability f in (0, 1) (Eq. 5)")
    x.add_argument("--epsilon", type=float, help="target per-record epsilon; f is derived (Eq. 8)")
    g.add_argument("--m", type=int, help="Bloom bits per attribute (default 128; 32 for binary attributes)")
    g.add_argument("--h", type=int, help="hash functions per attribute (default 4)")
    g.add_argument("--fp-rate", type=float, help="derive m_j and h from this false-positive rate (Eq. 6-7)")
    g.add_argument("--key", help="public hash key shared by clients and server")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lopub", description="Publish categorical data under local differential privacy (LoPub).")
    p.add_argument("--version", action="version", version=f"lopub {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("schema", help="infer a domain JSON from a CSV", description="Infer a domain (attributes, categories, binning) from a CSV with a header row. Numeric columns with more than --max-categories values get --bins quantile bins (or the explicit --edges).")
    s.add_argument("csv")
    s.add_argument("--out", help="write the domain JSON here")
    s.add_argument("--bins", type=int, default=8, help="quantile bins for numeric columns (default 8)")
    s.add_argument("--edges", action="append", metavar="COL=E0,E1,...", help="explicit bin edges for a column (repeatable)")
    s.add_argument("--max-categories", type=int, default=64, help="numeric columns with more distinct values are binned (default 64)")
    s.add_argument("--columns", help="comma-separated columns to keep (default all)")
    s.add_argument("--json", action="store_true", help="print the domain JSON")
    s.set_defaults(func=cmd_schema)

    e = sub.add_parser("encode", help="simulate the clients: CSV -> randomized reports", description="Encode every record of a CSV into a randomized Bloom report (what each client would send) and write a reports file.")
    e.add_argument("csv")
    e.add_argument("--domain", required=True, help="domain JSON (the public schema)")
    e.add_argument("--out", required=True, help="reports file to write (Parquet, lopub-reports v1)")
    e.add_argument("--seed", type=seed_arg, help="seed for simulation; omitted = OS entropy")
    e.add_argument("--json", action="store_true")
    add_spec_options(e)
    e.set_defaults(func=cmd_encode)

    v = sub.add_parser("privacy", help="epsilon for f, h, d — or f for a target epsilon", description="Privacy accounting of LoPub's bit flipping (Eq. 8): eps = 2 h d ln((2 - f)/f).")
    v.add_argument("--f", type=float)
    v.add_argument("--epsilon", type=float, help="target per-record epsilon")
    v.add_argument("--h", type=int, default=4, help="hash functions per attribute (default 4)")
    v.add_argument("--d", type=int, default=1, help="number of attributes (default 1)")
    v.add_argument("--json", action="store_true")
    v.set_defaults(func=cmd_privacy)

    i = sub.add_parser("inspect-reports", help="show N, attributes, spec and epsilon of a reports file", description="Validate a reports file and print its size, spec and privacy.")
    i.add_argument("reports")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=cmd_inspect)

    d = sub.add_parser("demo", help="run lopub on the embedded census-like dataset", description="Generate the embedded dataset, encode it under LDP and run the pipeline; writes everything into --out.")
    d.add_argument("--out", default="lopub-demo", help="output folder (default ./lopub-demo)")
    d.add_argument("--n", type=int, default=20000, help="records to generate (default 20000)")
    d.add_argument("--f", type=float, default=0.5, help="flip probability (default 0.5)")
    d.add_argument("--seed", type=seed_arg, default=0, help="seed of the simulation (default 0)")
    d.add_argument("--quiet", action="store_true", help="no progress output")
    d.set_defaults(func=cmd_demo)

    for mod in PLUGINS:
        if importlib.util.find_spec(mod) is not None:
            importlib.import_module(mod).register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.func(args)
        sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
    except BrokenPipeError:  # output piped into e.g. `head`, which closed early: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ValueError, TypeError, OSError, BudgetError, KeyError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"lopub {args.command}: error: {msg}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
