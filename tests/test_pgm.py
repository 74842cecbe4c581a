"""lopub.model.pgm: belief propagation, the weighted marginal loss and the mirror-descent fit."""
import itertools

import networkx as nx
import numpy as np
import pytest

from lopub.data.dataset import Dataset
from lopub.dependency import junction_tree
from lopub.data.domain import Domain
from lopub.errors import DomainError
from lopub.data.marginal import Marginal
from lopub.estimate.measurement import Measurement, MeasurementError
from lopub.model.pgm import CliqueTree, fit_mrf

DOM = Domain.from_categories({"a": "012", "b": "01", "c": "0123", "d": "01", "e": "012"})


def tree_of(edges, domain=DOM):
    g = nx.Graph()
    g.add_nodes_from(domain.attrs)
    g.add_edges_from(edges)
    return junction_tree(g, domain)


def chain_data(n=4000, seed=0):
    """a -> b -> c -> d (a Markov chain) and e independent: a tree-structured truth."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (rng.random(n) < 0.2 + 0.3 * a).astype(int)
    c = (b * 2 + rng.integers(0, 2, n)) % 4
    d = (rng.random(n) < np.where(c >= 2, 0.8, 0.1)).astype(int)
    e = rng.integers(0, 3, n)
    return Dataset(np.column_stack([a, b, c, d, e]), DOM)


def measure(data, attrs, variance=1e-10):
    return Measurement.from_marginal(data.project(list(attrs)), variance)


def test_belief_propagation_matches_brute_force_joint():
    jt = tree_of([("a", "b"), ("b", "c"), ("a", "c"), ("c", "d")])
    ct = CliqueTree(DOM, jt)
    rng = np.random.default_rng(1)
    theta = [rng.normal(size=s) * 2 for s in ct.shapes]
    mu, log_z = ct.marginals(theta)
    letters = {a: chr(97 + i) for i, a in enumerate(DOM.attrs)}
    logp = np.zeros(DOM.sizes)
    for c, t in zip(ct.cliques, theta):
        shape = [DOM.size(a) if a in c else 1 for a in DOM.attrs]
        logp = logp + t.reshape(shape)
    joint = np.exp(logp)
    assert log_z == pytest.approx(np.log(joint.sum()), rel=1e-12)
    joint /= joint.sum()
    for c, m in zip(ct.cliques, mu):
        out = "".join(letters[a] for a in c)
        np.testing.assert_allclose(m, np.einsum("abcde->" + out, joint), atol=1e-12)


def test_exact_measurements_of_a_tree_truth_are_reproduced():
    data = chain_data()
    jt = tree_of([("a", "b"), ("b", "c"), ("a", "c"), ("c", "d")])  # cliques abc, cd, e
    ms = [measure(data, p) for p in (("a", "b"), ("b", "c"), ("c", "d"), ("e",))]
    fit = fit_mrf(DOM, jt, ms)
    assert fit.converged
    for m in ms:
        holder = next(t for t in fit.marginals if set(m.attrs) <= set(t.attrs))
        np.testing.assert_allclose(holder.project(list(m.attrs)).values, m.values, atol=1e-4)
    # the unmeasured triple abc is the max-entropy completion P(a, b) P(c | b)
    pab, pbc = data.project(["a", "b"]).values, data.project(["b", "c"]).values
    want = pab[:, :, None] * (pbc / pbc.sum(axis=1, keepdims=True))[None, :, :]
    abc = next(t for t in fit.marginals if t.attrs == ("a", "b", "c"))
    np.testing.assert_allclose(abc.values, want, atol=1e-4)


def test_clique_without_measurement_is_independence_of_its_parts():
    data = chain_data()
    jt = tree_of([("a", "b")])
    fit = fit_mrf(DOM, jt, [measure(data, [x]) for x in DOM.attrs])
    ab = next(t for t in fit.marginals if t.attrs == ("a", "b")).values
    np.testing.assert_allclose(ab, np.outer(ab.sum(1), ab.sum(0)), atol=1e-9)
    np.testing.assert_allclose(ab.sum(1), data.project(["a"]).values, atol=1e-4)


@pytest.mark.parametrize("accelerate", [True, False])
def test_loss_never_increases_and_marginals_agree_on_separators(accelerate):
    data = chain_data(seed=3)
    rng = np.random.default_rng(4)
    jt = tree_of([("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")])
    ms = []
    for p in (("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("a",), ("c",)):
        m = data.project(list(p))
        noisy = m.values + rng.normal(0, 0.01, m.values.shape)  # conflicting, not a distribution
        ms.append(Measurement(m.domain, noisy, m.n, variance=1e-4))
    fit = fit_mrf(DOM, jt, ms, accelerate=accelerate, max_iter=300)
    assert np.all(np.diff(fit.losses) <= 0) and len(fit.losses) == fit.iterations + 1
    assert fit.loss == fit.losses[-1] < fit.losses[0]
    for i, c in enumerate(jt.cliques):
        for j in range(i + 1, len(jt.cliques)):
            sep = [a for a in c if a in jt.cliques[j]]
            if sep:
                np.testing.assert_allclose(fit.marginals[i].project(sep).values,
                                           fit.marginals[j].project(sep).values, atol=1e-12)
    model = fit.to_model(n=data.n)
    assert max(model.meta["calibration_avd"]) < 1e-12
    for t, m in zip(model.cliques, fit.marginals):
        np.testing.assert_allclose(t.values, m.values, atol=1e-12)


def test_conflicting_measurements_give_the_inverse_variance_weighted_mean():
    dom = DOM.project(["a", "b"])
    y1 = np.array([[0.1, 0.2], [0.3, 0.1], [0.2, 0.1]])
    y2 = np.array([[0.2, 0.1], [0.1, 0.2], [0.1, 0.3]])
    v1, v2 = 1e-4, 4e-4
    ms = [Measurement(dom, y1, 100, variance=v1), Measurement(dom, y2, 100, variance=v2)]
    fit = fit_mrf(dom, tree_of([("a", "b")], dom), ms, tol=1e-9)
    want = (y1 / v1 + y2 / v2) / (1 / v1 + 1 / v2)
    np.testing.assert_allclose(fit.marginals[0].values, want, atol=1e-5)
    # and the loss is the weighted sum of squares at that point
    loss = 0.5 * (((want - y1) ** 2).sum() / v1 + ((want - y2) ** 2).sum() / v2)
    assert fit.loss == pytest.approx(loss, rel=1e-4)


def test_fit_is_deterministic_and_warm_start_resumes():
    data = chain_data(seed=5)
    jt = tree_of([("a", "b"), ("b", "c")])
    ms = [Measurement.from_marginal(data.project(list(p)), 1e-5) for p in (("a", "b"), ("b", "c"))]
    one, two = fit_mrf(DOM, jt, ms), fit_mrf(DOM, jt, ms)
    assert one.losses == two.losses
    for x, y in zip(one.potentials, two.potentials):
        np.testing.assert_array_equal(x, y)
    again = fit_mrf(DOM, jt, ms, warm_start=one)
    assert again.loss <= one.loss and again.iterations < one.iterations
    summary = one.summary()
    assert set(summary) == {"loss", "iterations", "converged", "seconds", "stop", "gap", "chi2", "dof",
                            "chi2_z", "constraints", "constraint_violation", "inference"}
    assert summary["seconds"] >= 0 and 0 <= summary["chi2"] <= 2 * summary["loss"] + 1e-9


def test_errors_name_the_measurement_and_the_remedy():
    data = chain_data(n=200)
    jt = tree_of([("a", "b")])
    good = measure(data, ["a", "b"])
    with pytest.raises(MeasurementError, match=r"measurements\[1\] over \['a', 'c'\] lies in no model "
                                               r"clique .*add its pairs to the dependency graph"):
        fit_mrf(DOM, jt, [good, measure(data, ["a", "c"])])
    other = Domain.from_categories({"z": "01"})
    with pytest.raises(DomainError, match=r"measurements\[0\] is over unknown attribute\(s\) \['z'\]"):
        fit_mrf(DOM, jt, [Measurement(other, np.array([0.5, 0.5]), 10, variance=0.1)])
    with pytest.raises(TypeError, match=r"measurements\[0\] \(Marginal\) must be a lopub Measurement"):
        fit_mrf(DOM, jt, [Marginal(DOM.project(["a"]), np.ones(3) / 3)])
    with pytest.raises(MeasurementError, match="non-finite"):
        Measurement(DOM.project(["b"]), np.array([np.nan, 1.0]), 10, variance=0.1)
    with pytest.raises(MeasurementError, match="negative"):
        Measurement(DOM.project(["b"]), np.array([0.5, 0.5]), 10, variance=-1.0)
    with pytest.raises(ValueError, match=r"tol \(0\.0\) must be a finite number > 0"):
        fit_mrf(DOM, jt, [good], tol=0)
    with pytest.raises(ValueError, match=r"max_iter \(0\) must be"):
        fit_mrf(DOM, jt, [good], max_iter=0)
    with pytest.raises(ValueError, match=r"warm_start has potentials of shapes"):
        fit_mrf(DOM, jt, [good], warm_start=[np.zeros(2)])


def test_no_measurement_gives_the_uniform_model():
    jt = tree_of([("a", "b"), ("b", "c")])
    fit = fit_mrf(DOM, jt, [])
    assert fit.converged and fit.iterations == 0
    for m in fit.marginals:
        np.testing.assert_allclose(m.values, 1.0 / m.values.size)


def test_sum_to_equals_numpy_sum():
    from lopub.model.pgm.inference import sum_to

    a = np.random.default_rng(0).random((3, 2, 4, 2, 3))
    for k in range(1, 5):
        for axes in itertools.combinations(range(5), k):
            np.testing.assert_allclose(sum_to(a, axes), a.sum(axis=axes, keepdims=True), atol=1e-12)
