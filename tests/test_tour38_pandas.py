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


def _frame(n=60, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.choice(list("xyz"), n), "b": rng.choice(list("pq"), n)})


def test_multiindex_columns_are_refused_with_the_way_out():
    # before: DomainError "missing columns ["('g', 'a')", ...]; the data has [('g', 'a'), ...]"
    from lopub import Synthesizer

    df = _frame()
    df.columns = pd.MultiIndex.from_tuples([("g", "a"), ("g", "b")])
    for call in (lambda: Synthesizer(epsilon=4, rng=0).fit(df), lambda: infer_domain(df),
                 lambda: Dataset.from_pandas(df, infer_domain(_frame()))):
        with pytest.raises(ValueError, match=r"has MultiIndex columns \(2 levels, e\.g\. \('g', 'a'\)\); "
                                             r".*flatten them first"):
            call()


def test_a_frame_without_columns_says_so():
    # before: "no column is left for the domain: [] are identifier-like (pass identifiers='keep' ...)"
    from lopub import Synthesizer

    with pytest.raises(ValueError, match=r"^data has no columns \(10 rows\); expected at least one"):
        Synthesizer(epsilon=4, rng=0).fit(pd.DataFrame(index=range(10)))
    with pytest.raises(ValueError, match=r"^df has no columns"):
        infer_domain(pd.DataFrame(index=range(10)))
