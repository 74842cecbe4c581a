"""Each estimator's per-cell variance against the empirical spread over repeated collections.

A fixed 2 x 3 table; every repetition draws N records from it, encodes them
with fresh randomness and estimates the pair (and, for the Lasso, a one-way
marginal).  For each cell, ``s^2`` over R repetitions of a normal estimate
with variance ``sigma^2`` has ``(R - 1) s^2 / sigma^2 ~ chi2(R - 1)``; the
ratio of ``s^2`` to the mean recorded variance must lie inside the
two-sided chi-square interval at level 1e-6 (Bonferroni over the cells), so
a correct variance fails with probability < 1e-6 whatever the seed.
Conservative variances (the shrunk, constrained moment fit; EM's
moment-sandwich bound for large tables; the Lasso's range bound for k = 2)
are checked one-sided: the spread is not above them.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2

from lopub.client.encode import encode
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.estimate import Estimator
from lopub.reports.spec import CollectionSpec

pytestmark = pytest.mark.slow

DOM = Domain.from_categories({"a": ["a0", "a1"], "b": ["b0", "b1", "b2"]})
TRUTH = np.array([[0.25, 0.10, 0.15], [0.10, 0.25, 0.15]])
N, REPS, LEVEL = 3000, 200, 1e-6
CASES = {  # name: (method, options, attributes, two-sided?)
    "em": ("em", {}, ["a", "b"], True),
    "em-sandwich-bound": ("em", {"information_cells": 0}, ["a", "b"], False),
    "hybrid": ("hybrid", {}, ["a", "b"], True),
    "moment-ols": ("moment", {"solver": "ols", "shrink": "none", "postprocess": "none"}, ["a", "b"], True),
    "moment": ("moment", {}, ["a", "b"], False),
    "lasso-1way": ("lasso", {}, ["b"], True),
    "lasso-2way": ("lasso", {}, ["a", "b"], False),
}


@pytest.fixture(scope="module", params=[0.3, 0.6])
def runs(request):
    spec = CollectionSpec.from_domain(DOM, f=request.param, m=16, h=2)
    rng = np.random.default_rng()
    out = {name: ([], []) for name in CASES}
    for _ in range(REPS):  # repetitions of a whole collection; each is vectorized
        flat = rng.choice(TRUTH.size, size=N, p=TRUTH.ravel())
        rep = encode(Dataset(np.stack(np.unravel_index(flat, TRUTH.shape), axis=1), DOM), spec, rng=rng)
        for name, (method, opts, attrs, _) in CASES.items():
            m = Estimator(rep, method, **opts).marginal(attrs)
            out[name][0].append(m.estimate)
            out[name][1].append(m.variance)
    return {k: (np.array(e), np.array(v)) for k, (e, v) in out.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_variance_matches_empirical_spread(runs, name):
    est, var = runs[name]
    cells = est[0].size
    df = REPS - 1
    lo = chi2.ppf(LEVEL / (2 * cells), df) / df
    hi = chi2.ppf(1 - LEVEL / (2 * cells), df) / df
    ratio = est.var(axis=0, ddof=1) / var.mean(axis=0)
    assert np.all(ratio <= hi), (name, ratio.round(3).tolist(), hi)
    if CASES[name][3]:
        assert np.all(ratio >= lo), (name, ratio.round(3).tolist(), lo)
