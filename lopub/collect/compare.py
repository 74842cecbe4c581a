"""Fair comparison of collection protocols on the one-way marginals of a dataset.

Every protocol gets the same total budget ``epsilon`` per user:

* ``bloom``: LoPub Bloom reports of all attributes, ``epsilon`` for the
  whole record (Eq. 8), one-way marginals by EM.
* ``spl-<oracle>`` / ``smp-<oracle>``: SPL (``epsilon / d`` per attribute)
  or SMP (one sampled attribute at ``epsilon``) with a one-shot oracle.
* ``spl-l-<protocol>``, ``smp-l-<protocol>`` and ``allomfree``:
  longitudinal protocols with ``eps_inf = epsilon`` (the bound over all
  reports) and ``eps_1 = eps1_ratio * epsilon`` for one report; one round is
  simulated.  ``lgrr_variant`` picks the paper's L-GRR (reproduction) or the
  exact one (spends eps_1 fully) for ``*-l-grr`` and ``allomfree``.

The error is ``MSE_avg = (1/d) sum_j (1/k_j) sum_v (f_v - f_hat_v)^2``
after the chosen post-processing (clip-and-renormalize by default, as the
ALLOMFREE paper appears to use).

References
----------
ALLOMFREE paper (Arcolezi et al. 2022), Sec. 6 (MSE_avg, SMP with r = 1);
Ren et al., "LoPub", IEEE TIFS 2018, Eq. 8 and Alg. 1.
"""
from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from lopub._util import check_int, check_open_unit, check_positive, resolve_rng
from lopub.oracles.allomfree import Allomfree
from lopub.oracles.longitudinal import LONGITUDINAL
from lopub.oracles.multidim import SMP, SPL, check_codes, check_lgrr_variant, check_sizes
from lopub.oracles.oneshot import ONESHOT
from lopub.estimate.postprocess import postprocess

DEFAULT_PROTOCOLS = ("bloom", "spl-grr", "spl-sue", "spl-oue", "spl-olh", "spl-blh",
                     "smp-grr", "smp-sue", "smp-oue", "smp-olh", "smp-blh", "smp-l-grr",
                     "smp-l-sue", "smp-l-osue", "smp-l-oue", "allomfree")
ADULT_CATEGORICAL = ("workclass", "education", "marital-status", "occupation",
                     "relationship", "race", "sex", "native-country", "income")


def mse_avg(true: Sequence[np.ndarray], est: Sequence[np.ndarray]) -> float:
    """``(1/d) sum_j (1/k_j) sum_v (f - f_hat)^2``.

    References
    ----------
    ALLOMFREE paper, Sec. 6.1 (MSE_avg).
    """
    if len(true) != len(est):
        raise ValueError(f"true ({len(true)}) and est ({len(est)}) must have the same length")
    return float(np.mean([np.mean((np.asarray(t) - np.asarray(e)) ** 2)
                          for t, e in zip(true, est)]))


def bloom_one_way(reports: Any, max_iter: int = 1000, tol: float = 1e-6) -> list[np.ndarray]:
    """One-way marginals of Bloom reports by EM (corrected likelihood of Alg. 1).

    Uses ``lopub.estimate.Estimator(reports, "em")`` (raw, unprocessed) when
    available, else a direct one-way EM with
    ``log P(s | w) = (m - mism) log(1 - f/2) + mism log(f/2)``, stopping when
    no cell moves by more than ``tol``.

    References
    ----------
    LoPub, Alg. 1; docs/ARCHITECTURE.md, note 1.
    """
    try:
        from lopub.estimate import Estimator
    except ImportError:  # the estimation package is optional here
        Estimator = None  # type: ignore[assignment,misc]
    spec = reports.spec
    if Estimator is not None:
        est = Estimator(reports, "em", postprocess="none", tol=tol, max_iter=max_iter)
        return [np.asarray(est.marginal([a]).values, dtype=float).ravel()
                for a in spec.domain.attrs]
    out = []
    for j, attr in enumerate(spec.domain.attrs):  # loop over attributes, not users
        bloom = spec.bloom[j].astype(np.float32)
        bits = reports.attribute_bits(attr).astype(np.float32)
        mism = bits.sum(1)[:, None] + bloom.sum(1)[None, :] - 2 * bits @ bloom.T
        loglik = (spec.m[j] - mism) * np.log1p(-spec.f / 2) + mism * np.log(spec.f / 2)
        lik = np.exp(loglik - loglik.max(axis=1, keepdims=True))
        p = np.full(bloom.shape[0], 1.0 / bloom.shape[0])
        for _ in range(max_iter):  # EM iterations
            post = lik * p
            new = (post / post.sum(axis=1, keepdims=True)).mean(axis=0)
            done = np.max(np.abs(new - p)) < tol
            p = new
            if done:
                break
        out.append(p)
    return out


def check_protocols(protocols: Any, *, name: str = "protocols") -> tuple[str, ...]:
    """Check protocol names up front: ``bloom``, ``allomfree``, ``spl-<oracle>``
    or ``smp-<oracle>`` with a one-shot or longitudinal oracle (``name``: the parameter
    named in the error, ``--protocols`` on the command line)."""
    if isinstance(protocols, str) or not hasattr(protocols, "__iter__"):
        raise TypeError(f"{name} ({protocols!r}) must be a sequence of names")
    names = tuple(protocols)
    oracles = sorted(ONESHOT) + sorted(LONGITUDINAL)
    valid = {"bloom", "allomfree"} | {f"{kind}-{o}" for kind in ("spl", "smp") for o in oracles}
    bad = [p for p in names if p not in valid]
    if bad or not names:
        raise ValueError(f"{name} ({', '.join(map(repr, bad)) or 'none'}) must be 'bloom', "
                         f"'allomfree', 'spl-<oracle>' or 'smp-<oracle>' with <oracle> in "
                         f"{oracles}")
    return names


def _oracle_scheme(name: str, eps: float, sizes: tuple, eps1_ratio: float,
                   lgrr_variant: str = "paper") -> Any:
    if name == "allomfree":
        return Allomfree(eps, eps1_ratio * eps, sizes, lgrr_variant)
    kind, _, oracle = name.partition("-")
    check_protocols([name])
    eps_1 = eps1_ratio * eps if oracle.startswith("l-") else None
    cls = SPL if kind == "spl" else SMP
    return cls(oracle, eps, sizes, eps_1=eps_1, lgrr_variant=lgrr_variant)


def run_protocol(name: str, codes: np.ndarray, sizes: tuple, epsilon: float, *,
                 rng: np.random.Generator, eps1_ratio: float = 0.6,
                 dataset: Any = None, lgrr_variant: str = "paper") -> list[np.ndarray]:
    """Collect and estimate the one-way marginals (raw) with one protocol."""
    if name == "bloom":
        from lopub.client import encode
        from lopub.reports.spec import CollectionSpec

        if dataset is None:
            raise ValueError("protocol 'bloom' needs dataset (a lopub Dataset)")
        spec = CollectionSpec.from_domain(dataset.domain, epsilon=epsilon)
        return bloom_one_way(encode(dataset, spec, rng=rng))
    scheme = _oracle_scheme(name, epsilon, sizes, eps1_ratio, lgrr_variant)
    return scheme.estimate(scheme.perturb(codes, rng=rng))


#: Most simulated records one comparison may take (runs x records x budgets x protocols).
#: The default protocols simulate about 80,000 records a second on one core (Adult), so
#: this is hours of work; beyond it the request is almost surely a typo.
MAX_SIMULATED_REPORTS = 10**9


def check_work(runs: int, n: int, n_epsilons: int, n_protocols: int, *, name: str = "runs") -> int:
    """``runs`` (an integer >= 1) after checking the comparison's size.

    Raises ``ValueError`` naming ``name`` (the parameter, ``--runs`` on the
    command line) when ``runs x n x n_epsilons x n_protocols`` simulated
    records exceed :data:`MAX_SIMULATED_REPORTS` (a comparison that would
    run for hours or forever).
    """
    runs = check_int(name, runs, 1)
    work = runs * int(n) * max(int(n_epsilons), 1) * max(int(n_protocols), 1)
    if work > MAX_SIMULATED_REPORTS:
        raise ValueError(f"{name} ({runs}) x {n} records x {n_epsilons} epsilon(s) x {n_protocols} "
                         f"protocol(s) = {work:.3g} simulated records; at most "
                         f"{MAX_SIMULATED_REPORTS:.0e} (hours of simulation): use fewer runs or records")
    return runs


#: the words of a setting's error when too few records left an attribute without a report
TOO_FEW_RECORDS = "without a report under"


def compare(codes: Any, sizes: Sequence[int], epsilons: Sequence[float],
            protocols: Sequence[str] = DEFAULT_PROTOCOLS, *, runs: int = 1,
            eps1_ratio: float = 0.6, method: str = "clip", dataset: Any = None,
            lgrr_variant: str = "paper",
            rng: np.random.Generator | int | None = None) -> list[dict]:
    """MSE_avg and wall time of each protocol at each epsilon (mean over ``runs``).

    Unknown protocol names raise ``ValueError`` before anything runs, and so
    does a comparison of more than :data:`MAX_SIMULATED_REPORTS` simulated
    records (:func:`check_work`).
    Returns one dict per (protocol, epsilon) with keys ``protocol``,
    ``epsilon``, ``mse_avg``, ``seconds`` (collection + estimation, per run)
    and ``error`` (``None`` or why the protocol could not run at that
    setting, e.g. L-OUE's feasibility limit).
    """
    protocols = check_protocols(protocols)
    epsilons = [check_positive("epsilons", e) for e in epsilons]
    if not epsilons:
        raise ValueError("epsilons ([]) must hold at least one budget")
    eps1_ratio = check_open_unit("eps1_ratio", eps1_ratio)
    lgrr_variant = check_lgrr_variant(lgrr_variant)
    sizes = check_sizes(sizes)
    codes = check_codes(codes, sizes)
    runs = check_work(runs, codes.shape[0], len(epsilons), len(protocols))
    rng = resolve_rng(rng)
    true = [np.bincount(codes[:, j], minlength=k) / codes.shape[0] for j, k in enumerate(sizes)]
    dom = getattr(dataset, "domain", None)
    attrs = list(dom.attrs) if dom is not None and len(dom.attrs) == len(sizes) else None
    rows = []
    for eps in epsilons:  # loops over settings and runs; each run is vectorized
        for name in protocols:
            mses, secs, error = [], [], None
            for _ in range(runs):
                start = time.perf_counter()
                try:
                    raw = run_protocol(name, codes, sizes, float(eps), rng=rng,
                                       eps1_ratio=eps1_ratio, dataset=dataset,
                                       lgrr_variant=lgrr_variant)
                except ValueError as exc:
                    error = str(exc)
                    break
                empty = [j for j, r in enumerate(raw) if not np.all(np.isfinite(np.asarray(r, dtype=float)))]
                if empty:  # too few records: a sampled attribute got no report (issue 25)
                    names = [attrs[j] for j in empty] if attrs else empty
                    error = (f"{codes.shape[0]} records leave attribute(s) {names[:5]}"
                             + (f" and {len(names) - 5} more" if len(names) > 5 else "")
                             + f" {TOO_FEW_RECORDS} {name}; use more records (--n)")
                    break
                est = [postprocess(r, method).freq for r in raw]
                secs.append(time.perf_counter() - start)
                mses.append(mse_avg(true, est))
            rows.append({"protocol": name, "epsilon": float(eps),
                         "mse_avg": float(np.mean(mses)) if mses else None,
                         "seconds": float(np.mean(secs)) if secs else None, "error": error})
    return rows


def format_table(rows: list[dict]) -> str:
    """Plain-text table: one line per protocol, one column per epsilon; settings
    that could not run show ``error`` and the reason is listed below."""
    eps = sorted({r["epsilon"] for r in rows})
    names = list(dict.fromkeys(r["protocol"] for r in rows))
    cell = {(r["protocol"], r["epsilon"]): r for r in rows}
    head = f"{'protocol':<14}" + "".join(f"{'eps=' + format(e, 'g'):>22}" for e in eps)
    lines = [head, " " * 14 + "".join(f"{'MSE_avg     time[s]':>22}" for _ in eps)]
    for name in names:
        parts = []
        for e in eps:
            r = cell.get((name, e))
            parts.append(f"{'n/a':>22}" if r is None else f"{'error':>22}"
                         if r["mse_avg"] is None else f"{r['mse_avg']:>12.3e}{r['seconds']:>10.3f}")
        lines.append(f"{name:<14}" + "".join(parts))
    lines += [f"error: {r['protocol']} at eps={r['epsilon']:g}: {r['error']}"
              for r in rows if r.get("error")]
    return "\n".join(lines)
