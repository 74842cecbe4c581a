"""Statistical recovery on the embedded census-like dataset (slow job)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lopub.client.encode import encode
from lopub.datasets import embedded
from lopub.estimate import Estimator
from lopub.reports.spec import CollectionSpec

pytestmark = pytest.mark.slow

N = 20000


@pytest.fixture(scope="module", params=[0.3, 0.5])
def setting(request):
    data = embedded(N, rng=11)
    spec = CollectionSpec.from_domain(data.domain, f=request.param)
    return data, spec, encode(data, spec, rng=12)


def _ols_sd(data, spec, attrs):
    """Per-cell sd of the unconstrained moment estimator given the records (see test_estimate_core)."""
    sigma2 = spec.f / 2 * (1 - spec.f / 2)
    c = []
    for a in attrs:
        H = spec.bloom[spec.domain.index(a)].astype(float)
        c.append(sigma2 * (np.linalg.pinv((1 - spec.f) * H) ** 2).sum(axis=0))
    counts = data.project(list(attrs)).values * data.n
    # sum_t N[t] prod_j (1[t_j = w_j] + c_j[w_j]) for all w at once (k = 2)
    A = np.diag(np.ones(len(c[0]))) + c[0][None, :]  # [t, w]
    B = np.diag(np.ones(len(c[1]))) + c[1][None, :]
    second = A.T @ counts @ B
    return np.sqrt(np.maximum(second - counts, 0) / data.n**2)


PAIRS = [("sex", "income"), ("education", "occupation"), ("age_group", "marital"),
         ("native_region", "race"), ("relationship", "household_size")]


@pytest.mark.parametrize("method", ["em", "moment"])
def test_pairs_recovered_within_standard_errors(setting, method):
    data, spec, rep = setting
    est = Estimator(rep, method, solver="ols", postprocess="none") if method == "moment" else Estimator(rep)
    for pair in PAIRS:
        m = est.marginal(list(pair))
        truth = data.project(list(pair)).values
        sd = _ols_sd(data, spec, pair)
        # 5 sd per cell; at most 40 x 5 = 200 cells per pair, failure probability < 1e-4.
        # EM (the MLE) has at most the variance of this unbiased estimator (asymptotically).
        # The slack 2e-4 covers EM's stopping tolerance (1e-6 per step) and the
        # non-normal tail of cells with a handful of records.
        bad = np.abs(m.values - truth) > 5 * sd + 2e-4
        assert not bad.any(), (pair, float(np.abs(m.values - truth).max()))


def test_triple_em_beats_independence_and_hybrid_close_to_em(setting):
    data, _, rep = setting
    attrs = ["education", "occupation", "sex"]
    truth = data.project(attrs).values
    em = Estimator(rep).marginal(attrs).values
    hy = Estimator(rep, "hybrid").marginal(attrs).values
    ones = [data.project([a]).values for a in attrs]
    ind = np.multiply.outer(np.multiply.outer(ones[0], ones[1]), ones[2])
    avd = lambda p: 0.5 * float(np.abs(p - truth).sum())  # noqa: E731
    assert avd(em) < avd(ind)
    assert avd(hy) <= 1.2 * avd(em) + 0.01
    assert math.isclose(em.sum(), 1.0) and math.isclose(hy.sum(), 1.0)
