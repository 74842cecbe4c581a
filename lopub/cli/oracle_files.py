"""Oracle reports files: writing, reading and estimating one-way marginals.

Used by ``lopub collect`` and ``lopub estimate-freq`` (:mod:`lopub.cli.oracles`).

Oracle reports file (``.npz``, written atomically): an uncompressed NumPy
archive with ``meta`` (a JSON string: ``format = "lopub-oracle-reports"``,
``version``, ``lopub_version``, ``protocol``, ``solution``, ``epsilon``,
``eps_1``, ``r``, ``lgrr_variant``, ``attrs``, ``sizes``, ``labels``, ``n``;
for LIP the ``priors`` and, for ``rr-lip``, ``matrices``: the exact channel
``Q[x][y]`` each attribute's clients used, and ``mechanisms``: ``"rr"`` or
``"lp"``), ``attributes`` (sampled attribute indices, SMP/ALLOMFREE) and
``reports_<j>`` (the reports about attribute ``j`` in the oracle's format,
see :mod:`lopub.oracles.oneshot`).  ``--protocol bloom`` writes the
Bloom reports file of :mod:`lopub.reports.bloom` instead.

Version 2 added ``lgrr_variant`` and ``matrices``; version 3 ``checksum`` (checked on
reading, with the arrays against the metadata: :mod:`lopub.cli.oracle_npz`); version 4 stores
the bit reports of unary protocols packed, 8 bits a byte (versions 1-3: one byte per bit; the
reader unpacks, so callers see ``(rows, k)`` bool arrays whatever the version) and the integer
arrays (codes, hashed rows split into ``seeds_<j>`` and ``reports_<j>``, ``attributes``) in the
smallest unsigned dtype of their range (versions 1-3: int64; the reader widens them back).  Version 1 files still
load: they used the paper's L-GRR, and an ``rr-lip`` file without
``matrices`` is estimated only if every prior was valid for RR-LIP (closed
form, so the server rebuilds the clients' channel exactly); an attribute
that needed the LP fallback raises, because its channel cannot be recovered.
"""
from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from lopub.oracles.allomfree import Allomfree
from lopub.oracles.lip import LHLIP, RRLIP, UELIP, ChannelLIP
from lopub.oracles.multidim import SMP, SPL, SampledReports
from lopub.estimate.postprocess import postprocess
from lopub.cli.oracle_npz import load_npz, save_npz

FORMAT, VERSION, READABLE = "lopub-oracle-reports", 4, (1, 2, 3, 4)
ORACLES = ("grr", "sue", "oue", "olh", "blh", "l-grr", "l-sue", "l-osue", "l-oue")
LIP = ("rr-lip", "ue-lip", "lh-lip")
PROTOCOLS = ("bloom",) + ORACLES + ("allomfree",) + LIP


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
    """Write an oracle reports file atomically, with its checksum (:mod:`lopub.cli.oracle_npz`)."""
    save_npz(path, meta, arrays)


def load_reports(path: str) -> tuple[dict, dict]:
    """Read and check an oracle reports file (version 1 to 4); returns ``(meta, arrays)``, bit
    reports unpacked to ``(rows, k)`` bool arrays, integer reports as int64."""
    return load_npz(path, (FORMAT, READABLE))


def _estimate_oracles(meta: dict, arrays: dict, lip_method: str) -> list:
    """Raw estimates per attribute; ``None`` for an attribute without reports."""
    per_attr: Any = tuple(arrays[f"reports_{j}"] for j in range(len(meta["attrs"])))
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


def _refuse_lip_method(path: str, lip_method: str | None, protocol: str) -> None:
    if lip_method is not None and protocol not in ("rr-lip", "ue-lip"):
        raise ValueError(f"--lip-method {lip_method} does not apply to {path!r}: it holds {protocol} "
                         f"reports; it picks the estimator of rr-lip and ue-lip reports only")


def _stderrs(meta: dict, arrays: dict, freqs: list, lip_method: str) -> list:
    """Analytic standard error of each attribute's unbiased estimates (``None`` for an
    attribute without reports, and for LIP's posterior mean: ``--lip-method bayes`` and
    LH-LIP, biased toward the prior, so that their variance does not measure their error).

    The oracle's exact fixed-dataset variance at the post-processed estimate, as in
    :mod:`lopub.oracles.measure`: at ``n_j`` reports plus the sampling term
    ``f (1 - f) (1/n_j - 1/n)`` for SMP and ALLOMFREE.
    """
    d, n = len(meta["attrs"]), meta["n"]
    # the plug-in frequency of the variance is a frequency (--postprocess none keeps negatives)
    freqs = [None if f is None else np.clip(f, 0.0, 1.0) for f in freqs]
    if meta["protocol"] in LIP:
        if meta["protocol"] == "lh-lip" or lip_method != "invert":
            return [None] * d
        out: list = [m.variance(n, f, method="invert")
                     for m, f in zip(lip_server_mechanisms(meta), freqs)]  # attributes
    else:
        oracles = build_scheme(meta).oracles
        sampled = "attributes" in arrays
        n_j = np.bincount(arrays["attributes"].ravel(), minlength=d) if sampled else [n] * d
        out = [None if f is None or nj == 0 else
               np.asarray(o.variance(int(nj), f)) + (f * (1 - f) * (1 / nj - 1 / n) if sampled else 0.0)
               for o, f, nj in zip(oracles, freqs, n_j)]
    return [None if v is None or f is None else np.sqrt(np.clip(v, 0.0, None))
            for v, f in zip(out, freqs)]


def _is_npz(path: str) -> bool:
    """Whether ``path`` is a NumPy archive (oracle or marginal reports), not Bloom reports (a
    Parquet file or a dataset folder); a missing path is named as the other readers name it."""
    if os.path.isdir(path):  # a folder is a Bloom reports dataset
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"PK"
    except FileNotFoundError:
        raise FileNotFoundError(f"reports file {path!r} does not exist") from None


def estimate_file_with_stderr(path: str, method: str = "clip",
                              lip_method: str | None = None) -> tuple[dict, dict]:
    """``(marginals, stderr)``: :func:`estimate_file`'s marginals and, for oracle and
    LIP reports files, the analytic standard error of every estimate
    ``{attr: {label: se}}`` (``None`` for an attribute without one; an empty dict for
    Bloom and marginal-sampling reports)."""
    is_npz = _is_npz(path)
    if is_npz and npz_format(path) == MARGINAL_FORMAT:
        _refuse_lip_method(path, lip_method, "marginal-sampling")
        return _marginal_one_way(path, method, with_stderr=True)
    if not is_npz:
        return estimate_file(path, method, lip_method), {}
    meta, arrays = load_reports(path)
    _refuse_lip_method(path, lip_method, meta["protocol"])
    raw = _estimate_oracles(meta, arrays, lip_method or "bayes")
    freqs = [None if r is None else postprocess(r, method).freq for r in raw]
    se = _stderrs(meta, arrays, freqs, lip_method or "bayes")
    labels = meta["labels"]
    marg = {a: None if f is None else dict(zip(lab, f.tolist()))
            for a, lab, f in zip(meta["attrs"], labels, freqs)}
    return marg, {a: None if e is None else dict(zip(lab, e.tolist()))
                  for a, lab, e in zip(meta["attrs"], labels, se)}


def estimate_file(path: str, method: str = "clip", lip_method: str | None = None) -> dict:
    """One-way marginals ``{attr: {label: freq}}`` from any reports file.

    ``lip_method`` (``"bayes"``, the default, or ``"invert"``) applies to
    ``rr-lip`` and ``ue-lip`` reports only; given for any other file it is
    refused (ValueError naming the option and the file's protocol).

    An attribute that no user reported (possible with SMP/ALLOMFREE) maps
    to ``None`` instead of a distribution, with a ``UserWarning`` naming it.
    """
    is_npz = _is_npz(path)
    if not is_npz:
        _refuse_lip_method(path, lip_method, "bloom")
        from lopub.collect.compare import bloom_one_way
        from lopub.cli._common import load_bloom_reports

        reports = load_bloom_reports(path)
        raw = bloom_one_way(reports)
        attrs, labels = reports.spec.domain.attrs, [reports.spec.domain.labels(x)
                                                   for x in reports.spec.domain.attrs]
    elif npz_format(path) == MARGINAL_FORMAT:
        _refuse_lip_method(path, lip_method, "marginal-sampling")
        return _marginal_one_way(path, method)[0]
    else:
        meta, arrays = load_reports(path)
        _refuse_lip_method(path, lip_method, meta["protocol"])
        attrs, labels = meta["attrs"], meta["labels"]
        raw = _estimate_oracles(meta, arrays, lip_method or "bayes")
    return {a: None if r is None else dict(zip(lab, postprocess(r, method).freq.tolist()))
            for a, lab, r in zip(attrs, labels, raw)}



MARGINAL_FORMAT = "lopub-marginal-reports"


def npz_format(path: str) -> str | None:
    """The ``format`` in the metadata of an ``.npz`` reports file (None when unreadable): its
    ``meta`` entry is UTF-8 bytes (marginal-sampling reports) or a 0-d unicode array (oracle
    reports, whose format this read as None before: their text is no UTF-8 bytes)."""
    from lopub.formats._io import npz_format as read_format

    try:
        return read_format(path)
    except Exception:  # not an archive, damaged: the reader named by the caller says why
        return None


def _marginal_one_way(path: str, method: str, with_stderr: bool = False) -> tuple[dict, dict]:
    """One-way marginals of marginal-sampling (or one-attribute) reports: the measurements the
    model is fitted to, projected on each attribute (inverse-variance combined); with
    ``with_stderr`` also their standard errors (else an empty dict)."""
    from lopub.collect import MarginalReports
    from lopub.collect.server import measure_marginals

    post = method if method in ("norm-sub", "clip", "simplex", "none") else "norm-sub"
    source = measure_marginals(MarginalReports.load(path), postprocess=post)
    dom = source.domain
    tables = {a: source.marginal([a]) for a in dom.attrs}
    marg = {a: dict(zip(dom.labels(a), np.asarray(m.values, dtype=float).tolist()))
            for a, m in tables.items()}
    se = {a: dict(zip(dom.labels(a), np.sqrt(np.asarray(m.variance, dtype=float)).tolist()))
          for a, m in tables.items()} if with_stderr else {}
    return marg, se
