"""Empirical-Bayes shrinkage of the one-way tables in the model fit: noise-dominated tables pulled to uniform
or to the shared shape of their attributes.

Each attribute ``a`` has a measured one-way table ``r_a`` (every measurement
containing ``a``, projected and pooled by inverse variance with
:func:`lopub.estimate.measurement.combine`; unbiased, per-cell noise
variance ``v_a``, mean ``sigma_a^2``).  The prior says a true table
deviates from the uniform table ``u_a = 1/K_a`` by ``N(0, tau^2)`` per
cell, with one ``tau^2`` for all attributes, estimated from the data
itself (method of moments; ``E ||r_a - u_a||^2 = ||p_a - u_a||^2 + sum v_a``)::

    tau^2 = max(0, sum_a ||r_a - u_a||^2 - sum_a sum v_a) / sum_a K_a

The posterior mean of ``p_a`` is ``u_a + lambda_a (r_a - u_a)`` with
``lambda_a = tau^2 / (tau^2 + sigma_a^2)``: about 1 where the one-way
tables stand clear of their noise, 0 where they do not.  Each prior enters
the weighted least-squares fit (:func:`lopub.model.pgm.fit.fit_mrf`) as
one more Gaussian term ``y = u_a`` with variance ``tau^2``, so the fit's
optimum *is* the posterior mode (the product of the two Gaussians),
reconciled with every other measurement.

One ``tau^2`` pooled over all attributes (Efron and Morris 1973's
empirical Bayes) rather than one per attribute: a per-attribute factor of
a binary attribute rests on one degree of freedom, where the James-Stein
rule does not beat the plain estimate (James and Stein 1961 need three),
and measured it was up to 7 % worse on binary networks; the pooled factor
has ``sum_a (K_a - 1)`` degrees of freedom.  A per-attribute ``tau^2`` for
attributes of four or more categories (pooled for the rest) was measured
too: it mends a 3 % loss on all pairs of Adult at epsilon 1 (a 42-category
attribute whose mass sits in one cell is pulled towards uniform) but gives
up a third of the gain on small data (wine epsilon 1: 0.31 -> 0.46 of the
plain fit's error).  Priors on pairs (towards the
product of the one-way tables) were measured too and left out: no gain
where pairs are measured, up to 5 % worse on sampled networks at epsilon 8.

Why: with few users per table (a few hundred records, small budgets) the
unbiased tables are mostly noise, and their projection on the simplex is a
few spikes, far worse than uniform (wine, 178 records, epsilon 1, one
attribute per user: mean 2-way TVD 0.65 with the plain tables, 0.21 with
uniform ones, 0.21 shrunk; docs/BENCHMARKS.md "What the measurements know, kept").  Where the data
speak, ``lambda_a`` is close to 1 and the fit is unchanged.  Post-processing
of the reports: no privacy cost.

Targets.  Uniform is the only target that needs no data, but where the
attributes share a shape it is a poor one: retail's items are all rare, so
every table sits far from uniform on the same side, ``lambda`` is near 1 and
the prior buys nothing, while pulling them towards *each other* would (Efron
and Morris 1975's shrinkage towards the grand mean).  Real groups are often
mixed, though: in a sampled network some 4-category attributes are nearly
uniform and others sit on one value, and one shared target serves neither
(bn-water, one attribute per user, epsilon 0.5: towards the mean of all the
tables, the nearly uniform ones were pulled off, 0.019 -> 0.055 one-way TVD,
and the release was 6 % worse than with no prior at all).  So each group of
at least ``MIN_GROUP`` attributes with as many categories first tries a
two-component prior (:func:`_mixture`): each table is either near uniform
(spread ``tau_u^2``) or near the mean table of the group's *other* tables of
that component (``tau_m^2``), in shares fitted by EM on the tables' marginal
likelihood; each table's posterior mean (the responsibility-weighted mix of
the two shrunk estimates) is written as one Gaussian term for the fit.  The
centres are left-one-out, so a table is never scored against a centre
fitted to its own noise (with the plain group mean, 13 noise-only tables of
wine at epsilon 0.5 chose the noisy mean over uniform and the release
doubled its error), and the centre's own noise counts as prior spread.  The
mixture is kept only where each component holds ``MIN_GROUP`` tables'
weight and it predicts each table from the *other* tables better than the
single uniform prior does, beyond chance (Vuong's test on the left-one-out
log-likelihood gains, z > 1.96): with a plain likelihood or a positive
left-one-out sum, chance clusters among noise-only tables took it in 1-15 %
of samples.  Otherwise the group takes uniform or its grand mean, whichever
has the lower Stein unbiased risk estimate (SURE, whose term for the mean
target counts that the mean moves with ``r_a`` by ``1/m``; the mean's
``tau_g^2 = max(0, sum_a ||r_a - rbar||^2 - (1 - 1/m) sum_a sum v_a) / (m K)``).
Measured, planned release, same reports, 3 seeds, mixture rule against the
SURE rule alone: retail top-100 items at epsilon 1 0.0326 -> 0.0129 mean
2-way TVD; bn-water at epsilon 0.5 / 1 0.1373 / 0.0714 -> 0.1266 / 0.0693
(no prior: 0.1298 / 0.0695); digits at epsilon 0.5 0.287 -> 0.269 and at
epsilon 1 0.183 -> 0.191 (+4 %, no prior 0.200); wine, breast cancer,
bn-alarm, bn-sachs, bn-asia (1,000 records), stress, Adult with its missing
values and retail at epsilon 0.5 unchanged (the mixture is not kept).  The
SURE rule alone, against uniform: retail top-100 at epsilon 0.5 0.0622 ->
0.0492, bn-asia (1,000 records) at epsilon 0.5 0.219 -> 0.193, bn-alarm
(1,000 records) 0.484 -> 0.448; quantile-binned data (uniform one-way tables)
unchanged; worst digits at epsilon 0.5 0.272 -> 0.287 (+6 %), stress (2,000
records) at epsilon 1 +2 %.

What was measured and not kept, and the known weaknesses (bn-andes's mixture, one many-category
attribute diluting ``tau^2``, the losses to the naive per-set tables on bn-alarm and bn-sachs, Bloom's
NNLS tables), are in docs/SHRINKAGE.md.

Outliers (session 36).  A table the prior cannot have produced is left to its measurements: where
some cell stands ``|r - target| / sqrt(prior + v)`` beyond the two-sided normal point of
``OUTLIER_ALPHA`` = 0.001 shared by all the tables' cells (Bonferroni; 4.3 sd for 48 cells, 4.5 for
Adult's 148), the table gets no prior term (:func:`outliers`); the other tables keep theirs, with the pooled
``tau^2`` as before.  Found by a new user: Adult released from Bloom reports at epsilon 4 (the
paper's h = 4, m = 128, moment estimator) flattened native-country, 91 % in one value, because its
large noise (``sigma^2`` 0.0072 per cell against the pooled ``tau^2`` 0.019) gave ``lambda`` 0.72 and
the simplex projection spread the removed mass over 40 near-empty cells: one-way TVD 0.36, raw table
0.22, no prior 0.22; its big cell stands ~5.5 sd from uniform.  A cell test, not a table one: the
chi-square of the whole table on ``K - 1`` degrees of freedom dilutes one cell's deviation among 41
(native-country's is 32 on 41 in Adult's planned release at epsilon 0.5), and rejected tables moved
out of the pool lowered ``tau^2`` for the rest (adult-missing at 0.5 +0.4 %, beyond 2 se).  Dropping
the prior rather than giving the table its own spread: an iid-per-cell spread of a one-cell table is
small (native-country in Adult's planned release at 0.5: 0.020, ``lambda`` 0.81 < 0.86 pooled).
Efron and Morris's limited translation per cell (session 34) was not measured here; it caps the big
cell's shift but not the 40 small cells' lifts, which the projection must take back from it.
Measured, same reports, seeds 0-2 (docs/BENCHMARKS.md, fifth pass, item 6): planned release on 42
cells of 14 datasets at epsilon 0.5 / 1 / 2, adult-missing
-3.0 / -1.4 / -0.2 % (native-country's prior dropped), retail top-100 at 0.5 -11 %, every other cell
within 2 se, geometric mean 0.996; Adult Bloom (h = 4, moment) at epsilon 4 native-country 0.30 ->
0.16 (no prior 0.16), release 0.301 -> 0.285, at 8 0.186 -> 0.185.

The priors are not measurements: the fit leaves them out of its
goodness-of-fit statistic (``chi2``/``dof``) and out of its reports.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.stats import norm

from lopub.estimate.measurement import Measurement, combine

#: ``provenance["prior"]`` of a shrinkage prior term
PRIOR = "empirical-Bayes shrinkage of a one-way table"
#: smallest prior variance, as a share of the table's own noise variance (keeps
#: a fully shrunk table a weighted term, never an exact constraint)
TAU_FLOOR = 1e-3
#: one-sided 2.5 % point of Vuong's statistic for keeping the mixture prior over the uniform one
VUONG_Z = 1.96
#: fewest attributes of one size whose mean table may be a target (Efron and Morris: four or more)
MIN_GROUP = 4
#: family-wise level of the test of each cell against its prior (Bonferroni over all the cells): a table
#: with a cell beyond it is one the prior does not describe, and keeps no prior (module docstring, "Outliers")
OUTLIER_ALPHA = 1e-3


def pooled_one_way(measurements: Sequence[Measurement]) -> dict[str, Measurement]:
    """Each attribute's one-way table pooled over the weighted measurements containing it."""
    ms = [m for m in measurements if m.sigma2 > 0.0]
    attrs = dict.fromkeys(a for m in ms for a in m.attrs)
    return {a: combine([m.project([a]) for m in ms if a in m.attrs]) for a in attrs}


def prior_variance(one: dict[str, Measurement]) -> float:
    """The pooled ``tau^2`` of the module docstring (0 when the tables are all noise)."""
    if not one:
        return 0.0
    dev = sum(float(np.sum((m.estimate - 1.0 / m.values.size) ** 2)) for m in one.values())
    noise = sum(float(np.sum(m.variance)) for m in one.values())
    return max(dev - noise, 0.0) / sum(m.values.size for m in one.values())


def _sure(r: np.ndarray, v: np.ndarray, target: np.ndarray, lam: np.ndarray, slope: float) -> float:
    """Stein's unbiased estimate of the squared error of ``target + lam (r - target)`` (rows: attributes;
    ``slope``: d target / d r of the attribute's own table, 0 for a fixed target)."""
    lam = lam[:, None]
    return float(np.sum((1 - lam) ** 2 * (r - target) ** 2 + (2 * (lam + (1 - lam) * slope) - 1) * v))


def _lambda(tau2: float, sigma2: np.ndarray) -> np.ndarray:
    var = np.maximum(tau2, TAU_FLOOR * sigma2)
    return var / (var + sigma2)


def _em(r: np.ndarray, v: np.ndarray, tau2: float, w: np.ndarray, iters: int) -> tuple:
    """EM of :func:`_mixture`'s two-component prior on the tables ``r`` (noise ``v``), from the weights on
    uniform ``w``: ``(w, pi, tau^2, left-one-out centres m_a, their noise V_a)``."""
    n, k = r.shape
    u = np.full(k, 1.0 / k)
    t2, pi = np.full(2, max(tau2, 0.0)), float(w.mean())
    for _ in range(iters):
        m, vm = _centres(r, v, 1 - w)
        ll = np.stack([_loglik(r, u, t2[0] + v), _loglik(r, m, t2[1] + vm + v)], axis=1)
        ll += np.log(np.clip([pi, 1 - pi], 1e-12, None))
        new_w = 1 / (1 + np.exp(np.clip(ll[:, 1] - ll[:, 0], -700, 700)))
        pi = float(new_w.mean())
        for c, wc, excess in ((0, new_w, np.sum((r - u) ** 2 - v, axis=1)),
                              (1, 1 - new_w, np.sum((r - m) ** 2 - vm - v, axis=1))):
            t2[c] = max(float(np.sum(wc * excess)) / max(float(wc.sum()) * k, 1e-12), 0.0)
        done = np.max(np.abs(new_w - w)) < 1e-9
        w = new_w
        if done:
            break
    m, vm = _centres(r, v, 1 - w)
    return w, pi, t2, m, vm


def _centres(r: np.ndarray, v: np.ndarray, wm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each table's centre of the mean component: the ``wm``-weighted mean of the *other* tables, and its noise."""
    den = wm.sum() - wm
    ok = den > 1e-9
    safe = np.where(ok, den, 1.0)[:, None]
    m = np.where(ok[:, None], ((wm[:, None] * r).sum(axis=0) - wm[:, None] * r) / safe, 1.0 / r.shape[1])
    vm = np.where(ok[:, None], ((wm[:, None] ** 2 * v).sum(axis=0) - wm[:, None] ** 2 * v) / safe ** 2, 0.0)
    return m, vm


def _loglik(r: np.ndarray, centre: np.ndarray, var: np.ndarray) -> np.ndarray:
    """Per-row Gaussian log density of ``r`` around ``centre`` with per-cell variances ``var``."""
    var = np.maximum(var, 1e-18)
    return -0.5 * np.sum(np.log(2 * np.pi * var) + (r - centre) ** 2 / var, axis=1)


def _cv_gain(r: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Left-one-out predictive log-likelihood of the mixture minus that of the single uniform prior:
    each table scored by both priors fitted to the *other* tables (so neither is credited for fitting
    a table's own noise, nor for a chance cluster it is part of)."""
    n, k = r.shape
    u = np.full(k, 1.0 / k)
    gain = np.zeros(n)
    for a in range(n):  # tables, not users
        keep = np.arange(n) != a
        ro, vo = r[keep], v[keep]
        single_t2 = max(float(np.sum((ro - u) ** 2 - vo)) / ((n - 1) * k), 0.0)
        wo, pi, t2, _, _ = _em(ro, vo, single_t2, w[keep], 50)
        wm = 1 - wo
        if wm.sum() <= 1e-9:
            return np.full(n, -np.inf)
        m = (wm[:, None] * ro).sum(axis=0) / wm.sum()
        vm = (wm[:, None] ** 2 * vo).sum(axis=0) / wm.sum() ** 2
        x, va = r[a:a + 1], v[a:a + 1]
        mixed = np.logaddexp(np.log(max(pi, 1e-300)) + _loglik(x, u, t2[0] + va),
                             np.log(max(1 - pi, 1e-300)) + _loglik(x, m, t2[1] + vm + va))
        gain[a] = float(mixed[0] - _loglik(x, u, single_t2 + va)[0])
    return gain


def _better(gain: np.ndarray) -> bool:
    """Vuong's test on the tables' left-one-out log-likelihood gains: the mixture predicts better beyond
    chance (``sum / (sqrt(n) sd) > VUONG_Z``).  A plain positive sum is not enough: in 15 % of samples
    of 12 noise-only tables a chance cluster of a few tables made it positive (z at most 1.4 in 300)."""
    if not np.all(np.isfinite(gain)) or gain.size < 2:
        return False
    sd = float(gain.std(ddof=1))
    return float(gain.sum()) > VUONG_Z * np.sqrt(gain.size) * sd if sd > 0 else float(gain.sum()) > 0


def _mixture(r: np.ndarray, v: np.ndarray, tau2: float,
             iters: int = 200) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Two-component empirical-Bayes prior for one group of same-size tables (rows of ``r``, noise ``v``):
    ``p_a ~ N(u, tau^2)`` (uniform) with weight ``pi``, or ``N(m_a, tau^2)`` with ``m_a`` the mean
    table of the *other* members of that component (left one out, so that a table is never compared
    with a centre fitted to its own noise; the centre's own noise ``V_a`` counts as prior spread).
    Fitted by EM on the marginal likelihood ``r_a ~ N(c_a, tau^2 + V_a + v_a)``, ``tau^2`` by
    responsibility-weighted moments.  Kept only where each component holds at least ``MIN_GROUP``
    tables' weight (a spread estimated from fewer is often 0, which pools its tables completely) and
    the mixture predicts each table from the others better than the single uniform prior does
    (:func:`_cv_gain`, :func:`_better`); otherwise ``None``.  Returns each row's single Gaussian term reproducing its posterior mean,
    ``(target, prior variance, weight on uniform)``.
    """
    n, k = r.shape
    u = np.full(k, 1.0 / k)
    sigma2 = v.mean(axis=1)
    w, pi, t2, m, vm = _em(r, v, tau2, np.full(n, 0.5), iters)
    if min(w.sum(), n - w.sum()) < MIN_GROUP or not _better(_cv_gain(r, v, w)):
        return None
    lam = np.stack([_lambda(t2[0], sigma2), _lambda_each(t2[1] + vm.mean(axis=1), sigma2)], axis=1)  # (n, 2)
    resp = np.stack([w, 1 - w], axis=1)
    lam_a = np.sum(resp * lam, axis=1)
    shift = resp[:, :1] * (1 - lam[:, :1]) * u + resp[:, 1:] * (1 - lam[:, 1:]) * m
    target = shift / np.maximum(1 - lam_a, 1e-12)[:, None]
    prior = lam_a * sigma2 / np.maximum(1 - lam_a, 1e-12)
    return target, prior, w


def _lambda_each(tau2: np.ndarray, sigma2: np.ndarray) -> np.ndarray:
    var = np.maximum(tau2, TAU_FLOOR * sigma2)
    return var / (var + sigma2)


def prior_targets(one: dict[str, Measurement], tau2: float) -> dict[str, tuple[np.ndarray, float, str]]:
    """Each attribute's prior ``(target table, prior variance, what it is pulled towards)``: uniform with
    the pooled ``tau2``; in a group of at least ``MIN_GROUP`` attributes with as many categories, the
    two-component mixture of :func:`_mixture` where it predicts the tables better, else the group's
    mean table where its Stein risk is lower than uniform's (module docstring, "Targets")."""
    out = {a: (np.full(m.values.size, 1.0 / m.values.size), tau2, "uniform") for a, m in one.items()}
    groups: dict[int, list[str]] = {}
    for a, m in one.items():
        groups.setdefault(m.values.size, []).append(a)
    for k, attrs in groups.items():
        n = len(attrs)
        if n < MIN_GROUP:
            continue
        r = np.array([one[a].estimate.ravel() for a in attrs])
        v = np.array([np.broadcast_to(one[a].variance, one[a].values.shape).ravel() for a in attrs])
        mixed = _mixture(r, v, tau2)
        if mixed is not None:
            target, prior, w = mixed
            out.update({a: (target[i], float(prior[i]), "uniform" if w[i] >= 0.5 else
                            f"mean table of the other {k}-category attributes") for i, a in enumerate(attrs)})
            continue
        sigma2 = v.mean(axis=1)
        mean = r.mean(axis=0)
        tau2_g = max(float(np.sum((r - mean) ** 2)) - (1 - 1 / n) * float(v.sum()), 0.0) / r.size
        uniform = _sure(r, v, np.full(k, 1.0 / k), _lambda(tau2, sigma2), 0.0)
        if _sure(r, v, mean, _lambda(tau2_g, sigma2), 1 / n) < uniform:
            out.update({a: (mean, tau2_g, f"mean table of the {k}-category attributes") for a in attrs})
    return out


def outliers(one: dict[str, Measurement], targets: dict[str, tuple[np.ndarray, float, str]]) -> set[str]:
    """The tables the prior does not describe: some cell stands ``|r - target| / sqrt(prior + v)`` beyond the
    two-sided normal point of ``OUTLIER_ALPHA`` shared by all the tables' cells (Bonferroni), which no draw
    from the prior plus the noise reaches but with that probability (module docstring, "Outliers")."""
    z = float(norm.isf(OUTLIER_ALPHA / (2 * max(sum(m.values.size for m in one.values()), 1))))
    out = set()
    for a, m in one.items():
        target, prior, _ = targets[a]
        r = m.estimate.ravel()
        v = np.broadcast_to(m.variance, m.values.shape).ravel()
        if np.any(np.abs(r - target) > z * np.sqrt(np.maximum(max(prior, 0.0) + v, 1e-300))):
            out.add(a)
    return out


def shrinkage_priors(measurements: Sequence[Measurement]) -> list[Measurement]:
    """One prior term per measured attribute (module docstring); exact measurements are left alone, and so
    are the tables the prior does not describe (:func:`outliers`).

    Each term's ``provenance["shrinkage"]`` is its ``lambda_a``, the weight
    the fit leaves on the attribute's measurements, and ``provenance["target"]``
    says which table it is pulled towards.
    """
    one = pooled_one_way(measurements)
    tau2 = prior_variance(one)
    targets = prior_targets(one, tau2)
    out = []
    for a in outliers(one, targets):
        del targets[a]
    for a, m in one.items():
        if a not in targets:
            continue
        sigma2 = m.sigma2
        target, prior, towards = targets[a]
        var = max(prior, TAU_FLOOR * sigma2)
        how = ("prior variance pooled over the one-way tables" if prior == tau2 else
               "prior of the group's two-component mixture (uniform, mean of the other tables)")
        out.append(Measurement(m.domain, target.reshape(m.values.shape), m.n, {"prior": PRIOR}, variance=var,
                               provenance={"prior": PRIOR, "shrinkage": var / (var + sigma2), "target": towards,
                                           "variance": how}))
    return out
