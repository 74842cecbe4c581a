"""Local information privacy mechanisms and Bayesian estimators."""
import numpy as np
import pytest

from lopub.oracles.base import ue_bits_from_index
from lopub.oracles.lip import (
    LHLIP,
    RRLIP,
    UELIP,
    BinaryBoundedLIP,
    lip_level,
    optimal_lip_matrix,
)


def test_rr_lip_validity_failure_caught():
    with pytest.raises(ValueError, match=r"prior minimum \(0.1\) must be >= 1/\(e\^eps \+ 1\)"):
        RRLIP([0.1, 0.2, 0.7], 1.0)
    # the message reports the true LIP level of the paper's matrix (1.90)
    with pytest.raises(ValueError, match=r"true LIP level would be 1.9"):
        RRLIP([0.1, 0.2, 0.7], 1.0)


def test_rr_lip_lp_fallback_is_lip():
    mech = RRLIP([0.1, 0.2, 0.7], 1.0, on_invalid="lp")
    assert mech.mechanism == "lp"
    np.testing.assert_allclose(mech.matrix.sum(axis=1), 1.0, atol=1e-9)
    assert mech.lip_level() <= 1.0 * (1 + 1e-6)


@pytest.mark.parametrize(("eps", "prior"), [
    (0.5, [0.45, 0.55]), (1.0, [0.3, 0.3, 0.4]), (2.0, [0.15, 0.2, 0.3, 0.35])])
def test_rr_lip_valid_prior(eps, prior):
    prior = np.array(prior)
    k = prior.size
    mech = RRLIP(prior, eps)
    assert mech.mechanism == "rr"
    np.testing.assert_allclose(mech.matrix.sum(axis=1), 1.0)
    assert mech.lip_level() == pytest.approx(eps)
    # Bayesian estimator is exact when the data follow the prior
    np.testing.assert_allclose(mech.estimate_from_counts(prior @ mech.matrix * 100, 100), prior)
    # inversion recovers any distribution
    f = np.random.default_rng(1).dirichlet(np.ones(k))
    np.testing.assert_allclose(
        mech.estimate_from_counts(f @ mech.matrix * 100, 100, "invert"), f, atol=1e-10)


def test_lp_dominates_rr_when_valid():
    prior = np.array([0.3, 0.3, 0.4])
    rr = RRLIP(prior, 1.0).matrix
    lp = optimal_lip_matrix(prior, 1.0)
    assert lip_level(lp, prior) <= 1.0 + 1e-6
    assert prior @ np.diag(lp) >= prior @ np.diag(rr) - 1e-9


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("k", [2, 4, 6])
def test_ue_lip_exact_level_enumerated(eps, k):
    prior = np.random.default_rng(k).dirichlet(np.ones(k) * 2)
    mech = UELIP(prior, eps)
    q = mech.transition_matrix()
    np.testing.assert_allclose(q.sum(axis=1), 1.0, atol=1e-12)
    assert lip_level(q, prior) <= eps * (1 + 1e-12)
    # Bayesian estimator on the enumerated outputs: exact when data follow the prior
    bits = ue_bits_from_index(k)
    out = prior @ q
    post = np.array([mech.estimate(bits[j:j + 1]) for j in range(2**k)])
    np.testing.assert_allclose(out @ post, prior, atol=1e-10)


def test_lh_lip_level_per_hash_and_bayes():
    prior = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    mech = LHLIP(prior, 1.0, g=2)
    rng = np.random.default_rng()
    n = 40_000
    values = rng.choice(5, size=n, p=prior)
    reports = mech.perturb(values, rng=rng)
    for a, b in reports[:30, :2]:
        q = mech.transition_matrix(int(a), int(b))
        np.testing.assert_allclose(q.sum(axis=1), 1.0)
        assert lip_level(q, prior) <= 1.0 * (1 + 1e-12)
    est = mech.estimate(reports)
    f = np.bincount(values, minlength=5) / n
    # posterior means are averages of values in [0, 1]: sd <= 0.5 / sqrt(n), plus sampling
    assert np.all(np.abs(est - f) < 5 * (0.5 + 0.5) / np.sqrt(n))


def test_lh_lip_g_too_large():
    with pytest.raises(ValueError, match=r"g \(5\) must be <= e\^eps \+ 1"):
        LHLIP([0.2] * 5, 1.0, g=5)


def test_binary_bounded_worst_case_checked():
    with pytest.raises(ValueError, match="worst-case LIP level 1.04678"):
        BinaryBoundedLIP(0.2, 0.4, 1.0)
    mech = BinaryBoundedLIP(0.2, 0.4, 1.0, on_invalid="lp")
    assert mech.mechanism == "lp"
    assert mech.worst_case_level() <= 1.0 * (1 + 1e-6)
    ok = BinaryBoundedLIP(0.1, 0.9, 1.0)
    assert ok.mechanism == "prop2"
    assert ok.worst_case_level() <= 1.0 + 1e-9


def test_prior_errors():
    with pytest.raises(ValueError, match="must be positive and sum to 1"):
        RRLIP([0.5, 0.6], 1.0)
    with pytest.raises(ValueError, match=r"lower \(0.5\) must be <= upper \(0.2\)"):
        BinaryBoundedLIP(0.5, 0.2, 1.0)
