"""Correctness of lopub.estimate on small hand-made domains (fast suite)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from lopub.client.encode import encode
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.errors import BudgetError, DomainError
from lopub.estimate import METHODS, Estimator, estimate
from lopub.estimate.postprocess import postprocess
from lopub.estimate.em import KwayData
from lopub.estimate.likelihood import attribute_likelihood
from lopub.reports.spec import CollectionSpec

N = 20000
F = 0.3


def _joint(rng) -> np.ndarray:
    p = rng.dirichlet(np.ones(24) * 2.0).reshape(3, 2, 4)
    return p


@pytest.fixture(scope="module")
def small():
    """Domain a(3) b(2) c(4) one(1); records from a fixed random joint; reports at f = 0.3."""
    dom = Domain.from_categories({"a": ["a0", "a1", "a2"], "b": ["b0", "b1"],
                                  "c": ["c0", "c1", "c2", "c3"], "one": ["only"]})
    rng = np.random.default_rng(12345)
    p = _joint(rng)
    flat = rng.choice(p.size, size=N, p=p.ravel())
    abc = np.stack(np.unravel_index(flat, p.shape), axis=1)
    codes = np.column_stack([abc, np.zeros(N, dtype=int)])
    data = Dataset(codes, dom)
    spec = CollectionSpec.from_domain(dom, f=F, m=32, h=4)
    return data, spec, encode(data, spec, rng=7)


def ols_cell_variance(data: Dataset, spec: CollectionSpec, attrs) -> np.ndarray:
    """Exact variance (given the records) of the unconstrained moment estimator, per cell.

    z_j = (s_j - f/2) @ pinv((1 - f) H_j) has E[z_j | t] = e_t and, bits being
    independent with variance f/2 (1 - f/2), Var(z_j[v] | t) = sigma^2 |g_v|^2.
    Independence across attributes gives E[prod_j z_j[w_j]^2 | t] =
    prod_j (1[t_j = w_j] + sigma^2 |g_{w_j}|^2).  EM is the maximum-likelihood
    estimator, asymptotically efficient, so its variance is at most this one.
    """
    sigma2 = spec.f / 2 * (1 - spec.f / 2)
    c = []
    for a in attrs:
        G = np.linalg.pinv(design_matrix_from_spec(spec, a))
        c.append(sigma2 * (G**2).sum(axis=0))
    counts = data.project(list(attrs)).values * data.n
    var = np.zeros(counts.shape)
    for w in itertools.product(*[range(s) for s in counts.shape]):  # over cells, not users
        second = np.ones(counts.shape)
        for j, wj in enumerate(w):
            shape = [1] * len(w)
            shape[j] = counts.shape[j]
            delta = (np.arange(counts.shape[j]) == wj).astype(float).reshape(shape)
            second = second * (delta + c[j][wj])
        var[w] = float((counts * second).sum() - counts[w]) / data.n**2
    return var


def design_matrix_from_spec(spec: CollectionSpec, attr: str) -> np.ndarray:
    H = spec.bloom[spec.domain.index(attr)].astype(float)
    return (1 - spec.f) * H


def test_em_recovers_joint_within_standard_errors(small):
    data, spec, rep = small
    attrs = ["a", "b", "c"]
    m = estimate(rep, attrs, "em")
    truth = data.project(attrs).values
    sd = np.sqrt(ols_cell_variance(data, spec, attrs))
    # 5 sd per cell over 24 cells: failure probability ~ 24 * 6e-7 for any seed
    assert np.all(np.abs(m.values - truth) <= 5 * sd + 1e-4)
    assert m.meta["converged"] and m.meta["method"] == "em" and m.n == N
    assert m.values.sum() == pytest.approx(1.0)


def test_moment_recovers_joint_within_q_norm_bound(small):
    data, spec, rep = small
    attrs = ["a", "b", "c"]
    truth = data.project(attrs).values
    var = ols_cell_variance(data, spec, attrs)
    ols = estimate(rep, attrs, "moment", solver="ols", shrink="none", postprocess="none").values
    # unconstrained estimator: each cell within 5 sd
    assert np.all(np.abs(ols - truth) <= 5 * np.sqrt(var))
    nnls = estimate(rep, attrs, "moment", shrink="none").values
    # projection onto the simplex in the Q metric is non-expansive in that metric:
    # |nnls - p|_2 <= sqrt(cond Q) |ols - p|_2, and |ols - p|_2^2 has mean sum(var);
    # 4 sqrt(sum var) bounds it with probability > 1 - 1e-4 (chi-square tail, df >= 1)
    grams = [(1 - F) ** 2 * spec.bloom[spec.domain.index(a)].astype(float)
             @ spec.bloom[spec.domain.index(a)].T.astype(float) for a in attrs]
    cond = math.prod(np.linalg.cond(g) for g in grams)
    assert np.linalg.norm(nnls - truth) <= math.sqrt(cond) * 4 * math.sqrt(var.sum())
    assert nnls.min() >= 0 and nnls.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("accelerate", [True, False])
def test_em_loglik_never_decreases(small, accelerate):
    _, _, rep = small
    m = estimate(rep, ["a", "c"], "em", accelerate=accelerate, tol=1e-9)
    trace = np.asarray(m.meta["loglik_trace"])
    assert len(trace) >= 2
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[:-1]))
    assert m.meta["loglik"] == pytest.approx(trace[-1])


def test_loglik_matches_brute_force(small):
    _, spec, rep = small
    sub = rep.subset(slice(0, 40))
    m = estimate(sub, ["a", "b"], "em", accelerate=False, max_iter=3)
    p = m.values  # loglik is reported at the last evaluated iterate; recompute it at p_prev
    logs = []
    for attr in ("a", "b"):
        j = spec.domain.index(attr)
        s = sub.attribute_bits(attr).astype(int)
        H = spec.bloom[j].astype(int)
        mism = s.sum(1)[:, None] + H.sum(1)[None, :] - 2 * s @ H.T
        logs.append((spec.m[j] - mism) * np.log(1 - F / 2) + mism * np.log(F / 2))
    la, lb = (attribute_likelihood(sub, x) for x in ("a", "b"))
    for lg, lk in ((logs[0], la), (logs[1], lb)):
        scaled = lg - lg.max(axis=1, keepdims=True)
        assert np.allclose(np.exp(scaled), lk.values)
        assert lk.offset == pytest.approx(lg.max(axis=1).sum())
    trace_start = np.full((3, 2), 1 / 6)
    joint = logs[0][:, :, None] + logs[1][:, None, :] + np.log(trace_start)[None]
    brute = float(np.sum(np.logaddexp.reduce(joint.reshape(len(joint), -1), axis=1)))
    assert m.meta["loglik_trace"][0] == pytest.approx(brute, rel=1e-10)
    assert p.shape == (3, 2)


def test_same_seed_same_result(small):
    data, spec, _ = small
    r1, r2 = encode(data, spec, rng=99), encode(data, spec, rng=99)
    for method in ("em", "moment", "lasso", "hybrid"):
        a = estimate(r1, ["a", "c"], method).values
        b = estimate(r2, ["a", "c"], method).values
        assert np.array_equal(a, b), method


@pytest.mark.parametrize("method", ["em", "moment", "hybrid"])
def test_permuting_attributes_permutes_result(small, method):
    _, _, rep = small
    base = estimate(rep, ["a", "b", "c"], method).values
    perm = estimate(rep, ["c", "a", "b"], method).values
    assert perm.shape == (4, 3, 2)
    assert np.allclose(perm, np.transpose(base, (2, 0, 1)), atol=1e-6)


def test_chunked_and_unchunked_agree(small):
    _, _, rep = small
    est = Estimator(rep)
    mats = [est.cache.likelihood(a).values for a in ("a", "b", "c")]
    p = np.random.default_rng(0).dirichlet(np.ones(24)).reshape(3, 2, 4)
    one = KwayData(mats, rep.n, 0).estep(p)
    for chunk, cache in ((997, 0), (997, 10**9), (1, 10**9)):
        many = KwayData(mats, chunk, cache).estep(p)
        assert np.allclose(one[0], many[0], rtol=1e-12, atol=1e-15)
        assert one[1] == pytest.approx(many[1], rel=1e-12)
    full = estimate(rep, ["a", "b", "c"], "em").values
    chunked = estimate(rep, ["a", "b", "c"], "em", chunk_size=1234).values
    assert np.allclose(full, chunked, atol=1e-6)


def test_single_category_attribute_k1_and_kd(small):
    data, _, rep = small
    for method in METHODS:
        one = estimate(rep, ["one"], method)
        assert one.values.shape == (1,) and one.values[0] == pytest.approx(1.0)
    pair = estimate(rep, ["a", "one"]).values
    assert pair.shape == (3, 1)
    assert np.allclose(pair[:, 0], estimate(rep, ["a"]).values, atol=1e-5)
    full = estimate(rep, ["a", "b", "c", "one"])  # k = d
    assert full.values.shape == (3, 2, 4, 1)
    assert np.allclose(full.values[..., 0], estimate(rep, ["a", "b", "c"]).values, atol=1e-5)
    k1 = estimate(rep, ["c"], "em").values
    sd = np.sqrt(ols_cell_variance(data, rep.spec, ["c"]))
    assert np.all(np.abs(k1 - data.project(["c"]).values) <= 5 * sd + 1e-4)


def test_every_method_returns_a_labelled_distribution_with_metadata(small):
    _, _, rep = small
    for method in METHODS:
        m = estimate(rep, ["b", "a"], method)
        assert m.attrs == ("b", "a") and m.values.shape == (2, 3)
        assert m.values.min() >= 0 and m.values.sum() == pytest.approx(1.0)
        for key in ("method", "iterations", "converged", "seconds", "loglik", "postprocess"):
            assert key in m.meta, (method, key)
        assert m.meta["method"] == method and m.meta["postprocess"] == "clip"
        assert (m.meta["loglik"] is None) == (method in ("lasso", "moment"))
        assert list(m.to_frame()["b"].unique()) == ["b0", "b1"]
    h = estimate(rep, ["a", "c"], "hybrid")
    assert 1 <= h.meta["support_size"] <= h.meta["cells"] == 12
    assert estimate(rep, ["a", "c"], "hybrid", support="lasso").meta["support_method"] == "lasso"


def test_paper_stop_rule_and_start(small):
    _, _, rep = small
    paper = estimate(rep, ["a", "c"], stop_rule="paper", tol=1e-3)
    assert paper.meta["stop_rule"] == "paper"
    ref = estimate(rep, ["a", "c"])
    again = estimate(rep, ["a", "c"], start=ref)  # start at the fixed point: converges at once
    assert again.meta["iterations"] <= 2
    assert np.allclose(again.values, ref.values, atol=1e-5)
    ind = estimate(rep, ["a", "c"], start="independent")
    assert np.allclose(ind.values, ref.values, atol=1e-4)
    capped = estimate(rep, ["a", "c"], tol=1e-15, max_iter=3)
    assert capped.meta["iterations"] == 3 and capped.meta["converged"] is False


def test_estimator_caches_results_and_attributes(small):
    _, _, rep = small
    est = Estimator(rep, "em")
    first = est.marginal(["a", "c"])
    assert est.marginal(["c", "a"]).values.T.tolist() == first.values.tolist()
    assert est.marginal(["a", "c"]).meta["seconds"] == first.meta["seconds"]  # cached
    assert est.cache.likelihood("a") is est.cache.likelihood("a")
    assert est.one_way("a").values.shape == (3,)
    sub = Estimator(rep, "em", reuse_subsets=True)
    big = sub.marginal(["a", "b", "c"])
    assert np.allclose(sub.marginal(["c", "a"]).values, big.project(["c", "a"]).values)


def test_errors_name_the_problem(small):
    _, _, rep = small
    with pytest.raises(DomainError, match="unknown attribute 'zz'"):
        estimate(rep, ["a", "zz"])
    with pytest.raises(DomainError, match="duplicate attributes \\['a'\\]"):
        estimate(rep, ["a", "a"])
    with pytest.raises(BudgetError, match=r"3 x 2 x 4 = 24 cells.*memory_budget.*raise memory_budget"):
        estimate(rep, ["a", "b", "c"], memory_budget=1000)
    with pytest.raises(ValueError, match="method \\('nope'\\) must be one of"):
        estimate(rep, ["a"], "nope")
    with pytest.raises(ValueError, match="postprocess \\('x'\\) must be one of"):
        estimate(rep, ["a"], postprocess="x")
    with pytest.raises(ValueError, match="stop_rule"):
        estimate(rep, ["a"], stop_rule="other")
    with pytest.raises(ValueError, match=r"start must be .* shape \(3, 4\)"):
        estimate(rep, ["a", "c"], start=np.ones((4, 3)))
    with pytest.raises(TypeError, match="unknown option"):
        estimate(rep, ["a"], bogus=1)
    with pytest.raises(TypeError, match="reports must be"):
        estimate("file.parquet", ["a"])
    with pytest.raises(ValueError, match="tol"):
        estimate(rep, ["a"], tol=-1.0)


def test_postprocess_functions():
    raw = np.array([[0.5, -0.1], [0.4, 0.3]])
    out = postprocess(raw, "clip")
    clip, name = out.values, out.method
    assert name == "clip" and clip.min() >= 0 and clip.sum() == pytest.approx(1)
    assert out.changed and np.array_equal(out.raw, raw)
    proj = postprocess(raw, "simplex").values
    assert proj.min() >= 0 and proj.sum() == pytest.approx(1)
    # Duchi et al.: projection equals max(x - theta, 0) with a common theta
    pos = proj > 0
    assert np.ptp((raw - proj)[pos]) < 1e-12
    ns = postprocess(raw, "norm-sub").values
    assert ns.sum() == pytest.approx(1) and ns.min() >= 0
    same = postprocess(raw, "none")
    assert same.method == "none" and np.array_equal(same.values, raw) and not same.changed
    with pytest.raises(ValueError, match="NaN"):
        postprocess(np.array([np.nan, 1.0]), "clip")


def test_likelihood_has_no_underflow_at_m128_small_f():
    dom = Domain.from_categories({f"x{i}": [str(v) for v in range(6)] for i in range(5)})
    rng = np.random.default_rng(3)
    data = Dataset(rng.integers(0, 6, size=(500, 5)), dom)
    spec = CollectionSpec.from_domain(dom, f=0.02, m=128, h=4)
    rep = encode(data, spec, rng=4)
    m = estimate(rep, list(dom.attrs), "em", max_iter=50)  # k = 5, 7776 cells
    assert np.all(np.isfinite(m.values)) and np.isfinite(m.meta["loglik"])
    assert m.meta["loglik"] < -500 * 5 * 128 * 0.02  # real log-likelihood scale, not rescaled


def test_run_em_scaled_stop_bounds_distance_to_fixed_point():
    """With ``scale`` the rule stops on the geometric estimate of the remaining distance."""
    from lopub.estimate.em import run_em

    target = np.array([0.5, 0.3, 0.2])
    scale = np.array([0.01, 0.02, 0.01])

    def step(p):  # linear contraction towards target, rate 0.9 (a slow EM)
        return target + 0.9 * (p - target), 0.0

    for accelerate in (False, True):
        res = run_em(step, np.array([1 / 3, 1 / 3, 1 / 3]), tol=0.05, max_iter=10000,
                     scale=scale, accelerate=accelerate)
        assert res.converged
        # a plain max-change rule at 0.05 SE would stop about 10x too early at rate 0.9
        assert np.max(np.abs(res.p - target) / scale) <= 0.05 + 1e-12


def test_hybrid_stop_se_close_to_em_with_fewer_iterations(small):
    data, _, rep = small
    attrs = ["a", "b", "c"]
    em = estimate(rep, attrs, "em")
    full = estimate(rep, attrs, "hybrid")
    fast = estimate(rep, attrs, "hybrid", stop_se=0.03)
    assert fast.meta["stop_rule"] == "max_change_se" and fast.meta["tol"] == 0.03
    assert fast.meta["iterations"] < full.meta["iterations"]
    truth = data.project(attrs).values
    avd = lambda m: 0.5 * float(np.abs(m.values - truth).sum())  # noqa: E731
    assert avd(fast) <= 1.05 * avd(em)
    assert 0.5 * np.abs(fast.values - full.values).sum() < 0.25 * avd(em)
    with pytest.raises(ValueError):
        estimate(rep, attrs, "hybrid", stop_se=0.0)
