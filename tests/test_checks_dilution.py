"""The verdict names a column that holds most of the one-way cells when a signal is lost under the
shrinkage prior (its pooled spread is diluted by that table; lopub/model/pgm/shrink.py "Known
weakness", found on a user's CSV with a 966-category date column)."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from lopub.collect import collect
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.pipeline.steps import fit

SIZES = {"a": 8, "s": 2, "e": 4, "inc": 2, "d1": 8, "d2": 8, "big": 966}


def records(seed: int, big: bool) -> Dataset:
    rng = np.random.default_rng(seed)
    n = 3000
    cols = {"inc": (rng.random(n) < 0.4).astype(int)}
    cols["e"] = np.where(rng.random(n) < 0.5, cols["inc"] * 2 + rng.integers(0, 2, n), rng.integers(0, 4, n))
    cols.update({a: rng.integers(0, 8, n) for a in ("a", "d1", "d2")}, s=rng.integers(0, 2, n),
                big=rng.integers(0, 966, n))
    sizes = {a: k for a, k in SIZES.items() if big or a != "big"}
    dom = Domain.from_categories({a: [str(i) for i in range(k)] for a, k in sizes.items()})
    return Dataset.from_pandas(pd.DataFrame({a: cols[a].astype(str) for a in sizes}), dom)


def uniform_findings(data: Dataset, seed: int, **kw) -> list[dict]:
    reports, _ = collect(data, 8.0, protocol="auto", rng=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fit(reports, **kw)
    return [f for f in res.report.verdict["findings"] if f["check"] == "uniform"]


@pytest.mark.parametrize("seed", range(2))
def test_a_many_category_column_is_named_where_the_prior_flattens_the_others(seed):
    # income 0.6 / 0.4 measured from ~400 users per table at epsilon 8 (far beyond noise); the 966
    # cells of 'big' (uniform) outweigh the other 32 in the pooled prior spread, which pulls it to 0.5
    found = uniform_findings(records(seed, True), seed)
    assert found and found[0]["severity"] in ("caveat", "fatal")
    assert "'inc'" in found[0]["message"] or "inc " in found[0]["message"]
    assert "Column 'big' holds 966 of the 998 one-way cells" in found[0]["message"]
    assert found[0]["figures"]["dominant"] == "big"
    # without that column the same prior keeps income's table: no lost signal, no hint
    plain = uniform_findings(records(seed, False), seed)
    assert [f["severity"] for f in plain] == ["ok"]
    # without shrinkage nothing pulls towards uniform, and the hint would be wrong
    unshrunk = uniform_findings(records(seed, True), seed, shrink=False)
    assert all("holds 966" not in f["message"] for f in unshrunk)
