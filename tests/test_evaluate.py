"""TVD over k-way marginals, per-attribute TVD, correlation identification."""
import math

import numpy as np
import pytest

from lopub.data.dataset import Dataset
from lopub.datasets import embedded_model
from lopub.data.domain import Domain
from lopub.publish.evaluate import (average_tvd, correlation_identification, evaluate_release, k_subsets,
                            per_attribute_tvd, tvd)
from lopub.data.marginal import Marginal


def test_tvd_known_value():
    dom = Domain.from_categories({"a": ["x", "y", "z"]})
    p = Marginal(dom, np.array([0.5, 0.5, 0.0]))
    q = Marginal(dom, np.array([0.2, 0.5, 0.3]))
    assert tvd(p, q) == pytest.approx(0.3)
    assert tvd(p, p) == 0


def test_average_tvd_all_and_sampled_subsets():
    bn = embedded_model()
    a = bn.sample(3000, rng=1)
    b = bn.sample(3000, rng=2)
    d = len(bn.domain)
    full = average_tvd(a, b, 2)
    assert full["subsets"] == math.comb(d, 2) == len(full["per_subset"])
    assert 0 < full["mean"] <= full["max"] <= 1
    s1 = average_tvd(a, b, 3, subsets=20, rng=5)
    s2 = average_tvd(a, b, 3, subsets=20, rng=5)
    assert s1["subsets"] == 20 and s1["per_subset"] == s2["per_subset"]
    assert average_tvd(a, a, 2)["mean"] == 0
    # a model answers the same calls as data
    assert average_tvd(bn, bn, 2)["mean"] == pytest.approx(0, abs=1e-12)


def test_per_attribute_and_report():
    bn = embedded_model()
    a, b = bn.sample(2000, rng=1), bn.sample(2000, rng=2)
    per = per_attribute_tvd(a, b)
    assert list(per) == list(bn.domain.attrs)
    rep = evaluate_release(a, b, k=1)
    assert rep["mean"] == pytest.approx(np.mean(list(per.values())))


def test_k_subsets_errors():
    with pytest.raises(ValueError, match=r"k \(4\) must be at most the number of attributes \(3\)"):
        k_subsets(["a", "b", "c"], 4)
    assert len(k_subsets(list("abcdef"), 2, subsets=100)) == 15


def test_correlation_identification():
    attrs = ["a", "b", "c", "d"]
    truth = [("a", "b"), ("b", "c"), ("c", "d")]
    found = [("b", "a"), ("c", "d"), ("a", "d")]
    r = correlation_identification(found, truth, attrs)
    assert r["pairs"] == 6 and r["added"] == 1 and r["lost"] == 1
    assert r["accuracy"] == pytest.approx(4 / 6)
    assert r["recall"] == pytest.approx(2 / 3)
    assert r["added_edges"] == [["a", "d"]] and r["lost_edges"] == [["b", "c"]]
    with pytest.raises(ValueError, match=r"edge \['a', 'z'\] must join two distinct attributes"):
        correlation_identification([("a", "z")], truth, attrs)


def test_dataset_sources_need_same_domain():
    dom = Domain.from_categories({"a": ["0", "1"], "b": ["0", "1"]})
    x = Dataset(np.array([[0, 1], [1, 1]]), dom)
    with pytest.raises(ValueError, match="unknown attribute 'c'"):
        average_tvd(x, x, 1, attrs=["c"])


def test_classification_accuracy_per_target_and_baselines():
    from lopub.publish.evaluate import baseline_accuracy, classification_accuracy

    bn = embedded_model()
    train, test = bn.sample(600, rng=1), bn.sample(300, rng=2)
    attrs, sizes = list(bn.domain.attrs), list(bn.domain.sizes)
    binary = [a for a, s in zip(attrs, sizes) if s == 2]
    acc = classification_accuracy(train, test, trees=5, max_train=400, random_state=3, rng=4)
    assert list(acc["rf"]) == attrs and list(acc["svm"]) == binary
    assert all(0.0 <= v <= 1.0 for part in acc.values() for v in part.values())
    per = classification_accuracy(train, test, trees=5, max_train=400, random_state=dict.fromkeys(attrs, 3), rng=4)
    assert per == acc  # one seed for all targets or the same seed per target: the same forests
    base = baseline_accuracy(train, test)
    assert base["random"] == {a: 1.0 / s for a, s in zip(attrs, sizes)}
    j = 0
    mode = np.bincount(train.codes[:, j], minlength=sizes[j]).argmax()
    assert base["majority"][attrs[j]] == pytest.approx(np.mean(test.codes[:, j] == mode))
    # a target that takes one value in training is predicted as that value
    codes = train.codes.copy()
    codes[:, j] = mode
    one = classification_accuracy(Dataset(codes, bn.domain), test, trees=5, random_state=0)
    assert one["rf"][attrs[j]] == pytest.approx(base["majority"][attrs[j]])


def test_classification_accuracy_refuses_records_of_another_domain():
    from lopub.errors import DomainError
    from lopub.publish.evaluate import baseline_accuracy, classification_accuracy

    a = Dataset(np.array([[0, 1], [1, 0]] * 10), Domain.from_categories({"x": ["0", "1"], "y": ["0", "1"]}))
    b = Dataset(np.array([[0, 1], [1, 0]] * 10), Domain.from_categories({"x": ["0", "1"], "z": ["0", "1"]}))
    for func in (classification_accuracy, baseline_accuracy):
        with pytest.raises(DomainError, match=f"{func.__name__}: train .* and test .* the same domain"):
            func(a, b)
