"""``lopub collect``, ``lopub estimate-freq`` and ``lopub compare-protocols``.

Oracle reports file (``.npz``, written atomically): an uncompressed NumPy
archive with ``meta`` (a JSON string: ``format = "lopub-oracle-reports"``,
``version``, ``lopub_version``, ``protocol``, ``solution``, ``epsilon``,
``eps_1``, ``r``, ``lgrr_variant``, ``attrs``, ``sizes``, ``labels``, ``n``;
for LIP the ``priors`` and, for ``rr-lip``, ``matrices``: the exact channel
``Q[x][y]`` each attribute's clients used, and ``mechanisms``: ``"rr"`` or
``"lp"``), ``attributes`` (sampled attribute indices, SMP/ALLOMFREE) and
``reports_<j>`` (the reports about attribute ``j`` in the oracle's format,
see :mod:`lopub.oracles.oneshot`).  ``--protocol bloom`` writes the
Bloom reports file of :mod:`lopub.reports` instead.

Version 2 added ``lgrr_variant`` and ``matrices``.  Version 1 files still
load: they used the paper's L-GRR, and an ``rr-lip`` file without
``matrices`` is estimated only if every prior was valid for RR-LIP (closed
form, so the server rebuilds the clients' channel exactly); an attribute
that needed the LP fallback raises, because its channel cannot be recovered.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from lopub._util import seed_arg
from lopub.oracles.allomfree import Allomfree
from lopub.oracles.lip import LHLIP, RRLIP, UELIP, ChannelLIP
from lopub.oracles.longitudinal import LGRR_VARIANTS, loue_max_eps1
from lopub.oracles.multidim import SMP, SPL, SampledReports
from lopub.oracles.postprocess import METHODS, postprocess

FORMAT, VERSION, READABLE = "lopub-oracle-reports", 2, (1, 2)
ORACLES = ("grr", "sue", "oue", "olh", "blh", "l-grr", "l-sue", "l-osue", "l-oue")
LIP = ("rr-lip", "ue-lip", "lh-lip")
PROTOCOLS = ("bloom",) + ORACLES + ("allomfree",) + LIP
LGRR_HELP = ("L-GRR round 2 for l-grr and allomfree: 'paper' (Eq. 13, default, to reproduce "
             "the paper) or 'exact', which spends the single-report budget fully (Var* at "
             "(eps_inf, eps_1) = (1, 0.6), k = 32, n = 10,000: 0.1250 paper vs 0.0047 exact)")


def _emit(obj: Any, as_json: bool, text: str) -> None:
    print(json.dumps(obj, indent=2, default=str) if as_json else text)


def _warn(command: str, message: str) -> None:
    print(f"lopub {command}: warning: {message}", file=sys.stderr)


def _load_data(a: argparse.Namespace) -> Any:
    from lopub.cli import read_csv
    from lopub.dataset import Dataset
    from lopub.domain import Domain

    domain = Domain.from_json(a.domain)
    return Dataset.from_pandas(read_csv(a.csv), domain)


def _lip_eps(epsilon: float, d: int) -> float:
    return epsilon / d


def _lip_client(protocol: str, prior: Any, eps: float) -> Any:
    return {"rr-lip": lambda: RRLIP(prior, eps, on_invalid="lp"),
            "ue-lip": lambda: UELIP(prior, eps), "lh-lip": lambda: LHLIP(prior, eps)}[protocol]()


def _check_prior_sizes(priors: list, attrs: list, sizes: list, source: str) -> None:
    for attr, k, prior in zip(attrs, sizes, priors):  # loop over attributes
        if not isinstance(prior, list) or len(prior) != k:
            got = len(prior) if isinstance(prior, list) else type(prior).__name__
            raise ValueError(f"{source} for attribute {attr!r} has {got} probabilities; "
                             f"expected {k}, the attribute's domain size")


def _lip_mechanisms(a: argparse.Namespace, data: Any) -> list:
    if not a.prior:
        raise ValueError(f"--prior (a JSON file of attribute -> probabilities) is needed for {a.protocol}")
    priors = json.loads(Path(a.prior).read_text(encoding="utf-8"))
    attrs = list(data.domain.attrs)
    missing = [x for x in attrs if x not in priors]
    if missing:
        raise ValueError(f"--prior has no prior for attributes {missing}")
    _check_prior_sizes([priors[x] for x in attrs], attrs, list(data.domain.sizes), "--prior")
    eps = _lip_eps(a.epsilon, len(attrs))
    mechs = []
    for x in attrs:  # loop over attributes
        try:
            mechs.append(_lip_client(a.protocol, priors[x], eps))
        except ValueError as exc:
            raise ValueError(f"--prior for attribute {x!r}: {exc}") from None
    return mechs


def _rr_lip_legacy(attr: str, prior: list, eps: float) -> RRLIP:
    """Version 1 ``rr-lip`` file: safe only where the closed-form RR-LIP applied."""
    try:
        return RRLIP(prior, eps)
    except ValueError:
        raise ValueError(
            f"reports metadata has no 'matrices' (a version 1 file) and attribute {attr!r} "
            f"needed the LP fallback (its prior is invalid for RR-LIP at epsilon {eps:.6g}): "
            f"the channel its clients used cannot be recovered; collect again") from None


def lip_server_mechanisms(meta: dict) -> list:
    """The LIP mechanisms of a reports file, for the server.

    ``rr-lip`` uses the stored ``matrices`` (checked by
    :class:`~lopub.oracles.lip.ChannelLIP`: shape, rows sum to 1, LIP level
    under the stored prior <= epsilon), never a re-solved LP.
    """
    attrs, priors = meta["attrs"], meta["priors"]
    _check_prior_sizes(priors, attrs, meta["sizes"], "stored prior")
    eps = _lip_eps(meta["epsilon"], len(attrs))
    if meta["protocol"] != "rr-lip":
        return [_lip_client(meta["protocol"], p, eps) for p in priors]
    matrices = meta.get("matrices")
    if matrices is None:
        return [_rr_lip_legacy(x, p, eps) for x, p in zip(attrs, priors)]
    if not isinstance(matrices, list) or len(matrices) != len(attrs):
        raise ValueError(f"reports metadata 'matrices' must hold one channel per attribute "
                         f"({len(attrs)})")
    return [ChannelLIP(p, eps, m, name=f"stored matrices[{j}] of attribute {x!r}")
            for j, (x, p, m) in enumerate(zip(attrs, priors, matrices))]


def build_scheme(meta: dict) -> Any:
    """The SPL/SMP/ALLOMFREE scheme described by reports metadata."""
    sizes, variant = tuple(meta["sizes"]), meta.get("lgrr_variant", "paper")
    if meta["protocol"] == "allomfree":
        return Allomfree(meta["epsilon"], meta["eps_1"], sizes, variant)
    if meta["solution"] == "smp":
        return SMP(meta["protocol"], meta["epsilon"], sizes, r=meta["r"], eps_1=meta["eps_1"],
                   lgrr_variant=variant)
    return SPL(meta["protocol"], meta["epsilon"], sizes, eps_1=meta["eps_1"], lgrr_variant=variant)


def save_reports(path: str, meta: dict, arrays: dict) -> None:
    """Write an oracle reports file atomically (temp file + ``os.replace``)."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent or ".", prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, meta=np.array(json.dumps(meta)), **arrays)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_reports(path: str) -> tuple[dict, dict]:
    """Read an oracle reports file (version 1 or 2); returns ``(meta, arrays)``."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        arrays = {k: z[k] for k in z.files if k != "meta"}
    if meta.get("format") != FORMAT or meta.get("version") not in READABLE:
        raise ValueError(f"{path!r} is not a {FORMAT} file of version {READABLE}")
    return meta, arrays


def _warn_ignored(a: argparse.Namespace) -> None:
    """Warn (stderr) about options that the chosen protocol does not use."""
    p = a.protocol
    sampled = p not in ("bloom", "allomfree") + LIP
    ignored = [("--solution", a.solution is not None and not sampled),
               ("--r", a.r is not None and not (sampled and a.solution == "smp")),
               ("--eps-1", a.eps_1 is not None and not (p.startswith("l-") or p == "allomfree")),
               ("--prior", a.prior is not None and p not in LIP),
               ("--lgrr-variant", a.lgrr_variant is not None and p not in ("l-grr", "allomfree"))]
    for option, bad in ignored:
        if bad:
            _warn("collect", f"{option} is ignored with --protocol {p}")


def _check_budgets(a: argparse.Namespace, d: int) -> None:
    """Check the typed budgets before they are split over attributes."""
    if not (np.isfinite(a.epsilon) and a.epsilon > 0):
        raise ValueError(f"--epsilon ({a.epsilon:g}) must be a finite number > 0")
    if not (a.protocol.startswith("l-") or a.protocol == "allomfree"):
        return
    if a.eps_1 is None:
        raise ValueError(f"--eps-1 is needed for {a.protocol} (0 < eps_1 < --epsilon)")
    if not 0 < a.eps_1 < a.epsilon:
        raise ValueError(f"--eps-1 ({a.eps_1:g}) must be > 0 and < --epsilon ({a.epsilon:g}) "
                         f"(one report cannot cost more than all reports together)")
    if a.protocol == "l-oue":
        div = d if a.solution != "smp" else (a.r or 1)
        how = (f"--solution spl over {d} attributes" if a.solution != "smp"
               else f"--solution smp with --r {a.r or 1}")
        ei, e1 = a.epsilon / div, a.eps_1 / div
        if not e1 < loue_max_eps1(ei):
            raise ValueError(
                f"--eps-1 ({a.eps_1:g}) must be < {div * loue_max_eps1(ei):.6g} for l-oue with "
                f"--epsilon ({a.epsilon:g}) and {how}: each attribute gets eps_inf = {ei:.6g} "
                f"and eps_1 = {e1:.6g}, and L-OUE needs eps_1 < ln((2 e^eps_inf + 1)/3) = "
                f"{loue_max_eps1(ei):.6g}; use l-osue or a smaller --eps-1")


def _collect_bloom(a: argparse.Namespace, data: Any) -> None:
    from lopub.client import encode
    from lopub.spec import CollectionSpec

    reports = encode(data, CollectionSpec.from_domain(data.domain, epsilon=a.epsilon), rng=a.seed)
    reports.save(a.out)
    _emit(reports.summary(), a.json, f"collected {reports.n} Bloom reports -> {a.out}")


def _collect_lip(a: argparse.Namespace, data: Any, meta: dict) -> dict:
    mechs = _lip_mechanisms(a, data)
    meta.update(solution="spl", priors=[m.prior.tolist() for m in mechs])
    if a.protocol == "rr-lip":  # the exact channels, so the server never re-solves the LP
        meta.update(matrices=[m.matrix.tolist() for m in mechs],
                    mechanisms=[m.mechanism for m in mechs])
    return {f"reports_{j}": m.perturb(data.codes[:, j], rng=a.seed + j if a.seed is not None
                                      else None) for j, m in enumerate(mechs)}


def cmd_collect(a: argparse.Namespace) -> None:
    from lopub import __version__

    _warn_ignored(a)
    data = _load_data(a)
    if a.protocol == "bloom":
        _collect_bloom(a, data)
        return
    _check_budgets(a, len(data.domain.attrs))
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
        rep = build_scheme(meta).perturb(data.codes, rng=a.seed)
        per_attr = rep.per_attr if isinstance(rep, SampledReports) else rep
        arrays = {f"reports_{j}": np.asarray(r) for j, r in enumerate(per_attr)}
        if isinstance(rep, SampledReports):
            arrays["attributes"] = rep.attributes
    save_reports(a.out, meta, arrays)
    _emit({k: meta[k] for k in ("protocol", "solution", "epsilon", "eps_1", "n")}, a.json,
          f"collected {data.n} {a.protocol} reports ({meta['solution']}) -> {a.out}")


def _estimate_oracles(meta: dict, arrays: dict, lip_method: str) -> list:
    """Raw estimates per attribute; ``None`` for an attribute without reports."""
    per_attr = tuple(arrays[f"reports_{j}"] for j in range(len(meta["attrs"])))
    if meta["protocol"] in LIP:
        mechs = lip_server_mechanisms(meta)
        return [m.estimate(r) if meta["protocol"] == "lh-lip" else m.estimate(r, lip_method)
                for m, r in zip(mechs, per_attr)]
    scheme = build_scheme(meta)
    if "attributes" in arrays:
        per_attr = SampledReports(attributes=arrays["attributes"], per_attr=per_attr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # replaced by the warning below, naming the attribute
        raw = scheme.estimate(per_attr)
    empty = [x for x, r in zip(meta["attrs"], raw) if np.all(np.isnan(r))]
    if empty:
        warnings.warn(f"attributes {empty} got no reports (n_j = 0); their marginals are "
                      f"None", stacklevel=3)
    return [None if np.all(np.isnan(r)) else r for r in raw]


def estimate_file(path: str, method: str = "clip", lip_method: str = "bayes") -> dict:
    """One-way marginals ``{attr: {label: freq}}`` from any reports file.

    An attribute that no user reported (possible with SMP/ALLOMFREE) maps
    to ``None`` instead of a distribution, with a ``UserWarning`` naming it.
    """
    with open(path, "rb") as fh:
        is_npz = fh.read(2) == b"PK"
    if not is_npz:
        from lopub.oracles.compare import bloom_one_way
        from lopub.reports import Reports

        reports = Reports.load(path)
        raw = bloom_one_way(reports)
        attrs, labels = reports.spec.domain.attrs, [reports.spec.domain.labels(x)
                                                   for x in reports.spec.domain.attrs]
    else:
        meta, arrays = load_reports(path)
        attrs, labels = meta["attrs"], meta["labels"]
        raw = _estimate_oracles(meta, arrays, lip_method)
    return {a: None if r is None else dict(zip(lab, postprocess(r, method).freq.tolist()))
            for a, lab, r in zip(attrs, labels, raw)}


def cmd_estimate(a: argparse.Namespace) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = estimate_file(a.reports, a.postprocess, a.lip_method)
    for w in caught:
        _warn("estimate-freq", str(w.message))
    text = "\n".join(f"{attr}: no reports" if freqs is None else f"{attr}:\n" + "\n".join(
        f"  {lab}: {v:.4f}" for lab, v in freqs.items()) for attr, freqs in out.items())
    _emit({"postprocess": a.postprocess, "marginals": out}, a.json, text)


def cmd_compare(a: argparse.Namespace) -> None:
    from lopub.oracles.compare import ADULT_CATEGORICAL, check_protocols, compare, format_table

    protocols = check_protocols(a.protocols.split(","))  # before loading any data
    if a.dataset == "adult":
        from lopub.datasets import load_adult
        data = load_adult().select(list(ADULT_CATEGORICAL))
    elif a.dataset == "embedded":
        from lopub.datasets import embedded
        data = embedded(a.n, rng=a.seed)
    else:
        a.csv = a.dataset
        if not a.domain:
            raise ValueError("--domain is needed when --dataset is a CSV file")
        data = _load_data(a)
    eps = [float(x) for x in a.epsilons.split(",")]
    rows = compare(data.codes, data.domain.sizes, eps, protocols, runs=a.runs,
                   eps1_ratio=a.eps1_ratio, method=a.postprocess, dataset=data,
                   lgrr_variant=a.lgrr_variant, rng=a.seed)
    _emit(rows, a.json, format_table(rows))


def register(subparsers: Any) -> None:
    """Add ``collect``, ``estimate-freq`` and ``compare-protocols`` to a CLI."""
    c = subparsers.add_parser(
        "collect", help="simulate clients with any protocol: CSV -> reports file",
        description="Randomize every record of a CSV with a frequency oracle (SPL: all "
        "attributes at epsilon/d, or SMP: r sampled attributes at epsilon/r), a longitudinal "
        "protocol, ALLOMFREE, a LIP mechanism (needs --prior) or LoPub Bloom reports.")
    c.add_argument("csv", help="input CSV with a header row")
    c.add_argument("--domain", required=True, help="domain JSON (the public schema)")
    c.add_argument("--protocol", required=True, choices=PROTOCOLS)
    c.add_argument("--epsilon", required=True, type=float,
                   help="budget per user (eps_inf for longitudinal protocols and ALLOMFREE)")
    c.add_argument("--eps-1", type=float, help="budget of one report (longitudinal/ALLOMFREE)")
    c.add_argument("--solution", choices=("spl", "smp"),
                   help="split the budget over attributes or sample r attributes (default spl; "
                   "not for bloom, allomfree, *-lip)")
    c.add_argument("--r", type=int, help="attributes sampled per user with smp (default 1)")
    c.add_argument("--lgrr-variant", choices=LGRR_VARIANTS, help=LGRR_HELP)
    c.add_argument("--prior", help="JSON {attribute: [probabilities in label order]} for *-lip")
    c.add_argument("--out", required=True, help="reports file to write (.npz; Parquet for bloom)")
    c.add_argument("--seed", type=seed_arg, help="seed for simulation; omitted = OS entropy")
    c.add_argument("--json", action="store_true", help="print a JSON summary")
    c.set_defaults(func=cmd_collect)
    e = subparsers.add_parser(
        "estimate-freq", help="one-way marginals from any reports file",
        description="Estimate every attribute's frequencies from an oracle reports file "
        "(.npz from `collect`) or a Bloom reports file (EM).")
    e.add_argument("reports", help="reports file")
    e.add_argument("--postprocess", choices=METHODS, default="clip",
                   help="turn raw estimates into distributions (default clip)")
    e.add_argument("--lip-method", choices=("bayes", "invert"), default="bayes",
                   help="LIP estimator: posterior mean (assumes data follow the prior) or inversion")
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=cmd_estimate)
    p = subparsers.add_parser(
        "compare-protocols", help="MSE_avg and time of protocols at equal epsilon",
        description="Estimate the one-way marginals of a dataset with each protocol at the same "
        "total epsilon per user and print MSE_avg = (1/d) sum_j (1/k_j) sum_v (f - f_hat)^2 "
        "and the time of collection plus estimation.")
    p.add_argument("--dataset", default="embedded",
                   help="'embedded', 'adult' (its 9 categorical attributes) or a CSV path")
    p.add_argument("--domain", help="domain JSON when --dataset is a CSV")
    p.add_argument("--n", type=int, default=20000, help="records of the embedded dataset")
    p.add_argument("--epsilons", default="0.5,1,2,4,8", help="comma-separated budgets")
    p.add_argument("--protocols", default="bloom,spl-grr,spl-oue,smp-grr,smp-oue,smp-olh,allomfree",
                   help="comma-separated: bloom, allomfree, spl-<oracle>, smp-<oracle>")
    p.add_argument("--eps1-ratio", type=float, default=0.6, help="eps_1 / eps_inf (default 0.6)")
    p.add_argument("--lgrr-variant", choices=LGRR_VARIANTS, default="paper", help=LGRR_HELP)
    p.add_argument("--postprocess", choices=METHODS, default="clip")
    p.add_argument("--runs", type=int, default=1, help="repetitions averaged (default 1)")
    p.add_argument("--seed", type=seed_arg, help="seed; omitted = OS entropy")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_compare)
