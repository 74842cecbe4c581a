"""One-shot oracles: matrices, exact privacy, unbiasedness, check values, vectorized OLH."""
import numpy as np
import pytest

from lopub.oracles.base import ldp_level, ue_bits_from_index
from lopub.oracles.oneshot import BLH, GRR, OLH, OUE, SUE, lh_hash, make_oracle

EPS = [0.5, 1.0, 4.0]


def _expected_support(oracle, f):
    """E[N_v] / n from the enumerated channel (independent of the p, q formulas)."""
    q = oracle.transition_matrix()
    out_probs = f @ q  # distribution over outputs
    if isinstance(oracle, GRR):
        return out_probs
    return out_probs @ ue_bits_from_index(oracle.k).astype(float)


@pytest.mark.parametrize("cls", [GRR, SUE, OUE])
@pytest.mark.parametrize("eps", EPS)
@pytest.mark.parametrize("k", [2, 3, 6])
def test_matrix_rows_privacy_unbiased(cls, eps, k):
    oracle = cls(eps, k)
    q = oracle.transition_matrix()
    np.testing.assert_allclose(q.sum(axis=1), 1.0, atol=1e-12)
    assert ldp_level(q) <= eps * (1 + 1e-12)
    f = np.random.default_rng(k).dirichlet(np.ones(k))
    est = oracle.estimate_from_counts(_expected_support(oracle, f) * 1000, 1000)
    np.testing.assert_allclose(est, f, atol=1e-12)


@pytest.mark.parametrize("cls", [OLH, BLH])
@pytest.mark.parametrize("eps", EPS)
def test_local_hashing_privacy_and_unbiased_support(cls, eps):
    oracle = cls(eps, 6)
    rng = np.random.default_rng(0)
    for a, b in zip(rng.integers(1, 2**31 - 1, 20), rng.integers(0, 2**31 - 1, 20)):
        q = oracle.transition_matrix(int(a), int(b))
        np.testing.assert_allclose(q.sum(axis=1), 1.0, atol=1e-12)
        assert ldp_level(q) <= eps * (1 + 1e-12)
    # a user holding v supports v w.p. p, the others w.p. q = 1/g over hashes
    assert oracle.p == pytest.approx(np.exp(eps) / (np.exp(eps) + oracle.g - 1))
    assert oracle.q == pytest.approx(1 / oracle.g)


def test_universal_hash_collision_rate():
    rng = np.random.default_rng(1)
    a, b = rng.integers(1, 2**31 - 1, 200_000), rng.integers(0, 2**31 - 1, 200_000)
    h = lh_hash(a, b, np.array([3, 17]), 5)
    rate = np.mean(h[:, 0] == h[:, 1])
    sd = np.sqrt(0.2 * 0.8 / 200_000)
    assert abs(rate - 0.2) < 5 * sd


@pytest.mark.parametrize(("eps", "expected"), [
    (0.5, {"grr2": 0.000392, "grr32": 0.007520, "grr1024": 0.243240, "oue": 0.001567,
           "sue": 0.001592}),
    (4.0, {"grr2": 0.000002, "grr32": 0.000003, "grr1024": 0.000037, "oue": 0.000008,
           "sue": 0.000018}),
])
def test_table_check_values(eps, expected):
    n = 10_000
    got = {"grr2": GRR(eps, 2).variance(n), "grr32": GRR(eps, 32).variance(n),
           "grr1024": GRR(eps, 1024).variance(n), "oue": OUE(eps, 8).variance(n),
           "sue": SUE(eps, 8).variance(n)}
    for key, value in expected.items():
        assert round(got[key], 6) == value, key


@pytest.mark.parametrize("eps", EPS)
def test_closed_form_variances(eps):
    e = np.exp(eps)
    assert GRR(eps, 7).variance(100) == pytest.approx((e + 5) / (100 * (e - 1) ** 2))
    assert OUE(eps, 7).variance(100) == pytest.approx(4 * e / (100 * (e - 1) ** 2))
    h = np.exp(eps / 2)
    assert SUE(eps, 7).variance(100) == pytest.approx(h / (100 * (h - 1) ** 2))


def test_exact_variance_reduces_to_approx_when_f_zero():
    o = GRR(1.0, 5)
    assert o.variance(100, 0.0) == pytest.approx(o.variance(100))
    assert o.variance(100, 0.5) > o.variance(100)


@pytest.mark.parametrize("name", ["grr", "sue", "oue", "olh", "blh"])
def test_estimates_within_analytic_sd(name):
    k, n = 8, 40_000
    oracle = make_oracle(name, 2.0, k)
    rng = np.random.default_rng()
    values = rng.integers(0, k, n)
    f = np.bincount(values, minlength=k) / n
    est = oracle.estimate(oracle.perturb(values, rng=rng))
    sd = np.sqrt(oracle.variance(n, f))
    assert np.all(np.abs(est - f) < 5 * sd + 1e-12)


def test_olh_aggregate_matches_direct_hashing():
    oracle = OLH(1.5, 30)
    rng = np.random.default_rng(3)
    reports = oracle.perturb(rng.integers(0, 30, 5000), rng=rng)
    h = lh_hash(reports[:, 0], reports[:, 1], np.arange(30), oracle.g)
    np.testing.assert_array_equal(oracle.aggregate(reports), (h == reports[:, 2:3]).sum(axis=0))


def test_seeded_runs_reproduce():
    o = OUE(1.0, 5)
    v = np.arange(5).repeat(10)
    np.testing.assert_array_equal(o.perturb(v, rng=7), o.perturb(v, rng=7))


def test_input_errors():
    with pytest.raises(ValueError, match=r"epsilon \(-1.0\) must be a finite number > 0"):
        GRR(-1.0, 3)
    with pytest.raises(TypeError, match="k"):
        GRR(1.0, 2.5)
    with pytest.raises(ValueError, match=r"k \(1\) must be an integer >= 2"):
        OUE(1.0, 1)
    with pytest.raises(ValueError, match=r"codes must be in \[0, 2\]"):
        GRR(1.0, 3).perturb(np.array([0, 3]), rng=0)
    with pytest.raises(TypeError, match="integer codes"):
        GRR(1.0, 3).perturb(np.array([0.5]), rng=0)
    with pytest.raises(ValueError, match="must be one of"):
        make_oracle("xyz", 1.0, 3)
    with pytest.raises(ValueError, match=r"n \(0\) must be an integer >= 1"):
        GRR(1.0, 3).estimate_from_counts(np.zeros(3), 0)
    with pytest.raises(ValueError, match="shape"):
        OUE(1.0, 3).aggregate(np.zeros((4, 2), dtype=bool))
