"""Shrinkage of the moment estimator (``shrink`` option; fast suite).

Tolerances come from the analytic variance of the projected bits: given the
records, z_j = (s_j - f/2) @ pinv((1 - f) H_j) has E[z_j | w] = e_w and
Cov(z_j | w) = sigma^2 G_j^T G_j with sigma^2 = f/2 (1 - f/2) (independent bits).
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lopub.client.encode import encode
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.estimate import Estimator, estimate
from lopub.estimate import moment as _moment
from lopub.estimate.em import KwayData
from lopub.reports.spec import CollectionSpec

from test_estimate_core import ols_cell_variance

DOM = Domain.from_categories({"a": ["a0", "a1", "a2"], "b": ["b0", "b1", "b2"], "c": ["c0", "c1"]})


def _records(joint: np.ndarray, n: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    flat = rng.choice(joint.size, size=n, p=joint.ravel())
    return Dataset(np.stack(np.unravel_index(flat, joint.shape), axis=1), DOM)


def _dependent_joint() -> np.ndarray:
    """a and b strongly dependent (mostly equal), c depends on a."""
    ab = 0.8 * np.eye(3) / 3 + 0.2 / 9
    c_given_a = np.array([[0.8, 0.2], [0.5, 0.5], [0.2, 0.8]])
    return ab[:, :, None] * c_given_a[:, None, :]


def _pinv(spec: CollectionSpec, attr: str) -> np.ndarray:
    H = spec.bloom[spec.domain.index(attr)].astype(float)
    return np.linalg.pinv((1 - spec.f) * H)  # (m, |O|)


def _one_way_sd(spec: CollectionSpec, attr: str, n: int) -> float:
    """sqrt of E|p_hat - p|^2 for the mean projected bits (given the records)."""
    sigma2 = spec.f / 2 * (1 - spec.f / 2)
    return math.sqrt(sigma2 * float((_pinv(spec, attr) ** 2).sum()) / n)


def _cov_trace(data: Dataset, spec: CollectionSpec, attr: str) -> float:
    """tr Cov(z_j) over users: record part tr(diag(p) - p p^T) plus the noise part."""
    p = data.project([attr]).values
    sigma2 = spec.f / 2 * (1 - spec.f / 2)
    return float(1.0 - p @ p) + sigma2 * float((_pinv(spec, attr) ** 2).sum())


@pytest.mark.parametrize("n", [4000, 64000])
def test_js_factor_tends_to_one_and_estimate_is_consistent(n):
    data = _records(_dependent_joint(), n, seed=n)
    spec = CollectionSpec.from_domain(DOM, f=0.3, m=32, h=4)
    rep = encode(data, spec, rng=None)  # any seed
    attrs = ["a", "b"]
    truth = data.project(attrs).values
    pa, pb = (data.project([x]).values for x in attrs)
    M = truth - np.outer(pa, pb)  # the true interaction (central cross moment)
    # ||M_hat - M|| <= ||P_ols - P|| + ||p_a p_b^T - p_hat_a p_hat_b^T||, each bounded by 6 sd
    sd_ols = math.sqrt(float(ols_cell_variance(data, spec, attrs).sum()))
    da, db = (6 * _one_way_sd(spec, x, n) for x in attrs)
    err = 6 * sd_ols + da * (1 + db) + db
    noise = _cov_trace(data, spec, "a") * _cov_trace(data, spec, "b") / n  # tr V_S (null)
    # 1 - lambda = tr V_hat / |M_hat|^2; factor 2 covers the sampling error of tr K_hat
    one_minus = 2 * noise / (np.linalg.norm(M) - err) ** 2
    assert one_minus < 0.05 * 4000 / n  # shrinks like 1/n

    m = estimate(rep, attrs, "moment")  # default shrink="js"
    lam = m.meta["shrink_factors"]["a*b"]
    assert m.meta["shrink"] == "js" and 1 - one_minus <= lam <= 1
    assert m.meta["shrink_factor"] == pytest.approx(lam)

    # consistency: target = q_a q_b^T + lambda M_hat; the simplex fit in the Q metric
    # is non-expansive towards the truth, which lies in the simplex
    grams = [_moment.gram(rep, x, "centered") for x in attrs]
    conds = [float(np.linalg.cond(g)) for g in grams]
    # one-way fits q_j (simplex, Q_j metric): ||q - p|| <= sqrt(cond_j) ||p_hat - p||, so
    # ||q - p_hat|| <= (sqrt(cond_j) + 1) ||p_hat - p||
    qa, qb = ((math.sqrt(c) + 1) * d for c, d in zip(conds, (da, db)))
    prod_err = qa * 1.0 + (1 + da) * qb  # ||q_a q_b^T - p_hat_a p_hat_b^T||
    target_err = 6 * sd_ols + prod_err + one_minus * (np.linalg.norm(M) + err)
    bound = math.sqrt(conds[0] * conds[1]) * target_err + 1e-6
    assert np.linalg.norm(m.values - truth) <= bound
    assert m.values.min() >= 0 and m.values.sum() == pytest.approx(1.0)


def test_very_high_noise_gives_the_independence_product():
    joint = np.full((3, 3, 2), 1 / 18)  # independent attributes: no interaction to find
    n = 4000
    data = _records(joint, n, seed=1)
    spec = CollectionSpec.from_domain(DOM, f=0.95, m=32, h=4)
    rep = encode(data, spec, rng=None)
    # at level 1e-9 a pure-noise interaction passes the test with probability ~1e-9
    # (Satterthwaite); the sample's own dependence is O(1/sqrt(n)) against noise
    # variances ~ (1 - f)^-2 = 400 times larger per attribute
    est = Estimator(rep, "moment", shrink_alpha=1e-9)
    m = est.marginal(["a", "b", "c"])
    assert m.meta["shrink_factor"] == 0.0
    assert set(m.meta["shrink_factors"]) == {"a*b", "a*c", "b*c", "a*b*c"}
    assert all(v == 0.0 for v in m.meta["shrink_factors"].values())
    ones = [est.one_way(x).values for x in ("a", "b", "c")]
    prod = ones[0][:, None, None] * ones[1][None, :, None] * ones[2][None, None, :]
    assert np.allclose(m.values, prod, atol=1e-7)
    # without shrinkage the same reports give a table far from it (noise)
    none = estimate(rep, ["a", "b", "c"], "moment", shrink="none").values
    assert np.abs(none - prod).sum() > np.abs(m.values - prod).sum()


def test_metadata_records_option_and_factors():
    data = _records(_dependent_joint(), 6000, seed=3)
    spec = CollectionSpec.from_domain(DOM, f=0.5, m=32, h=4)
    rep = encode(data, spec, rng=4)
    attrs = ["a", "b", "c"]
    js = estimate(rep, attrs, "moment")
    assert js.meta["shrink"] == "js" and js.meta["shrink_alpha"] == 0.05
    assert set(js.meta["shrink_factors"]) == {"a*b", "a*c", "b*c", "a*b*c"}
    assert all(0.0 <= v <= 1.0 for v in js.meta["shrink_factors"].values())
    assert 0.0 <= js.meta["shrink_factor"] <= 1.0
    glob = estimate(rep, attrs, "moment", shrink="global")
    assert glob.meta["shrink"] == "global" and 0.0 <= glob.meta["shrink_factor"] <= 1.0
    none = estimate(rep, attrs, "moment", shrink="none")
    assert none.meta["shrink"] == "none" and none.meta["shrink_factor"] == 1.0
    assert "shrink_factors" not in none.meta
    json.dumps({k: v for k, v in js.meta.items() if k.startswith("shrink")})
    # permuted request: same factors under permuted names, transposed table
    perm = estimate(rep, ["c", "a", "b"], "moment")
    assert np.allclose(perm.values, np.transpose(js.values, (2, 0, 1)))
    # a one-way estimate has nothing to shrink
    assert estimate(rep, ["a"], "moment").meta["shrink_factor"] == 1.0
    # the hybrid keeps its unshrunk moment start: identical with any shrink option
    h1 = estimate(rep, ["a", "b"], "hybrid")
    h2 = estimate(rep, ["a", "b"], "hybrid", shrink="none")
    assert np.array_equal(h1.values, h2.values)


def test_cross_moment_matches_kway_moment():
    rng = np.random.default_rng(0)
    mats = [rng.normal(size=(1000, s)) for s in (3, 1, 4, 2)]
    ref = KwayData(mats, 256, 0).moment()
    got = _moment.cross_moment([np.ascontiguousarray(x.T) for x in mats], chunk_size=300)
    assert np.allclose(got, ref, atol=1e-12)


@pytest.mark.parametrize("opts, name", [({"shrink": "lasso"}, "shrink"), ({"shrink": None}, "shrink"),
                                        ({"shrink_alpha": 0}, "shrink_alpha"),
                                        ({"shrink_alpha": 1.5}, "shrink_alpha"),
                                        ({"shrink_alpha": "0.05"}, "shrink_alpha")])
def test_bad_shrink_options_raise(opts, name):
    data = _records(_dependent_joint(), 200, seed=0)
    rep = encode(data, CollectionSpec.from_domain(DOM, f=0.5, m=16, h=2), rng=0)
    with pytest.raises(ValueError, match=name):
        Estimator(rep, "moment", **opts)
