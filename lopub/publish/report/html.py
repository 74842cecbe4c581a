"""One self-contained HTML release report: privacy, parameters, pictures, scores, warnings.

Sections (``<section id=...>``), results first, parameters and long tables
after them (long tables collapsed in ``<details>``):

``verdict``
    first: good / usable with caveats / not usable and the reasons
    (:mod:`lopub.publish.report.verdict_block`);
``summary``, ``warnings``, ``privacy``
    always;
``scores`` (real data only)
    SDMetrics' Column Shapes and Column Pair Trends (all pairs and pairs with
    real association above 0.3), lopub's all-pairs mean 2-way TVD and the
    baseline "independence of the model's one-way marginals" (see
    :mod:`lopub.publish.report.scores`; the verdict's baseline is the
    independence of the *true* one-way marginals);
``distributions``
    per attribute, bars of the model's marginal and of the synthetic and real
    data when given;
``pair-tvd`` (real data only)
    heatmaps of pairwise TVD of the release and of that baseline;
``mutual-information``
    the MI the model was built on (estimated from the reports), next to the
    real data's MI when given;
``structure``
    dependency graph and junction tree;
``model``, ``protocol``
    always: the fit's parameters and cliques (calibration AVD for release
    "cliques", the model fit's loss for "pgm"), the collection parameters
    (``protocol`` says so when none are stored);
``pairs`` (real data only)
    a per-pair table, worst first;
``absent``
    without real data: which sections need it.

Pictures are PNG (matplotlib, Agg) embedded as ``data:`` URIs; the page has
no script and no external resource.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from lopub._version import __version__
from lopub.data.dataset import Dataset
from lopub.dependency.cache import query_source
from lopub.io import atomic_write_text
from lopub.publish.report import figures
from lopub.publish.report.data import as_dataset, mi_matrix, model_columns, unmeasured_mask
from lopub.publish.report.notes import collection_of, not_converged, privacy_statement, release_warnings
from lopub.publish.report.scores import SDMETRICS_ASSOCIATION_THRESHOLD, pair_matrix, quality_scores
from lopub.publish.report import verdict_block
from lopub.publish.report.markup import (CSS, esc, fmt_count, fmt_float, html_details, html_img, html_section,
                                         html_table)

MAX_PAIR_ROWS = 300
#: tables with more rows than this are collapsed (``<details>``)
LONG_TABLE = 20
#: the scores' baseline, named for its one-way tables (the verdict's uses the true ones)
BASELINE = "Independence of the model's one-way marginals"



@dataclass
class _Inputs:
    model: Any
    synthetic: Dataset | None
    real: Dataset | None
    scores: dict[str, Any] | None
    left_out: tuple[str, ...] = ()

    @property
    def real_scores(self) -> dict[str, Any]:
        """The scores (computed with real data; the sections that read them need it)."""
        if self.scores is None:
            raise ValueError("the report has no real data, hence no scores")
        return self.scores

    @property
    def release(self) -> Any:  # the synthetic data, else the model's exact marginals
        return self.synthetic if self.synthetic is not None else self.model

    @property
    def release_name(self) -> str:
        return "synthetic data" if self.synthetic is not None else "model (exact marginals)"


def build_report(model: Any, synthetic: Any = None, real: Any = None, *, title: str | None = None) -> str:
    """The HTML release report of ``model`` (and of its synthetic release, against real data).

    Parameters
    ----------
    model : Model
        The fitted model (its ``meta['fit']['collection']`` gives the privacy
        parameters).
    synthetic, real : pandas.DataFrame or Dataset, optional
        Records over the model's domain.  Without ``synthetic`` the model's
        exact marginals stand in for the release; without ``real`` the
        real-data sections are left out (and the page says so).  Columns of
        ``real`` the model does not hold (identifiers ``fit`` dropped, say)
        are left out when all the model's columns are there; the summary
        names them.
    title : str, optional

    Returns
    -------
    str
        A complete, self-contained HTML document.

    Raises
    ------
    TypeError
        ``model`` is not a Model, or an input is not a DataFrame/Dataset.
    DomainError
        (a ``ValueError``) an input has a column or value outside the model's
        domain; the message names the input, the column and the value.
    """
    from lopub.model.graphical import Model

    if not isinstance(model, Model):
        raise TypeError(f"model ({type(model).__name__}) must be a lopub Model")
    syn = None if synthetic is None else as_dataset(synthetic, model.domain, "synthetic")
    real, left_out = (None, []) if real is None else model_columns(real, model.domain, "real")
    rl = None if real is None else as_dataset(real, model.domain, "real")
    ctx = _Inputs(model, syn, rl, None, tuple(left_out))
    if rl is not None:
        ctx.scores = quality_scores(model, rl, ctx.release)
    title = title or "lopub release report"
    verdict = verdict_block.report_verdict(model, ctx.release, rl)
    body = [f"<h1>{esc(title)}</h1>", verdict_block.verdict_section(verdict, real_given=rl is not None),
            _summary(ctx), _warnings(ctx), _privacy(ctx)]
    if rl is not None:  # results first; parameters and long tables after them
        body.append(_scores(ctx))
    body += [_distributions(ctx)]
    if rl is not None:
        body.append(_pair_tvd(ctx))
    body += [_mutual_information(ctx), _structure(ctx), _model_section(ctx), _protocol(ctx)]
    body.append(_pairs(ctx) if rl is not None else _absent())
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<meta name=\"generator\" content=\"lopub {__version__}\">\n<title>{esc(title)}</title>\n"
            f"<style>{CSS}{verdict_block.CSS}</style>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n")


def write_report(path: str | os.PathLike, model: Any, synthetic: Any = None, real: Any = None, *,
                 title: str | None = None) -> None:
    """Write :func:`build_report` to ``path`` atomically (UTF-8)."""
    atomic_write_text(path, build_report(model, synthetic, real, title=title))


# sections ------------------------------------------------------------------
def _summary(ctx: _Inputs) -> str:
    m = ctx.model
    s = m.summary()
    users = m.users if isinstance(m.n, int) and isinstance(m.users, int) and m.users > m.n else None
    reports = fmt_count(m.n) + ("" if users is None else f" of {users:,} users (the {users - m.n:,} reports of "
                                                  "the screen that chose the plan are not part of the release)")
    rows = [("Attributes", s["attributes"]), ("Reports behind the model", reports),
            ("Cliques", s["cliques"]), ("Largest clique (cells)", f"{s['max_clique_cells']:,}"),
            ("Synthetic records", fmt_count(None if ctx.synthetic is None else ctx.synthetic.n, "not given")),
            ("Real records", fmt_count(None if ctx.real is None else ctx.real.n, "not given"))]
    coll = collection_of(m)
    rows.insert(1, ("Epsilon per record", "none recorded (no privacy guarantee)" if coll is None
                    else f"{float(coll['epsilon_per_record']):.4g}"))
    if ctx.scores is not None:
        r = ctx.scores["release"]
        none = (f"n/a: no pair's real Cramer's V is above {SDMETRICS_ASSOCIATION_THRESHOLD:g}"
                if not r["associated_pairs"] else None)
        rows += [("Column Shapes (SDMetrics)", fmt_float(r["column_shapes"])),
                 ("Column Pair Trends, associated pairs (SDMetrics)", none or fmt_float(r["column_pair_trends_associated"])),
                 ("Mean 2-way TVD, all pairs (lopub)", fmt_float(r["mean_pair_tvd"]))]
    note = "" if not ctx.left_out else (
        f"<p class=\"note\">Real data: {len(ctx.left_out)} column(s) the model does not hold were left "
        f"out of every comparison: {esc(', '.join(ctx.left_out))}.</p>")
    return html_section("summary", "Summary", html_table(["", ""], rows, header=False) + note)


def _warnings(ctx: _Inputs) -> str:
    ws = release_warnings(ctx.model, synthetic_n=None if ctx.synthetic is None else ctx.synthetic.n,
                          real_n=None if ctx.real is None else ctx.real.n)
    if not ws:
        return html_section("warnings", "Warnings", "<p>No warnings beyond the verdict above.</p>")
    danger = ('High epsilon', 'No privacy', 'Private domain')
    items = "".join(f"<div class=\"warn{' danger' if w.startswith(danger) else ''}\">"
                    f"{esc(w)}</div>" for w in ws)
    return html_section("warnings", f"Warnings ({len(ws)})", items)


def _privacy(ctx: _Inputs) -> str:
    m = ctx.model
    n = m.n if isinstance(m.n, int) else None
    screened = m.users - n if n is not None and isinstance(m.users, int) and m.users > n else 0
    paras = privacy_statement(collection_of(m), real_shown=ctx.real is not None, n=n, domain=m.domain,
                              screened=screened)
    return html_section("privacy", "Privacy statement", "".join(f"<p>{esc(p)}</p>" for p in paras))


def _protocol(ctx: _Inputs) -> str:
    coll, dom = collection_of(ctx.model), ctx.model.domain
    if coll is None:
        return html_section("protocol", "Protocol and parameters",
                        "<p>No collection parameters are stored in this model.</p>")
    if coll.get("protocol") == "marginals":
        head = html_table(["", ""], [("Protocol", "marginal sampling: one attribute set per user, a frequency oracle"),
                                 ("Epsilon per record", f"{float(coll['epsilon_per_record']):.4g}"),
                                 ("Plan id", coll.get("plan_id", ""))], header=False)
        sets = html_table(["Attribute set", "Oracle"], [(", ".join(s), o) for s, o in
                                                    zip(coll["subsets"], coll["oracles"])])
        return html_section("protocol", "Protocol and parameters",
                        head + html_details(f"{len(coll['subsets'])} attribute sets and their oracles", sets))
    rows = [(a, dom.size(a), coll["h"].get(a), coll["m"].get(a), fmt_float(coll["epsilon_per_attribute"].get(a), 4))
            for a in dom.attrs]
    head = html_table(["", ""], [("Protocol", "LoPub randomized Bloom-filter reports"),
                             ("f (bit-flip probability)", f"{coll['f']:g}"),
                             ("Bits per report", f"{coll['bits_per_report']:,}"),
                             ("Epsilon per record (sum over attributes)",
                              f"{float(coll['epsilon_per_record']):.4g}")], header=False)
    per = html_table(["Attribute", "Categories", "h (hash functions)", "m (bits)", "Epsilon"], rows)
    return html_section("protocol", "Protocol and parameters",
                    head + html_details(f"Bloom parameters of the {len(rows)} attributes", per))


def _model_section(ctx: _Inputs) -> str:
    """Model parameters and cliques.

    Release "cliques" calibrates separately estimated clique joints: the
    calibration AVD per clique says how much the estimates disagreed.  The
    fitted-model release ("pgm") fits one model whose marginals agree by
    construction, so its calibration changes nothing (AVD 0): the model
    fit's loss, iterations and convergence are shown instead.
    """
    m = ctx.model
    fit = m.meta.get("fit") if isinstance(m.meta.get("fit"), dict) else {}
    rows = [("Estimator", fit.get("method", "unknown")), ("Release", fit.get("release", "unknown")),
            ("Structure rule", fit.get("structure", "unknown")),
            ("phi (dependency degree)", fit.get("phi", "unknown")),
            ("Clique budget (cells)", fit.get("clique_budget", "unknown")),
            ("Dependency-graph edges", "unknown" if m.graph is None else len(m.graph.edges)),
            ("Independent components", len(m.tree.roots))]
    mf = fit.get("model_fit") if isinstance(fit.get("model_fit"), dict) else None
    if mf is not None:
        state = "converged" if mf.get("converged") else not_converged(mf, fit.get("verdict"), python=True)
        rows.append(("Model fit", f"loss {fmt_float(mf.get('loss'), 4)}, {mf.get('iterations')} iterations, {state}"))
    avd = m.meta.get("calibration_avd") or [None] * len(m.cliques)
    calibrated = mf is None  # separately estimated cliques: the AVD measures their disagreement
    head = ["Clique", "Attributes", "Cells", "Separator", "Reports per cell"] + (
        ["Calibration AVD"] if calibrated else [])
    cl = [(f"C{k}", ", ".join(m.tree.cliques[i]), f"{m.domain.cells(list(m.tree.cliques[i])):,}",
           ", ".join(m.tree.separator(i)) or "(root)",
           "" if m.n is None else f"{m.n / m.domain.cells(list(m.tree.cliques[i])):.3g}")
          + ((fmt_float(avd[i], 4),) if calibrated else ()) for k, i in enumerate(m.tree.order)]
    note = "" if calibrated else (
        "<p class=\"note\">The model was fitted to all measurements at once, so its clique marginals "
        "agree by construction (no calibration AVD to show); the model fit's loss is above.</p>")
    return html_section("model", "Model", html_table(["", ""], rows, header=False) + note
                    + html_details(f"{len(cl)} cliques", html_table(head, cl)))


def _scores(ctx: _Inputs) -> str:
    s, th = ctx.real_scores, SDMETRICS_ASSOCIATION_THRESHOLD
    r, b = s["release"], s["independence"]
    rows = [("Column Shapes", "SDMetrics: mean over columns of 1 - TVD", r["column_shapes"], b["column_shapes"]),
            ("Column Pair Trends, all pairs", "SDMetrics: mean over pairs of 1 - TVD of the contingency tables",
             r["column_pair_trends"], b["column_pair_trends"]),
            (f"Column Pair Trends, associated pairs ({r['associated_pairs']} of {r['pairs_total']})",
             f"SDMetrics QualityReport: only pairs whose real Cramer's V > {th:g}",
             r["column_pair_trends_associated"], b["column_pair_trends_associated"]),
            ("Overall", "SDMetrics QualityReport: mean of Column Shapes and the associated-pairs Column Pair Trends"
             + ("" if r["associated_pairs"] else " (no associated pair: Column Shapes alone)"),
             r["overall"], b["overall"]),
            ("Mean 2-way TVD, all pairs", "lopub evaluate (lower is better)", r["mean_pair_tvd"], b["mean_pair_tvd"]),
            ("Max 2-way TVD", "worst pair (lower is better)", r["max_pair_tvd"], b["max_pair_tvd"])]
    table = html_table(["Score", "Definition", f"Release: {ctx.release_name}", BASELINE],
                   [(a, d, fmt_float(x), fmt_float(y)) for a, d, x, y in rows])
    note = ("<p class=\"note\">Scores are in [0, 1], higher is better; TVD = 1/2 sum |real - release| "
            "over the cells. The independence of the model's one-way marginals is the release built "
            "from the model's one-way marginals only (estimated from the noisy reports; every pair "
            "independent), computed exactly. A release that does not beat it on the pair scores has "
            "learned no dependency. The verdict's baseline is another: the independence of the true "
            "one-way marginals (no noise). SDMetrics' thresholded score leaves out "
            "pairs with little real association, where independence is already right.</p>")
    cols = html_table(["Attribute", "1 - TVD (release)", "1 - TVD (model one-way)"],
                  [(a, fmt_float(r["per_column"][a]), fmt_float(b["per_column"][a])) for a in s["attrs"]])
    if len(s["attrs"]) > LONG_TABLE:
        cols = html_details(f"Column Shapes per attribute ({len(s['attrs'])} attributes)", cols)
    return html_section("scores", "Scores against the real data", table + note + cols)


def _distributions(ctx: _Inputs) -> str:
    imgs = []
    for a in ctx.model.domain.attrs:
        series = {"model": query_source(ctx.model, [a]).values}
        if ctx.synthetic is not None:
            series["synthetic"] = ctx.synthetic.project([a]).values
        if ctx.real is not None:
            series["real"] = ctx.real.project([a]).values
        imgs.append(html_img(figures.bars(a, ctx.model.domain.labels(a), series),
                         f"distribution of {a}: " + ", ".join(series)))
    intro = ("Per attribute: the model's marginal" + (", the synthetic data" if ctx.synthetic is not None else "")
             + (" and the real data" if ctx.real is not None else "") + ".")
    return html_section("distributions", "Per-attribute distributions",
                    f"<p>{esc(intro)}</p><div class=\"grid\">{''.join(imgs)}</div>")


def _pair_tvd(ctx: _Inputs) -> str:
    s = ctx.real_scores
    attrs = s["attrs"]
    one = {a: 1.0 - v for a, v in s["release"]["per_column"].items()}
    one_b = {a: 1.0 - v for a, v in s["independence"]["per_column"].items()}
    panels = {f"{ctx.release_name} vs real": pair_matrix(s["pairs"], attrs, "tvd_release", one),
              "independence of the model's one-way vs real": pair_matrix(s["pairs"], attrs, "tvd_independence",
                                                                         one_b)}
    pic = figures.heatmaps(panels, attrs, label="TVD (0 = identical)", cmap="magma_r")
    return html_section("pair-tvd", "Pairwise TVD against the real data",
                    "<p>TVD of every 2-way table (diagonal: one-way TVD), release and independence "
                    "of the model's one-way marginals on one colour scale.</p>" + html_img(pic, "pairwise TVD heatmaps"))


def _mutual_information(ctx: _Inputs) -> str:
    attrs = list(ctx.model.domain.attrs)
    if ctx.model.graph is not None:
        est = np.array(ctx.model.graph.mi, dtype=float)
        label = "estimated from the reports (the graph's MI)"
    else:
        est = mi_matrix(ctx.model, attrs)
        label = "of the model"
    np.fill_diagonal(est, np.nan)
    never = unmeasured_mask(ctx.model, attrs) if ctx.model.graph is not None else None
    if never is not None and never.any():  # derived as independent, not estimated: grey, not 0
        est[never] = np.nan
    panels = {f"MI {label}": est} if np.isfinite(est).any() else {}  # an all-grey panel shows nothing
    if ctx.real is not None:
        panels["MI of the real data"] = pair_matrix(ctx.real_scores["pairs"], attrs, "real_mi")
    unmeasured = int(never.sum()) // 2 if never is not None else 0
    if not np.isfinite(est).any():
        text = (f"No MI {label} is shown: the collection measured no pair of attributes"
                + (f" (the model takes all {unmeasured} pairs as independent)" if unmeasured else "") + "."
                + (" Below, the real data's MI in nats (grey: not computed)." if panels else ""))
    else:
        text = ("Pairwise mutual information in nats (grey: not computed"
                + (f"; in the MI estimated from the reports, also the {unmeasured} pairs the collection "
                   "never measured, which the model takes as independent" if unmeasured else "") + ")."
                + _noise_note(ctx.model, est, attrs))
    text = f"<p>{esc(text)}</p>"
    pic = html_img(figures.heatmaps(panels, attrs, label="mutual information (nats)"),
               "mutual information heatmaps") if panels else ""
    return html_section("mutual-information", "Mutual information", text + pic)


def _noise_note(model: Any, est: np.ndarray, attrs: list[str]) -> str:
    """Why the MI estimated from noisy reports can be large where the graph has no edge."""
    dg = model.graph
    if dg is None or not dg.tests:
        return ""
    where = {a: i for i, a in enumerate(attrs)}
    best: tuple[float, str, str] | None = None
    for key, test in dg.tests.items():
        a, b = sorted(key, key=where.__getitem__)
        v = est[where[a], where[b]]
        if test.get("reason") == "not significant" and np.isfinite(v) and (best is None or v > best[0]):
            best = (float(v), a, b)
    if best is None:
        return ""
    return (f" MI estimated from noisy reports is inflated by their noise, and the more so the more "
            f"categories a pair has: the graph's edges come from a test of each pair against its own noise "
            f"(structure rule {dg.structure}), not from this picture. The largest estimated MI among the "
            f"pairs that test found within their noise is {best[0]:.3g} nats ({best[1]}, {best[2]}).")


def _structure(ctx: _Inputs) -> str:
    return html_section("structure", "Dependency graph and junction tree",
                    html_img(figures.structure(ctx.model), "dependency graph and junction tree"))


def _pairs(ctx: _Inputs) -> str:
    pairs = sorted(ctx.real_scores["pairs"], key=lambda p: -p["tvd_release"])
    rows = [(p["a"], p["b"], fmt_float(p["real_association"]), "yes" if p["counted"] else "no", fmt_float(p["real_mi"], 4),
             fmt_float(p["tvd_release"]), fmt_float(p["tvd_independence"])) for p in pairs[:MAX_PAIR_ROWS]]
    more = (f"<p class=\"note\">{len(pairs) - MAX_PAIR_ROWS} more pairs not shown.</p>"
            if len(pairs) > MAX_PAIR_ROWS else "")
    return html_section("pairs", "Pairs, worst first", html_details(f"{len(rows)} pairs, worst first", html_table(
        ["A", "B", "Real Cramer's V", "Counted by SDMetrics", "Real MI (nats)", "TVD release",
         "TVD independence (model's one-way)"], rows)) + more)


def _absent() -> str:
    return html_section("absent", "Sections that need real data",
                    "<p>No real data was given, so this report leaves out the scores against the real "
                    "data (SDMetrics' Column Shapes and Column Pair Trends, lopub's 2-way TVD and the "
                    "independence of the model's one-way marginals), the pairwise TVD heatmap, the real data's bars and "
                    "mutual information, and the per-pair table.</p>")
