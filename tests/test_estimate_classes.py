"""Estimator classes, registry, declared options, shared cache, budget and Measurements (fast)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from lopub.client.encode import encode
from lopub.data.dataset import Dataset
from lopub.dependency import MarginalCache
from lopub.data.domain import Domain
from lopub.errors import BudgetError
from lopub.estimate import (METHODS, REGISTRY, AttributeCache, EMEstimator, Estimator, HybridEstimator,
                            InvalidOptionError, LassoEstimator, MomentEstimator, defaults, describe)
from lopub.estimate.measurement import Measurement, multinomial_variance
from lopub.estimate.protocols import MarginalEstimator, MarginalSource
from lopub.reports.spec import CollectionSpec

from test_estimate_core import ols_cell_variance

DOM = Domain.from_categories({"a": ["a0", "a1", "a2"], "b": ["b0", "b1"], "c": ["c0", "c1", "c2", "c3"]})


def _data(n: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(24, 3.0)).reshape(3, 2, 4)
    flat = rng.choice(p.size, size=n, p=p.ravel())
    return Dataset(np.stack(np.unravel_index(flat, p.shape), axis=1), DOM)


@pytest.fixture(scope="module")
def small():
    data = _data(4000, 1)
    spec = CollectionSpec.from_domain(DOM, f=0.4, m=16, h=2)
    return data, encode(data, spec, rng=2)


def test_registry_is_the_one_list_of_methods():
    assert METHODS == tuple(REGISTRY) == ("em", "lasso", "moment", "hybrid", "hybrid-lasso")
    assert defaults("moment")["max_iter"] == 20000 and defaults("em")["max_iter"] == 10000
    assert defaults("hybrid-lasso")["support"] == "lasso" and defaults("hybrid")["support"] == "moment"
    assert defaults("em")["postprocess"] == "clip"
    assert describe("moment")["shrink"][0] == "js" and "interaction" in describe("moment")["shrink"][1]
    for name, entry in REGISTRY.items():
        assert set(entry.cls.Options.describe()) == set(entry.cls.Options.names()), name
    with pytest.raises(ValueError, match=r"method \('x'\) must be one of"):
        defaults("x")


def test_facade_returns_the_registered_class(small):
    _, rep = small
    kinds = {"em": EMEstimator, "lasso": LassoEstimator, "moment": MomentEstimator,
             "hybrid": HybridEstimator, "hybrid-lasso": HybridEstimator}
    for method in METHODS:
        est = Estimator(rep, method)
        assert type(est) is kinds[method] and est.method == method
    alias = Estimator(rep, "hybrid-lasso", support="moment")  # the name fixes the support
    assert alias.options.support == "lasso"
    assert alias.marginal(["a", "b"]).meta["support_method"] == "lasso"
    # options of other methods are checked, then ignored (as before the split)
    assert Estimator(rep, "em", shrink="none").options == EMEstimator(rep).options
    with pytest.raises(ValueError, match="shrink"):
        Estimator(rep, "em", shrink="bogus")


def test_protocols_are_satisfied(small):
    data, rep = small
    assert isinstance(data, MarginalSource) and data.marginal(["a"]).values.shape == (3,)
    for method in METHODS:
        est = Estimator(rep, method)
        assert isinstance(est, MarginalEstimator) and isinstance(est, MarginalSource)
        assert est.n == rep.n and est.domain == DOM
    cache = MarginalCache(Estimator(rep, "moment"))
    assert isinstance(cache, MarginalSource) and cache.domain == DOM
    assert isinstance(cache.marginal(["b", "a"]), Measurement)
    exact = MarginalCache(data)
    assert np.array_equal(exact.marginal(["c"]).values, data.project(["c"]).values)
    with pytest.raises(TypeError, match=r"source \(object\) must be a MarginalSource"):
        MarginalCache(object())


def test_options_are_declared_and_checked_in_one_place(small):
    _, rep = small
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['shrink'\] for this estimator"):
        EMEstimator(rep, shrink="js")
    with pytest.raises(InvalidOptionError, match=r"tol \(0\) must be a finite number > 0"):
        EMEstimator(rep, tol=0)
    with pytest.raises(ValueError, match=r"mix \(1.5\) must be a number in \[0, 1\)"):
        HybridEstimator(rep, mix=1.5)
    with pytest.raises(TypeError, match=r"accelerate \('yes'\) must be True or False"):
        EMEstimator(rep, accelerate="yes")
    with pytest.raises(ValueError, match=r"max_iter \(0\) must be an integer >= 1"):
        MomentEstimator(rep, max_iter=0)
    assert issubclass(InvalidOptionError, ValueError) and issubclass(InvalidOptionError, TypeError)
    o = MomentEstimator(rep, shrink_alpha=1).options
    assert o.shrink_alpha == 1.0 and isinstance(o.shrink_alpha, float)


def test_attribute_cache_is_shared_and_bounded(small):
    _, rep = small
    cache = AttributeCache(rep)
    em = EMEstimator(rep, cache=cache)
    mom = MomentEstimator(rep, cache=cache)
    em.marginal(["a", "c"])
    lik = cache.likelihood("a")
    mom.marginal(["a", "c"])
    assert EMEstimator(rep, cache=cache).cache.likelihood("a") is lik
    assert np.array_equal(em.marginal(["a", "c"]).values, EMEstimator(rep).marginal(["a", "c"]).values)
    tiny = AttributeCache(rep, memory_budget=1)
    first = tiny.likelihood("a")
    tiny.likelihood("b")
    assert tiny.likelihood("b") is tiny.likelihood("b") and tiny.likelihood("a") is not first
    other = encode(_data(100, 3), rep.spec, rng=4)
    with pytest.raises(ValueError, match="same reports"):
        EMEstimator(other, cache=cache)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_returns_a_measurement(small, method):
    _, rep = small
    m = Estimator(rep, method).marginal(["c", "a"])
    assert isinstance(m, Measurement) and m.attrs == ("c", "a") and m.n == rep.n
    assert m.variance.shape == (4, 3) and np.all(np.isfinite(m.variance)) and m.variance.min() >= 0
    assert m.variance.max() > 0
    prov = m.provenance
    assert prov["protocol"] == "bloom" and prov["estimator"] == method and prov["postprocess"] == "clip"
    assert prov["variance"] in ("observed-information", "sandwich", "range-bound")
    again = Estimator(rep, method).marginal(["a", "c"])
    assert np.array_equal(again.variance.T, m.variance)


def test_raw_kept_only_when_postprocessing_changes_the_table(small):
    _, rep = small
    none = Estimator(rep, "moment", solver="ols", shrink="none", postprocess="none").marginal(["a", "b", "c"])
    clip = Estimator(rep, "moment", solver="ols", shrink="none").marginal(["a", "b", "c"])
    assert none.raw is None
    if none.values.min() < 0:  # f = 0.4, n = 4000: some of the 24 cells are negative
        assert np.array_equal(clip.raw, none.values) and clip.values.min() >= 0
    assert Estimator(rep, "em").marginal(["a", "b"]).raw is None  # EM is on the simplex already


@pytest.mark.parametrize("method", METHODS)
def test_max_cells_bounds_every_table_and_check_refuses_before_work(small, method):
    _, rep = small
    subsets = [s for k in (1, 2, 3) for s in itertools.combinations(DOM.attrs, k)]
    for budget in (20_000, 200_000, 2_000_000, 50_000_000):
        est = Estimator(rep, method, memory_budget=budget)
        cap = est.max_cells()
        for s in subsets:
            if DOM.cells(list(s)) <= cap:
                est.check(list(s))  # never raises within max_cells
        assert Estimator(rep, method, memory_budget=budget * 10).max_cells() >= cap
    calls = []
    est = Estimator(rep, method, memory_budget=1000, progress=lambda i, n: calls.append(i))
    with pytest.raises(BudgetError, match="memory_budget"):
        est.check(["a", "b", "c"])
    with pytest.raises(BudgetError):
        est.marginal(["a", "b", "c"])
    assert calls == [] and est.max_cells() < 24


def test_em_variance_is_multinomial_for_nearly_exact_reports():
    """f -> 0: the likelihood rows are indicators, I = diag(n/p) and Var = p (1 - p) / n."""
    data = _data(3000, 5)
    rep = encode(data, CollectionSpec.from_domain(DOM, f=0.001, m=32, h=4), rng=6)
    m = EMEstimator(rep).marginal(["a", "c"])
    assert m.provenance["variance"] == "observed-information"
    np.testing.assert_allclose(m.variance, multinomial_variance(m.values, rep.n), rtol=0.02)


def test_moment_sandwich_matches_the_analytic_variance():
    """Sandwich = noise variance given the records (exact formula) + record sampling p (1 - p) / n.

    The sandwich estimates a variance from n = 20000 per-user terms; its
    relative error is a few percent here, 25 % is > 6 of its standard errors.
    """
    data = _data(20000, 7)
    spec = CollectionSpec.from_domain(DOM, f=0.3, m=32, h=4)
    rep = encode(data, spec, rng=8)
    m = MomentEstimator(rep, solver="ols", shrink="none", postprocess="none").marginal(["a", "c"])
    truth = data.project(["a", "c"]).values
    expected = ols_cell_variance(data, spec, ["a", "c"]) + multinomial_variance(truth, data.n)
    np.testing.assert_allclose(m.variance, expected, rtol=0.25)
    assert m.provenance["variance"] == "sandwich"


def test_em_variance_bound_for_large_tables_is_conservative(small):
    """Above ``information_cells`` EM records the unbiased moment estimator's variance.

    EM is the MLE, asymptotically at least as efficient (Cramer-Rao) in every
    cell; the 0.8 allows for both variances being estimated from 4000 users.
    """
    _, rep = small
    info = EMEstimator(rep).marginal(["a", "c"])
    bound = EMEstimator(rep, information_cells=0).marginal(["a", "c"])
    assert bound.provenance["variance"] == "moment-sandwich-bound"
    assert info.provenance["variance"] == "observed-information"
    assert np.array_equal(info.values, bound.values)
    assert np.all(bound.variance >= 0.8 * info.variance) and bound.variance.sum() > info.variance.sum()


def test_information_from_a_strided_subset_of_users(small):
    """Summing every s-th user and scaling by n / used estimates the full sum.

    Per-user terms are bounded and the subset has 1000 of 4000 users, so the
    variances agree to a few percent; 25 % is far outside the sampling error.
    """
    from lopub.estimate.em_estimator import observed_information, simplex_covariance

    _, rep = small
    est = EMEstimator(rep, chunk_size=777)  # strides must continue across chunks
    p = est.marginal(["a", "c"]).values
    data = est._kway([est.cache.likelihood(a).values for a in ("a", "c")], ["a", "c"])
    full, n_full = observed_information(data, p)
    part, n_part = observed_information(data, p, max_users=1000)
    assert n_full == rep.n and n_part == 1000
    np.testing.assert_allclose(simplex_covariance(part), simplex_covariance(full), rtol=0.25)
    assert not np.allclose(part, full, rtol=1e-9)  # a subset indeed
