"""Synthesis along the junction tree (Alg. 6)."""
import networkx as nx
import numpy as np
import pandas as pd
import pytest

from lopub.dependency import junction_tree
from lopub.dependency.junction import JunctionTree
from lopub.data.domain import Domain
from lopub.data.marginal import Marginal
from lopub.model.graphical import Model
from lopub.publish.synthesize import _draw_rows, sample_codes, synthesize, write_release
from test_model import CHAIN, TREE, exact_model, tree_joint


def within_sampling_tolerance(empirical, p, n, z=5.0):
    """Every cell within z analytic binomial standard deviations sqrt(p (1 - p) / n) of p.

    One count (1/n) is added for cells with p = 0 or 1, whose sd is 0: the
    empirical share of a zero-probability cell must then be exactly 0 (< 1/n).
    With a few hundred cells, z = 5 gives a false alarm below 1e-4 for any seed.
    """
    sd = np.sqrt(p * (1 - p) / n)
    return np.all(np.abs(empirical - p) < z * sd + 1.0 / n)


class FixedUniforms:
    """Stands in for a Generator: ``random(size)`` returns the given uniforms."""

    def __init__(self, u):
        self.u = np.asarray(u, dtype=float)

    def random(self, size=None):
        assert size == self.u.shape[0]
        return self.u.copy()


@pytest.mark.parametrize("spec", [CHAIN, TREE])
@pytest.mark.parametrize("seed", [11, 12])
def test_clique_marginals_preserved(spec, seed):
    full, g = tree_joint(*spec, seed=2)
    model = exact_model(full, g)
    n = 20000
    data = sample_codes(model, n, rng=seed)
    for c, table in zip(model.tree.cliques, model.cliques):
        assert within_sampling_tolerance(data.project(list(c)).values, table.values, n), c
    # and a pair that lives in no single clique (exact for trees)
    a, b = spec[0][0][0], spec[0][-1][1]
    assert within_sampling_tolerance(data.project([a, b]).values, full.project([a, b]).values, n)


def test_same_seed_same_release():
    full, g = tree_joint(*TREE)
    model = exact_model(full, g)
    a = synthesize(model, 3000, rng=7)
    b = synthesize(model, 3000, rng=7)
    c = synthesize(model, 3000, rng=8)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_default_size_is_number_of_reports():
    full, g = tree_joint(*CHAIN)
    model = exact_model(full, g)
    assert len(synthesize(model, rng=0)) == full.n


def test_zero_probability_separator_falls_back():
    dom = Domain.from_categories({"A": ["a0", "a1"], "B": ["b0", "b1", "b2"], "C": ["c0", "c1"]})
    jt = JunctionTree([("A", "B"), ("B", "C")], [(0, 1)], [0], [], [0, 1])
    ab = Marginal(dom.project(["A", "B"]), np.array([[0.3, 0.2, 0.0], [0.1, 0.1, 0.3]]), 1000)
    # the (B, C) estimate gives no mass to b2, which (A, B) makes likely
    bc = Marginal(dom.project(["B", "C"]), np.array([[0.3, 0.1], [0.1, 0.5], [0.0, 0.0]]), 1000)
    raw = Model(dom, jt, [ab, bc], n=1000)  # uncalibrated on purpose
    n = 20000
    data = sample_codes(raw, n, rng=3)
    codes = data.codes.astype(int)
    assert (codes >= 0).all()
    c_given_b2 = codes[codes[:, 1] == 2, 2]
    fallback = np.array([0.4, 0.6])  # P_BC(C), the documented rule
    assert within_sampling_tolerance(np.bincount(c_given_b2, minlength=2) / c_given_b2.size,
                                     fallback, c_given_b2.size)
    cal = Model.from_marginals(dom, jt, [ab, bc], n=1000)
    assert all(np.isfinite(m.values).all() for m in cal.cliques)
    np.testing.assert_allclose(cal.cliques[1].project(["B"]).values, [0.4, 0.3, 0.3])
    np.testing.assert_allclose(cal.cliques[1].values[2], [0.3 * 0.4, 0.3 * 0.6])


def test_single_attribute():
    dom = Domain.from_categories({"only": ["x", "y", "z"]})
    g = nx.Graph()
    g.add_node("only")
    jt = junction_tree(g, dom)
    p = np.array([0.5, 0.0, 0.5])
    model = Model.from_marginals(dom, jt, [Marginal(dom, p, 10)], n=10)
    df = synthesize(model, 5000, rng=1)
    assert list(df.columns) == ["only"] and set(df["only"]) == {"x", "z"}


def test_independent_attributes():
    dom = Domain.from_categories({"a": ["0", "1"], "b": ["0", "1", "2"]})
    g = nx.Graph()
    g.add_nodes_from(dom.attrs)
    jt = junction_tree(g, dom)
    pa, pb = np.array([0.2, 0.8]), np.array([0.5, 0.25, 0.25])
    tables = [Marginal(dom.project(["a"]), pa), Marginal(dom.project(["b"]), pb)]
    model = Model.from_marginals(dom, jt, tables, n=100)
    n = 20000
    data = sample_codes(model, n, rng=5)
    assert within_sampling_tolerance(data.project(["a", "b"]).values, np.outer(pa, pb), n)


def test_labels_and_files(tmp_path):
    full, g = tree_joint(*CHAIN)
    model = exact_model(full, g)
    df = synthesize(model, 500, rng=2)
    assert set(df["B"]) <= {"B0", "B1", "B2", "B3"}
    write_release(df, tmp_path / "s.csv")
    write_release(df, tmp_path / "s.parquet")
    back = pd.read_csv(tmp_path / "s.csv")
    assert list(back.columns) == list(df.columns) and len(back) == 500
    pq = pd.read_parquet(tmp_path / "s.parquet")
    assert (pq["D"].astype(str) == df["D"].astype(str)).all()


def test_bad_n():
    full, g = tree_joint(*CHAIN)
    model = exact_model(full, g)
    with pytest.raises(ValueError, match=r"n \(0\) must be an integer >= 1"):
        synthesize(model, 0, rng=0)
    model.n = None
    with pytest.raises(ValueError, match="n \\(None\\) must be given"):
        synthesize(model, rng=0)


def test_draw_never_picks_a_zero_cell_at_the_end_of_a_late_row():
    """Row offsets in one flat CDF lose precision: u = 1 - 2**-53 on row 19,999 used to give cell 2."""
    cond = np.tile([0.5, 0.5, 0.0], (20000, 1))
    u = np.nextafter(1.0, 0.0)
    draw = _draw_rows(cond, np.array([0, 19999]), FixedUniforms([u, u]))
    np.testing.assert_array_equal(draw, [1, 1])


@pytest.mark.parametrize("seed", range(3))
def test_draw_adversarial_uniforms_hit_only_positive_cells(seed):
    rng = np.random.default_rng(seed)
    rows, k = 5000, 7
    cond = rng.dirichlet(np.full(k, 0.3), size=rows)
    cond[rng.random((rows, k)) < 0.4] = 0.0  # many zero cells, also leading and trailing
    cond[:, 0] = np.where(rng.random(rows) < 0.5, 0.0, cond[:, 0])
    cond[cond.sum(axis=1) == 0, 3] = 1.0
    cond /= cond.sum(axis=1, keepdims=True)
    cfg = np.repeat(np.arange(rows), 8)
    cdf = np.cumsum(cond, axis=1)[cfg, np.arange(cfg.size) % k]  # every CDF step of the row...
    edges = np.concatenate([cdf, np.nextafter(cdf, 0.0), np.nextafter(cdf, 2.0)])
    u = np.clip(edges, 0.0, np.nextafter(1.0, 0.0))  # ...just below, at and above it, and 1 - 2**-53
    u = np.concatenate([u, np.zeros(cfg.size), np.full(cfg.size, np.nextafter(1.0, 0.0))])
    cfg3 = np.tile(cfg, 5)
    draw = _draw_rows(cond, cfg3, FixedUniforms(u))
    assert (cond[cfg3, draw] > 0).all()
    # and the draw is the inverse CDF of the row: smallest j with cdf[j] > u
    full_cdf = np.cumsum(cond, axis=1)
    full_cdf /= full_cdf[:, -1:]
    full_cdf[:, -1] = 1.0
    expected = (full_cdf[cfg3] <= u[:, None]).sum(axis=1)
    np.testing.assert_array_equal(draw, np.minimum(expected, k - 1))


def test_draw_follows_the_row_distribution():
    cond = np.array([[0.0, 0.2, 0.0, 0.8], [0.5, 0.0, 0.5, 0.0], [0.0, 0.0, 0.0, 1.0]])
    n = 30000
    cfg = np.repeat([0, 1, 2], n)
    draw = _draw_rows(cond, cfg, np.random.default_rng(5))
    for r in range(3):
        share = np.bincount(draw[cfg == r], minlength=4) / n
        assert within_sampling_tolerance(share, cond[r], n), (r, share)
