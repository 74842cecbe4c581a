"""Releases compared by the benchmarks: lopub's and the baselines, each scored once.

Every method is ``fn(data, eps, seed) -> dict`` with ``"tvd"`` (mean total
variation distance over all 2-way marginals against the true data) and
optional extras.  ``ROLES`` says which are lopub's releases, LDP baselines
or the (central, not LDP) reference.

The random draws are offset from the seed exactly as in the scripts the
saved figures of ``docs/`` come from (``bench_budgets``): one-attribute
``seed + 200``, pair reports ``seed + 300``, central noise ``seed + 400``,
Bloom ``seed + 100 + h``; lopub's own releases use ``seed`` itself.
"""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

DELTA = 1e-6
BLOOM_HS = (1, 2, 4)
BLOOM_METHODS = ("moment", "em")
#: rounds of CALM consistency + Norm-Sub in the naive pairs baseline
ROUNDS = 10


def fit_model(reports=None, **kw):
    """``lopub.pipeline.steps.fit`` with its warnings silenced; the fitted model."""
    from lopub.pipeline.steps import fit

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit(reports, **kw).model


class Truth:
    """The true data's marginals, each projected once (bn-andes at 10^6 records: 24,753 pairs, ~45 min a pass);
    the runner fills the pairs before it forks its calls, which inherit them."""

    def __init__(self, data) -> None:
        from lopub.data.dataset import Dataset

        self.data, self.domain, self.tables = data, data.domain, {}
        self.columns = Dataset(np.asfortranarray(data.codes), data.domain)  # 3x faster projections than rows

    def marginal(self, attrs):
        key = tuple(attrs)
        if key not in self.tables:
            self.tables[key] = self.columns.project(list(key))
        return self.tables[key]

    def fill(self) -> "Truth":
        """Every pair's table: one matrix product of the one-hot codes where it costs less than a pass
        per pair (lopub.data.pairs: bn-andes's 24,753 pairs), the same tables bit for bit."""
        from lopub.data.pairs import pair_source

        pairs = list(itertools.combinations(self.domain.attrs, 2))
        src = pair_source(self.data, pairs)
        for p in pairs:  # pairs of attributes, not records
            if p not in self.tables:
                self.tables[p] = self.columns.project(list(p)) if src is self.data else src.project(list(p))
        return self


_TRUTH: list = []


def truth(data) -> Truth:
    """The :class:`Truth` of ``data`` (one dataset at a time: another one replaces it)."""
    if not _TRUTH or _TRUTH[0].data is not data:
        _TRUTH[:] = [Truth(data)]
    return _TRUTH[0]


def score(data, model) -> float:
    """Mean 2-way TVD of a model (or dataset) against the true data, exact on the model."""
    from lopub.publish.evaluate import average_tvd

    return average_tvd(truth(data), model, 2)["mean"]


def planned_release(data, eps: float, seed: int, prior=None):
    """``collect(protocol="auto", prior=prior)`` then ``fit``: (model, plan report, reports)."""
    from lopub.collect import collect

    reports, report = collect(data, eps, protocol="auto", rng=seed, prior=prior)
    return fit_model(reports), report, reports


def planned(data, eps: float, seed: int, prior=None) -> dict:
    """lopub's planned release, as a user runs it with the defaults; ``predicted``: the planner's
    prediction of the pick (from the screen's tables after a two-phase collection, or the prior's)."""
    model, report, reports = planned_release(data, eps, seed, prior)
    pilot = next((o.params.get("pilot") for o in report.options if o.protocol == "marginals"), None)
    return {"tvd": score(data, model), "pick": report.recommended,
            "predicted": report.option(report.recommended).predicted_tvd, "naive": per_set_tvd(data, reports),
            **({"pilot_stopped": pilot["stopped"]} if pilot else {})}


def per_set_tvd(data, reports) -> float | None:
    """Mean 2-way TVD of the naive per-set tables of marginal-sampling ``reports`` (issue 24 item 1's
    reference for the model): a pair inside measured sets gets their combined table, any other pair the
    product of its one-way tables; ``None`` for reports of other protocols."""
    from lopub.collect import MarginalReports, measure_marginals

    if not isinstance(reports, MarginalReports):
        return None
    source = measure_marginals(reports)
    one = {a: source.marginal([a]).values for a in data.domain.attrs}
    return tables_tvd(data, {(a, b): source.marginal([a, b]).values if source.covers([a, b])
                             else np.outer(one[a], one[b])
                             for a, b in itertools.combinations(data.domain.attrs, 2)})


def planned_no_shrink(data, eps: float, seed: int) -> dict:
    """The planned collection (same reports as ``planned``) fitted without the shrinkage priors."""
    from lopub.collect import collect

    reports, report = collect(data, eps, protocol="auto", rng=seed)
    return {"tvd": score(data, fit_model(reports, shrink=False)), "pick": report.recommended}


def own_protocol(protocol: str):
    """lopub's protocol ``protocol`` forced (``collect(protocol=...)`` then ``fit``)."""
    def run(data, eps: float, seed: int) -> dict:
        from lopub.collect import collect

        return {"tvd": score(data, fit_model(collect(data, eps, protocol=protocol, rng=seed)[0]))}
    run.__name__ = f"own_{protocol}"
    return run


def bloom_best_h(data, eps: float, seed: int) -> dict:
    """Bloom reports at each h in BLOOM_HS, released by fit with moment and with EM; the best."""
    from lopub.client import encode
    from lopub.collect.planner import bloom_m
    from lopub.reports.spec import CollectionSpec

    per = {}
    for h in BLOOM_HS:
        spec = CollectionSpec.from_domain(data.domain, epsilon=eps, h=h, m=list(bloom_m(data.domain, h)))
        reports = encode(data, spec, rng=seed + 100 + h)
        for method in BLOOM_METHODS:
            per[h, method] = score(data, fit_model(reports, method=method))
    h, method = min(per, key=per.get)
    return {"tvd": per[h, method], "h": h, "method": method,
            "per_h": {f"{k}/{m}": v for (k, m), v in per.items()}}


def one_attribute(data, eps: float, seed: int) -> dict:
    """One attribute per user (uniform), best oracle at the full epsilon, independence release."""
    from lopub.collect import MarginalPlan, collect_records, measure_marginals
    from lopub.pipeline.steps import independence_model

    plan = MarginalPlan(data.domain, [(a,) for a in data.domain.attrs], eps)
    source = measure_marginals(collect_records(data, plan, rng=seed + 200))
    return {"tvd": score(data, independence_model(source, n=data.n))}


def pair_reports(data, eps: float, seed: int):
    """One pair per user over all pairs, best oracle per pair (the pairs baselines' reports)."""
    from lopub.collect import MarginalPlan, collect_records

    plan = MarginalPlan(data.domain, list(itertools.combinations(data.domain.attrs, 2)), eps)
    return collect_records(data, plan, rng=seed + 300)


def pairs_fitted(data, eps: float, seed: int, reports=None) -> dict:
    """All pairs, one per user, released by lopub's fitted model."""
    reports = pair_reports(data, eps, seed) if reports is None else reports
    return {"tvd": score(data, fit_model(reports))}


def consistent_pairs(tables: dict, variances: dict, rounds: int = ROUNDS) -> dict:
    """CALM consistency plus Norm-Sub on pair tables; returns new tables (same keys).

    Parameters
    ----------
    tables : dict (a, b) -> ndarray (|a|, |b|)
        Unbiased pair tables (may hold negative cells); each sums to about 1.
    variances : dict (a, b) -> float
        Each table's cell variance (its mean over cells).
    rounds : int
        Rounds of (consistency for every attribute, then Norm-Sub).
    """
    from lopub.estimate.postprocess import norm_sub

    if rounds < 1:
        raise ValueError(f"rounds ({rounds}) must be >= 1")
    t = {k: np.asarray(v, dtype=float) + (1.0 - float(np.sum(v))) / np.size(v) for k, v in tables.items()}
    attrs = list(dict.fromkeys(a for k in t for a in k))
    for _ in range(rounds):
        for a in attrs:  # attributes, not users
            held = [(k, k.index(a)) for k in t if a in k]
            sums = [t[k].sum(axis=1 - ax) for k, ax in held]
            others = [t[k].shape[1 - ax] for k, ax in held]
            w = np.array([1.0 / (c * max(variances[k], 1e-300)) for (k, _), c in zip(held, others)])
            target = sum(wi * s for wi, s in zip(w, sums)) / w.sum()
            for (k, ax), s, c in zip(held, sums, others):
                shift = (target - s) / c
                t[k] = t[k] + (shift[:, None] if ax == 0 else shift[None, :])
        t = {k: norm_sub(v) for k, v in t.items()}
    return t


def tables_tvd(data, tables: dict) -> float:
    """Mean TVD of pair tables ``{(a, b): ndarray}`` against the true pair marginals."""
    true = truth(data)
    return float(np.mean([0.5 * float(np.abs(v - true.marginal(k).values).sum()) for k, v in tables.items()]))


def plugin_measurements(reports) -> list:
    """The naive baseline's pair tables with the variances it has always had (not lopub's): the
    oracle's variance at each group's own estimate plus the plug-in sampling term ``f (1 - f)
    (1/n_i - 1/N)`` at it.  Such weights lean the consistency step towards rarer values, which on
    sparse pairs offsets Norm-Sub's upward bias of rare cells; at lopub's reference table
    (lopub/collect/server.py) this baseline would be worse (retail100, epsilon 4, seed 0: 0.0265
    instead of 0.0175), so it keeps its own."""
    from lopub.collect.server import _measure_group
    from lopub.estimate.measurement import Measurement

    plan, sizes, n = reports.plan, reports.group_sizes(), reports.n
    out = []
    for i, rep in enumerate(reports.groups):  # subsets, not users
        if sizes[i] > 0:
            m = _measure_group(plan, i, rep, n, "norm-sub")
            f = np.clip(m.values, 0.0, 1.0)
            var = np.clip(m.variance + f * (1 - f) * (1.0 / m.n - 1.0 / n), 0.0, None)
            out.append(Measurement(m.domain, m.values, m.n, m.meta, variance=var, provenance=m.provenance,
                                   raw=m.raw))
    return out


def naive_tvd(data, reports) -> float:
    """Mean 2-way TVD over all pairs of the consistent pair tables against the true data."""
    sizes = reports.group_sizes()
    ms = plugin_measurements(reports)  # fewer users than pairs: only the pairs that got users
    tables = {m.attrs: m.estimate for m in ms}
    variances = {m.attrs: float(m.sigma2) for m in ms}
    for i in np.flatnonzero(sizes == 0):  # a pair no user reported: uniform, weightless in consistency
        k = tuple(reports.plan.subsets[i])
        tables[k] = np.full(reports.plan.domain.project(list(k)).sizes, 1.0 / reports.plan.domain.cells(k))
        variances[k] = 1e6
    return tables_tvd(data, consistent_pairs(tables, variances))


def pairs_naive(data, eps: float, seed: int, reports=None) -> dict:
    """The issue's naive CALM: the pair reports, CALM consistency + Norm-Sub on the pair tables."""
    reports = pair_reports(data, eps, seed) if reports is None else reports
    return {"tvd": naive_tvd(data, reports), "scored_on": "consistent pair tables (no model)"}


def zcdp_rho(eps: float, delta: float = DELTA) -> float:
    """Largest rho with rho + 2 sqrt(rho ln(1/delta)) <= eps (zCDP -> (eps, delta)-DP)."""
    ld = math.log(1.0 / delta)
    return (math.sqrt(ld + eps) - math.sqrt(ld)) ** 2


def central_pairs(data, eps: float, seed: int):
    """Gaussian noise on every pair's count table: (pairs, noisy tables, sigma in counts).

    zCDP with delta = 1e-6; one record changes one cell of each of the P
    tables by 1, so the L2 sensitivity is sqrt(P) and sigma = sqrt(P / (2 rho)).
    """
    rng = np.random.default_rng(seed + 400)
    prs = list(itertools.combinations(data.domain.attrs, 2))
    sigma = math.sqrt(len(prs) / (2.0 * zcdp_rho(eps)))
    raws = []
    for p in prs:  # pairs of attributes, not users
        true = truth(data).marginal(p)
        raws.append((true, (true.values * data.n + rng.normal(0.0, sigma, true.values.shape)) / data.n))
    return prs, raws, sigma


def central(data, eps: float, seed: int) -> dict:
    """Central-DP reference: Gaussian noise on all pair count tables, released by lopub's fitted model."""
    from lopub.collect import MarginalSource
    from lopub.estimate.measurement import Measurement
    from lopub.estimate.postprocess import norm_sub

    _, raws, sigma = central_pairs(data, eps, seed)
    n = data.n
    ms = [Measurement(true.domain, norm_sub(raw), n, {}, variance=(sigma / n) ** 2,
                      provenance={"protocol": "central-gaussian", "postprocess": "norm-sub",
                                  "variance": "sigma^2 / N^2 (Gaussian mechanism)"}, raw=raw)
          for true, raw in raws]
    model = fit_model(estimator=MarginalSource(data.domain, ms, n=n))
    return {"tvd": score(data, model), "sigma_counts": sigma, "delta": DELTA}


def central_tables(data, eps: float, seed: int) -> dict:
    """Central-DP reference scored on its pair tables (CALM consistency + Norm-Sub, no model).

    The same noisy tables as :func:`central`; cheap at any number of attributes.
    """
    prs, raws, sigma = central_pairs(data, eps, seed)
    var = (sigma / data.n) ** 2
    out = consistent_pairs({p: raw for p, (_, raw) in zip(prs, raws)}, {p: var for p in prs})
    return {"tvd": tables_tvd(data, out), "sigma_counts": sigma, "delta": DELTA}


def true_independence(data) -> float:
    """Reference: product of the exact one-way marginals."""
    from lopub.data.marginal import Marginal
    from lopub.publish.evaluate import tvd

    vals, true = [], truth(data)
    for a, b in itertools.combinations(data.domain.attrs, 2):  # pairs of attributes, not users
        pa, pb, ab = true.marginal([a]), true.marginal([b]), true.marginal([a, b])
        vals.append(tvd(ab, Marginal(ab.domain, np.multiply.outer(pa.values, pb.values), ab.n, {})))
    return float(np.mean(vals))


#: records of the public sample the planner is given in ``planned-public``; its data seed
PUBLIC_N, PUBLIC_SEED = 5_000, 1_000
_SOURCE: list = []  # (name, n, data seed) of the dataset of the cell, set by the runner before it forks


def set_source(name: str, n, seed: int) -> None:
    _SOURCE[:] = [(name, n, seed)]


def planned_public(data, eps: float, seed: int) -> dict:
    """``planned`` with a public prior: an independent sample of PUBLIC_N records of the same generated
    source (data seed PUBLIC_SEED + the cell's), coded with the data's domain (``collect(prior=...)``, as
    ``lopub collect --public FILE``); fixed datasets have no independent sample and are refused."""
    from lopub.data.dataset import Dataset
    from pipelines.harness import datasets as ds_mod

    name, _, dseed = _SOURCE[0]
    if not (name.startswith("bn-") or name in ("stress", "latent20", "alarm20", "embedded")):
        raise ValueError(f"{name} is a fixed dataset: it has no independent public sample")
    public = Dataset.from_pandas(ds_mod.load(name, PUBLIC_N, PUBLIC_SEED + dseed).to_pandas(), data.domain)
    return planned(data, eps, seed, prior=public)


#: every method by name, with its role in the tables
METHODS = {
    "planned": planned,
    "planned-no-shrink": planned_no_shrink,
    "planned-public": planned_public,
    "marginals": own_protocol("marginals"),
    "one-attribute-own": own_protocol("one-attribute"),
    "bloom-own": own_protocol("bloom"),
    "one-attribute": one_attribute,
    "pairs-naive": pairs_naive,
    "pairs-fitted": pairs_fitted,
    "bloom-best-h": bloom_best_h,
    "central": central,
    "central-tables": central_tables,
}


def pairs_model(data, eps: float, seed: int) -> dict:
    """All pairs, one per user: the fitted model, its synthetic release and the naive tables, with the fit's
    convergence fields (``fit``'s defaults and warnings)."""
    import time

    from lopub.pipeline.steps import fit
    from lopub.publish.synthesize import sample_codes

    reports = pair_reports(data, eps, seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fit(reports)
    secs = time.perf_counter() - t0
    mf = res.report.model_fit or {}
    return {"tvd": score(data, res.model), "synthetic": score(data, sample_codes(res.model, data.n, rng=seed + 7)),
            "naive": naive_tvd(data, reports), "fit_seconds": round(secs, 2), "converged": mf.get("converged"),
            "chi2": mf.get("chi2"), "dof": mf.get("dof"), "iterations": mf.get("iterations"),
            "regions": mf.get("regions", 0)}


METHODS["pairs-model"] = pairs_model


def planned_pilot(mode: str):
    """``planned`` with the two-phase screen's pilot switched off (``"off"``: ``pilot_share=None``) or told
    to continue without measuring its users (``"continue"``): what the pilot costs where it does not stop
    (docs/BENCHMARKS.md, "The pilot's cost was seed noise"); the plan is patched for this call only."""
    def run(data, eps: float, seed: int) -> dict:
        from unittest import mock

        from lopub.collect.twophase import TwoPhasePlan

        build = TwoPhasePlan.build.__func__
        patch = (mock.patch.object(TwoPhasePlan, "build", classmethod(
                     lambda cls, *a, **k: build(cls, *a, **{**k, "pilot_share": None}))) if mode == "off" else
                 mock.patch.object(TwoPhasePlan, "pilot_stops", lambda self, reports: {
                     "users": self.n_pilot, "stopped": False, "one_way": float("inf"), "screen": 0.0}))
        with patch:
            return planned(data, eps, seed)
    run.__name__ = f"planned_pilot_{mode}"
    return run


METHODS.update({"planned-no-pilot": planned_pilot("off"), "planned-pilot-continues": planned_pilot("continue")})
#: the baselines; central noise is the reference; the other methods are lopub's
BASELINES = ("one-attribute", "pairs-naive", "pairs-fitted", "bloom-best-h")
ROLES = {m: "reference" if m.startswith("central") else "baseline" if m in BASELINES else "lopub" for m in METHODS}
