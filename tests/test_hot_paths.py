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
@pytest.mark.parametrize("values", [MIXED, ["a", "b", "a"], ["1", "2", "1"], [], ["4.5"] * 3 + ["y"],
                                    ["0", "1", "1", " 0"] * 10, [str(i) for i in range(50)]])
def test_parse_numbers_equals_to_numeric_coerce(values, dtype):
    text = pd.Series(values, dtype=dtype)
    expected = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
    got = parse_numbers(text)
    assert got.dtype == np.float64 and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)  # NaN where NaN, -0.0 and inf kept


def test_parse_numbers_reads_a_missing_cell_as_nan():
    text = pd.Series(["1", None, "z", "1"], dtype=object)
    np.testing.assert_array_equal(parse_numbers(text), [1.0, np.nan, np.nan, 1.0])


def _spy_coerced(monkeypatch, every: bool = False) -> list[int]:
    """Sizes of every pd.to_numeric(..., errors='coerce') call (``every``: of every call): the
    slow path, where each string that is not a number costs a failed parse."""
    sizes: list[int] = []
    real = pd.to_numeric

    def spy(arg, *args, **kwargs):
        if every or kwargs.get("errors") == "coerce":
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
    assert sum(sizes) <= 100, sizes  # distinct values: 3 of the text column's, 72 ages


def test_schema_parses_a_few_distinct_numbers_once(monkeypatch):
    # 10^6 x 300 columns of "0" / "1": pandas parsed every cell (0.76 s a column), 58 % of
    # lopub schema's time; the distinct strings cost 0.09 s
    df = pd.DataFrame({f"b{j}": np.random.default_rng(j).integers(0, 2, 20_000).astype(str)
                       for j in range(3)})
    expected = infer_schema(df).domain
    sizes = _spy_coerced(monkeypatch, every=True)
    assert infer_schema(df).domain == expected
    assert sum(sizes) <= 3 * 10, sizes


def test_encoding_number_labels_of_a_binned_column_parses_distinct_values(monkeypatch):

    rng = np.random.default_rng(1)
    ages = rng.integers(18, 90, 20_000).astype(str)
    df = pd.DataFrame({"age": ages})  # labels spelling numbers, matched to bins by value
    domain = infer_schema(df).domain
    before = Dataset.from_pandas(df, domain).codes
    sizes = _spy_coerced(monkeypatch)
    np.testing.assert_array_equal(Dataset.from_pandas(df, domain).codes, before)
    assert sum(sizes) <= 200, sizes


def _coded(n: int, sizes, seed: int = 0) -> Dataset:
    from lopub.data.domain import Attribute, Domain
    rng = np.random.default_rng(seed)
    dom = Domain(tuple(Attribute(f"a{j}", tuple(f"c{i}" for i in range(k))) for j, k in enumerate(sizes)))
    codes = np.stack([rng.integers(0, k, n) for k in sizes], axis=1)
    codes[:, 1] = np.where(rng.random(n) < 0.7, codes[:, 0] % sizes[1], codes[:, 1])  # a dependence
    return Dataset(codes, dom)


def test_pair_counts_equal_the_datasets_own_projections_bit_for_bit(monkeypatch):
    from lopub.data import pairs
    data = _coded(5_003, [3, 2, 1, 5, 2, 7])
    monkeypatch.setattr(pairs, "CHUNK_CELLS", 400)  # chunks of 400 // 20 = 20 records
    src = pairs.PairCounts(data, data.domain.attrs)
    for a, b in [("a0", "a1"), ("a1", "a0"), ("a2", "a5"), ("a5", "a3"), ("a4", "a0")]:
        got, want = src.project([a, b]), data.project([a, b])
        assert got.domain == want.domain and got.n == want.n and got.meta == want.meta
        np.testing.assert_array_equal(got.values, want.values)
    for attrs in (["a3"], ["a0", "a1", "a2"]):  # the dataset's own answer
        np.testing.assert_array_equal(src.project(attrs).values, data.project(attrs).values)


def test_pair_source_takes_the_product_only_where_it_pays():
    import itertools

    from lopub.data.pairs import PairCounts, pair_source
    wide = _coded(50, [2] * 30)
    every = list(itertools.combinations(wide.domain.attrs, 2))
    assert isinstance(pair_source(wide, every), PairCounts)  # K^2 = 3,600 <= 30 x 435
    assert pair_source(wide, [("a0", "a1"), ("a2", "a3"), ("a4", "a5")]) is wide  # 144 > 30 x 3
    narrow = _coded(50, [40, 40, 3])
    assert pair_source(narrow, list(itertools.combinations(narrow.domain.attrs, 2))) is narrow
    assert pair_source("not a dataset", every) == "not a dataset"


def _count_projections(monkeypatch) -> list[int]:
    """The sizes of the attribute sets that ``Dataset.project`` / ``marginal`` are asked for, as they come."""
    calls: list[int] = []
    real_project = Dataset.project

    def spy(self, attrs):
        calls.append(len(attrs))
        return real_project(self, attrs)

    monkeypatch.setattr(Dataset, "project", spy)
    monkeypatch.setattr(Dataset, "marginal", spy)
    return calls


def test_evaluate_counts_all_pairs_of_a_wide_dataset_in_one_product(monkeypatch):
    # 30 binary attributes, 435 pairs: evaluate passed over the records once per pair and
    # dataset (870 projections); 300 attributes at 10^6 records: about 2 hours against the
    # product's 2 minutes, the same tables
    from lopub.publish.evaluate import average_tvd, evaluate_release
    real, syn = _coded(2_000, [2] * 30, seed=1), _coded(1_500, [2] * 30, seed=2)
    calls = _count_projections(monkeypatch)
    got = evaluate_release(real, syn, k=2)
    assert calls.count(2) == 0 and len(calls) == 60  # the 30 one-way tables of each
    from lopub.data import pairs
    monkeypatch.setattr(pairs, "MAX_WIDTH", 0)  # the pass per pair
    want = average_tvd(real, syn, k=2)
    assert calls.count(2) == 2 * 435
    assert got["mean"] == want["mean"] and got["max"] == want["max"]
    assert got["per_subset"] == want["per_subset"]


def test_report_against_the_true_data_counts_the_pairs_of_a_wide_dataset_in_products(monkeypatch):
    # the report's scores (pair trends) and verdict (real_utility) projected every pair of the
    # true data and of the release, one pass each: 300 binary attributes at 10^6 records, hours
    import warnings

    from lopub.pipeline.steps import fit
    from lopub.publish.report import build_report
    from lopub.publish.synthesize import synthesize
    real = _coded(600, [2] * 16, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit(estimator=real, phi=0.4).model
        synthetic = synthesize(model, rng=3)
    calls = _count_projections(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = build_report(model, synthetic, real)
        assert calls.count(2) == 0, calls.count(2)
        from lopub.data import pairs
        monkeypatch.setattr(pairs, "MAX_WIDTH", 0)  # the pass per pair
        want = build_report(model, synthetic, real)
    assert calls.count(2) >= 3 * 120  # 120 pairs: real twice, release at least once
    assert got == want


def test_moment_pass_adds_chunk_sums_as_they_come(monkeypatch):
    # each chunk's pair pass returns two K x K Gram matrices; they were all kept in a list
    # until the pass ended: 200,000 users with a 4,928-category attribute (K = 4,950) in 13
    # chunks held 13 x 392 MB, 15.2 GB peak RSS in lopub fit, growing with n
    import weakref

    from lopub.client import encode
    from lopub.estimate import moment_stats
    from lopub.estimate.moment_estimator import MomentEstimator
    from lopub.reports.spec import CollectionSpec
    data = _coded(3_000, [3, 2, 4, 2], seed=4)
    reports = encode(data, CollectionSpec.from_domain(data.domain, f=0.5), rng=5)
    alive: list[int] = []
    refs: list = []
    real = moment_stats.pair_sums

    def spy(bits, proj, mats):
        alive.append(sum(r() is not None for r in refs))  # earlier chunks' Grams still held
        out = real(bits, proj, mats)
        refs.append(weakref.ref(out["gram"]))
        return out

    monkeypatch.setattr(moment_stats, "pair_sums", spy)
    streamed = MomentEstimator(reports, chunk_size=200, jobs=1)
    streamed.prepare([("a0", "a1"), ("a2", "a3")], jobs=1)
    assert len(alive) == 15 and max(alive) <= 2, alive  # was 0, 1, ..., 14
    monkeypatch.setattr(moment_stats, "pair_sums", real)
    whole = MomentEstimator(reports, chunk_size=3_000, jobs=1)  # one chunk: no sum of chunks
    whole.prepare([("a0", "a1"), ("a2", "a3")], jobs=1)
    for key in [("a0", "a1"), ("a2", "a3"), ("a0",)]:
        for x, y in zip(streamed.stats.raw_sq(key), whole.stats.raw_sq(key)):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-15)
