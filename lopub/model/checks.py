"""Checks of a fitted release that need no true data, and :func:`assess`, its verdict.

Every check compares the model with the noisy measurements it was fitted to,
in units of their own noise: a per-cell statistic
``sum ((a - b)^2 / var)`` over the cells with positive variance is compared
with a chi-square of the table's degrees of freedom (cells for a
distribution, conservatively: the noise of an unbiased estimate need not
sum to 0; ``(|A| - 1)(|B| - 1)`` for a pair's dependence).  Cells of
variance 0 (a one-category column, a total fixed by definition) are
constraints, checked exactly.  Effect sizes in the messages (TVD, Cramer's
V) are computed on the post-processed tables (``values``), the statistics
on the unbiased estimates the variances describe (``estimate``).
"Significant" means a p-value below ``ALPHA`` divided by the number of tables tested (Bonferroni), so a correct
release raises a false alarm with probability below ``ALPHA`` (covariances
between cells are not kept in a :class:`Measurement`; their sum is an
approximation, the reason for the margins below).

1. **fit**: the model's marginals against every measurement inside a model
   clique (total chi-square vs its degrees of freedom; gross when over
   ``GROSS_RATIO`` times the degrees of freedom with a table off by more
   than ``GROSS_TVD``).
2. **uniform / independence**: columns whose measurement differs from
   uniform significantly but whose model marginal does not (the model lost
   the signal); measured pairs with significant dependence that the model
   holds as independent (fatal, as for the columns, when at least half of
   those inside its cliques).  A signal lost under the shrinkage priors names a column that holds
   more than half of the one-way cells (its table dilutes the priors' pooled spread and pulls the
   others towards uniform; :mod:`lopub.model.pgm.shrink`) and what to do about it.
3. **lost-dependency**: measured pairs outside every clique with a
   significant and strong (Cramer's V >= ``STRONG_V``) dependence that the
   model's implied table (by inference) misses significantly, keeping less
   than ``KEPT_SHARE`` of its strength.
4. **no-information**: one-category columns; columns whose measurement is
   indistinguishable from uniform (within noise: a caveat when the noise is
   large, a note when it is small enough to say the column *is* near uniform
   and it was measured within ``NOISY_TVD`` of uniform).
5. **small-groups / hopeless**: marginal-sampling subsets with fewer than
   ``MIN_GROUP_USERS`` users; most columns lost in
   noise (the budget cannot support a release at this number of users).
6. **convergence**: a model fit that stopped before its tolerance, or that
   did not move from its (uniform) start (its loss fell by less than
   ``MOVED_SHARE`` of the initial loss) while its measurements disagree with it.
7. **unmeasured-pairs**: attribute pairs the collection never measured (a
   marginal-sampling plan covers some pairs only; a one-attribute plan none):
   the release holds them only through the model's structure (independence
   where no clique links them) and no check above can judge them -- a caveat where at least
   half of the pairs were never measured, else a note.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from scipy import stats as st

from lopub.data.marginal import Marginal
from lopub.estimate.measurement import Measurement
from lopub.model.checks_signal import (ALPHA, LISTED, _r, _sets, independence_check, lost_dependency_check,
                                       uniform_check, unmeasured_check)
from lopub.model.table_stats import TableStats, as_measurement, table_tvd
from lopub.model.verdict import Finding, Verdict

EXACT_ATOL = 1e-6     # an exact cell the model misses by more is violated
GROSS_RATIO = 10.0    # chi2 / dof of a gross misfit ...
GROSS_TVD = 0.1       # ... with a table the model misses by this TVD
MIN_GROUP_USERS = 30  # fewer users than this behind one marginal-sampling subset is a small group
MOVED_SHARE = 1e-3    # a fit whose loss fell by less than this share of its start did not move


def assess(model: Any, measurements: Sequence[Marginal], *, fit: Mapping[str, Any] | None = None,
           groups: Sequence[Measurement] | None = None, n: int | None = None,
           epsilon: float | None = None,
           unmeasured: Sequence[Sequence[str]] | None = None) -> Verdict:
    """The verdict of ``model`` against the noisy ``measurements`` (no true data).

    Parameters
    ----------
    model : Model
        Anything with ``tree.cliques`` and ``project(attrs)``.
    measurements : sequence of Measurement
        Measured tables (one-way, pairs, larger sets) with per-cell
        variances: those inside a model clique are what the model should fit;
        pairs outside every clique are dependencies it dropped.  A plain
        Marginal gets the multinomial variance of its ``n``; tables marked
        "not measured" are ignored.
    fit : mapping, optional
        The model fit's summary (``loss``, ``iterations``, ``converged``,
        ``initial_loss``; its own ``chi2``/``dof`` when present are recorded).
    groups : sequence of Measurement, optional
        Marginal sampling: one measurement per planned subset, ``n`` its users.
    n : int, optional
        Users behind the release.
    epsilon : float, optional
        Per-record budget (named when the setting is hopeless).
    unmeasured : sequence of pairs of str, optional
        Attribute pairs the collection never measured
        (:func:`lopub.model.verdict_inputs.unmeasured_pairs`); None when every pair was measurable.

    Returns
    -------
    Verdict
    """
    ms = [m for m in (as_measurement(t) for t in measurements) if m is not None]
    stats = TableStats.of(model, ms)
    shrunk = fit is not None and fit.get("shrinkage") is not None
    found = fit_check(stats) + uniform_check(stats, n=n, epsilon=epsilon, shrunk=shrunk) + independence_check(stats)
    found += lost_dependency_check(stats) + small_groups_check(groups or []) + convergence_check(fit, stats)
    found += unmeasured_check(stats, unmeasured or [])
    return Verdict.of(found)


# the checks ------------------------------------------------------------------
def fit_check(stats: TableStats) -> list[Finding]:
    """Check 1: the model's marginals against the measurements inside its cliques."""
    tables = stats.inside
    if not tables:
        return []
    broken = [(t, float(np.max(np.abs(t.fitted - t.m.estimate)[~t.pos]))) for t in tables if (~t.pos).any()]
    broken = [(t, d) for t, d in broken if d > EXACT_ATOL]
    out = [Finding("fit", "fatal", f"The model breaks exact measurements (variance 0): "
                   f"{_sets([t.attrs for t, _ in broken])} differ by up to {max(d for _, d in broken):.3g}.",
                   {"sets": [list(t.attrs) for t, _ in broken]})] if broken else []
    chi2 = sum(t.stat(t.fitted, t.m.estimate) for t in tables)
    dof = sum(t.dof for t in tables)
    if dof == 0:
        return out
    worst = max(tables, key=lambda t: table_tvd(t.fitted, t.m.values))
    wtvd = table_tvd(worst.fitted, worst.m.values)
    p_value = float(st.chi2.sf(chi2, dof))
    figs = {"chi2": _r(chi2), "dof": dof, "ratio": _r(chi2 / dof), "p_value": p_value,
            "tables": len(tables), "worst": list(worst.attrs), "worst_tvd": _r(wtvd)}
    text = f"chi-square {chi2:,.1f} on {dof:,} degrees of freedom over {len(tables)} measured tables"
    if chi2 / dof > GROSS_RATIO and wtvd > GROSS_TVD:
        out.append(Finding("fit", "fatal", f"The model does not fit its measurements: {text} "
                           f"({chi2 / dof:.3g} times what their noise explains); worst "
                           f"({', '.join(worst.attrs)}), off by TVD {wtvd:.3f}.", figs))
    elif p_value < ALPHA:
        out.append(Finding("fit", "caveat", f"The model fits its measurements worse than their noise "
                           f"explains: {text}; worst ({', '.join(worst.attrs)}), TVD {wtvd:.3f}.", figs))
    else:
        out.append(Finding("fit", "ok", f"The model fits its measurements within their noise: {text}.", figs))
    return out


def small_groups_check(groups: Sequence[Measurement]) -> list[Finding]:
    """Check 5: marginal-sampling subsets with too few users."""
    if not groups:
        return []
    small = [(m, int(m.n or 0)) for m in groups if int(m.n or 0) < MIN_GROUP_USERS]
    fewest = min(int(m.n or 0) for m in groups)
    if not small:
        return [Finding("small-groups", "ok", f"Every one of the {len(groups)} attribute sets got at least "
                        f"{fewest:,} users.", {"sets": len(groups), "fewest_users": fewest})]
    named = "; ".join(f"({', '.join(m.attrs)}): {u} users for {m.values.size} cells" for m, u in small[:LISTED])
    return [Finding("small-groups", "caveat", f"{len(small)} of {len(groups)} attribute sets got fewer than "
                    f"{MIN_GROUP_USERS} users, so their tables are mostly noise: "
                    f"{named}{' ...' if len(small) > LISTED else ''}.",
                    {"sets": [list(m.attrs) for m, _ in small], "users": [u for _, u in small]})]


def convergence_check(fit: Mapping[str, Any] | None, stats: TableStats) -> list[Finding]:
    """Check 6: a model fit that stopped early or never moved."""
    if not fit:
        return []
    figs = {k: fit[k] for k in ("loss", "initial_loss", "iterations", "converged", "stop", "gap", "chi2", "dof")
            if k in fit}
    loss, start = fit.get("loss"), fit.get("initial_loss")
    moved = fit.get("moved")
    if moved is None and loss is not None and start is not None:
        moved = float(start) - float(loss) > MOVED_SHARE * abs(float(start))
    misfit = any(f.severity != "ok" for f in fit_check(stats) if f.check == "fit")
    if moved is False and misfit:
        return [Finding("convergence", "fatal", f"The model fit did not move from its start (loss "
                        f"{float(loss or 0.0):.6g} after {fit.get('iterations')} iterations) although its "
                        "measurements disagree with it.", figs)]
    if fit.get("converged") is False:
        stop = fit.get("stop")
        how = ("at max_iter" if stop in (None, "max_iter") else f"on {stop}") + (
            f", certified gap {float(fit['gap']):.3g} nats" if fit.get("gap") is not None else "")
        # an unconverged fit that already fits within the noise is a note, not a caveat
        return [Finding("convergence", "caveat" if misfit else "info", f"The model fit did not converge "
                        f"(stopped {how} after {fit.get('iterations')} iterations)"
                        + ("." if misfit else "; it already fits its measurements within their noise."), figs)]
    return []
