"""Model: calibrated clique marginals, queries, inference, save/load."""
import itertools
import json

import networkx as nx
import numpy as np
import pytest

from lopub.dependency import junction_tree
from lopub.data.domain import Domain
from lopub.errors import BudgetError, DomainError
from lopub.data.marginal import Marginal
from lopub.model.graphical import Model, conditional_table


def tree_joint(edges, sizes, seed=0):
    """Full joint of a Bayesian network whose skeleton is a tree (parent, child) edges."""
    rng = np.random.default_rng(seed)
    names = list(sizes)
    dom = Domain.from_categories({a: [f"{a}{v}" for v in range(s)] for a, s in sizes.items()})
    parent = {c: p for p, c in edges}
    letters = dict(zip(names, "abcdefghij"))
    ops, terms = [], []
    for a in names:
        if a in parent:
            ops.append(rng.dirichlet(np.full(sizes[a], 0.7), size=sizes[parent[a]]))
            terms.append(letters[parent[a]] + letters[a])
        else:
            ops.append(rng.dirichlet(np.ones(sizes[a])))
            terms.append(letters[a])
    table = np.einsum(",".join(terms) + "->" + "".join(letters[a] for a in names), *ops)
    g = nx.Graph(edges)
    g.add_nodes_from(names)
    return Marginal(dom, table, 5000), g


def exact_model(full, graph):
    jt = junction_tree(graph, full.domain)
    return Model.from_marginals(full.domain, jt, [full.project(list(c)) for c in jt.cliques], n=full.n)


CHAIN = ([("A", "B"), ("B", "C"), ("C", "D")], {"A": 3, "B": 4, "C": 2, "D": 5})
TREE = ([("A", "B"), ("A", "C"), ("C", "D"), ("C", "E"), ("B", "F")],
        {"A": 3, "B": 2, "C": 4, "D": 3, "E": 2, "F": 3})


@pytest.mark.parametrize("spec", [CHAIN, TREE])
def test_inference_is_exact_on_chains_and_trees(spec):
    full, g = tree_joint(*spec)
    model = exact_model(full, g)
    attrs = list(full.domain.attrs)
    for k in (1, 2, 3):
        for sub in itertools.combinations(attrs, k):
            got = model.project(list(sub))
            np.testing.assert_allclose(got.values, full.project(list(sub)).values, atol=1e-12)
            assert got.attrs == sub
    # reversed order gives transposed axes
    got = model.project(attrs[::-1])
    np.testing.assert_allclose(got.values, full.project(attrs[::-1]).values, atol=1e-12)
    assert model.project(["A", "D"]).meta["answer"] == "inference"


def test_queries_match_their_clique():
    full, g = tree_joint(*TREE, seed=4)
    rng = np.random.default_rng(1)
    jt = junction_tree(g, full.domain)
    noisy = []
    for c in jt.cliques:  # independent noisy estimates: not consistent on separators
        v = full.project(list(c)).values * rng.uniform(0.8, 1.2, size=full.domain.cells(list(c))).reshape(
            full.domain.project(list(c)).sizes)
        noisy.append(Marginal(full.domain.project(list(c)), v / v.sum(), 5000))
    model = Model.from_marginals(full.domain, jt, noisy, n=5000)
    for i, c in enumerate(jt.cliques):
        for k in range(1, len(c) + 1):
            for sub in itertools.combinations(c, k):
                q = model.project(list(sub))
                if q.meta["clique"] == list(c):
                    np.testing.assert_allclose(q.values, model.cliques[i].project(list(sub)).values)
    # calibrated: neighbours agree on their separators
    for p, ch in jt.edges:
        sep = list(jt.separator(ch))
        np.testing.assert_allclose(model.cliques[p].project(sep).values,
                                   model.cliques[ch].project(sep).values, atol=1e-12)
    # inference over the tree agrees with the clique tables it passes through
    for i, c in enumerate(jt.cliques):
        for a, b in itertools.combinations(c, 2):
            np.testing.assert_allclose(model._infer([a, b]), model.cliques[i].project([a, b]).values,
                                       atol=1e-12)
    assert max(model.meta["calibration_avd"]) > 0


def test_labels_counts_and_where():
    full, g = tree_joint(*CHAIN)
    model = exact_model(full, g)
    q = model.query(["A", "D"], where={"B": "B1"})
    exact = full.project(["A", "D", "B"]).condition({"B": "B1"})
    np.testing.assert_allclose(q.values, exact.values, atol=1e-12)
    assert q.n == round(5000 * full.project(["B"]).values[1])
    df = model.project(["A", "C"]).to_frame()
    assert list(df.columns) == ["A", "C", "p", "count"]
    assert set(df["A"]) == {"A0", "A1", "A2"}
    assert df["count"].sum() == pytest.approx(5000)


def test_query_errors():
    full, g = tree_joint(*CHAIN)
    model = exact_model(full, g)
    with pytest.raises(DomainError, match="unknown attribute 'Z'"):
        model.project(["A", "Z"])
    with pytest.raises(DomainError, match="duplicate"):
        model.project(["A", "A"])
    with pytest.raises(DomainError, match="no category 'B9'"):
        model.query(["A"], where={"B": "B9"})
    with pytest.raises(ValueError, match=r"both queried"):
        model.query(["A", "B"], where={"B": "B1"})
    model.query_budget = 10
    with pytest.raises(BudgetError, match="query_budget is 10 cells"):
        model.project(["A", "D"])


def test_disconnected_components_are_independent():
    full, g = tree_joint([("A", "B"), ("C", "D")], {"A": 2, "B": 3, "C": 4, "D": 2})
    model = exact_model(full, g)
    assert len(model.tree.roots) == 2
    np.testing.assert_allclose(model.project(["B", "D", "A"]).values,
                               full.project(["B", "D", "A"]).values, atol=1e-12)


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_save_load_round_trip(tmp_path, suffix):
    full, g = tree_joint(*TREE)
    model = exact_model(full, g)
    path = tmp_path / f"model{suffix}"
    model.save(path)
    back = Model.load(path)
    assert back.tree.cliques == model.tree.cliques and back.n == model.n
    for a, b in zip(back.cliques, model.cliques):
        np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(back.project(["D", "F"]).values, model.project(["D", "F"]).values)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left over


def test_load_rejects_other_files(tmp_path):
    full, g = tree_joint(*CHAIN)
    obj = exact_model(full, g).to_dict()
    obj["version"] = 99
    bad = tmp_path / "v99.json"
    bad.write_text(json.dumps(obj))
    with pytest.raises(ValueError, match="model version 99 is not supported"):
        Model.load(bad)
    other = tmp_path / "other.json"
    other.write_text("{\"format\": \"something\"}")
    with pytest.raises(ValueError, match="not a lopub model"):
        Model.load(other)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Model.load(tmp_path / "missing.json")


def test_conditional_table_zero_rows_fall_back():
    t = np.array([[0.2, 0.3], [0.0, 0.0], [0.5, 0.0]])
    c = conditional_table(t, 3)
    np.testing.assert_allclose(c[0], [0.4, 0.6])
    np.testing.assert_allclose(c[1], [0.7, 0.3])  # the column marginal
    np.testing.assert_allclose(c[2], [1.0, 0.0])
    np.testing.assert_allclose(conditional_table(np.zeros((2, 2)), 2), 0.5)
    assert np.isfinite(c).all()


def zero_cell_model():
    """A chain A - B - C where B = 'B2' has probability exactly 0."""
    dom = Domain.from_categories({"A": ["a0", "a1"], "B": ["B0", "B1", "B2"], "C": ["c0", "c1"]})
    ab = np.array([[0.3, 0.2, 0.0], [0.1, 0.4, 0.0]])
    c_given_b = np.array([[0.5, 0.5], [0.2, 0.8], [0.9, 0.1]])
    full = Marginal(dom, ab[:, :, None] * c_given_b[None, :, :], 1000)
    return exact_model(full, nx.Graph([("A", "B"), ("B", "C")])), full


def test_zero_probability_condition_raises():
    from lopub.data.marginal import ZeroProbabilityError

    model, full = zero_cell_model()
    for attrs in (["A"], ["A", "C"], ["C"]):  # inside a clique and by inference
        with pytest.raises(ZeroProbabilityError,
                           match=r"condition B=B2 has estimated probability 0; the conditional "
                                 r"distribution of .* is undefined"):
            model.query(attrs, where={"B": "B2"})
    assert issubclass(ZeroProbabilityError, ValueError)
    with pytest.raises(ZeroProbabilityError, match="condition A=a1, B=B2"):
        full.condition({"A": "a1", "B": "B2"})
    q = model.query(["A"], where={"B": "B1"})  # a positive condition still works
    np.testing.assert_allclose(q.values, [1 / 3, 2 / 3])
    assert q.meta["condition_mass"] == pytest.approx(0.6) and q.n == 600
