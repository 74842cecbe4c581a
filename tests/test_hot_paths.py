"""Hot paths at scale (session 38): each vectorized or de-duplicated step gives what the
slower path gave, and the slow step is not taken again (no timing here: the figures are in
the commit messages and docs/BENCHMARKS.md)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lopub import Dataset, infer_schema
from lopub.data._labels import parse_numbers

MIXED = ["1", "x", "2.5", "", " 3", "inf", "nan", "1e400", "9007199254740993", "-0", "abc", "1,5",
         "0x10", "True", "007", "1.0", "-2e-3"]


@pytest.mark.parametrize("dtype", [object, "str"])
@pytest.mark.parametrize("values", [MIXED, ["a", "b", "a"], ["1", "2", "1"], [], ["4.5"] * 3 + ["y"]])
def test_parse_numbers_equals_to_numeric_coerce(values, dtype):
    text = pd.Series(values, dtype=dtype)
    expected = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
    got = parse_numbers(text)
    assert got.dtype == np.float64 and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)  # NaN where NaN, -0.0 and inf kept


def test_parse_numbers_reads_a_missing_cell_as_nan():
    text = pd.Series(["1", None, "z", "1"], dtype=object)
    np.testing.assert_array_equal(parse_numbers(text), [1.0, np.nan, np.nan, 1.0])


def _spy_coerced(monkeypatch) -> list[int]:
    """Sizes of every pd.to_numeric(..., errors='coerce') call: the slow path, where each
    string that is not a number costs a failed parse."""
    sizes: list[int] = []
    real = pd.to_numeric

    def spy(arg, *args, **kwargs):
        if kwargs.get("errors") == "coerce":
            sizes.append(len(arg))
        return real(arg, *args, **kwargs)

    monkeypatch.setattr(pd, "to_numeric", spy)
    return sizes


def test_schema_parses_each_distinct_text_value_once(monkeypatch):
    # 20,000 rows of a 3-category text column and a numeric one: the text column's cells were
    # parsed as numbers twice (kind, identifier check), 40,000 failed parses; 10^6 Adult rows
    # spent 64 % of lopub schema's time there
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"job": rng.choice(["clerk", "nurse", "cook"], 20_000),
                       "age": rng.integers(18, 90, 20_000).astype(str)})
    expected = infer_schema(df).domain
    sizes = _spy_coerced(monkeypatch)
    report = infer_schema(df)
    assert report.domain == expected
    assert sum(sizes) <= 20, sizes


def test_encoding_number_labels_of_a_binned_column_parses_distinct_values(monkeypatch):

    rng = np.random.default_rng(1)
    ages = rng.integers(18, 90, 20_000).astype(str)
    df = pd.DataFrame({"age": ages})  # labels spelling numbers, matched to bins by value
    domain = infer_schema(df).domain
    before = Dataset.from_pandas(df, domain).codes
    sizes = _spy_coerced(monkeypatch)
    np.testing.assert_array_equal(Dataset.from_pandas(df, domain).codes, before)
    assert sum(sizes) <= 200, sizes
