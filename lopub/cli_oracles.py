"""``lopub collect``, ``lopub estimate-freq`` and ``lopub compare-protocols``.

Oracle reports file (``.npz``, written atomically): an uncompressed NumPy
archive with ``meta`` (a JSON string: ``format = "lopub-oracle-reports"``,
``version``, ``lopub_version``, ``protocol``, ``solution``, ``epsilon``,
``eps_1``, ``r``, ``attrs``, ``sizes``, ``labels``, ``n`` and for LIP the
``priors``), ``attributes`` (sampled attribute indices, SMP/ALLOMFREE) and
``reports_<j>`` (the reports about attribute ``j`` in the oracle's format,
see :mod:`lopub.oracles.oneshot`).  ``--protocol bloom`` writes the
Bloom reports file of :mod:`lopub.reports` instead.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from lopub.oracles.allomfree import Allomfree
from lopub.oracles.lip import LHLIP, RRLIP, UELIP
from lopub.oracles.multidim import SMP, SPL, SampledReports
from lopub.oracles.postprocess import METHODS, postprocess

FORMAT, VERSION = "lopub-oracle-reports", 1
ORACLES = ("grr", "sue", "oue", "olh", "blh", "l-grr", "l-sue", "l-osue", "l-oue")
LIP = ("rr-lip", "ue-lip", "lh-lip")
PROTOCOLS = ("bloom",) + ORACLES + ("allomfree",) + LIP


def _emit(obj: Any, as_json: bool, text: str) -> None:
    print(json.dumps(obj, indent=2, default=str) if as_json else text)


def _load_data(a: argparse.Namespace) -> Any:
    from lopub.cli import read_csv
    from lopub.dataset import Dataset
    from lopub.domain import Domain

    domain = Domain.from_json(a.domain)
    return Dataset.from_pandas(read_csv(a.csv), domain)


def _lip_mechanisms(a: argparse.Namespace, data: Any) -> list:
    if not a.prior:
        raise ValueError(f"--prior (a JSON file of attribute -> probabilities) is needed for {a.protocol}")
    priors = json.loads(Path(a.prior).read_text(encoding="utf-8"))
    eps = a.epsilon / len(data.domain.attrs)
    cls = {"rr-lip": lambda p: RRLIP(p, eps, on_invalid="lp"), "ue-lip": lambda p: UELIP(p, eps),
           "lh-lip": lambda p: LHLIP(p, eps)}[a.protocol]
    missing = [x for x in data.domain.attrs if x not in priors]
    if missing:
        raise ValueError(f"--prior has no prior for attributes {missing}")
    return [cls(priors[x]) for x in data.domain.attrs]


def build_scheme(meta: dict) -> Any:
    """The SPL/SMP/ALLOMFREE scheme described by reports metadata."""
    sizes = tuple(meta["sizes"])
    if meta["protocol"] == "allomfree":
        return Allomfree(meta["epsilon"], meta["eps_1"], sizes, meta.get("lgrr_variant", "paper"))
    if meta["solution"] == "smp":
        return SMP(meta["protocol"], meta["epsilon"], sizes, r=meta["r"], eps_1=meta["eps_1"])
    return SPL(meta["protocol"], meta["epsilon"], sizes, eps_1=meta["eps_1"])


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
    """Read an oracle reports file; returns ``(meta, arrays)``."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        arrays = {k: z[k] for k in z.files if k != "meta"}
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise ValueError(f"{path!r} is not a {FORMAT} v{VERSION} file")
    return meta, arrays


def cmd_collect(a: argparse.Namespace) -> None:
    from lopub import __version__

    data = _load_data(a)
    if a.protocol == "bloom":
        from lopub.client import encode
        from lopub.spec import CollectionSpec

        reports = encode(data, CollectionSpec.from_domain(data.domain, epsilon=a.epsilon), rng=a.seed)
        reports.save(a.out)
        _emit(reports.summary(), a.json, f"collected {reports.n} Bloom reports -> {a.out}")
        return
    sizes = list(data.domain.sizes)
    meta = {"format": FORMAT, "version": VERSION, "lopub_version": __version__,
            "protocol": a.protocol, "solution": a.solution, "epsilon": a.epsilon,
            "eps_1": a.eps_1, "r": a.r, "attrs": list(data.domain.attrs), "sizes": sizes,
            "labels": [list(data.domain.labels(x)) for x in data.domain.attrs], "n": data.n}
    if a.protocol in LIP:
        mechs = _lip_mechanisms(a, data)
        meta.update(solution="spl", priors=[m.prior.tolist() for m in mechs])
        arrays = {f"reports_{j}": m.perturb(data.codes[:, j], rng=a.seed + j if a.seed is not None
                                             else None) for j, m in enumerate(mechs)}
    else:
        if a.protocol.startswith("l-") or a.protocol == "allomfree":
            if a.eps_1 is None:
                raise ValueError(f"--eps-1 is needed for {a.protocol} (0 < eps_1 < --epsilon)")
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


def estimate_file(path: str, method: str = "clip", lip_method: str = "bayes") -> dict:
    """One-way marginals ``{attr: {label: freq}}`` from any reports file."""
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
        per_attr = tuple(arrays[f"reports_{j}"] for j in range(len(attrs)))
        if meta["protocol"] in LIP:
            eps = meta["epsilon"] / len(attrs)
            mk = {"rr-lip": lambda p: RRLIP(p, eps, on_invalid="lp"),
                  "ue-lip": lambda p: UELIP(p, eps), "lh-lip": lambda p: LHLIP(p, eps)}
            mechs = [mk[meta["protocol"]](p) for p in meta["priors"]]
            raw = [m.estimate(r, lip_method) if meta["protocol"] != "lh-lip" else m.estimate(r)
                   for m, r in zip(mechs, per_attr)]
        else:
            scheme = build_scheme(meta)
            if "attributes" in arrays:
                per_attr = SampledReports(attributes=arrays["attributes"], per_attr=per_attr)
            raw = scheme.estimate(per_attr)
    return {a: dict(zip(lab, postprocess(r, method).freq.tolist()))
            for a, lab, r in zip(attrs, labels, raw)}


def cmd_estimate(a: argparse.Namespace) -> None:
    out = estimate_file(a.reports, a.postprocess, a.lip_method)
    text = "\n".join(f"{attr}:\n" + "\n".join(f"  {lab}: {v:.4f}" for lab, v in freqs.items())
                     for attr, freqs in out.items())
    _emit({"postprocess": a.postprocess, "marginals": out}, a.json, text)


def cmd_compare(a: argparse.Namespace) -> None:
    from lopub.oracles.compare import ADULT_CATEGORICAL, compare, format_table

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
    rows = compare(data.codes, data.domain.sizes, eps, a.protocols.split(","), runs=a.runs,
                   eps1_ratio=a.eps1_ratio, method=a.postprocess, dataset=data, rng=a.seed)
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
    c.add_argument("--solution", choices=("spl", "smp"), default="spl",
                   help="split the budget over attributes or sample r attributes (default spl)")
    c.add_argument("--r", type=int, default=1, help="attributes sampled per user with smp (default 1)")
    c.add_argument("--prior", help="JSON {attribute: [probabilities in label order]} for *-lip")
    c.add_argument("--out", required=True, help="reports file to write (.npz; Parquet for bloom)")
    c.add_argument("--seed", type=int, help="seed for simulation; omitted = OS entropy")
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
    p.add_argument("--postprocess", choices=METHODS, default="clip")
    p.add_argument("--runs", type=int, default=1, help="repetitions averaged (default 1)")
    p.add_argument("--seed", type=int, help="seed; omitted = OS entropy")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_compare)
