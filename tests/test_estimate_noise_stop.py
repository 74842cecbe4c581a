"""EM's stop rule "noise" (lopub/estimate/em.py): early where the Bloom noise swamps every cell, else unchanged."""
from __future__ import annotations

import numpy as np
import pytest

from lopub.client.encode import encode
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.estimate import estimate
from lopub.estimate.em import NOISE_FRACTION, NOISE_GAP, NOISE_SE
from lopub.estimate.em_estimator import noise_se
from lopub.reports.spec import CollectionSpec

from tests.test_estimate_core import ols_cell_variance, small  # noqa: F401  (fixture)


def _reports(n: int, f: float, *, m: int, h: int, seed: int = 3):
    dom = Domain.from_categories({"a": [f"a{i}" for i in range(4)], "b": ["b0", "b1", "b2"]})
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(12)).reshape(4, 3)
    flat = rng.choice(12, size=n, p=p.ravel())
    data = Dataset(np.stack(np.unravel_index(flat, p.shape), axis=1), dom)
    spec = CollectionSpec.from_domain(dom, f=f, m=m, h=h)
    return data, spec, encode(data, spec, rng=seed + 1)


@pytest.fixture(scope="module")
def swamped():
    """60 users at f = 0.986, one hash (the demo's 69 users at epsilon 0.74 are like this)."""
    return _reports(60, 0.986, m=16, h=1)


def test_noise_se_is_the_moment_estimators_noise_part(small):  # noqa: F811
    data, spec, rep = small
    for attrs in (["a"], ["a", "c"], ["a", "b", "c"]):
        floor = noise_se(rep, attrs)
        exact = np.sqrt(ols_cell_variance(data, spec, attrs))
        assert floor.shape == exact.shape
        assert np.all(floor <= exact + 1e-12)  # the signal adds variance
        assert np.all(floor >= 0.8 * exact - 0.01)  # and not much at f = 0.3


def test_noise_dominated_em_stops_early_within_a_fraction_of_a_standard_error(swamped):
    _, _, rep = swamped
    se = noise_se(rep, ["a", "b"])
    assert se.min() >= NOISE_SE
    plain = estimate(rep, ["a", "b"], "em", noise_stop=False)
    full = estimate(rep, ["a", "b"], "em", noise_stop=False, tol=1e-10, max_iter=200000)
    fast = estimate(rep, ["a", "b"], "em")
    assert plain.meta["stop_rule"] == "max_change" and "noise_se" not in plain.meta
    assert fast.meta["stop_rule"] == "noise" and fast.meta["converged"]
    assert "noise-dominated" in fast.meta["noise_reason"]
    assert fast.meta["noise_se"] == pytest.approx(se.min())
    assert fast.meta["iterations"] * 20 <= plain.meta["iterations"]
    # within a small fraction of a standard error of the fully converged fit, cell by cell
    assert np.max(np.abs(fast.values - full.values) / se) <= NOISE_FRACTION
    # and the log-likelihood gap is a bound: what EM could still gain
    assert fast.meta["loglik_gap"] <= NOISE_GAP
    assert full.meta["loglik"] - fast.meta["loglik"] <= fast.meta["loglik_gap"] + 1e-9


def test_informative_fits_are_unchanged(small):  # noqa: F811
    _, _, rep = small
    for method in ("em", "hybrid"):
        for attrs in (["a", "c"], ["a", "b", "c"]):
            assert noise_se(rep, attrs).max() < NOISE_SE
            on = estimate(rep, attrs, method)
            off = estimate(rep, attrs, method, noise_stop=False)
            assert np.array_equal(on.values, off.values)
            assert np.array_equal(on.variance, off.variance)
            assert on.meta["iterations"] == off.meta["iterations"]
            assert on.meta["stop_rule"] == "max_change" and "noise_se" not in on.meta


def test_noise_rule_waits_while_the_data_still_pull():
    """A step that gains much log-likelihood keeps EM going even with the rule on."""
    from lopub.estimate.em import run_em

    target = np.array([0.7, 0.2, 0.1])

    def step(p):  # EM-like map whose gap, n (max F/p - 1), stays large until near the target
        return target + 0.5 * (p - target), 0.0

    res = run_em(step, np.full(3, 1 / 3), tol=1e-12, max_iter=1000, noise_gap=NOISE_GAP, users=1000,
                 accelerate=False)
    assert res.noise and res.iterations >= 10  # 1000 * (max F/p - 1) <= 0.05 only near the target
    assert np.max(np.abs(res.p - target)) <= 1e-4
    few = run_em(step, np.full(3, 1 / 3), tol=1e-12, max_iter=1000, noise_gap=NOISE_GAP, users=1,
                 accelerate=False)  # one user: the same gains are worth 1000 times less
    assert few.noise and few.iterations <= res.iterations - 9 and few.gap <= NOISE_GAP
