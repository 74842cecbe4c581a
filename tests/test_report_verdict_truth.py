"""The report's true-data finding (verdict_block.real_data_finding) on useless and on right releases.

Found by the session-38 report tour: on iris (150 rows, epsilon 1) the model is uniform, yet a
synthetic sample that landed closer than uniform by chance read "ok: the release beats both
baselines"; on independent columns the independence release (CLI verdict good) read "usable with
caveats: it holds the dependencies worse"; on uniform independent columns a release as good as
any read "not usable: no better than uniform noise".
"""
from __future__ import annotations

import networkx as nx
import numpy as np

from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.data.marginal import Marginal
from lopub.dependency.junction import junction_tree
from lopub.model.graphical import Model
from lopub.publish.report.verdict_block import real_data_finding, report_verdict, truth_tests

DOM = Domain.from_categories({"a": ["0", "1"], "b": ["0", "1"]})


def _data(table: np.ndarray, n: int) -> Dataset:
    """n records over DOM whose 2-way table is exactly ``table`` (rounded counts)."""
    counts = np.rint(np.asarray(table) * n).astype(int)
    codes = np.repeat(np.array([[i, j] for i in range(2) for j in range(2)]), counts.ravel(), axis=0)
    return Dataset(codes, DOM)


def _independent_model(pa: float, pb: float) -> Model:
    g = nx.Graph()
    g.add_nodes_from(DOM.attrs)
    tree = junction_tree(g, DOM)
    one = {"a": np.array([1 - pa, pa]), "b": np.array([1 - pb, pb])}
    tables = [Marginal(DOM.project(list(c)), one[c[0]]) for c in tree.cliques]
    return Model.from_marginals(DOM, tree, tables, n=150)


def test_a_sample_of_a_uniform_model_closer_than_uniform_by_chance_is_no_better_than_uniform():
    real = _data([[0.5, 0.0], [0.0, 0.5]], 200)  # a == b, uniform one-ways: independence = uniform
    lucky = _data([[0.27, 0.23], [0.23, 0.27]], 200)  # TVD 0.46 < uniform's 0.5
    model = _independent_model(0.5, 0.5)
    finding = real_data_finding(lucky, real, model)
    assert finding.severity == "fatal" and "no better than uniform" in finding.message
    assert "closer by chance" in finding.message  # the records' own figure is shown and explained
    assert report_verdict(model, lucky, real).findings[-1].severity == "fatal"  # the report passes the model


def test_the_uniform_model_itself_is_no_better_than_uniform():
    real = _data([[0.5, 0.0], [0.0, 0.5]], 200)
    assert real_data_finding(_independent_model(0.5, 0.5), real).severity == "fatal"  # was "ok: beats both"


def test_the_independence_release_of_independent_columns_is_not_called_bad():
    rng = np.random.default_rng(3)
    n = 5_000
    real = Dataset(np.column_stack([rng.random(n) < 0.2, rng.random(n) < 0.7]).astype(int), DOM)
    assert truth_tests([real.project([a]).values for a in DOM.attrs], [real.project(["a", "b"]).values],
                       n) == {"uniform_shown": True, "dependence_shown": False}
    model = _independent_model(0.23, 0.66)  # one-ways off by LDP noise, no dependence: the right structure
    finding = real_data_finding(model, real)
    assert finding.severity == "ok" and "independence is the right structure" in finding.message


def test_a_release_as_good_as_any_on_uniform_data_is_not_called_noise():
    rng = np.random.default_rng(4)
    real = Dataset(rng.integers(0, 2, size=(5_000, 2)), DOM)
    release = Dataset(rng.integers(0, 2, size=(5_000, 2)), DOM)
    finding = real_data_finding(release, real, _independent_model(0.5, 0.5))
    assert finding.severity == "ok" and "do not differ from uniform" in finding.message


def test_dependent_data_and_an_independent_release_keep_the_caveat():
    real = _data([[0.7, 0.1], [0.0, 0.2]], 1_000)  # strong dependence, skewed one-ways
    finding = real_data_finding(_independent_model(0.25, 0.35), real)
    assert finding.severity == "caveat" and "farther from it than independence" in finding.message


def test_the_models_figure_is_shown_only_where_it_differs_visibly_from_the_records():
    real = _data([[0.5, 0.0], [0.0, 0.5]], 200)
    model = _independent_model(0.5, 0.5)
    near = _data([[0.2501, 0.2499], [0.2499, 0.2501]], 10_000)  # TVD 0.4998: both read 0.500
    message = real_data_finding(near, real, model).message
    assert "closer by chance" not in message and "TVD 0.500 against" in message


def test_records_farther_than_their_model_show_the_models_figure_too():
    real = _data([[0.4, 0.1], [0.1, 0.4]], 1_000)
    model = _independent_model(0.5, 0.5)  # 0.3 from the truth
    worse = _data([[0.1, 0.4], [0.4, 0.1]], 1_000)  # records far off their model: 0.6
    message = real_data_finding(worse, real, model).message
    assert "mean 2-way TVD 0.600 against the true data (the model the records were sampled from: 0.300;" in message
