"""Local information privacy mechanisms and Bayesian estimators."""
import numpy as np
import pytest

from lopub.oracles.base import ue_bits_from_index
from lopub.oracles.lip import (
    LHLIP,
    RRLIP,
    UELIP,
    BinaryBoundedLIP,
    ChannelLIP,
    lip_level,
    optimal_lip_matrix,
)
from lopub.oracles.lip_channel import (
    grr_matrix,
    inversion_variance,
    lip_fallback_channel,
    max_grr_epsilon,
)

# priors where RR-LIP is invalid; the first two gave rank-deficient LP channels
_RNG = np.random.default_rng(20260)
FALLBACK_CASES = [([0.1, 0.2, 0.7], 1.0), ([0.2, 0.8], 0.5)] + [
    (_RNG.dirichlet(np.full(k, 0.6)).tolist(), eps)
    for k, eps in [(2, 0.3), (3, 2.0), (4, 1.0), (5, 0.5), (6, 1.5), (8, 2.0), (12, 1.0)]]


def test_rr_lip_validity_failure_caught():
    with pytest.raises(ValueError, match=r"prior minimum \(0.1\) must be >= 1/\(e\^eps \+ 1\)"):
        RRLIP([0.1, 0.2, 0.7], 1.0)
    # the message reports the true LIP level of the paper's matrix (1.90)
    with pytest.raises(ValueError, match=r"true LIP level would be 1.9"):
        RRLIP([0.1, 0.2, 0.7], 1.0)


def _check_useful_channel(q, priors, eps, var_prior):
    k = q.shape[0]
    np.testing.assert_allclose(q.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.all(q >= 0)
    for p in priors:
        assert lip_level(q, p) <= eps * (1 + 1e-12)
    assert np.linalg.matrix_rank(q) == k
    assert inversion_variance(q, var_prior) <= inversion_variance(grr_matrix(k, eps), var_prior)


@pytest.mark.parametrize(("prior", "eps"), FALLBACK_CASES)
def test_rr_lip_fallback_full_rank_lip_and_beats_grr(prior, eps):
    prior = np.array(prior)
    if prior.min() >= 1 / (np.exp(eps) + 1):
        pytest.skip("prior valid for RR-LIP")
    mech = RRLIP(prior, eps, on_invalid="lp")
    assert mech.mechanism == "lp"
    _check_useful_channel(mech.matrix, [prior], eps, prior)
    # inversion is exactly unbiased for any data: Q^T f recovered
    for f in (prior, np.random.default_rng(7).dirichlet(np.ones(prior.size))):
        np.testing.assert_allclose(
            mech.estimate_from_counts(f @ mech.matrix * 1000, 1000, "invert"), f, atol=1e-10)


def test_fallback_strictly_better_than_grr_at_paper_prior():
    # (0.1, 0.2, 0.7), eps = 1: GRR at eps has inversion variance 4.82, the fallback 3.23
    mech = RRLIP([0.1, 0.2, 0.7], 1.0, on_invalid="lp")
    grr = inversion_variance(grr_matrix(3, 1.0), mech.prior)
    assert mech.fallback.variance == pytest.approx(inversion_variance(mech.matrix, mech.prior))
    assert mech.fallback.variance < 0.7 * grr


def test_lp_optimum_can_be_degenerate_but_fallback_is_not():
    lp = optimal_lip_matrix([0.2, 0.8], 0.5)
    assert np.linalg.matrix_rank(lp) < 2  # the LP alone gives no information here
    fb = lip_fallback_channel([0.2, 0.8], 0.5)
    assert np.linalg.matrix_rank(fb.matrix) == 2 and 0 <= fb.t <= 1


@pytest.mark.parametrize(("prior", "eps"), FALLBACK_CASES[:4])
def test_max_grr_epsilon_is_the_lip_boundary(prior, eps):
    e = max_grr_epsilon([prior], eps)
    assert eps < e <= 2 * eps
    k = len(prior)
    assert lip_level(grr_matrix(k, e), prior) <= eps
    assert lip_level(grr_matrix(k, e * (1 + 1e-6)), prior) > eps


def test_invert_refuses_singular_channel():
    # a constant channel is 0-LIP for any prior and carries no information
    mech = ChannelLIP([0.2, 0.8], 0.5, [[0.0, 1.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match=r"method \('invert'\) needs an invertible channel"):
        mech.estimate_from_counts([0.0, 10.0], 10, "invert")
    rank2 = optimal_lip_matrix([0.1, 0.2, 0.7], 1.0)  # an output never used
    mech = ChannelLIP([0.1, 0.2, 0.7], 1.0, rank2)
    with pytest.raises(ValueError, match="condition number"):
        mech.estimate(np.array([1, 2, 2, 1]), "invert")
    assert np.all(np.isfinite(mech.estimate(np.array([1, 2, 2, 1]), "bayes")))


def test_channel_lip_validates_matrix():
    prior = [0.3, 0.7]
    ok = RRLIP(prior, 1.0).matrix
    assert np.array_equal(ChannelLIP(prior, 1.0, ok).matrix, ok)
    with pytest.raises(ValueError, match=r"matrix \(shape \(3, 3\)\) must have shape \(2, 2\)"):
        ChannelLIP(prior, 1.0, np.eye(3))
    with pytest.raises(ValueError, match="rows must sum to 1"):
        ChannelLIP(prior, 1.0, [[0.5, 0.4], [0.3, 0.7]])
    with pytest.raises(ValueError, match=r"LIP level .* above epsilon \(0.5\)"):
        ChannelLIP(prior, 0.5, ok)
    with pytest.raises(ValueError, match="finite probabilities >= 0"):
        ChannelLIP(prior, 1.0, [[1.2, -0.2], [0.3, 0.7]])


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
    assert mech.worst_case_level() <= 1.0 * (1 + 1e-12)
    ok = BinaryBoundedLIP(0.1, 0.9, 1.0)
    assert ok.mechanism == "prop2"
    assert ok.worst_case_level() <= 1.0 + 1e-9


@pytest.mark.parametrize(("lower", "upper", "eps"),
                         [(0.2, 0.4, 1.0), (0.79, 0.8, 0.5), (0.05, 0.1, 0.2), (0.8, 0.8, 0.5)])
def test_binary_bounded_fallback_full_rank_and_beats_grr(lower, upper, eps):
    mech = BinaryBoundedLIP(lower, upper, eps, on_invalid="lp")
    assert mech.mechanism == "lp"
    _check_useful_channel(mech.matrix, [[1 - lower, lower], [1 - upper, upper]], eps, mech.prior)
    f = np.array([0.9, 0.1])
    np.testing.assert_allclose(mech.estimate_from_counts(f @ mech.matrix * 50, 50, "invert"), f,
                               atol=1e-10)


def test_lh_lip_g_kind():
    with pytest.raises(TypeError, match=r"g \(2.5\) must be an integer"):
        LHLIP([0.2] * 5, 1.0, g=2.5)
    with pytest.raises(ValueError, match=r"g \(1\) must be an integer >= 2"):
        LHLIP([0.2] * 5, 1.0, g=1)


def test_prior_errors():
    with pytest.raises(ValueError, match="must be positive and sum to 1"):
        RRLIP([0.5, 0.6], 1.0)
    with pytest.raises(ValueError, match=r"lower \(0.5\) must be <= upper \(0.2\)"):
        BinaryBoundedLIP(0.5, 0.2, 1.0)
