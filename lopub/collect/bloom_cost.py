"""Bloom reports in the planner: collision-free filter sizes and the predicted error.

The prediction model is described in :mod:`lopub.collect.planner` (the
``bloom`` family); this module holds its computation: :func:`bloom_m`,
:func:`bloom_unit_noise`, :func:`predict_bloom` (at uniform tables each
pair shape is evaluated once).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any, cast

import numpy as np

from lopub.collect.adaptive import DEFAULT_DEPENDENCE, Profile, _dep
from lopub.collect.cost import expected_tvd, normsub_errors, normsub_uniform
from lopub.data.domain import Domain
from lopub.errors import SpecError

BLOOM_HS = (1, 2, 3, 4)
#: Ratio of the error of LoPub's EM (the maximum-likelihood estimator) to
#: that of the product estimator modelled here, calibrated on simulation
#: (h = 1, 3-4 attributes of 2-6 values, n = 30,000-40,000, epsilon 1.5-24;
#: with it the predictions are within -8 % .. +14 % of EM's error).
BLOOM_EFFICIENCY = 0.85
MAX_BLOOM_M = 1 << 16
#: Largest Bloom matrix (values x m bits) the planner builds to check that filters are distinct.
MAX_BLOOM_MATRIX = 1 << 24
#: Expected number of value pairs sharing a filter above which an ``m`` is not tried.
MAX_EXPECTED_COLLISIONS = 2.0


def bloom_m(domain: Domain, h: int) -> tuple[int, ...]:
    """Per attribute, the smallest ``m`` (paper default 32 / 128, doubled) with distinct filters.

    An ``m`` is tried only where it could work: ``k`` values in ``m`` bits
    at ``h`` hashes share a filter with expected count about
    ``k^2 h! / (2 m^h)`` pairs, and ``m`` values above
    :data:`MAX_EXPECTED_COLLISIONS` are skipped without building the
    ``k x m`` matrix; a matrix above :data:`MAX_BLOOM_MATRIX` bits is not
    built.  Attributes of equal size and name length share no work: the
    filters depend on the name.

    Raises
    ------
    SpecError
        No ``m <= MAX_BLOOM_M`` gives distinct filters within those bounds (naming the attribute).
    """
    from lopub.reports.spec import CollectionSpec

    out = []
    for a in domain.attrs:  # attributes, not users
        k = domain.size(a)
        m = 32 if k <= 2 else 128
        while True:
            hopeless = k * (k - 1) / 2 * math.factorial(h) / float(m) ** h > MAX_EXPECTED_COLLISIONS
            if not hopeless and k * m <= MAX_BLOOM_MATRIX:
                try:
                    CollectionSpec.from_domain(domain.project([a]), f=0.5, m=m, h=h)
                    break
                except SpecError:
                    pass
            if m >= MAX_BLOOM_M or k * m * 2 > MAX_BLOOM_MATRIX:
                raise SpecError(f"attribute {a!r} ({k} values): no Bloom filter size m gives distinct "
                                f"filters at h ({h}) within the planner's bounds (m <= {MAX_BLOOM_M}, "
                                f"values x m <= {MAX_BLOOM_MATRIX} bits); merge its categories "
                                "(lopub schema --bins) or use the protocol one-attribute or marginals")
            m *= 2
        out.append(m)
    return tuple(out)


def bloom_unit_noise(epsilon: float, h: int, d: int) -> float:
    """Per-user noise variance ``u`` of one value's indicator read from its ``h`` bits."""
    x = epsilon / (2.0 * h * d)  # ln(p / q) of one bit
    t, em = math.exp(-x), -math.expm1(-x)
    if em * em == 0.0:  # no information at all (em underflows when squared)
        return math.inf
    return t / (em * em) / h  # q (1 - q) / (p - q)^2 = e^x / (e^x - 1)^2


def predict_bloom(domain: Domain, n: int, epsilon: float, h: int, *,
                  dependence: float = DEFAULT_DEPENDENCE, prior: Any = None,
                  select_edges: bool = True, pairs: Any = None) -> float:
    """Predicted mean 2-way TVD of Bloom reports (module docstring); ``pairs``: the mean over
    these attribute pairs only (a sample, as in :func:`~lopub.collect.adaptive.predict_pair_errors`)."""
    d = len(domain)
    u = bloom_unit_noise(epsilon, h, d)
    scale = BLOOM_EFFICIENCY ** 2 / n
    if d == 1:
        k = domain.sizes[0]
        return normsub_errors(np.full(k, 1.0 / k), u * (1 - 1 / k) * scale)[0]
    profile = prior if isinstance(prior, Profile) else Profile(domain, prior, dependence)
    if not math.isfinite(u):
        return float(np.mean([expected_tvd(math.inf, 0.0, cells=domain.cells(p))
                              for p in itertools.combinations(domain.attrs, 2)]))
    unit = {a: u * (1 - 1 / domain.size(a)) for a in domain.attrs}  # the indicators sum to 1
    if profile.uniform and pairs is None:
        return _uniform_bloom(domain, unit, scale, profile, select_edges)
    todo = list(itertools.combinations(domain.attrs, 2)) if pairs is None else [tuple(p) for p in pairs]
    mse = {a: normsub_errors(profile.probs((a,)), unit[a] * scale)[1] for a in {x for p in todo for x in p}}
    errs = []
    for a, b in todo:  # pairs of attributes, not users
        pa, pb, ua, ub = profile.probs((a,)), profile.probs((b,)), unit[a], unit[b]
        v = (ua * ub + np.add.outer(ub * pa, ua * pb).ravel()) * scale
        err = normsub_errors(profile.probs((a, b)), v)[0]
        if select_edges:  # the model falls back to the product of the one-way tables
            pv = (np.outer(mse[a], pb ** 2) + np.outer(pa ** 2, mse[b])).ravel()
            err = min(err, expected_tvd(pv, profile.bias(a, b), cells=v.size))
        errs.append(err)
    return float(np.mean(errs))


def _uniform_bloom(domain: Domain, unit: dict, scale: float, profile: Profile, select_edges: bool) -> float:
    """:func:`predict_bloom` at uniform tables: each pair shape evaluated once."""
    memo: dict[tuple, float] = {}
    total = 0.0
    size = dict(zip(domain.attrs, domain.sizes))
    dependence = profile.dependence
    scalar = not isinstance(dependence, Mapping)
    for a, b in itertools.combinations(domain.attrs, 2):  # one look-up per pair
        key = (size[a], size[b], cast(float, dependence) if scalar else _dep(dependence, a, b))
        if key not in memo:
            ka, kb, dep = key
            ua, ub = unit[a], unit[b]
            v = (ua * ub + ub / ka + ua / kb) * scale
            err = normsub_uniform(ka * kb, v)[0]
            if select_edges:
                ma, mb = _mse(memo, ka, ua * scale), _mse(memo, kb, ub * scale)
                err = min(err, expected_tvd(ma / (kb * kb) + mb / (ka * ka), 2 * dep / (ka * kb),
                                            cells=ka * kb))
            memo[key] = err
        total += memo[key]
    return total / (len(domain) * (len(domain) - 1) / 2)


def _mse(memo: dict, k: int, var: float) -> float:
    """Per-cell MSE of a uniform ``k``-cell Norm-Sub table (memoized in ``memo``)."""
    key = ("mse", k, var)
    if key not in memo:
        memo[key] = normsub_uniform(k, var)[1]
    return memo[key]
