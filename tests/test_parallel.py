"""Many joints at once on a process pool: the same tables as the serial run, and the budget rounds."""
import itertools

import numpy as np
import pytest

from lopub.client import encode
from lopub.datasets import embedded_model
from lopub.dependency import MarginalCache
from lopub.estimate import Estimator
from lopub.estimate.moment_stats import MomentStatistics
from lopub.estimate.parallel import can_fork, plan_rounds, resolve_jobs
from lopub.reports.spec import CollectionSpec

pytestmark = pytest.mark.skipif(not can_fork(), reason="needs the fork start method")


@pytest.fixture(scope="module")
def reports():
    bn = embedded_model()
    data = bn.sample(3000, rng=5)
    return encode(data, CollectionSpec.from_domain(bn.domain, f=0.5), rng=6)


def _pairs(reports, k=5):
    attrs = list(reports.spec.domain.attrs)[:k]
    return [list(p) for p in itertools.combinations(attrs, 2)]


@pytest.mark.parametrize("method", ["em", "moment"])
def test_parallel_is_bit_identical_to_serial(reports, method):
    sets = _pairs(reports) + [list(reports.spec.domain.attrs)[:3]]
    serial = Estimator(reports, method, jobs=1).marginals(sets)
    par = Estimator(reports, method, jobs=2).marginals(sets)
    one_by_one = Estimator(reports, method)
    for s, a, b in zip(sets, serial, par):
        assert a.attrs == b.attrs == tuple(s)
        assert np.array_equal(a.values, b.values) and np.array_equal(a.variance, b.variance)
        assert np.array_equal(one_by_one.marginal(s).values, a.values) or method == "moment"


def test_moment_streaming_matches_in_memory_projection(reports):
    """The sums-over-users path gives the in-memory cross moments (to rounding)."""
    est = Estimator(reports, "moment", shrink="none", solver="ols", postprocess="none", jobs=1)
    a, b = list(reports.spec.domain.attrs)[:2]
    z = [est.cache.projected(x) for x in (a, b)]
    expect = z[0].T @ z[1] / reports.n
    second = (z[0] ** 2).T @ (z[1] ** 2) / reports.n - expect**2
    m = est.marginal([a, b])
    assert np.allclose(m.values, expect, atol=1e-12, rtol=0)
    assert np.allclose(m.variance, np.maximum(second, 0) / reports.n, atol=1e-14, rtol=0)
    one = est.marginal([a])
    assert np.allclose(one.values, z[0].mean(axis=0), atol=1e-12, rtol=0)
    assert np.allclose(one.variance, z[0].var(axis=0) / reports.n, atol=1e-14, rtol=0)


def test_moment_chunking_and_jobs_do_not_change_the_sums(reports):
    attrs = list(reports.spec.domain.attrs)[:4]
    sets = [list(p) for p in itertools.combinations(attrs, 2)] + [attrs[:3]]
    small = Estimator(reports, "moment", jobs=2, chunk_size=700).marginals(sets)
    big = Estimator(reports, "moment", jobs=1).marginals(sets)
    for x, y in zip(small, big):
        assert np.allclose(x.values, y.values, atol=1e-10, rtol=0)


def test_marginal_cache_prefetch_uses_the_pool(reports):
    est = Estimator(reports, "em", jobs=1)
    cache = MarginalCache(est, jobs=2)
    sets = _pairs(reports, 4)
    seen = []
    cache.prefetch(sets, stage="pairs", progress=lambda stage, d, t: seen.append((stage, d, t)))
    assert cache.calls == len(sets) and all(cache.cached(s) for s in sets)
    assert seen[-1] == ("pairs", len(sets), len(sets))
    ref = Estimator(reports, "em", jobs=1)
    for s in sets:
        assert np.array_equal(cache.marginal(s).values, ref.marginal(s).values)


def test_rounds_fit_the_capacity_and_cover_every_set():
    attrs = [f"a{i}" for i in range(8)]
    keys = [tuple(p) for p in itertools.combinations(attrs, 2)]
    size = dict.fromkeys(attrs, 10)
    rounds = plan_rounds(keys, size, 40)
    assert sorted(k for _, ks in rounds for k in ks) == sorted(keys)
    for hold, ks in rounds:
        assert sum(size[a] for a in hold) <= 40 and all(set(k) <= set(hold) for k in ks)
    builds = sum(len(h) for h in rounds_loads(rounds))
    assert builds < len(keys)  # far fewer builds than the LRU worst case (two per pair)


def rounds_loads(rounds):
    """Attributes newly built per round when each round keeps what it shares with the previous one."""
    held = set()
    for hold, _ in rounds:
        yield [a for a in hold if a not in held]
        held = set(hold)


def test_memory_budget_rounds_give_the_same_tables(reports):
    sets = _pairs(reports, 6)
    n_bytes = 8 * reports.n * max(reports.spec.domain.size(a) for a in reports.spec.domain.attrs)
    tight = Estimator(reports, "em", jobs=2)
    tight.cache.memory_budget = 3 * n_bytes  # room for about three attributes
    got = tight.marginals(sets)
    ref = Estimator(reports, "em", jobs=1).marginals(sets)
    for x, y in zip(got, ref):
        assert np.array_equal(x.values, y.values)
    assert tight.cache.nbytes <= 3 * n_bytes


@pytest.mark.parametrize("jobs", [0, -1, 1.5, True, "2"])
def test_bad_jobs_is_rejected(jobs):
    with pytest.raises(ValueError, match="jobs"):
        resolve_jobs(jobs)


def test_bad_jobs_option_is_rejected(reports):
    with pytest.raises(ValueError, match=r"jobs \(0\)"):
        Estimator(reports, "em", jobs=0)
    with pytest.raises(ValueError, match=r"jobs \(0\)"):
        MarginalCache(Estimator(reports, "em"), jobs=0)


def test_statistics_refuse_a_pass_over_other_users():
    st = MomentStatistics()
    st.add_pair_pass(["a"], [2], {"n": 10, "gram": np.eye(3), "gram2": np.eye(2)})
    with pytest.raises(ValueError, match="does not match"):
        st.add_pair_pass(["b"], [2], {"n": 11, "gram": np.eye(3), "gram2": np.eye(2)})


def test_rounds_build_each_attribute_few_times(reports, monkeypatch):
    """Under a cache of 40 % of the arrays, far fewer likelihood builds than one pair after another."""
    import lopub.estimate.cache as cache_mod

    builds = []
    real = cache_mod.attribute_likelihood
    monkeypatch.setattr(cache_mod, "attribute_likelihood", lambda r, a, **k: builds.append(a) or real(r, a, **k))
    attrs = list(reports.spec.domain.attrs)
    pairs = [list(p) for p in itertools.combinations(attrs, 2)]
    counts = []
    for batch in (False, True):
        builds.clear()
        est = Estimator(reports, "em", jobs=1, tol=1e-2)
        keys = [tuple(p) for p in pairs]
        est.cache.memory_budget = int(0.4 * sum(est._attr_bytes(a, keys) for a in attrs))
        if batch:
            est.marginals(pairs)
        else:
            for p in pairs:
                est.marginal(p)
        counts.append(len(builds))
    loop, rounds = counts
    assert rounds < loop and rounds <= 3 * len(attrs)


def test_moment_and_em_variances_hold_no_per_user_arrays(reports):
    """Moment (and EM's moment-sandwich bound) read sums over users: nothing of size n is cached."""
    attrs = list(reports.spec.domain.attrs)
    sets = _pairs(reports, 4) + [[attrs[3], attrs[5]]]  # the last has 640 cells: the EM bound
    mom = Estimator(reports, "moment", jobs=1)
    mom.marginals(sets)
    assert mom.cache.nbytes < reports.n  # a few one-way fits, no (n, |O_j|) array
    em = Estimator(reports, "em", jobs=1, information_cells=100)
    big = em.marginal(sets[-1])
    assert big.provenance["variance"] == "moment-sandwich-bound"
    assert not any(k[0].startswith("z") for k in em.cache._store)
    expect = Estimator(reports, "em", jobs=1).moment_variance(sets[-1])[1]  # in-memory projection
    assert np.allclose(big.variance, expect, rtol=1e-9, atol=1e-18)


def test_workers_are_limited_by_the_budget(reports):
    est = Estimator(reports, "em", jobs=2)
    key = tuple(_pairs(reports, 2)[0])
    per_job = est._job_bytes(key)
    fixed = reports.packed.nbytes + est.cache.nbytes
    est.options = est.options.replace(memory_budget=fixed + per_job + per_job // 2)
    assert est._jobs_within_budget(2, [key]) == 1
    est.options = est.options.replace(memory_budget=fixed + 2 * per_job)
    assert est._jobs_within_budget(2, [key]) == 2


def test_moment_three_way_variance_matches_in_memory(reports):
    attrs = list(reports.spec.domain.attrs)[:3]
    m = Estimator(reports, "moment", jobs=1, solver="ols", shrink="none", postprocess="none").marginal(attrs)
    p_ols, var = Estimator(reports, "em", jobs=1).moment_variance(attrs)  # in-memory projection
    assert np.allclose(m.values, p_ols, atol=1e-12, rtol=0)
    assert np.allclose(m.variance, var, atol=1e-15, rtol=1e-9)


def test_likelihoods_built_by_workers_are_the_serial_ones(reports):
    from lopub.estimate.likelihood import attribute_likelihood
    from lopub.estimate.parallel import likelihoods

    attrs = list(reports.spec.domain.attrs)[:4]
    got = likelihoods(reports, attrs, 2)
    for a in attrs:
        ref = attribute_likelihood(reports, a)
        assert np.array_equal(got[a].values, ref.values) and got[a].offset == ref.offset


def test_likelihood_out_must_fit(reports):
    from lopub.estimate.likelihood import attribute_likelihood

    a = reports.spec.domain.attrs[0]
    with pytest.raises(ValueError, match=r"out \(float64 \(2, 2\)\) must be float64 of shape"):
        attribute_likelihood(reports, a, out=np.zeros((2, 2)))
