"""The verdict block at the top of the release report, and the verdict's true-data check.

The verdict itself is computed once by :func:`lopub.pipeline.steps.fit`
(:mod:`lopub.model.checks`, no true data) and stored in the model.  When the
user also has the true data (a simulation), :func:`real_data_finding` adds
the measured utility: the release's mean 2-way TVD against the true data,
next to two baselines computed **from the true data** (never from the
model): the independence release of the true one-way marginals (every pair
``P(a) P(b)``, exact) and the uniform distribution.
"""
from __future__ import annotations

import html
import itertools
from typing import Any, Sequence

import numpy as np

from lopub.model.verdict import CAVEATS, GOOD, NOT_USABLE, Finding, Verdict, verdict_of

#: a release that closes less than this share of the gap between uniform and independence is no
#: better than uniform noise
UNIFORM_GAP_SHARE = 0.1
COLOURS = {GOOD: "#2ca02c", CAVEATS: "#e69500", NOT_USABLE: "#d62728"}
SYMBOLS = {"fatal": "not usable", "caveat": "caveat", "info": "note", "ok": "ok"}
CSS = (".verdict{border:2px solid;border-radius:6px;padding:.6em 1em;margin:1em 0}"
       ".verdict h2{border:none;margin:.1em 0 .4em}.verdict li{margin:.2em 0}"
       ".verdict .sev{font-weight:600;margin-right:.4em}")


def real_utility(release: Any, real: Any, attrs: Sequence[str] | None = None) -> dict[str, Any]:
    """Mean 2-way TVD of ``release``, of independence and of uniform, all against ``real``.

    Parameters
    ----------
    release, real : objects with ``project(attrs)`` (Dataset, Model)
    attrs : sequence of str, optional
        Default: every attribute of ``real.domain``.

    Returns
    -------
    dict
        ``release``, ``independence`` and ``uniform`` (mean TVD over all
        pairs; a single attribute's one-way TVD when there is one), ``pairs``.
    """
    attrs = list(real.domain.attrs if attrs is None else attrs)
    one = {a: np.asarray(real.project([a]).values, dtype=float) for a in attrs}
    sets = [list(p) for p in itertools.combinations(attrs, 2)] or [[a] for a in attrs]
    rel, ind, uni = [], [], []
    for s in sets:
        truth = np.asarray(real.project(s).values, dtype=float)
        prod = one[s[0]] if len(s) == 1 else np.multiply.outer(one[s[0]], one[s[1]])
        rel.append(_tvd(release.project(s).values, truth))
        ind.append(_tvd(prod, truth))
        uni.append(_tvd(np.full(truth.shape, 1.0 / truth.size), truth))
    return {"release": float(np.mean(rel)), "independence": float(np.mean(ind)),
            "uniform": float(np.mean(uni)), "pairs": len(sets)}


def real_data_finding(release: Any, real: Any) -> Finding:
    """The verdict's finding from the true data (see the module docstring).

    Fatal when the release closes less than ``UNIFORM_GAP_SHARE`` of the gap
    between the uniform and the independence baselines (it is about as far
    from the truth as uniform noise); a caveat when it is farther from the
    truth than the independence of the true one-way marginals; ok otherwise.
    """
    u = real_utility(release, real)
    r, i, un = u["release"], u["independence"], u["uniform"]
    figs = {k: float(f"{v:.4g}") for k, v in u.items()}
    text = (f"mean 2-way TVD {r:.3f} against the true data, where the independence of the true "
            f"one-way marginals gives {i:.3f} and the uniform distribution {un:.3f}")
    if r > un - UNIFORM_GAP_SHARE * max(un - i, 0.0):
        return Finding("real-data", "fatal", f"Measured on the true data, the release is no better than "
                       f"uniform noise: {text}.", figs)
    if r > i:
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
    more = [real_data_finding(release if release is not None else model, real)]
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
    items = "".join(f"<li>{_e(r)}</li>" for r in reasons)
    more = "".join(f"<li><span class=\"sev\">{_e(SYMBOLS[f.severity])}</span>{_e(f.message)}</li>" for f in rest)
    why = "Why" if verdict.level == GOOD else "Reasons"
    basis = ("Checks of the model against its noisy measurements (no true data)"
             + (", and the release measured against the true data." if real_given else "."))
    return (f"<section id=\"verdict\" class=\"verdict\" style=\"border-color:{colour}\">\n"
            f"<h2 style=\"color:{colour}\">Verdict: {_e(verdict.level)}</h2>\n"
            f"<p class=\"note\">{_e(basis)}</p>\n<p><b>{why}</b></p><ul>{items}</ul>\n"
            + (f"<p><b>Other checks</b></p><ul>{more}</ul>\n" if more else "") + "</section>")


def _tvd(a: Any, b: np.ndarray) -> float:
    return 0.5 * float(np.abs(np.asarray(a, dtype=float) - b).sum())


def _e(v: Any) -> str:
    return html.escape(str(v), quote=True)
