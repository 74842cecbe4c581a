"""The verdict names a column that holds most of the one-way cells when a signal is lost under the
shrinkage prior (its pooled spread is diluted by that table; docs/SHRINKAGE.md "Known
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
def test_a_many_category_column_no_longer_flattens_a_signal_far_beyond_the_prior(seed):
    # income 0.6 / 0.4 measured from ~400 users per table at epsilon 8 (far beyond noise); the 966
    # cells of 'big' (uniform) outweigh the other 32 in the pooled prior spread. Before the outlier rule
    # (lopub/model/pgm/shrink.py, "Outliers") the prior pulled income to 0.5 and the verdict could only
    # name 'big' as the cause; now income's table is beyond the prior and keeps its measurement.
    found = uniform_findings(records(seed, True), seed)
    assert [f["severity"] for f in found] == ["ok"]
    assert "dominant" not in found[0]["figures"]
    # without that column the same: income kept
    plain = uniform_findings(records(seed, False), seed)
    assert [f["severity"] for f in plain] == ["ok"]


def _table(name: str, k: int, measured, model, variance: float):
    from lopub.estimate.measurement import Measurement
    from lopub.model.table_stats import Table

    dom = Domain.from_categories({name: [str(i) for i in range(k)]})
    return Table(Measurement(dom, np.asarray(measured, dtype=float), 3000, variance=variance),
                 np.asarray(model, dtype=float))


@pytest.mark.parametrize("with_big", [True, False])
def test_a_lost_signal_names_the_column_that_holds_most_one_way_cells(with_big):
    """The verdict's hint, on tables where the model lost a signal the measurements hold far beyond
    their noise (income measured 0.6 / 0.4 with sd 0.01, the model's 0.5 / 0.5)."""
    from lopub.model.checks import uniform_check
    from lopub.model.table_stats import TableStats

    one = {"inc": _table("inc", 2, [0.6, 0.4], [0.5, 0.5], 1e-4),
           "e": _table("e", 4, [0.3, 0.2, 0.3, 0.2], [0.3, 0.2, 0.3, 0.2], 1e-4),
           **{a: _table(a, 8, np.full(8, 1 / 8), np.full(8, 1 / 8), 1e-4) for a in ("a", "d")}}
    if with_big:
        one["big"] = _table("big", 966, np.full(966, 1 / 966), np.full(966, 1 / 966), 1e-6)
    stats = TableStats(None, one, [], [])
    lost = [f for f in uniform_check(stats, shrunk=True) if f.check == "uniform"]
    assert len(lost) == 1 and lost[0].severity in ("caveat", "fatal") and "inc is uniform" in lost[0].message
    assert ("Column 'big' holds 966 of the 988 one-way cells" in lost[0].message) == with_big
    assert (lost[0].figures.get("dominant") == "big") == with_big
    # without shrinkage nothing pulls towards uniform, and the hint would be wrong
    unshrunk = [f for f in uniform_check(stats, shrunk=False) if f.check == "uniform"]
    assert unshrunk[0].severity == lost[0].severity and "holds 966" not in unshrunk[0].message
