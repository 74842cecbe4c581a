"""The checks of a release's signal (:mod:`lopub.model.checks`, checks 2-4 and 7) and the statistics they share.

Uniform columns and independent pairs the measurements contradict, strong
dependencies outside every clique, pairs never measured; the tests and
their thresholds are those of :mod:`lopub.model.checks`'s docstring.
"""
from __future__ import annotations

import itertools
from typing import Any, Sequence

import numpy as np
from scipy import stats as st

from lopub.model.table_stats import Table, TableStats, cramers_v, table_tvd
from lopub.model.verdict import Finding

ALPHA = 1e-3          # family-wise false-alarm rate of every "significant" statement
NOISY_TVD = 0.05      # expected TVD of the noise above which a flat measurement says nothing
STRONG_V = 0.3        # Cramer's V of a strong dependency (SDMetrics' association threshold)
LOST_SHARE = 0.25     # a model statistic below this share of the measured one lost the signal
HOPELESS_SHARE = 0.5  # share of informative columns lost in noise that makes a release hopeless
KEPT_SHARE = 0.5      # a model holding less than this share of a measured Cramer's V lost it
MAX_INFERRED = 40     # outside pairs whose model table is inferred (strongest first; bounds the time)
LISTED = 5            # attributes or pairs named in one message


def uniform_check(stats: TableStats, *, n: int | None = None, epsilon: float | None = None,
                  shrunk: bool = False) -> list[Finding]:
    """Checks 2, 4 and 5 (one-way): signal lost by the model, constant columns, columns lost in noise.

    ``shrunk``: the fit had the shrinkage priors (:mod:`lopub.model.pgm.shrink`); a lost signal then names
    a column holding most of the one-way cells, whose table dilutes the prior's pooled spread."""
    kinds: dict[str, list[str]] = {"constant": [], "lost": [], "swamped": [], "flat": [], "unclear": [],
                                   "kept": []}
    noise = {}
    tests = max(len(stats.one), 1)
    for a, t in stats.one.items():
        noise[a] = t.noise_tvd()
        kinds[_one_way_kind(t, tests)].append(a)
    out = []
    if kinds["constant"]:
        out.append(Finding("no-information", "info", f"Column(s) {_names(kinds['constant'])} have one "
                           "category: they carry no information and pass through unchanged.",
                           {"columns": kinds["constant"]}))
    informative = len(stats.one) - len(kinds["constant"])
    signal = kinds["lost"] + kinds["kept"]
    if kinds["lost"]:
        fatal = 2 * len(kinds["lost"]) >= len(signal)
        figs: dict[str, Any] = {"columns": kinds["lost"], "significant": len(signal)}
        out.append(Finding("uniform", "fatal" if fatal else "caveat", f"The model's distribution of "
                           f"{_names(kinds['lost'])} is uniform although the measurements differ from "
                           f"uniform far beyond their noise ({len(kinds['lost'])} of {len(signal)} such "
                           "columns): the release does not hold what was measured." +
                           (_dilution(stats, kinds, figs) if shrunk else ""), figs))
    elif signal:
        out.append(Finding("uniform", "ok", f"The model keeps every column's measured distribution "
                           f"({len(signal)} {'differs' if len(signal) == 1 else 'differ'} from uniform beyond the "
                           f"noise).", {"significant": len(signal)}))
    return out + _noise_findings(kinds, noise, informative, n, epsilon)


def _dilution(stats: TableStats, kinds: dict[str, list[str]], figs: dict[str, Any]) -> str:
    """A hint where one column holds most of the one-way cells: the shrinkage prior's spread is pooled
    per cell over all one-way tables, so that column's table pulls the others towards uniform
    (docs/SHRINKAGE.md, "Known weakness")."""
    cells = {a: int(t.m.values.size) for a, t in stats.one.items() if a not in kinds["constant"]}
    if len(cells) < 2:
        return ""
    big = max(cells, key=lambda a: cells[a])
    total = sum(cells.values())
    if 2 * cells[big] <= total or big in kinds["lost"]:
        return ""
    figs.update(dominant=big, dominant_cells=cells[big], one_way_cells=total)
    return (f" Column {big!r} holds {cells[big]:,} of the {total:,} one-way cells, and the shrinkage prior's "
            "spread is pooled over all cells, so its table pulls the others towards uniform: leave it out or "
            "merge its categories, or fit without shrinkage (lopub fit --no-shrink; fit(..., shrink=False)).")


def _noise_findings(kinds: dict[str, list[str]], noise: dict[str, float], informative: int,
                    n: int | None, epsilon: float | None) -> list[Finding]:
    """Checks 4 and 5: columns lost in noise (hopeless when most are), precisely uniform columns."""
    out = []
    swamped = kinds["swamped"]
    if swamped and informative and len(swamped) >= HOPELESS_SHARE * informative:
        setting = (f"{n:,} users" if n else "these users") + (f" at epsilon {epsilon:g}" if epsilon else "")
        med = float(np.median([noise[a] for a in swamped]))
        beyond = (": the noise alone moves a column's table farther than 1, the largest distance between "
                  "two distributions") if med > 1 else ""
        out.append(Finding("hopeless", "fatal", f"The noise swamps the data: with {setting}, {len(swamped)} "
                           f"of {informative} columns are indistinguishable from uniform (typical expected "
                           f"noise TVD {med:.2f} per column{beyond}); collect from many more users or spend a "
                           "larger epsilon.", {"columns": swamped, "noise_tvd": _r(med), "n": n, "epsilon": epsilon}))
    elif swamped:
        out.append(Finding("no-information", "caveat", f"Column(s) {_names(swamped)} are indistinguishable "
                           "from uniform within their (large) noise: their released distribution is noise.",
                           {"columns": swamped, "noise_tvd": {a: _r(noise[a]) for a in swamped}}))
    if kinds["flat"]:
        out.append(Finding("no-information", "info", f"Column(s) {_names(kinds['flat'])} are uniform "
                           f"within their noise (a small one: expected noise TVD below {NOISY_TVD:g}): they "
                           "carry little information.", {"columns": kinds["flat"]}))
    return out


def _one_way_kind(t: Table, tests: int) -> str:
    k = t.m.values.size
    if k == 1:
        return "constant"
    u = np.full(k, 1.0 / k)
    y = t.m.estimate.reshape(-1)
    dof = t.dof
    stat_y = t.stat(y, u)
    if dof == 0 or st.chi2.sf(stat_y, dof) >= ALPHA / tests:
        if t.noise_tvd() > NOISY_TVD:
            return "swamped"
        # small noise: uniform only when measured near uniform, else neither shown uniform nor significant
        return "flat" if table_tvd(y, u) <= NOISY_TVD else "unclear"
    if t.mu is not None and _lost(t.stat(t.mu.reshape(-1), u), stat_y, dof):
        return "lost"
    return "kept"


def independence_check(stats: TableStats) -> list[Finding]:
    """Check 2 (pairs): measured dependence the model holds as independence."""
    sig = _dependent_pairs(stats)
    if not sig:
        return []
    inside = [t for t in sig if t.mu is not None]
    if all(len(c) == 1 for c in stats.model.tree.cliques):
        return [Finding("independence", "caveat", f"The model holds every attribute independent (no edge) "
                        f"although {len(sig)} measured pair(s) show significant dependence, e.g. "
                        f"{_sets([t.attrs for t in _strongest(sig)])}.", {"significant_pairs": len(sig)})]
    lost = [t for t in inside if _lost(_dependence(t, t.fitted), _dependence(t, t.m.estimate), _pair_dof(t))]
    if lost:  # most of them lost: the release is no better than independence there (as the one-way check)
        fatal = 2 * len(lost) >= len(inside)
        return [Finding("independence", "fatal" if fatal else "caveat", f"The model holds {len(lost)} of the "
                        f"{len(inside)} significant dependencies measured inside its cliques as independence "
                        f"although it was fitted to them: {_sets([t.attrs for t in lost])}.",
                        {"pairs": [list(t.attrs) for t in lost], "significant_pairs": len(inside)})]
    checked, total = _checked_pairs(stats)
    scope = (f"all {total} attribute pairs were measured" if checked >= total else
             f"only the {checked} of {total} attribute pairs with a measured table could be checked; "
             "the others are unknown to these checks")
    return [Finding("independence", "ok", f"Of the measured pairs, the model keeps all {len(inside)} significant "
                    f"dependencies measured inside its cliques ({scope}).",
                    {"significant_pairs": len(inside), "pairs_checked": checked,
                     "pairs_total": total})] if inside else []


def _strong_without_edge(count: int, lead: str = "") -> str:
    """'1 strong measured dependency without an edge' / 'N ... dependencies ...' (``lead``: 'The ')."""
    return f"{lead}{count} strong measured dependenc{'y' if count == 1 else 'ies'} without an edge"


def lost_dependency_check(stats: TableStats) -> list[Finding]:
    """Check 3: strong measured dependencies that no edge kept and the model does not hold.

    A pair outside every clique may still be carried by a path of edges; it
    is lost when the model's implied table (by inference) misses the
    measured one significantly *and* holds less than ``KEPT_SHARE`` of its
    strength (Cramer's V); a significant miss with the strength kept is a
    note (the detail of the table differs).  At most ``MAX_INFERRED`` pairs,
    strongest first, are inferred.
    """
    tests = max(len(stats.pairs), 1)
    outside = [t for t in _dependent_pairs(stats) if t.mu is None]
    strong = [t for t in _strongest(outside, MAX_INFERRED) if _cramers_v(t) >= STRONG_V]
    lost: list[tuple[Table, float, float, float]] = []
    detail: list[tuple[Table, float, float, float]] = []
    for t in strong:
        mu = stats.model.project(list(t.attrs)).values
        if st.chi2.sf(t.stat(mu, t.m.estimate), max(t.dof, 1)) < ALPHA / tests:
            row = (t, _cramers_v(t), cramers_v(mu), table_tvd(mu, t.m.values))
            (lost if row[2] < KEPT_SHARE * row[1] else detail).append(row)
    out = []
    if lost:
        named = ", ".join(f"({', '.join(t.attrs)}) V {v:.2f} measured, {w:.2f} in the model"
                          for t, v, w, _ in lost[:LISTED])
        out.append(Finding("lost-dependency", "caveat", f"{len(lost)} strong measured dependenc"
                           f"{'y is' if len(lost) == 1 else 'ies are'} kept by no edge and mostly lost by the "
                           f"model (weak in the release): {named}{' ...' if len(lost) > LISTED else ''}.",
                           _pair_figures(lost)))
    if detail:
        named = ", ".join(f"({', '.join(t.attrs)}) TVD {d:.2f}" for t, _, _, d in detail[:LISTED])
        out.append(Finding("lost-dependency", "info", f"{_strong_without_edge(len(detail))} "
                           f"{'keeps its' if len(detail) == 1 else 'keep their'} strength in the model through "
                           f"other edges but {'differs' if len(detail) == 1 else 'differ'} from the measurement "
                           f"in detail: {named}{' ...' if len(detail) > LISTED else ''}.", _pair_figures(detail)))
    if strong and not lost and not detail:
        out.append(Finding("lost-dependency", "ok", f"{_strong_without_edge(len(strong), 'The ')} "
                           f"{'is' if len(strong) == 1 else 'are'} reproduced by the model's other edges.",
                           {"pairs": len(strong)}))
    if len(outside) > len(strong):
        out.append(Finding("lost-dependency", "info", f"{len(outside) - len(strong)} significant but weak "
                           f"(Cramer's V below {STRONG_V:g}) measured dependencies have no edge in the model.",
                           {"pairs": len(outside) - len(strong)}))
    return out


def unmeasured_check(stats: TableStats, unmeasured: Sequence[Sequence[str]]) -> list[Finding]:
    """Check 7: attribute pairs the collection never measured (the checks cannot see them): a caveat
    where at least half of the pairs were never measured (one attribute per user, a plan cut hard to fit
    its users), else a note listing them -- a warning on every plan that leaves out a few pairs it
    predicted not to pay off would be one users learn to ignore; the "ok" of the independence check
    says how many pairs it could check."""
    if not unmeasured:
        return []
    total = _pair_count(stats)
    severity = "caveat" if 2 * len(unmeasured) >= total else "info"
    linked = [p for p in unmeasured if any(set(p) <= set(c) for c in stats.model.tree.cliques)]
    inferred = (f"; {len(linked)} of them share a clique, their table inferred from the measured ones"
                if linked else "")
    return [Finding("unmeasured-pairs", severity, f"{len(unmeasured)} of {total} attribute pairs were never "
                    f"measured by the collection, e.g. {_sets([tuple(p) for p in unmeasured])}: the release "
                    "holds them only through the model's structure (independence where no clique links "
                    f"them{inferred}), and no check here can tell whether they depend on each other.",
                    {"pairs": [list(p) for p in unmeasured], "unmeasured": len(unmeasured),
                     "pairs_total": total, "in_a_clique": len(linked)})]


def _pair_count(stats: TableStats) -> int:
    dom = getattr(stats.model, "domain", None)
    attrs = dom.attrs if dom is not None else set().union(*map(set, stats.model.tree.cliques))
    d = len(attrs)
    return d * (d - 1) // 2


def _checked_pairs(stats: TableStats) -> tuple[int, int]:
    """Attribute pairs with a measured table (pairs and pairs inside larger sets), and all pairs."""
    sets = [t.attrs for t in [*stats.pairs, *stats.larger]]
    seen = {frozenset(p) for s in sets for p in itertools.combinations(s, 2)}
    return len(seen), _pair_count(stats)


def _pair_figures(rows: Sequence[tuple]) -> dict[str, Any]:
    return {"pairs": [list(t.attrs) for t, *_ in rows], "cramers_v": [_r(v) for _, v, _, _ in rows],
            "model_cramers_v": [_r(w) for _, _, w, _ in rows], "tvd": [_r(d) for *_, d in rows]}


# statistics ------------------------------------------------------------------
def _lost(model_stat: float, measured_stat: float, dof: int) -> bool:
    """The model's statistic is within noise of zero and a small share of the measured one."""
    return model_stat < min(float(st.chi2.ppf(1.0 - ALPHA, max(dof, 1))), LOST_SHARE * measured_stat)


def _pair_dof(t: Table) -> int:
    a, b = t.m.values.shape
    return (a - 1) * (b - 1)


def _dependence(t: Table, p: np.ndarray) -> float:
    """``sum (p_ab - p_a p_b)^2 / var_ab``: the pair's distance from the product of its margins."""
    p = np.asarray(p, dtype=float)
    return t.stat(p, np.outer(p.sum(1), p.sum(0)))


def _dependent_pairs(stats: TableStats) -> list[Table]:
    """Measured pairs whose dependence is significant (Bonferroni over the pairs), computed once."""
    if "dependent" not in stats.memo:
        dof = np.array([_pair_dof(t) for t in stats.pairs], dtype=float)
        stat = np.array([_dependence(t, t.m.estimate) for t in stats.pairs], dtype=float)
        p = st.chi2.sf(stat, np.maximum(dof, 1.0)) if len(dof) else np.zeros(0)
        alpha = ALPHA / max(len(stats.pairs), 1)
        stats.memo["dependent"] = [t for t, d, q in zip(stats.pairs, dof, p) if d > 0 and q < alpha]
    return stats.memo["dependent"]


def _cramers_v(t: Table) -> float:
    """Noise-corrected Cramer's V of the measured pair (:func:`lopub.model.table_stats.cramers_v`)."""
    return cramers_v(t.m.values, t.m.variance)


def _strongest(tables: Sequence[Table], k: int = LISTED) -> list[Table]:
    return sorted(tables, key=lambda t: -_cramers_v(t))[:k]


def _names(attrs: Sequence[str]) -> str:
    return ", ".join(attrs[:LISTED]) + (f" and {len(attrs) - LISTED} more" if len(attrs) > LISTED else "")


def _sets(sets: Sequence[Sequence[str]]) -> str:
    return ", ".join(f"({', '.join(s)})" for s in sets[:LISTED]) + (" ..." if len(sets) > LISTED else "")


def _r(x: float) -> float:
    return float(f"{float(x):.4g}")
