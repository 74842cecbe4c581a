"""The verdict block at the top of the release report, and the verdict's true-data check.

The verdict itself is computed once by :func:`lopub.pipeline.steps.fit`
(:mod:`lopub.model.checks`, no true data) and stored in the model.  When the
user also has the true data (a simulation), :func:`real_data_finding` adds
the measured utility: the release's mean 2-way TVD against the true data,
next to two baselines computed **from the true data** (never from the
model): the independence release of the true one-way marginals (every pair
``P(a) P(b)``, exact) and the uniform distribution.  A synthetic release is
judged with its model's exact marginals too (a sample that lands closer by
chance knows no more), and tests of the true data say whether there is
anything to beat: data indistinguishable from uniform, or without dependence,
make uniform or independence the right answer, not a failure.
"""
from __future__ import annotations

import itertools
from typing import Any, Sequence

import numpy as np
from scipy.stats import chi2

from lopub.data.pairs import pair_source
from lopub.dependency.mi import mutual_information
from lopub.model.verdict import CAVEATS, GOOD, NOT_USABLE, Finding, Verdict, verdict_of
from lopub.publish.report.markup import esc

#: a release that closes less than this share of the gap between uniform and independence is no
#: better than uniform noise
UNIFORM_GAP_SHARE = 0.1
#: family-wise level of the tests that the true data differ from uniform, and show dependence
TRUTH_TEST_ALPHA = 1e-3
COLOURS = {GOOD: "#2ca02c", CAVEATS: "#e69500", NOT_USABLE: "#d62728"}
SYMBOLS = {"fatal": "not usable", "caveat": "caveat", "info": "note", "ok": "ok"}
CSS = (".verdict{border:2px solid;border-radius:6px;padding:.6em 1em;margin:1em 0}"
       ".verdict h2{border:none;margin:.1em 0 .4em}.verdict li{margin:.2em 0}"
       ".verdict .sev{font-weight:600;margin-right:.4em}")


def real_utility(release: Any, real: Any, attrs: Sequence[str] | None = None, *,
                 model: Any = None) -> dict[str, Any]:
    """Mean 2-way TVD of ``release``, of independence and of uniform, all against ``real``.

    Parameters
    ----------
    release, real : objects with ``project(attrs)`` (Dataset, Model)
    attrs : sequence of str, optional
        Default: every attribute of ``real.domain``.
    model : Model, optional
        The model ``release`` was sampled from: its exact marginals are
        scored too (``"model"``).

    Returns
    -------
    dict
        ``release``, ``independence`` and ``uniform`` (mean TVD over all
        pairs; a single attribute's one-way TVD when there is one), ``pairs``,
        ``model`` (None without ``model``), and what the true data show
        beyond their own sampling noise (:func:`truth_tests`):
        ``uniform_shown``, ``dependence_shown``.
    """
    attrs = list(real.domain.attrs if attrs is None else attrs)
    one = {a: np.asarray(real.project([a]).values, dtype=float) for a in attrs}
    sets = [list(p) for p in itertools.combinations(attrs, 2)] or [[a] for a in attrs]
    real, release = pair_source(real, sets), pair_source(release, sets)  # a wide Dataset: one product
    rel, ind, uni, mod, tables = [], [], [], [], []
    for s in sets:
        truth = np.asarray(real.project(s).values, dtype=float)
        prod = one[s[0]] if len(s) == 1 else np.multiply.outer(one[s[0]], one[s[1]])
        rel.append(_tvd(release.project(s).values, truth))
        ind.append(_tvd(prod, truth))
        uni.append(_tvd(np.full(truth.shape, 1.0 / truth.size), truth))
        if model is not None:
            mod.append(_tvd(model.project(s).values, truth))
        if truth.ndim == 2:
            tables.append(truth)
    out = {"release": float(np.mean(rel)), "independence": float(np.mean(ind)),
           "uniform": float(np.mean(uni)), "pairs": len(sets), "model": float(np.mean(mod)) if mod else None}
    return out | truth_tests(list(one.values()), tables, getattr(real, "n", None))


def truth_tests(one_ways: Sequence[np.ndarray], pairs: Sequence[np.ndarray], n: Any,
                alpha: float = TRUTH_TEST_ALPHA) -> dict[str, bool]:
    """Whether the true data differ from uniform, and show dependence, beyond their sampling noise.

    Chi-square goodness of fit of every one-way table to uniform (``n sum_c (p_c - 1/k)^2 k``,
    ``k - 1`` degrees of freedom) and G-test of independence of every pair (``2 n MI`` in nats,
    ``(a - 1)(b - 1)`` degrees of freedom over the observed categories), each family at level
    ``alpha`` (Bonferroni).  Without a record count ``n`` both are taken as shown.
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        return {"uniform_shown": True, "dependence_shown": True}
    uniform = any(chi2.sf(n * p.size * float(((p - 1.0 / p.size) ** 2).sum()), p.size - 1)
                  < alpha / len(one_ways) for p in one_ways if p.size > 1)
    dependence = False
    for t in pairs:
        df = (int((t.sum(1) > 0).sum()) - 1) * (int((t.sum(0) > 0).sum()) - 1)
        if df > 0 and chi2.sf(2.0 * n * mutual_information(t), df) < alpha / len(pairs):
            dependence = True
            break
    return {"uniform_shown": bool(uniform), "dependence_shown": dependence}


def real_data_finding(release: Any, real: Any, model: Any = None) -> Finding:
    """The verdict's finding from the true data (see the module docstring).

    The release is judged by the larger of its own mean 2-way TVD and its
    ``model``'s (exact marginals), when given: records sampled from a model
    hold no more about the truth than the model, so a sample that happens
    to land closer is luck.  Fatal when it closes less than
    ``UNIFORM_GAP_SHARE`` of the gap between the uniform and the
    independence baselines (at least ``UNIFORM_GAP_SHARE`` of uniform's own
    distance: where independence is no better than uniform, the release must
    still visibly beat uniform) -- unless the true data do not differ from
    uniform beyond their sampling noise (:func:`truth_tests`), when no
    release can beat it.  A caveat when it is farther from the truth than
    the independence of the true one-way marginals and the true data show
    dependence; where they show none, independence is the right structure
    and the excess is the noise of the release's one-way marginals (ok).
    """
    u = real_utility(release, real, model=None if model is release else model)
    r, i, un = u["release"], u["independence"], u["uniform"]
    judged = r if u["model"] is None else max(r, u["model"])
    figs = {k: v if isinstance(v, (bool, int)) or v is None else float(f"{v:.4g}") for k, v in u.items()}
    measured = f"mean 2-way TVD {r:.3f} against the true data"
    if u["model"] is not None and f"{u['model']:.3f}" != f"{r:.3f}":
        measured = (f"mean 2-way TVD {u['model']:.3f} against the true data (the model the records were "
                    f"sampled from; the records themselves {r:.3f}, closer by chance: a sample holds no "
                    f"more about the truth than its model)" if u["model"] > r else
                    f"{measured} (the model the records were sampled from: {u['model']:.3f}; the records "
                    f"are what is published)")
    text = (f"{measured}, where the independence of the true one-way marginals gives {i:.3f} and the "
            f"uniform distribution {un:.3f}")
    n = getattr(real, "n", None)
    if not (u["uniform_shown"] or u["dependence_shown"]):
        return Finding("real-data", "ok", f"The true data do not differ from uniform beyond their own "
                       f"sampling noise ({n:,} records: no column's distribution differs from uniform "
                       f"and no pair shows dependence, chi-square and G-tests at level {TRUTH_TEST_ALPHA:g}), "
                       f"so no release can beat the baselines here: {text}.", figs)
    if judged > un - UNIFORM_GAP_SHARE * max(un - i, UNIFORM_GAP_SHARE * un):
        return Finding("real-data", "fatal", f"Measured on the true data, the release is no better than "
                       f"uniform noise: {text}.", figs)
    if judged > i and not u["dependence_shown"]:
        return Finding("real-data", "ok", f"Measured on the true data, the release beats uniform: {text}. "
                       f"The true data show no dependence beyond their sampling noise ({n:,} records, "
                       f"G-tests at level {TRUTH_TEST_ALPHA:g}), so independence is the right structure; "
                       f"the release's distance beyond the exact one-way independence is the noise of "
                       f"its estimated one-way marginals.", figs)
    if judged > i:
        return Finding("real-data", "caveat", f"Measured on the true data, the release is farther from it "
                       f"than independence would be: {text}; it holds the dependencies worse than a release "
                       f"of exact one-way marginals.", figs)
    return Finding("real-data", "ok", f"Measured on the true data, the release beats both baselines: {text}.",
                   figs)


def report_verdict(model: Any, release: Any = None, real: Any = None) -> Verdict | None:
    """The model's stored verdict, with the true-data finding when ``real`` is given."""
    stored = verdict_of(model)
    if real is None:
        return stored
    more = [real_data_finding(release if release is not None else model, real, model)]
    return stored.with_findings(more) if stored is not None else Verdict.of(more)


def verdict_section(verdict: Verdict | None, *, real_given: bool) -> str:
    """The ``<section id="verdict">`` HTML block: level, reasons, then every other finding."""
    if verdict is None:
        return ("<section id=\"verdict\" class=\"verdict\" style=\"border-color:#888\">\n<h2>Verdict: "
                "unknown</h2>\n<p>No verdict is stored with this model (written before lopub computed "
                "verdicts, or built without measurements); refit it with <code>lopub fit</code>.</p>\n</section>")
    colour = COLOURS[verdict.level]
    reasons = verdict.reasons
    shown = set(reasons)
    rest = [f for f in verdict.findings if f.message not in shown]
    items = "".join(f"<li>{esc(r)}</li>" for r in reasons)
    more = "".join(f"<li><span class=\"sev\">{esc(SYMBOLS[f.severity])}</span>{esc(f.message)}</li>" for f in rest)
    why = "Why" if verdict.level == GOOD else "Reasons"
    basis = ("Checks of the model against its noisy measurements (no true data)"
             + (", and the release measured against the true data." if real_given else "."))
    return (f"<section id=\"verdict\" class=\"verdict\" style=\"border-color:{colour}\">\n"
            f"<h2 style=\"color:{colour}\">Verdict: {esc(verdict.level)}</h2>\n"
            f"<p class=\"note\">{esc(basis)}</p>\n<p><b>{why}</b></p><ul>{items}</ul>\n"
            + (f"<p><b>Other checks</b></p><ul>{more}</ul>\n" if more else "") + "</section>")


def _tvd(a: Any, b: np.ndarray) -> float:
    return 0.5 * float(np.abs(np.asarray(a, dtype=float) - b).sum())
