"""Embedded census-like Bayesian network: exact marginals, MI, sampling."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from lopub.datasets import EmbeddedModel, embedded, embedded_model

PHI = 0.4


@pytest.fixture(scope="module")
def model() -> EmbeddedModel:
    return embedded_model()


def test_structure(model):
    dom = model.domain
    assert len(dom) >= 12
    assert min(dom.sizes) == 2 and 35 <= max(dom.sizes) <= 45
    for a in dom.attrs:
        assert len(model.parents[a]) <= 2
        # attributes are listed in topological order
        assert all(dom.index(p) < dom.index(a) for p in model.parents[a])
        assert model.cpts[a].shape == tuple(dom.size(p) for p in model.parents[a]) + (dom.size(a),)
        np.testing.assert_allclose(model.cpts[a].sum(axis=-1), 1.0)
    assert len(model.dag) == sum(len(p) for p in model.parents.values())
    assert set(model.dependency_edges()) <= set(model.moral_graph().edges()) | {
        (b, a) for a, b in model.moral_graph().edges()
    }
    assert model.moral_graph().has_edge("marital", "sex")  # co-parents of relationship


def test_model_is_fixed(model):
    assert embedded_model() is model
    np.testing.assert_allclose(
        model.marginal(["income"]).values, [0.5657127036154588, 0.4342872963845412], rtol=0, atol=1e-12
    )
    np.testing.assert_allclose(
        model.marginal(["native_region"]).values[:3],
        [0.03506256046940648, 0.020609139826968076, 0.019700922110589512], rtol=0, atol=1e-12,
    )


@pytest.mark.parametrize(
    "attrs",
    [["age_group"], ["income", "sex"], ["native_region", "education", "hours"], ["household_size", "race", "urban", "income"]],
)
def test_marginals_sum_to_one_and_are_consistent(model, attrs):
    m = model.marginal(attrs)
    assert m.attrs == tuple(attrs)
    assert m.values.min() >= 0
    assert m.values.sum() == pytest.approx(1.0, abs=1e-12)
    for a in attrs:
        np.testing.assert_allclose(m.project([a]).values, model.marginal([a]).values, atol=1e-12)
    rev = model.marginal(attrs[::-1]).values
    np.testing.assert_allclose(np.transpose(rev, list(range(len(attrs)))[::-1]), m.values, atol=1e-14)


def test_marginal_matches_explicit_chain_product(model):
    c = model.cpts
    joint = c["race"][:, None, None] * c["native_region"][:, :, None] * c["urban"][None, :, :]
    np.testing.assert_allclose(model.marginal(["race", "native_region", "urban"]).values, joint, atol=1e-15)


def test_conditional_of_child_given_parents_is_the_cpt(model):
    for child in model.domain.attrs:
        pa = list(model.parents[child])
        if not pa:
            np.testing.assert_allclose(model.marginal([child]).values, model.cpts[child], atol=1e-12)
            continue
        joint = model.marginal(pa + [child]).values
        cond = joint / joint.sum(axis=-1, keepdims=True)
        np.testing.assert_allclose(cond, model.cpts[child], atol=1e-10)


def test_true_edges_exceed_tau(model):
    mi = model.mutual_information()
    dom = model.domain
    for a, b in model.dependency_edges():
        tau = model.tau(a, b, PHI)
        assert mi[dom.index(a), dom.index(b)] > 1.5 * tau, (a, b)
    g = model.mi_graph(PHI)
    assert all(g.has_edge(a, b) for a, b in model.dependency_edges())


def test_independent_pairs_have_zero_mi(model):
    pairs = model.independent_pairs()
    assert ("age_group", "sex") in pairs and ("sex", "race") in pairs and len(pairs) >= 10
    mi = model.mutual_information()
    dom = model.domain
    for a, b in pairs:
        assert abs(mi[dom.index(a), dom.index(b)]) < 1e-12
        p = model.marginal([a, b]).values
        np.testing.assert_allclose(p, np.outer(p.sum(1), p.sum(0)), atol=1e-14)
    edge_set = {frozenset(e) for e in model.dependency_edges()}
    assert not edge_set & {frozenset(p) for p in pairs}


def test_mi_matrix_symmetric_with_entropy_diagonal(model):
    mi = model.mutual_information()
    np.testing.assert_allclose(mi, mi.T)
    p = model.marginal(["native_region"]).values
    assert mi[model.domain.index("native_region")] [model.domain.index("native_region")] == pytest.approx(
        -(p * np.log(p)).sum()
    )
    assert (mi >= 0).all()


def _within_binomial(freq: np.ndarray, p: np.ndarray, n: int, z: float = 5.0) -> None:
    sd = np.sqrt(p * (1 - p) / n)
    bad = np.abs(freq - p) > z * sd + 1e-12
    assert not bad.any(), f"{int(bad.sum())} cell(s) beyond {z} SD, worst |diff|/sd = {np.max(np.abs(freq - p) / np.maximum(sd, 1e-300)):.2f}"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sample_frequencies_match_exact_marginals(model, seed):
    n = 40_000
    ds = model.sample(n, rng=seed)
    assert ds.domain == model.domain and ds.n == n
    for a in model.domain.attrs:
        _within_binomial(ds.project([a]).values, model.marginal([a]).values, n)
    pairs = model.dependency_edges() + model.independent_pairs()[:5] + [("education", "hours"), ("race", "income")]
    for a, b in pairs:
        _within_binomial(ds.project([a, b]).values, model.marginal([a, b]).values, n)


def test_same_seed_same_data_and_generator_accepted(model):
    a, b = embedded(500, rng=7), embedded(500, rng=7)
    np.testing.assert_array_equal(a.codes, b.codes)
    assert not np.array_equal(a.codes, embedded(500, rng=8).codes)
    np.testing.assert_array_equal(embedded(300).codes, embedded(300, rng=0).codes)
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    np.testing.assert_array_equal(model.sample(200, rng=g1).codes, model.sample(200, rng=g2).codes)


def test_default_embedded_size():
    ds = embedded()
    assert ds.n == 20_000 and len(ds.domain) == len(embedded_model().domain)


def test_bad_arguments(model):
    with pytest.raises(ValueError, match=r"n \(0\) must be an integer >= 1"):
        model.sample(0, rng=0)
    with pytest.raises(TypeError, match="n"):
        model.sample(2.5, rng=0)
    with pytest.raises(TypeError, match="rng"):
        model.sample(10, rng="seed")
    with pytest.raises(ValueError, match="phi"):
        model.mi_graph(0.0)
    with pytest.raises(ValueError, match="unknown attribute"):
        model.marginal(["nope"])


def test_marginal_is_also_project(model):
    np.testing.assert_array_equal(model.project(["sex"]).values, model.marginal(["sex"]).values)
    cells = [model.marginal(list(c)).values.size for c in itertools.combinations(model.domain.attrs[:4], 2)]
    assert all(c > 0 for c in cells)
