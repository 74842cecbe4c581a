"""The report's mutual-information section and long tables, as the session-38 tour saw them.

Iris at epsilon 1 (one attribute per user): the MI "estimated from the reports" was an all-grey
panel, an empty plot.  Bloom reports: the estimated MI is inflated by the noise (1.79 nats on a
pair the edge test found within its noise) and the page did not say so.  Digits (65 attributes):
the per-attribute Column Shapes table ran 65 rows open on the page.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from lopub.collect import collect
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.pipeline.steps import fit
from lopub.publish.report import build_report


def _fit(data: Dataset, epsilon: float, protocol: str):
    reports, _ = collect(data, epsilon, protocol=protocol, rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit(reports).model


def _section(page: str, sid: str) -> str:
    return re.search(rf'<section id="{sid}">(.*?)</section>', page, re.S).group(1)


@pytest.fixture(scope="module")
def one_attribute():
    rng = np.random.default_rng(0)
    names = [f"q{i:02d}" for i in range(25)]
    frame = pd.DataFrame({a: rng.choice(["x", "y", "z"], 3000) for a in names})
    data = Dataset.from_pandas(frame, Domain.from_categories({a: ["x", "y", "z"] for a in names}))
    return _fit(data, 4.0, "one-attribute"), frame


def test_no_measured_pair_draws_no_empty_mi_panel(one_attribute):
    model, frame = one_attribute
    alone = _section(build_report(model), "mutual-information")
    assert "<img" not in alone and "the collection measured no pair of attributes" in alone
    assert "the model takes all 300 pairs as independent" in alone
    with_real = _section(build_report(model, real=frame), "mutual-information")
    assert with_real.count("<img") == 1 and "the real data&#x27;s MI" in with_real


def test_per_attribute_scores_of_wide_data_are_collapsed(one_attribute):
    model, frame = one_attribute
    scores = _section(build_report(model, real=frame), "scores")
    assert "<details><summary>Column Shapes per attribute (25 attributes)</summary>" in scores


def test_noise_inflated_mi_of_bloom_reports_is_explained():
    rng = np.random.default_rng(0)
    sizes = {"wide": 40, "b": 6, "c": 2}  # independent columns
    dom = Domain.from_categories({a: [f"v{i}" for i in range(k)] for a, k in sizes.items()})
    data = Dataset(np.column_stack([rng.integers(0, k, 2000) for k in sizes.values()]), dom)
    model = _fit(data, 4.0, "bloom")
    mi = model.graph.mi[0, 1]
    assert not model.graph.edges and mi > 0.5  # no edge, yet a large estimated MI
    text = _section(build_report(model), "mutual-information")
    assert "inflated by their noise" in text
    assert f"found within their noise is {mi:.3g} nats (wide, b)" in text
