"""The Lasso's one-way variance: the delta method of the normalized least squares (lopub.estimate.lasso).

Fast checks of the formula; tests/test_estimate_variance.py (slow) checks it against the spread of
repeated collections.
"""
import numpy as np
import pytest

from lopub.client.encode import encode
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.estimate import Estimator
from lopub.estimate.lasso import candidate_matrix, debiased_bit_cov, normalized_variance
from lopub.reports.spec import CollectionSpec


@pytest.mark.parametrize("seed", range(3))
def test_normalized_variance_is_the_delta_method_of_the_normalized_fit(seed):
    rng = np.random.default_rng(seed)
    k, m = 4, 12
    bloom = np.zeros((k, m), dtype=bool)
    for i in range(k):
        bloom[i, rng.choice(m, 2, replace=False)] = True
    p = rng.dirichlet(np.ones(k))
    a = rng.normal(size=(m, m))
    cov = a @ a.T * 1e-4
    X = candidate_matrix([bloom])

    def table(y):
        c = np.linalg.lstsq(X, y, rcond=None)[0]
        return c / c.sum()

    y0, h = X @ p, 1e-6
    J = np.column_stack([(table(y0 + h * e) - table(y0 - h * e)) / (2 * h) for e in np.eye(m)])
    want = np.diag(J @ cov @ J.T)
    got = normalized_variance([bloom], cov, table(y0), float(np.linalg.lstsq(X, y0, rcond=None)[0].sum()))
    assert np.allclose(got, want, rtol=1e-5, atol=1e-14)


def test_bit_cov_is_the_sample_covariance_of_the_debiased_bits_over_n():
    dom = Domain.from_categories({"b": ["b0", "b1", "b2"]})
    spec = CollectionSpec.from_domain(dom, f=0.4, m=8, h=2)
    rng = np.random.default_rng(5)
    rep = encode(Dataset(rng.integers(0, 3, size=(500, 1)), dom), spec, rng=rng)
    bits = rep.attribute_bits("b", 0, rep.n).astype(float)
    want = np.cov(bits, rowvar=False) / (rep.n * (1 - 0.4) ** 2)
    assert np.allclose(debiased_bit_cov(rep, "b", chunk_size=64), want, rtol=1e-10, atol=1e-15)
    m = Estimator(rep, "lasso").marginal(["b"])
    assert m.provenance["variance"] == "normalized-least-squares-delta"
    assert m.variance.shape == (3,) and np.all(m.variance > 0)
