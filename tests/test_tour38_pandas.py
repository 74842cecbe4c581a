"""A data scientist's DataFrames through lopub.Synthesizer (session 38 tour): defects found and fixed."""
import warnings

import numpy as np
import pandas as pd
import pytest

from lopub.data.dataset import Dataset
from lopub.data.schema import infer_domain
from lopub.data.schema_bins import numeric_binning
from lopub.data.values import to_values


def _income(n=300, seed=0):
    x = np.random.default_rng(seed).lognormal(3, 0.5, n)
    x[7] = 1e9  # one mistyped income among values up to ~100
    return x


def test_outlier_gets_its_own_bin_not_a_stretched_end_bin():
    x = _income()
    x[8] = -1e9
    b, notes = numeric_binning(x, 4)
    assert set(b.points) == {1e9, -1e9}
    assert max(b.edges) < 1e3 and min(b.edges) > 0  # the intervals span the bulk only
    assert sum("an outlier" in n for n in notes) == 2
    assert not any("missing value" in n for n in notes)  # 0.3 %: not a sentinel's hint


def test_outlier_does_not_spread_a_release_across_the_gap():
    # the real records decoded through the inferred domain (a release draws within bins as this
    # does): before, the top quantile bin was [q75, 1e9] and ~75 of 300 values landed above 1,000
    df = pd.DataFrame({"income": _income()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        domain = infer_domain(df)
    codes = Dataset.from_pandas(df, domain).codes
    out = to_values(codes, domain.attributes, rng=np.random.default_rng(0))["income"]
    assert int((out > 1e3).sum()) == 1 and out.max() == 1e9
    assert out[df["income"] < 1e3].max() <= df["income"][df["income"] < 1e3].max()
