"""``lopub collect``, ``lopub estimate-freq`` and ``lopub compare-protocols``.

The reports file these commands write and read is described in
:mod:`lopub.cli.oracle_files`.
"""
from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np

from lopub.collect.compare import compare
from lopub.oracles.lip import RRLIP
from lopub.oracles.lip_channel import check_lip_epsilon
from lopub.oracles.longitudinal import LGRR_VARIANTS
from lopub.oracles.multidim import SampledReports
from lopub.estimate.postprocess import POSTPROCESS as METHODS
from lopub.errors import LIPBudgetError
from lopub.progress import warning
from lopub.cli._commands import add_command
from lopub.cli._public import add_public
from lopub.cli._outputs import check_output_path
from lopub.cli.oracle_budgets import _check_budgets, _split
from lopub.cli._common import (add_missing, add_na_values, add_verbosity, csv_options, dataset_from_file, default, emit,
                               seed_arg)
from lopub.cli.oracle_files import (FORMAT, LIP, PROTOCOLS, VERSION, _check_prior_sizes, _lip_client, _lip_eps,
                           build_scheme, estimate_file, estimate_file_with_stderr, lip_server_mechanisms,
                           load_reports, save_reports)

__all__ = ["LGRR_HELP", "REGISTER", "RRLIP", "build_scheme", "estimate_file", "lip_server_mechanisms",
           "load_reports", "register", "save_reports"]
LGRR_HELP = ("L-GRR round 2 for l-grr and allomfree: 'paper' (Eq. 13, default, to reproduce "
             "the paper) or 'exact', which spends the single-report budget fully (Var* at "
             "(eps_inf, eps_1) = (1, 0.6), k = 32, n = 10,000: 0.1250 paper vs 0.0047 exact)")
#: records of the embedded dataset that ``compare-protocols`` simulates unless told otherwise
EMBEDDED_N = 20000
#: the protocols ``compare-protocols`` runs unless told otherwise (a quick subset of the library's)
CLI_PROTOCOLS = "bloom,spl-grr,spl-oue,smp-grr,smp-oue,smp-olh,allomfree"


def _load_data(a: argparse.Namespace) -> Any:
    from lopub.data.domain import Domain

    domain = Domain.from_json(a.domain)
    return dataset_from_file(a.csv, domain, a.na_values, getattr(a, "missing", "category"), **csv_options(a))


def _lip_mechanisms(a: argparse.Namespace, data: Any) -> list:
    if not a.prior:
        raise ValueError(f"--prior (a JSON file of attribute -> probabilities) is needed for {a.protocol}")
    from lopub.formats._io import load_json

    priors = load_json(a.prior, ValueError, "--prior")
    if not isinstance(priors, dict):
        raise ValueError(f"--prior {a.prior!r} must hold a JSON object {{attribute: [probabilities]}}, "
                         f"not a {type(priors).__name__}")
    attrs = list(data.domain.attrs)
    missing = [x for x in attrs if x not in priors]
    if missing:
        raise ValueError(f"--prior has no prior for attributes {missing}")
    unknown = [str(x) for x in priors if x not in attrs]
    if unknown:
        raise ValueError(f"--prior {a.prior!r} names attributes {unknown} that are not in the domain "
                         f"(its attributes: {attrs}); a typo would leave the real one without prior")
    priors = {x: _prior_by_label(priors[x], x, list(data.domain.labels(x))) for x in attrs}
    _check_prior_sizes([priors[x] for x in attrs], attrs, list(data.domain.sizes), "--prior")
    eps = _lip_eps(a.epsilon, len(attrs))
    try:
        check_lip_epsilon(eps)
    except ValueError as exc:  # the typed --epsilon's fault, not the prior's
        raise ValueError(f"{_split(a, len(attrs))}; {exc}") from None
    mechs = []
    for x in attrs:  # loop over attributes
        try:
            mechs.append(_lip_client(a.protocol, priors[x], eps))
        except LIPBudgetError as exc:  # the budget and the prior together (LH-LIP's buckets)
            raise ValueError(f"attribute {x!r} ({a.protocol}, {_split(a, len(attrs))}): {exc}") from None
        except ValueError as exc:
            raise ValueError(f"--prior for attribute {x!r}: {exc}") from None
    return mechs



def _prior_by_label(prior: Any, attr: str, labels: list) -> Any:
    """A prior given as ``{label: probability}`` as a list in label order (a list is kept)."""
    if not isinstance(prior, dict):
        return prior
    missing = [lab for lab in labels if lab not in prior]
    unknown = [str(lab) for lab in prior if lab not in labels]
    if missing or unknown:
        raise ValueError(f"--prior for attribute {attr!r} must give a probability to each of its "
                         f"labels {labels}" + (f"; missing {missing}" if missing else "")
                         + (f"; not labels of {attr!r}: {unknown}" if unknown else ""))
    return [prior[lab] for lab in labels]


def _warn_ignored(a: argparse.Namespace) -> None:
    """Warn (stderr) about options that the chosen protocol does not use."""
    p = a.protocol
    sampled = p not in ("bloom", "allomfree") + LIP + PLANNED
    ignored = [("--solution", a.solution is not None and not sampled),
               ("--r", a.r is not None and not (sampled and a.solution == "smp")),
               ("--eps-1", a.eps_1 is not None and not (p.startswith("l-") or p == "allomfree")),
               ("--prior", a.prior is not None and p not in LIP),
               ("--lgrr-variant", a.lgrr_variant is not None and p not in ("l-grr", "allomfree")),
               ("--public", getattr(a, "public", None) is not None and p not in PLANNED + ("bloom",)),
               ("--dependence", getattr(a, "dependence", None) is not None and p not in PLANNED + ("bloom",))]
    for option, bad in ignored:
        if bad:
            warning(f"{option} is ignored with --protocol {p}", command="collect")


PLANNED = ("auto", "marginals", "one-attribute")


def _collect_planned(a: argparse.Namespace, data: Any) -> None:
    """Bloom, marginal sampling or one attribute per user, parameters from the planner."""
    from lopub.collect import collect

    if not (np.isfinite(a.epsilon) and a.epsilon > 0):
        raise ValueError(f"--epsilon ({a.epsilon:g}) must be a finite number > 0")
    if a.protocol == "bloom" and _suffix(a.out) == ".npz":
        raise ValueError(f"--out {a.out!r}: Bloom reports are a Parquet file; name it .parquet")
    from lopub.cli._public import planner_knowledge

    if getattr(a, "public", None) and os.path.exists(a.public) and os.path.samefile(a.public, a.csv):
        raise ValueError(f"--public ({a.public!r}) is the CSV being collected: a plan computed from the private "
                         "records would reveal them (the plan is published); give public records of the schema, "
                         "or leave --public out")
    knowledge = planner_knowledge(a, data.domain)
    reports, report = collect(data, a.epsilon, protocol=a.protocol, rng=a.seed, **knowledge)
    if report.warning:
        warning(report.warning.removeprefix("WARNING: "), command="collect")
    chosen = report.recommended if a.protocol == "auto" else a.protocol
    out = _named_for(a.out, reports, chosen)
    reports.save(out)
    summary = {"protocol": chosen, "epsilon_per_record": a.epsilon, "n": data.n, "out": out,
               "predicted_tvd": report.option(chosen).predicted_tvd, "privacy": report.privacy}
    kept = getattr(reports, "n", data.n)
    if kept != data.n:  # a screen chose the plan and its reports are not released (lopub.collect.collect)
        summary["n_released"] = kept
    note = (f"; {kept:,} written: the {data.n - kept:,} reports of the screen that chose the plan are not part of "
            "the release" if kept != data.n else "")
    pilot = next((o.params.get("pilot") for o in report.options if o.protocol == chosen), None)
    if pilot:  # a two-phase screen's pilot (lopub.collect.twophase, "Pilot")
        summary["pilot"] = pilot
        note += (f"; the screen's pilot of {pilot['users']:,} users "
                 + ("stopped it (too little dependence to repay a screen): the others reported one attribute each"
                    if pilot["stopped"] else "continued it"))
    summary["checks"] = list(report.notes)  # the plan-time checks, as `lopub plan` prints them
    if getattr(a, "verbose", False):
        from lopub.progress import note as say

        for line in report.notes:
            say(f"plan check: {line}")
    emit(summary, a.json, f"collected {data.n:,} reports with {chosen} (planned at epsilon "
                          f"{a.epsilon:g} per record){note} -> {out}\n{report.privacy}")


def _suffix(path: str) -> str:
    return os.path.splitext(path)[1].lower()


def _named_for(path: str, reports: Any, chosen: str) -> str:
    """``path``, or the same name with the suffix of what ``reports`` are (with a warning)."""
    from lopub.collect import MarginalReports

    return _renamed(path, ".npz" if isinstance(reports, MarginalReports) else ".parquet", chosen,
                    "lopub fit")


def _renamed(path: str, want: str, chosen: str, reader: str) -> str:
    """``path``, or the same name with suffix ``want`` when it has the other kind's (a warning);
    a folder name is refused for a ``.npz`` file."""
    have = _suffix(path)
    if want == ".npz":
        if path.endswith(("/", os.sep)) or os.path.isdir(path):
            raise ValueError(f"--out ({path!r}) names a folder; {chosen} reports are one .npz file: "
                             f"name it, e.g. {os.path.join(path, 'reports.npz')!r}")
        check_output_path(path, "--out")
    clash = have == ".npz" if want == ".parquet" else have in (".parquet", ".pq")
    if not clash or os.path.isdir(path):
        return path
    out = os.path.splitext(path)[0] + want
    warning(f"{chosen} reports are {'a NumPy archive' if want == '.npz' else 'a Parquet file'}: "
            f"written to {out!r}, not {path!r} (read it with {reader} {out})", command="collect")
    return out


def _collect_lip(a: argparse.Namespace, data: Any, meta: dict) -> dict:
    mechs = _lip_mechanisms(a, data)
    meta.update(solution="spl", priors=[m.prior.tolist() for m in mechs])
    if a.protocol == "rr-lip":  # the exact channels, so the server never re-solves the LP
        meta.update(matrices=[m.matrix.tolist() for m in mechs],
                    mechanisms=[m.mechanism for m in mechs])
    rng = np.random.default_rng(a.seed)  # one stream for all attributes, as for the other oracles
    out = {}
    for j, (x, m) in enumerate(zip(data.domain.attrs, mechs)):  # loop over attributes
        try:
            out[f"reports_{j}"] = m.perturb(data.codes[:, j], rng=rng)
        except ValueError as exc:  # e.g. LH-LIP: no hash splits this prior at this budget
            raise ValueError(f"attribute {x!r} ({a.protocol}, {_split(a, len(mechs))}): {exc}") from None
    return out


def cmd_collect(a: argparse.Namespace) -> None:
    from lopub._version import __version__

    _warn_ignored(a)
    data = _load_data(a)
    if a.protocol in PLANNED + ("bloom",):
        _collect_planned(a, data)
        return
    _refuse_constant(data.domain, f"--protocol {a.protocol}", "or use --protocol auto")
    _check_budgets(a, len(data.domain.attrs))
    out = _renamed(a.out, ".npz", a.protocol, "lopub estimate-freq")  # before any simulation
    meta = {"format": FORMAT, "version": VERSION, "lopub_version": __version__,
            "protocol": a.protocol, "solution": a.solution or "spl", "epsilon": a.epsilon,
            "eps_1": a.eps_1, "r": 1 if a.r is None else a.r,
            "lgrr_variant": a.lgrr_variant or "paper", "attrs": list(data.domain.attrs),
            "sizes": list(data.domain.sizes),
            "labels": [list(data.domain.labels(x)) for x in data.domain.attrs], "n": data.n}
    if a.protocol in LIP:
        arrays = _collect_lip(a, data, meta)
    else:
        if a.protocol == "allomfree":
            meta.update(solution="smp", r=1)
        try:
            scheme = build_scheme(meta)
        except ValueError as exc:  # a budget too small once split: name what was typed
            raise ValueError(f"{_split(a, len(data.domain.attrs))}; {exc}") from None
        rep = scheme.perturb(data.codes, rng=a.seed)
        per_attr = rep.per_attr if isinstance(rep, SampledReports) else rep
        arrays = {f"reports_{j}": np.asarray(r) for j, r in enumerate(per_attr)}
        if isinstance(rep, SampledReports):
            arrays["attributes"] = rep.attributes
    save_reports(out, meta, arrays)
    emit({**{k: meta[k] for k in ("protocol", "solution", "epsilon", "eps_1", "n")}, "out": out}, a.json,
         f"collected {data.n} {a.protocol} reports ({meta['solution']}) -> {out}")


def _refuse_constant(domain: Any, what: str, alternative: str = "") -> None:
    """Refuse attributes of one category, which no frequency oracle can report, naming them."""
    one = [f"{x!r} (only {list(domain.labels(x))})" for x, k in zip(domain.attrs, domain.sizes) if k < 2]
    if one:
        raise ValueError(f"{what}: attribute(s) {', '.join(one)} have one category; a "
                         f"frequency oracle needs >= 2. A constant column carries no information: leave "
                         f"it out of the domain (lopub schema --columns ...) {alternative}".rstrip())


def cmd_estimate(a: argparse.Namespace) -> None:
    out, se = estimate_file_with_stderr(a.reports, a.postprocess, a.lip_method)  # warnings: see run()

    def line(attr: str, lab: str, v: float) -> str:
        err = (se.get(attr) or {}).get(lab)
        return f"  {lab}: {v:.4f}" + ("" if err is None else f"  (standard error {err:.4f})")

    text = "\n".join(f"{attr}: no reports" if freqs is None else f"{attr}:\n" + "\n".join(
        line(attr, lab, v) for lab, v in freqs.items()) for attr, freqs in out.items())
    emit({"postprocess": a.postprocess, "marginals": out, "stderr": se}, a.json, text)


def _epsilons(text: str) -> list[float]:
    """``--epsilons 0.5,1,2``: finite budgets > 0."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    try:
        eps = [float(x) for x in items]
    except ValueError:
        eps = []
    if not eps or not all(np.isfinite(e) and e > 0 for e in eps):
        raise ValueError(f"--epsilons ({text!r}) must be comma-separated finite numbers > 0")
    return eps


def cmd_compare(a: argparse.Namespace) -> None:
    from lopub.collect.compare import (ADULT_CATEGORICAL, TOO_FEW_RECORDS, check_protocols, check_work,
                                       format_table)

    names = [x.strip() for x in a.protocols.split(",") if x.strip()]  # spaces as in --epsilons
    protocols = check_protocols(names, name="--protocols")  # before loading any data
    eps = _epsilons(a.epsilons)
    if a.runs < 1:
        raise ValueError(f"--runs ({a.runs}) must be an integer >= 1")
    if not 0 < a.eps1_ratio < 1:
        raise ValueError(f"--eps1-ratio ({a.eps1_ratio:g}) must be in (0, 1): eps_1 = ratio x "
                         f"eps_inf, and one report cannot cost more than all of them")
    named = a.dataset in ("adult", "embedded")
    for option, bad in (("--n", a.n is not None and a.dataset != "embedded"),
                        ("--domain", a.domain is not None and named),
                        ("--names", a.names is not None and named), ("--no-header", a.no_header and named)):
        if bad:  # the option would not change the comparison: say so rather than ignore it
            warning(f"{option} is ignored with --dataset {a.dataset}", command="compare-protocols")
    if a.dataset == "adult":
        from lopub.datasets import load_adult
        data = load_adult().select(list(ADULT_CATEGORICAL))
    elif a.dataset == "embedded":
        from lopub.datasets import embedded
        data = embedded(EMBEDDED_N if a.n is None else a.n, rng=a.seed)
    else:
        a.csv = a.dataset
        if not os.path.isfile(a.dataset):
            raise ValueError(f"--dataset ({a.dataset!r}) is neither 'embedded', 'adult' nor an existing "
                             f"CSV file: file not found")
        if not a.domain:
            raise ValueError("--domain is needed when --dataset is a CSV file")
        data = _load_data(a)
    _refuse_constant(data.domain, f"--dataset {a.dataset}")  # compare() needs >= 2 categories each
    check_work(a.runs, data.n, len(eps), len(protocols), name="--runs")  # before any simulation
    rows = compare(data.codes, data.domain.sizes, eps, protocols, runs=a.runs,
                   eps1_ratio=a.eps1_ratio, method=a.postprocess, dataset=data,
                   lgrr_variant=a.lgrr_variant, rng=a.seed)
    emit(rows, a.json, format_table(rows))
    short = [r for r in rows if r["error"] and TOO_FEW_RECORDS in r["error"]]
    if short:  # the table is printed, but a comparison missing settings for want of records failed
        raise ValueError(f"{len(short)} of {len(rows)} settings could not run: {data.n:,} record(s) leave an "
                         f"attribute without a report (listed above); use more records")


def _register_collect(subparsers: Any) -> None:
    c = add_command(subparsers, "collect", description="Randomize every record of a CSV with a frequency oracle (SPL: all "
        "attributes at epsilon/d, or SMP: r sampled attributes at epsilon/r), a longitudinal "
        "protocol, ALLOMFREE, a LIP mechanism (needs --prior) or LoPub Bloom reports.")
    c.add_argument("csv", help="input CSV with a header row (or --names / --no-header)")
    c.add_argument("--domain", required=True, help="domain JSON (the public schema)")
    c.add_argument("--protocol", default="auto", choices=PLANNED + PROTOCOLS,
                   help="auto (default): the planner's choice for --epsilon per record (see `lopub plan`); "
                        "marginals: marginal sampling with the adaptive plan; one-attribute: one "
                        "attribute per user; bloom: LoPub Bloom reports with the planner's h and m; "
                        "or any frequency oracle, longitudinal or LIP protocol; with a planned protocol, --verbose also "
                        "prints the plan's checks (group sizes, cuts, refusals; --json: \"checks\")")
    c.add_argument("--epsilon", required=True, type=float,
                   help="budget per user (eps_inf for longitudinal protocols and ALLOMFREE)")
    c.add_argument("--eps-1", type=float, help="budget of one report (longitudinal/ALLOMFREE)")
    c.add_argument("--solution", choices=("spl", "smp"),
                   help="split the budget over attributes or sample r attributes (default spl; "
                   "not for bloom, allomfree, *-lip)")
    c.add_argument("--r", type=int, help="attributes sampled per user with smp (default 1)")
    c.add_argument("--lgrr-variant", choices=LGRR_VARIANTS, help=LGRR_HELP)
    c.add_argument("--prior", help="JSON {attribute: [probabilities in label order]} or "
                   "{attribute: {label: probability}} for *-lip: public knowledge, not the data")
    c.add_argument("--out", required=True, help="reports file to write: .npz for marginal sampling, one "
                   "attribute per user and frequency oracles, .parquet for Bloom reports (when auto "
                   "picks Bloom, an .npz name is written as .parquet beside it, with a warning); another "
                   "format's suffix (.csv, .json, ...) is refused before collecting")
    add_public(c)
    c.add_argument("--seed", type=seed_arg, help="seed of a reproducible simulation (whoever knows it can redo the randomization: not for a release to publish); omitted = OS entropy")
    c.add_argument("--json", action="store_true", help="print a JSON summary")
    add_na_values(c)
    add_missing(c)
    add_verbosity(c)
    c.set_defaults(func=cmd_collect)


def _register_estimate_freq(subparsers: Any) -> None:
    post = default(estimate_file, "method")
    e = add_command(subparsers, "estimate-freq", description="Estimate every attribute's frequencies from an oracle reports file "
        "(.npz from `collect`) or a Bloom reports file (EM), with the analytic standard error of each "
        "unbiased estimate (oracle and marginal-sampling reports; LIP reports with --lip-method invert).")
    e.add_argument("reports", help="reports file")
    e.add_argument("--postprocess", choices=METHODS, default=post,
                   help=f"turn raw estimates into distributions (default {post})")
    e.add_argument("--lip-method", choices=("bayes", "invert"), default=None,
                   help="rr-lip and ue-lip reports only: posterior mean (bayes, the default; assumes data follow the prior) or inversion")
    e.add_argument("--json", action="store_true")
    add_verbosity(e)
    e.set_defaults(func=cmd_estimate)


def _register_compare(subparsers: Any) -> None:
    ratio, runs = default(compare, "eps1_ratio"), default(compare, "runs")
    p = add_command(subparsers, "compare-protocols", description="Estimate the one-way marginals of a dataset with each protocol at the same "
        "total epsilon per user and print MSE_avg = (1/d) sum_j (1/k_j) sum_v (f - f_hat)^2 "
        "and the time of collection plus estimation.")
    p.add_argument("--dataset", default="embedded",
                   help="'embedded', 'adult' (its 9 categorical attributes) or a CSV path")
    p.add_argument("--domain", help="domain JSON when --dataset is a CSV")
    add_na_values(p, "--dataset, when a CSV path")
    p.add_argument("--n", type=int, help=f"records of the embedded dataset (default {EMBEDDED_N:,})")
    p.add_argument("--epsilons", default="0.5,1,2,4,8", help="comma-separated budgets")
    p.add_argument("--protocols", default=CLI_PROTOCOLS,
                   help="comma-separated: bloom, allomfree, spl-<oracle>, smp-<oracle>")
    p.add_argument("--eps1-ratio", type=float, default=ratio, help=f"eps_1 / eps_inf (default {ratio})")
    p.add_argument("--lgrr-variant", choices=LGRR_VARIANTS, default=default(compare, "lgrr_variant"),
                   help=LGRR_HELP)
    p.add_argument("--postprocess", choices=METHODS, default=default(compare, "method"))
    p.add_argument("--runs", type=int, default=runs, help=f"repetitions averaged (default {runs})")
    p.add_argument("--seed", type=seed_arg, help="seed; omitted = OS entropy")
    p.add_argument("--json", action="store_true")
    add_verbosity(p)
    p.set_defaults(func=cmd_compare)


def register(subparsers: Any) -> None:
    """Add ``collect``, ``estimate-freq`` and ``compare-protocols`` to an argparse ``subparsers``."""
    for register_command in REGISTER.values():
        register_command(subparsers)


#: command -> function adding its parser (see :mod:`lopub.cli._commands`)
REGISTER = {"collect": _register_collect, "estimate-freq": _register_estimate_freq,
            "compare-protocols": _register_compare}
