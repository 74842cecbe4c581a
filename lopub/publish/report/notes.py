"""Plain-language text of a release report: the privacy statement and the warnings."""
from __future__ import annotations

import math
from typing import Any

from lopub.data.domain import INFERRED, PUBLIC
from lopub.model.pgm.fit import why_not_converged
from lopub.reports.shuffle import meaningful, shuffle_epsilon

HIGH_EPSILON = 10.0
#: per-record epsilon above which one report is called a weak guarantee (odds factor e^3 = 20)
WEAK_EPSILON = 3.0
SMALL_N = 1000
MIN_REPORTS_PER_CELL = 5.0
CALIBRATION_AVD_WARN = 0.05
#: delta of the central guarantee that shuffling the reports adds (Feldman, McMillan, Talwar 2021)
SHUFFLE_DELTA = 1e-6


def privacy_statement(collection: dict[str, Any] | None, *, real_shown: bool, n: int | None = None,
                      domain: Any = None, screened: int = 0) -> list[str]:
    """Paragraphs saying what privacy the release has, from the model's collection parameters and
    the provenance of its ``domain`` (:data:`lopub.data.domain.INFERRED`: computed from the records);
    ``screened``: users of a screen that chose the plan, whose reports are not part of the release."""
    who = "Every user behind the release" if screened > 0 else "Every user"
    if collection is None:
        out = ["No collection parameters are recorded in this model: it was not fitted from "
               "locally private reports (for example, it was fitted from the exact marginals of "
               "the records). It carries NO differential privacy guarantee; neither it nor data "
               "sampled from it may be published as private."]
    elif collection.get("protocol") == "marginals":
        eps = float(collection["epsilon_per_record"])
        out = [f"{who} was assigned one of {len(collection['subsets'])} public attribute sets "
               f"(marginal sampling) and reported only that set's joint value, randomized by a "
               f"frequency oracle ({', '.join(sorted(set(collection['oracles'])))}) at the whole "
               f"budget: epsilon-local differential privacy with epsilon = {eps:.3g} per record. "
               f"Whatever anyone does with the reports, the probability of any report changes by at "
               f"most a factor e^epsilon = {_exp(eps)} when one person's record is replaced by any "
               f"other. The model and the synthetic data are computed from the reports alone, so they "
               f"carry the same guarantee (post-processing).", epsilon_meaning(eps, bloom=False)]
    else:
        eps = float(collection["epsilon_per_record"])
        out = [f"{who} sent their record as a LoPub report: each attribute is hashed into "
               f"a Bloom filter of m bits by h hash functions and every bit is kept with probability "
               f"1 - f, otherwise replaced by a fair coin (f = {collection['f']:g}). This is "
               f"epsilon-local differential privacy with epsilon = 2 h ln((2 - f) / f) per attribute, "
               f"summed over the attributes: epsilon = {eps:.3g} per record. Whatever anyone does "
               f"with the reports, the probability of any report changes by at most a factor "
               f"e^epsilon = {_exp(eps)} when one person's record is replaced by any other. The model "
               f"and the synthetic data are computed from the reports alone, so they carry the same "
               f"guarantee (post-processing); nothing else about a person is protected by it.",
               epsilon_meaning(eps)]
    if collection is not None and screened > 0:
        out.insert(1, f"The {screened:,} users of the screen that chose the plan are not among those "
                      f"reports: each of them reported once under the screen's own attribute sets "
                      f"instead (one set's joint value, randomized by a frequency oracle at the same "
                      f"per-record epsilon); their reports chose the plan and are not part of the release.")
    shuffled = shuffle_note(collection, n)
    if shuffled:
        out.append(shuffled)
    out.append(domain_statement(domain))
    if real_shown:
        out.append("This report also shows exact statistics of the real data (its bars, mutual "
                   "information, distances and scores). Those are NOT protected: the report is for "
                   "the data owner's evaluation and must not be published with the release.")
    return out


def domain_statement(domain: Any) -> str:
    """What the privacy guarantee assumes of the domain, by its recorded provenance."""
    provenance = getattr(domain, "provenance", None)
    if provenance == INFERRED:
        return ("The domain (attributes, categories, bins) was inferred from the private records "
                f"(provenance: {INFERRED}): its categories and bin edges reveal them (who is in the "
                "data, rare values, quantiles) and no privacy guarantee covers them. Publish the release "
                "only with a domain written from public knowledge (a data dictionary, declared bounds "
                "or edges), collected and fitted again under it.")
    if provenance == PUBLIC:
        return ("The domain (attributes, categories, bins) is public (provenance: public): it comes "
                "from public knowledge, not from the private records.")
    return ("The domain (attributes, categories, bins) is public: it is assumed to come from "
            "public knowledge, not from the private records.")


def shuffle_note(collection: dict[str, Any] | None, n: int | None, delta: float = SHUFFLE_DELTA) -> str | None:
    """What amplification by shuffling adds for ``n`` shuffled reports (None when it does not apply).

    References
    ----------
    Feldman, McMillan, Talwar, "Hiding among the clones", FOCS 2021 (numerical bound).
    """
    if collection is None or not isinstance(n, int) or isinstance(n, bool) or n < 2:
        return None
    eps0 = float(collection["epsilon_per_record"])
    try:
        central = shuffle_epsilon(n, eps0, delta)
    except ValueError:  # outside the bound's range (e.g. epsilon too large for n)
        return None
    if not meaningful(central, eps0):
        return (f"Shuffling these {n:,} reports before analysis (as lopub serve-export does) gives no "
                f"meaningful amplification here: the central bound of Feldman, McMillan and Talwar (2021) "
                f"at delta = {delta:g} is epsilon = {central:.3g}, not below the local epsilon = {eps0:.3g} "
                f"(too few reports for this epsilon). The guarantee to rely on is the local one.")
    return (f"If the {n:,} reports were shuffled before analysis, stripped of who sent them (as "
            f"lopub serve-export does), amplification by shuffling also bounds what the reports "
            f"reveal to the collector: central ({central:.3g}, {delta:g})-differential privacy "
            f"(Feldman, McMillan, Talwar 2021), beside the local epsilon = {eps0:.3g}. It assumes "
            f"every user sent exactly one report and the shuffler was trusted.")


def epsilon_meaning(eps: float, *, bloom: bool = True) -> str:
    """One sentence on what a per-record epsilon means in practice (``bloom``: LoPub Bloom reports,
    whose epsilon f and h set; else a frequency oracle run at the whole budget)."""
    if eps > HIGH_EPSILON:
        lower = ("raise f or use fewer hash functions h to lower epsilon" if bloom else
                 "collect again with a smaller per-record epsilon (lopub collect --epsilon)")
        return (f"A per-record epsilon above {HIGH_EPSILON:g} (here {eps:.3g}, e^epsilon = "
                f"{_exp(eps)}) is a nominal guarantee only: a report may be more than e^10 = 22,026 "
                f"times more likely under a person's true record than under another, so an observer can "
                f"learn a person's attribute values almost exactly. Treat this release as offering "
                f"no meaningful protection; {lower}.")
    if eps > WEAK_EPSILON:  # e^3 = 20: a report can multiply the odds about a person twentyfold or more
        return (f"A per-record epsilon of {eps:.3g} bounds what an observer learns about one "
                f"person by a factor of {_exp(eps)} in odds: a weak guarantee for one report, "
                f"though within what deployed systems use (about 1 to 8); a smaller epsilon protects more.")
    if eps > 1.0:
        return (f"A per-record epsilon of {eps:.3g} bounds what an observer learns about one "
                f"person by a factor of {_exp(eps)} in odds: a moderate guarantee.")
    return (f"A per-record epsilon of {eps:.3g} (at most 1) is a strong guarantee: no report changes "
            f"an observer's odds about a person by more than a factor of {_exp(eps)}.")


def release_warnings(model: Any, *, synthetic_n: int | None, real_n: int | None) -> list[str]:
    """Warnings a publisher should read: dropped edges, high epsilon, small numbers, disagreements."""
    out = _dropped_edge_warnings(model)
    if getattr(model.domain, "provenance", None) == INFERRED:
        out.append("Private domain: the categories and bin edges were inferred from the private records "
                   "and reveal them; see the privacy statement.")
    coll = collection_of(model)
    if coll is None:
        out.append("No privacy guarantee: the model was not fitted from locally private reports.")
    elif float(coll["epsilon_per_record"]) > HIGH_EPSILON:
        out.append(f"High epsilon: {float(coll['epsilon_per_record']):.3g} per record (above "
                   f"{HIGH_EPSILON:g}); see the privacy statement.")
    n = model.n
    if n is None:
        out.append("The number of reports behind the model is unknown.")
    else:
        if n < SMALL_N:
            out.append(f"Only {n:,} reports: every estimate is noisy; expect large errors.")
        for c in model.tree.cliques:
            cells = model.domain.cells(list(c))
            if n / cells < MIN_REPORTS_PER_CELL:
                out.append(f"Small groups: clique ({', '.join(c)}) has {cells:,} cells for {n:,} reports "
                           f"({n / cells:.2g} per cell, under {MIN_REPORTS_PER_CELL:g}); its rare "
                           f"combinations are estimated from very few reports.")
    avd = model.meta.get("calibration_avd") or []
    if avd and max(avd) > CALIBRATION_AVD_WARN:
        out.append(f"Clique estimates disagreed on shared attributes (calibration AVD up to "
                   f"{max(avd):.3g}); the model reconciled them, but the estimates are noisy.")
    for name, size in (("synthetic", synthetic_n), ("real", real_n)):
        if size is not None and size < SMALL_N:
            out.append(f"The {name} data has only {size:,} rows: its own sampling noise inflates "
                       f"the distances and lowers the scores.")
    return out


def not_converged(mf: dict[str, Any], verdict: Any = None, *, python: bool = False) -> str:
    """The model fit's state when not converged, consistent with why it stopped
    (:func:`lopub.model.pgm.fit.why_not_converged`).  With the fit's ``verdict`` (its dict) and
    a convergence finding that is only a note (the model already fits its measurements within
    their noise, so the fit warns of nothing), it says so instead of alarming.  ``python``: the
    advice to raise max_iter also gives the Python call (the report's; the CLI's names its flag)."""
    findings = verdict.get("findings") if isinstance(verdict, dict) else None
    if any(isinstance(f, dict) and f.get("check") == "convergence" and f.get("severity") == "info"
           for f in findings or ()):
        return (f"not converged ({why_not_converged(mf.get('stop'), mf.get('gap'))}; harmless: it "
                "already fits its measurements within their noise)")
    advice = "; raise max_iter: lopub fit --max-iter" if mf.get("stop") == "max_iter" else ""
    if advice and python:  # the report is read by Python users too; the CLI's line names its flag
        advice += " N, in Python fit(..., fit_options={'max_iter': N})"
    return f"NOT converged ({why_not_converged(mf.get('stop'), mf.get('gap'))}{advice})"


def collection_of(model: Any) -> dict[str, Any] | None:
    """``model.meta["fit"]["collection"]``: f, h, m, epsilon of the reports fitted (None if unknown)."""
    fit = model.meta.get("fit")
    coll = fit.get("collection") if isinstance(fit, dict) else None
    return coll if isinstance(coll, dict) else None


def _dropped_edge_warnings(model: Any) -> list[str]:
    dg = model.graph
    if dg is not None:
        dropped = [tuple(e) for e in dg.dropped]
    else:
        fit = model.meta.get("fit") if isinstance(model.meta.get("fit"), dict) else {}
        dropped = [tuple(e) for e in (fit.get("graph") or {}).get("dropped_for_budget", [])]
    budget = (model.meta.get("fit") or {}).get("clique_budget") if isinstance(model.meta.get("fit"), dict) else None
    within = f" of {budget:,} cells" if isinstance(budget, int) else ""
    out = []
    for a, b in dropped:
        mi = _mi(dg, a, b)
        out.append(f"Edge {a} - {b}{mi} was dropped to keep cliques within the budget{within}: the "
                   f"model and the synthetic data do not hold this dependency.")
    return out


def _mi(dg: Any, a: str, b: str) -> str:
    if dg is None:
        return ""
    i, j = dg.domain.index(a), dg.domain.index(b)
    m, t = dg.mi[i, j], dg.thresholds[i, j]
    return "" if math.isnan(m) else f" (MI {m:.3g} nats, threshold {t:.3g})"


def _exp(eps: float) -> str:
    if eps > 700:
        return f"10^{eps / math.log(10):.0f}"
    v = math.exp(eps)
    return f"{v:.3g}" if v < 1e6 else f"{v:.2e}"
