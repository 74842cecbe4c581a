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
and Morris 1975's shrinkage towards the grand mean).  So, for each group of at
least ``MIN_GROUP`` attributes with as many categories, the mean of their
tables is a second candidate target, with its own method-of-moments variance
``tau_g^2 = max(0, sum_a ||r_a - rbar||^2 - (1 - 1/m) sum_a sum v_a) / (m K)``;
the group takes the target with the lower Stein unbiased risk estimate (SURE,
whose term for the mean target counts that ``rbar`` moves with ``r_a`` by
``1/m``).  Measured, planned release, same reports, 3 seeds: retail top-100
at epsilon 0.5 0.0622 -> 0.0492 mean 2-way TVD, bn-asia (1,000 records) at
epsilon 0.5 0.219 -> 0.193, bn-alarm (1,000 records) 0.484 -> 0.448;
quantile-binned data (uniform one-way tables) unchanged; worst digits at
epsilon 0.5 0.272 -> 0.287 (+6 %), stress (2,000 records) at epsilon 1 +2 %.

The priors are not measurements: the fit leaves them out of its
goodness-of-fit statistic (``chi2``/``dof``) and out of its reports.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from lopub.estimate.measurement import Measurement, combine

#: ``provenance["prior"]`` of a shrinkage prior term
PRIOR = "empirical-Bayes shrinkage of a one-way table"
#: smallest prior variance, as a share of the table's own noise variance (keeps
#: a fully shrunk table a weighted term, never an exact constraint)
TAU_FLOOR = 1e-3
#: fewest attributes of one size whose mean table may be a target (Efron and Morris: four or more)
MIN_GROUP = 4


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


def prior_targets(one: dict[str, Measurement], tau2: float) -> dict[str, tuple[np.ndarray, float]]:
    """Each attribute's prior ``(target table, prior variance)``: uniform with the pooled ``tau2``, or
    the mean table of the attributes with as many categories (module docstring, "Targets")."""
    out = {a: (np.full(m.values.size, 1.0 / m.values.size), tau2) for a, m in one.items()}
    groups: dict[int, list[str]] = {}
    for a, m in one.items():
        groups.setdefault(m.values.size, []).append(a)
    for k, attrs in groups.items():
        n = len(attrs)
        if n < MIN_GROUP:
            continue
        r = np.array([one[a].estimate.ravel() for a in attrs])
        v = np.array([np.broadcast_to(one[a].variance, one[a].values.shape).ravel() for a in attrs])
        sigma2 = v.mean(axis=1)
        mean = r.mean(axis=0)
        tau2_g = max(float(np.sum((r - mean) ** 2)) - (1 - 1 / n) * float(v.sum()), 0.0) / r.size
        uniform = _sure(r, v, np.full(k, 1.0 / k), _lambda(tau2, sigma2), 0.0)
        if _sure(r, v, mean, _lambda(tau2_g, sigma2), 1 / n) < uniform:
            out.update({a: (mean, tau2_g) for a in attrs})
    return out


def shrinkage_priors(measurements: Sequence[Measurement]) -> list[Measurement]:
    """One prior term per measured attribute (module docstring); exact measurements are left alone.

    Each term's ``provenance["shrinkage"]`` is its ``lambda_a``, the weight
    the fit leaves on the attribute's measurements, and ``provenance["target"]``
    says which table it is pulled towards.
    """
    one = pooled_one_way(measurements)
    targets = prior_targets(one, prior_variance(one))
    out = []
    for a, m in one.items():
        k, sigma2 = m.values.size, m.sigma2
        target, tau2 = targets[a]
        var = max(tau2, TAU_FLOOR * sigma2)
        towards = "uniform" if np.allclose(target, 1.0 / k) else f"mean table of the {k}-category attributes"
        out.append(Measurement(m.domain, target.reshape(m.values.shape), m.n, {"prior": PRIOR}, variance=var,
                               provenance={"prior": PRIOR, "shrinkage": var / (var + sigma2), "target": towards,
                                           "variance": "prior variance pooled over the one-way tables" + (
                                               "" if towards == "uniform" else " of the group")}))
    return out
