"""lopub.model.pgm.shrink: empirical-Bayes priors on the one-way tables of the model fit."""
import warnings

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.dependency import junction_tree
from lopub.estimate.measurement import Measurement
from lopub.model.pgm import fit_mrf
from lopub.model.pgm.shrink import MIN_GROUP, PRIOR, TAU_FLOOR, pooled_one_way, prior_variance, shrinkage_priors

K, D = 4, 12
DOM = Domain.from_categories({f"x{i}": "0123" for i in range(D)})


def no_edges():
    g = nx.Graph()
    g.add_nodes_from(DOM.attrs)
    return junction_tree(g, DOM)


def one_way(p, sigma, rng):
    """One-way measurements of the rows of ``p`` with per-cell noise variance sigma^2 (sum-zero noise)."""
    out = []
    for a, t in zip(DOM.attrs, p):
        z = rng.normal(0.0, sigma, K)
        z = (z - z.mean()) * np.sqrt(K / (K - 1))
        out.append(Measurement(DOM.project([a]), t + z, 100, variance=sigma ** 2))
    return out


def fitted_one_way(fit):
    return np.array([m.values for m in fit.marginals])


def test_prior_variance_is_the_pooled_excess_spread_over_the_noise():
    rng = np.random.default_rng(0)
    ms = one_way(rng.dirichlet(np.ones(K), D), 0.05, rng)
    one = pooled_one_way(ms)
    dev = sum(np.sum((m.values - 1 / K) ** 2) for m in ms)
    want = max(dev - D * K * 0.05 ** 2, 0.0) / (D * K)
    assert prior_variance(one) == pytest.approx(want, rel=1e-12)
    # fewer than MIN_GROUP tables of a size: no mixture, every prior uniform with the pooled variance
    few = ms[:MIN_GROUP - 1]
    want = max(sum(np.sum((m.values - 1 / K) ** 2) for m in few) - len(few) * K * 0.05 ** 2, 0.0) / (len(few) * K)
    priors = shrinkage_priors(few)
    assert len(priors) == len(few) and all(p.provenance["prior"] == PRIOR for p in priors)
    for p in priors:
        assert np.allclose(p.values, 1 / K) and p.provenance["target"] == "uniform"
        assert p.variance.ravel()[0] == pytest.approx(max(want, TAU_FLOOR * 0.05 ** 2), rel=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_tables_that_are_pure_noise_are_pulled_to_uniform(seed):
    # truth uniform, noise sd 0.1 per cell: tau^2 is at most a fraction of sigma^2 (its
    # estimate has relative sd sqrt(2 / 36) of the noise), so lambda <= ~0.4 and the fit
    # lies at most lambda ||r - u|| from uniform; the plain fit is the simplex projection
    # of r, about ||r - u|| away (u sits 2.5 sd inside the simplex).
    rng = np.random.default_rng(seed)
    ms = one_way(np.full((D, K), 1 / K), 0.1, rng)
    tree = no_edges()
    plain = fitted_one_way(fit_mrf(DOM, tree, ms, tol=1e-10))
    shrunk = fit_mrf(DOM, tree, ms, tol=1e-10, priors=shrinkage_priors(ms))
    d_plain = np.linalg.norm(plain - 1 / K)
    d_shrunk = np.linalg.norm(fitted_one_way(shrunk) - 1 / K)
    assert d_shrunk <= 0.6 * d_plain


@pytest.mark.parametrize("seed", range(3))
def test_tables_clear_of_their_noise_are_kept(seed):
    rng = np.random.default_rng(seed)
    p = 0.9 * rng.dirichlet(np.full(K, 0.5), D) + 0.1 / K
    sigma = 1e-3
    ms = one_way(p, sigma, rng)
    priors = shrinkage_priors(ms)
    assert min(pr.provenance["shrinkage"] for pr in priors) > 0.99
    tree = no_edges()
    plain = fitted_one_way(fit_mrf(DOM, tree, ms, tol=1e-12))
    shrunk = fitted_one_way(fit_mrf(DOM, tree, ms, tol=1e-12, priors=priors))
    # the posterior mean moves each cell by (1 - lambda) |r - u| <= 0.01 * 1
    assert np.max(np.abs(shrunk - plain)) <= 0.01


def test_goodness_of_fit_counts_the_measurements_only():
    rng = np.random.default_rng(3)
    sigma = 0.05
    ms = one_way(np.full((D, K), 1 / K), sigma, rng)
    tree = no_edges()
    plain = fit_mrf(DOM, tree, ms, tol=1e-10)
    shrunk = fit_mrf(DOM, tree, ms, tol=1e-10, priors=shrinkage_priors(ms))
    assert shrunk.dof == plain.dof
    mu = fitted_one_way(shrunk)
    r = np.array([m.values for m in ms]) - mu
    r = r - r.mean(axis=1, keepdims=True)
    chi2 = float(np.sum(r ** 2)) * (K - 1) / K / sigma ** 2
    assert shrunk.chi2 == pytest.approx(chi2, rel=1e-6)


def balanced(n, d, seed):
    """n records of d independent columns, each with exactly uniform counts (truth: uniform one-ways)."""
    rng = np.random.default_rng(seed)
    cols = {f"c{i}": rng.permutation(np.arange(n) % K).astype(str) for i in range(d)}
    return Dataset.from_pandas(pd.DataFrame(cols),
                                  Domain.from_categories({f"c{i}": "0123" for i in range(d)}))


@pytest.mark.parametrize("seed", range(3))
def test_fit_shrinks_a_noise_dominated_release_by_default(seed):
    # 200 records, 10 columns, epsilon 1, one attribute per user: 20 users per table, whose
    # plain fit is a few spikes (mean one-way TVD about 0.5) where uniform is exact
    from lopub.collect import collect
    from lopub.pipeline.steps import fit

    data = balanced(200, 10, seed)
    reports, _ = collect(data, 1.0, protocol="one-attribute", rng=seed)
    out = {}
    for shrink in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a release of pure noise may be flagged; not what is tested
            res = fit(reports, shrink=shrink)
        out[shrink] = np.mean([0.5 * np.abs(res.model.project([a]).values - 1 / K).sum() for a in data.domain.attrs])
        summary = res.report.to_dict()["model_fit"]
        assert (summary["shrinkage"] is None) == (not shrink)
    assert out[True] < 0.5 * out[False]


def shared_shape_one_way(d, p1, sigma, rng):
    """One-way measurements of ``d`` binary attributes all near P(1) = ``p1`` (sd 0.02), noise sd ``sigma``."""
    dom = Domain.from_categories({f"b{i}": "01" for i in range(d)})
    truth = np.clip(p1 + rng.normal(0, 0.02, d), 0.01, 0.99)
    ms = []
    for a, t in zip(dom.attrs, truth):
        z = rng.normal(0.0, sigma)
        ms.append(Measurement(dom.project([a]), np.array([1 - t - z, t + z]), 100, variance=sigma ** 2))
    return dom, truth, ms


@pytest.mark.parametrize("seed", range(5))
def test_attributes_of_a_shared_shape_are_pulled_towards_their_mean_table(seed):
    # 40 rare binary items (P(1) about 0.1, spread 0.02), noise sd 0.05: uniform is 0.4 away from
    # every table, so its lambda is about 0.98; the mean table is about 0.02 away, lambda about 0.14
    rng = np.random.default_rng(seed)
    dom, truth, ms = shared_shape_one_way(40, 0.1, 0.05, rng)
    priors = shrinkage_priors(ms)
    # a table about 3 noise sd off the others (probability ~0.005 each) may fall to the wide uniform
    # component, which leaves it nearly unshrunk; 8 of 40 such tables have probability ~1e-10
    towards_mean = [p.provenance["target"].startswith("mean table") for p in priors]
    assert sum(towards_mean) >= 0.8 * len(priors)
    ones = np.array([m.values[1] for m in ms])
    for i, p in enumerate(priors):  # each pulled towards the mean of the *other* tables
        if towards_mean[i]:
            others = (ones.sum() - ones[i]) / (len(ms) - 1)
            assert abs(p.values[1] - others) < 0.5 * abs(ones[i] - others) + 1e-3
    g = nx.Graph()
    g.add_nodes_from(dom.attrs)
    tree = junction_tree(g, dom)
    plain = np.array([m.values[1] for m in fit_mrf(dom, tree, ms, tol=1e-12).marginals])
    shrunk = np.array([m.values[1] for m in fit_mrf(dom, tree, ms, tol=1e-12, priors=priors).marginals])
    # squared error: about 40 * 0.05^2 = 0.1 plain; about 40 * (0.14^2 0.05^2 + 0.86^2 0.02^2) = 0.013
    # shrunk plus the mean's own error 0.0025: a ratio near 0.16; tau_g^2 rests on 40 noisy tables
    # (relative sd about 0.5), and a doubled tau_g^2 gives lambda 0.25 and a ratio near 0.25, so half
    # the plain error is a bound that only a broken prior reaches
    assert np.sum((shrunk - truth) ** 2) < 0.5 * np.sum((plain - truth) ** 2)



@pytest.mark.parametrize("seed", range(5))
def test_a_mixed_group_pulls_each_table_towards_its_own_component(seed):
    # 20 four-category tables: 10 near uniform, 10 on one value (0.85, 0.05, 0.05, 0.05), spread 0.01,
    # noise sd 0.05.  One shared target serves neither half; the two-component prior pulls each half
    # towards its own centre.  The halves are 0.6 apart in one cell, 10 noise sd: no table looks like
    # the other half.
    rng = np.random.default_rng(seed)
    dom = Domain.from_categories({f"y{i}": "0123" for i in range(20)})
    skewed = np.array([0.85, 0.05, 0.05, 0.05])
    truth = np.array([np.full(K, 0.25) if i < 10 else skewed for i in range(20)])
    truth = truth + rng.normal(0, 0.01, truth.shape)
    truth = truth - (truth.sum(axis=1, keepdims=True) - 1) / K
    sigma = 0.05
    ms = []
    for a, t in zip(dom.attrs, truth):
        z = rng.normal(0.0, sigma, K)
        ms.append(Measurement(dom.project([a]), t + (z - z.mean()) * np.sqrt(K / (K - 1)), 100,
                              variance=sigma ** 2))
    priors = shrinkage_priors(ms)
    assert [p.provenance["target"] == "uniform" for p in priors] == [i < 10 for i in range(20)]
    g = nx.Graph()
    g.add_nodes_from(dom.attrs)
    tree = junction_tree(g, dom)
    plain = np.array([m.values for m in fit_mrf(dom, tree, ms, tol=1e-12).marginals])
    shrunk = np.array([m.values for m in fit_mrf(dom, tree, ms, tol=1e-12, priors=priors).marginals])
    # plain: about 20 * 4 * 0.05^2 = 0.2 (less where the simplex clips); shrunk: each table near its
    # centre, whose error is the noise over 9 tables plus the spread 0.01, about 0.02
    assert np.sum((shrunk - truth) ** 2) < 0.5 * np.sum((plain - truth) ** 2)



@pytest.mark.parametrize("seed", range(5))
def test_a_table_far_beyond_the_pooled_prior_keeps_its_deviation(seed):
    # eleven uniform tables and one with its mass in one cell, noise sd 0.05 per cell: the pooled tau^2
    # (~0.014, nearly all of it the outlier's) is about 6 noise variances, and the old rule pulled the
    # outlier by the full James-Stein factor (lambda ~ 0.85): its big cell ~0.11 (2 noise sd) towards
    # uniform.  That cell stands ~0.72 / sqrt(tau^2 + sigma^2) ~ 5.5 sd from its prior, beyond the
    # Bonferroni point of all 48 cells (4.3), so the table keeps no prior: the fit leaves it where its
    # measurement puts it (within a fraction of the noise sd), and the other tables keep their priors.
    rng = np.random.default_rng(seed)
    sigma = 0.05
    p = np.full((D, K), 1 / K)
    p[0] = [0.97, 0.01, 0.01, 0.01]
    ms = one_way(p, sigma, rng)
    priors = shrinkage_priors(ms)
    assert [pr.attrs for pr in priors] == [(a,) for a in DOM.attrs[1:]]
    assert all(pr.provenance["target"] == "uniform" for pr in priors)
    tree = no_edges()
    plain = fitted_one_way(fit_mrf(DOM, tree, ms, tol=1e-10))
    shrunk = fitted_one_way(fit_mrf(DOM, tree, ms, tol=1e-10, priors=priors))
    assert shrunk[0][0] >= plain[0][0] - sigma / 2  # its big cell: the old rule lowered it by ~2 sd
    assert np.max(np.abs(shrunk[0] - plain[0])) <= sigma / 2
    assert np.linalg.norm(shrunk[1:] - 1 / K) <= np.linalg.norm(plain[1:] - 1 / K)
