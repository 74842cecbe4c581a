"""``lopub schema | encode | privacy``: the collection side (``inspect-reports``, ``merge-reports``:
:mod:`lopub.cli.reports_files`).

* ``schema CSV [--out domain.json]``: infer the public domain from a CSV
* ``encode CSV --domain domain.json --f F|--epsilon E --out reports.parquet|FOLDER [--append]``:
  simulate the clients; a folder is a reports dataset that ``--append`` grows
* ``privacy --f F|--epsilon E [--h H] [--d D]``: the privacy accounting

The data modules (pandas, pyarrow) are imported inside the commands, so
``lopub privacy`` starts fast.
"""
from __future__ import annotations

import argparse
import math
import os
from typing import TYPE_CHECKING, Any, cast

from lopub.reports import privacy
from lopub.cli._commands import add_command
from lopub.cli._inputs import with_csv_dialect
from lopub.cli._common import (add_missing, add_na_values, add_verbosity, csv_options, dataset_from_file, emit,
                               read_csv, seed_arg)

if TYPE_CHECKING:  # pragma: no cover
    from lopub.data.domain import Domain
    from lopub.reports.spec import CollectionSpec

#: hash functions per attribute assumed by ``privacy`` (the spec's default h)
DEFAULT_H = 4


def _spec_text(summary: dict) -> str:
    lines = [f"{k}: {v}" for k, v in summary.items() if k != "epsilon_per_attribute"]
    eps = summary.get("epsilon_per_attribute", {})
    lines += [f"  epsilon[{a}] = {e:.4f}" for a, e in eps.items()]
    return "\n".join(lines)


def _edges(items: list[str] | None) -> dict[str, list[float]]:
    edges = {}
    for item in items or []:
        col, _, spec = item.partition("=")
        if not spec:
            raise ValueError(f"--edges {item!r} must look like column=e0,e1,e2")
        try:
            edges[col] = [float(x) for x in spec.split(",")]
        except ValueError:
            raise ValueError(f"--edges {item!r}: the edges must be numbers, like column=e0,e1,e2") from None
    return edges


def _bounds(items: list[str] | None) -> dict[str, list[float]]:
    """``--bounds COL=LO,HI`` (repeatable): public bounds of a column."""
    out = {}
    for item in items or []:
        col, _, spec = item.partition("=")
        try:
            v = [float(x) for x in spec.split(",")] if spec else []
        except ValueError:
            v = []
        if len(v) != 2:
            raise ValueError(f"--bounds {item!r} must look like column=low,high (two numbers)")
        out[col] = v
    return out


def cmd_schema(a: argparse.Namespace) -> None:
    from lopub.data._labels import NA_TOKENS
    from lopub.data.schema import infer_schema
    from lopub.errors import DomainError

    df = read_csv(a.csv, a.na_values, **csv_options(a))
    cols = a.columns.split(",") if a.columns else None
    if df.empty:
        raise ValueError(f"CSV file {a.csv!r} has no data rows; a domain is inferred from data")
    try:
        report = infer_schema(df, bins=a.bins, edges=_edges(a.edges), bounds=_bounds(a.bounds),
                              max_categories=a.max_categories, columns=cols, missing=a.missing,
                              na_values=tuple(NA_TOKENS) + tuple(a.na_values),
                              identifiers="keep" if a.keep_ids else "exclude", provenance=a.provenance,
                              read_as_missing=("",) + tuple(a.na_values))
    except DomainError as exc:
        raise DomainError(f"CSV file {a.csv!r}: {exc}") from None
    dropped = {c.column: c.missing_share for c in report.columns if c.missing_share and a.missing == "drop"}
    if dropped:  # not an error here: the schema is valid, but these rows must be dropped to collect
        from lopub.progress import warning

        warning("missing values ignored when inferring categories (" + ", ".join(
            f"{c}: {round(s * len(df)):,}" for c, s in dropped.items()) + "); the rows holding them "
            "must be dropped when collecting (lopub collect --missing drop)")
    obj = with_csv_dialect(report.domain, a.csv, a.sep, a.decimal).to_dict()  # a release is written so
    if report.privacy_note:
        obj["privacy"] = report.privacy_note
    if a.out:
        from lopub.formats._io import dump_json

        dump_json(obj, a.out)
    emit(obj | {"decisions": report.to_dict()} if a.json else obj, a.json,
         report.table() + (f"\nwritten to {a.out}" if a.out else ""))


def build_spec(domain: Domain, a: argparse.Namespace) -> CollectionSpec:
    """The collection spec of the ``--f/--epsilon/--m/--h/--fp-rate/--key`` options."""
    from lopub.reports.spec import CollectionSpec

    return CollectionSpec.from_domain(
        domain, f=a.f, epsilon=a.epsilon, m=a.m, h=a.h, fp_rate=a.fp_rate,
        **({"key": a.key} if a.key is not None else {}),
    )


def _planned_bloom(a: argparse.Namespace) -> bool:
    """``--epsilon`` without ``--m``/``--h``/``--fp-rate``, not appending: the planner picks h and m."""
    return (a.epsilon is not None and a.f is None and a.m is None and a.h is None
            and a.fp_rate is None and not a.append and a.domain is not None)


def _spec_given(a: argparse.Namespace) -> bool:
    return any(getattr(a, k) is not None for k in ("f", "epsilon", "m", "h", "fp_rate", "key"))


def _check_domain(have: Domain, given: Domain, a: argparse.Namespace) -> None:
    from lopub.errors import SpecError
    from lopub.data.domain import domain_to_dict
    from lopub.reports.folder import dict_difference

    diff = dict_difference(domain_to_dict(have), domain_to_dict(given),
                           (f"the dataset {a.out!r}", f"--domain {a.domain}"))
    if diff:
        raise SpecError(f"cannot append: --domain is not the domain of the dataset; {diff}")


def _encode_target(a: argparse.Namespace) -> tuple[Any, Any]:
    """(existing dataset to append to or None, spec to encode under) for ``encode``."""
    from lopub.data.domain import Domain
    from lopub.reports.folder import MANIFEST, is_dataset_path
    from lopub.reports.dataset import ReportsDataset

    folder = is_dataset_path(a.out)
    if a.append and not folder:
        raise ValueError(f"--append needs a dataset folder, but --out ({a.out}) is a single reports "
                         f"file; make it a folder first: lopub merge-reports FOLDER {a.out}")
    target = (ReportsDataset.open(a.out) if a.append and os.path.exists(os.path.join(a.out, MANIFEST))
              else None)
    if target is not None and not _spec_given(a):
        if a.domain is not None:
            _check_domain(target.spec.domain, Domain.from_json(a.domain), a)
        return target, target.spec
    if a.domain is None:
        raise ValueError("--domain is needed (it may be left out only with --append to an existing dataset)")
    if (a.f is None) == (a.epsilon is None):
        raise ValueError("give exactly one of --f or --epsilon (both may be left out only with "
                         "--append to an existing dataset, whose spec is then used)")
    spec = build_spec(Domain.from_json(a.domain), a)
    if target is not None:
        target.check_spec(spec, "this batch")
    return target, spec


def cmd_encode(a: argparse.Namespace) -> None:
    from lopub.client import encode

    if _planned_bloom(a):  # --epsilon alone: h and m from the planner (needs N, so read first)
        from lopub.collect import bloom_spec, plan
        from lopub.data.domain import Domain

        domain = Domain.from_json(a.domain)
        data = dataset_from_file(a.csv, domain, a.na_values, a.missing, **csv_options(a))
        target, spec = None, bloom_spec(domain, plan(domain, data.n, a.epsilon), key=a.key)
    else:
        target, spec = _encode_target(a)
        data = dataset_from_file(a.csv, spec.domain, a.na_values, a.missing, **csv_options(a))
    reports = encode(data, spec, rng=a.seed)
    if spec.epsilon > 10:  # once the reports exist (not before an error)
        from lopub.collect import privacy_statement
        from lopub.progress import warning

        warning(cast(str, privacy_statement(spec.epsilon)[1]).removeprefix("WARNING: "), command="encode")
    if target is not None:
        target.append(reports)
    else:  # a file, or a new dataset folder made whole (--append to a folder not there yet)
        reports.save(a.out)
    s = reports.summary()
    where = f"{a.out} (dataset, now {target.n} reports in {len(target.parts)} parts)" if target else a.out
    emit(s, a.json, f"encoded {reports.n} records -> {where}\n" + _spec_text(s))


#: ``lopub privacy --protocol``: LoPub's Bloom reports (f, h, d) or reports of one epsilon-LDP
#: randomizer per record (a marginal-sampling plan's GRR / OUE / OLH), which have only epsilon
PRIVACY_PROTOCOLS = ("bloom", "marginals", "one-attribute", "grr", "oue", "olh")


def cmd_privacy(a: argparse.Namespace) -> None:
    if a.protocol != "bloom":
        given = [o for o, v in (("--f", a.f), ("--h", a.h), ("--d", a.d)) if v is not None]
        if given or a.epsilon is None:
            got = f" (got {', '.join(given)})" if given else " (none given)"
            raise ValueError(f"--protocol {a.protocol} takes --epsilon only, the per-record epsilon of its "
                             f"reports{got}: --f, --h and --d are parameters of LoPub's Bloom reports "
                             f"(--protocol bloom)")
        if not (math.isfinite(a.epsilon) and a.epsilon > 0):
            raise ValueError(f"--epsilon ({a.epsilon:g}) must be a finite number > 0")
        out: dict[str, Any] = {"protocol": a.protocol, "epsilon_per_record": a.epsilon}
        _shuffled(a, out)
        return
    a.h = DEFAULT_H if a.h is None else a.h
    a.d = 1 if a.d is None else a.d
    if (a.f is None) == (a.epsilon is None):
        raise ValueError("give exactly one of --f or --epsilon")
    if a.f is not None and not 0 < a.f < 1:
        raise ValueError(f"--f ({a.f:g}) must be in (0, 1): a flip probability"
                         + ("; f must be > 0 (f = 0 never randomizes a bit: no privacy, epsilon infinite)"
                            if a.f == 0 else ""))
    if a.f is not None:
        per_attr = privacy.epsilon_per_attribute(a.f, a.h)
        out = {"f": a.f, "h": a.h, "d": a.d, "epsilon_per_attribute": per_attr,
               "epsilon_per_record": privacy.epsilon_per_record(a.f, a.h, a.d)}
    else:
        f = privacy.f_for_epsilon(a.epsilon, a.h, a.d)
        out = {"epsilon_per_record": a.epsilon, "h": a.h, "d": a.d, "f": f,
               "epsilon_per_attribute": a.epsilon / a.d}
    _shuffled(a, out)


def _shuffled(a: argparse.Namespace, out: dict[str, Any]) -> None:
    """Print ``out``, with the central (epsilon, delta) of ``--shuffle-n`` shuffled reports
    (lopub serve-export) when asked."""
    if a.shuffle_n is not None:
        from lopub.reports.shuffle import statement

        out.update(statement(a.shuffle_n, out["epsilon_per_record"], a.delta, names=("--shuffle-n", "--delta")))
    emit(out, a.json, "\n".join(f"{k}: {v:.6g}" if isinstance(v, float) else f"{k}: {v}"
                                for k, v in out.items()))


def add_spec_options(p: argparse.ArgumentParser) -> None:
    """The public collection parameters (``encode``)."""
    g = p.add_argument_group("collection spec (public parameters)")
    x = g.add_mutually_exclusive_group()
    x.add_argument("--f", type=float, help="flip probability f in (0, 1) (Eq. 5)")
    x.add_argument("--epsilon", type=float, help="target per-record epsilon; f is derived (Eq. 8); without "
                   "--m/--h/--fp-rate, h and m are the planner's best for this budget and N (lopub plan)")
    g.add_argument("--m", type=int, help="Bloom bits per attribute (default 128; 32 for binary attributes)")
    g.add_argument("--h", type=int, help=f"hash functions per attribute (default {DEFAULT_H})")
    g.add_argument("--fp-rate", type=float, help="derive m_j and h from this false-positive rate (Eq. 6-7)")
    g.add_argument("--key", help="public hash key shared by clients and server")


def _register_schema(sub: Any) -> None:
    from lopub.data.schema import MISSING_POLICIES

    s = add_command(sub, "schema", description="Infer a domain (attributes, categories, binning) from a CSV with a header row "
                    "and print the table of decisions (column, type, categories or bins, missing share, notes) to "
                    "review before collecting.  Numeric columns with more distinct values than --max-categories "
                    "get --bins bins: a value holding many rows (0 in a capital-gain column) gets a bin of its "
                    "own, the rest quantile bins, none empty (or the explicit --edges, or equal-width bins "
                    "between public --bounds).  Identifier-like columns are left out; missing values are a "
                    "category of their own.  A schema inferred from the raw data reveals it: the file says so "
                    "(\"provenance\": \"inferred from private data\").")
    s.add_argument("csv")
    s.add_argument("--out", help="write the domain JSON here (.json; another format's suffix (.csv, .pdf, ...) is refused)")
    s.add_argument("--bins", type=int, help="bins of a binned numeric column (default from the rows N: "
                   "clip(floor(sqrt(N)) // 4, 2, 8))")
    s.add_argument("--edges", action="append", metavar="COL=E0,E1,...", help="explicit bin edges for a column (repeatable)")
    s.add_argument("--bounds", action="append", metavar="COL=LOW,HIGH",
                   help="public bounds of a numeric column: --bins equal-width bins between them (repeatable)")
    s.add_argument("--max-categories", type=int, help="numeric columns with more distinct values are binned "
                   "(default from N: clip(floor(sqrt(N)) // 2, 2, 32))")
    s.add_argument("--columns", help="comma-separated columns to keep (default all); a column named here is kept "
                   "even when identifier-like")
    s.add_argument("--missing", choices=MISSING_POLICIES, default="category",
                   help="missing cells (empty, and ?, NA, N/A in numeric columns): a category of their own "
                        "(default), drop (no category: drop the rows when collecting) or refuse")
    s.add_argument("--keep-ids", action="store_true", help="keep identifier-like columns (unique per row)")
    s.add_argument("--provenance", help="declare where the data comes from, e.g. 'public' for a public or "
                   "historical extract (default: 'inferred from private data' unless every column has "
                   "--edges or --bounds)")
    s.add_argument("--json", action="store_true", help="print the domain JSON and the decisions")
    add_na_values(s)
    add_verbosity(s)
    s.set_defaults(func=cmd_schema)


def _register_encode(sub: Any) -> None:
    e = add_command(sub, "encode", description="Encode every record of a CSV into a randomized Bloom report (what each client would send) and write a reports file, or a reports dataset folder (Parquet parts + manifest) that --append grows batch by batch.")
    e.add_argument("csv")
    e.add_argument("--domain", help="domain JSON (the public schema); with --append to an existing dataset, default: the dataset's")
    e.add_argument("--out", required=True, help="reports file (.parquet; lopub-reports v1) or dataset folder (a name without suffix, or ending in /; created, or grown with --append); another format's suffix (.csv, .pdf, ...) is refused")
    e.add_argument("--append", action="store_true", help="add this batch as a new part of the dataset folder --out (created if missing); the spec must equal the dataset's, and when no spec option is given the dataset's is used")
    e.add_argument("--seed", type=seed_arg, help="seed of a reproducible simulation (whoever knows it can redo the randomization: not for a release to publish); omitted = OS entropy")
    e.add_argument("--json", action="store_true")
    add_spec_options(e)
    add_na_values(e)
    add_missing(e)
    add_verbosity(e)
    e.set_defaults(func=cmd_encode)


def _flip_probability(text: str) -> float:
    """``--f`` as a float; a non-zero number typed below the smallest float (1e-400) is refused as such."""
    value = float(text)
    mantissa = text.strip().lower().split("e")[0]
    if value == 0 and any(c in "123456789" for c in mantissa):
        raise argparse.ArgumentTypeError(f"{text} is below the smallest float, 5e-324; f must be in (0, 1)")
    return value


def _register_privacy(sub: Any) -> None:
    v = add_command(sub, "privacy", description=(
        "Privacy accounting of LoPub's bit flipping (Eq. 8): eps = 2 h d ln((2 - f)/f); with --shuffle-n "
        "the central (epsilon, delta) of shuffled reports, of Bloom reports or (--protocol) of a "
        "marginal-sampling plan's reports, which have only their epsilon."))
    v.add_argument("--protocol", default="bloom", choices=PRIVACY_PROTOCOLS,
                   help="the reports' protocol (default bloom: prints f, h, d; the others take --epsilon "
                        "only)")
    v.add_argument("--f", type=_flip_probability, help="flip probability f in (0, 1) (Eq. 5)")
    v.add_argument("--epsilon", type=float, help="target per-record epsilon")
    v.add_argument("--h", type=int, help=f"hash functions per attribute (default {DEFAULT_H})")
    v.add_argument("--d", type=int, help="number of attributes (default 1)")
    v.add_argument("--shuffle-n", type=int, help="also the central (epsilon, delta) of N shuffled reports "
                   "(amplification by shuffling, Feldman-McMillan-Talwar numerical bound)")
    v.add_argument("--delta", type=float, default=1e-8, help="delta of --shuffle-n (default 1e-8)")
    v.add_argument("--json", action="store_true")
    add_verbosity(v)
    v.set_defaults(func=cmd_privacy)


#: command -> function adding its parser (see :mod:`lopub.cli._commands`)
REGISTER = {"schema": _register_schema, "encode": _register_encode, "privacy": _register_privacy}


def register(sub: Any) -> None:
    """Add schema, encode and privacy to an argparse ``subparsers``."""
    for register_command in REGISTER.values():
        register_command(sub)
