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


def _categorical_frame(n=400, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    return pd.DataFrame({
        "level": pd.Categorical(rng.choice(["lo", "hi"], n), categories=["lo", "mid", "hi"], ordered=True),
        "size": pd.Categorical(rng.choice([1, 2, 3], n)),            # int categories
        "dose": pd.Categorical(rng.choice([0.5, 1.5], n)),           # float categories
        "band": pd.cut(x, [-10, -1, 0, 1, 10]),                       # ordered intervals
        "plain": pd.Categorical(rng.choice(["a", "b"], n)),
    })


def test_categorical_columns_come_back_with_their_order_and_number_categories(tmp_path):
    # before: every one was an unordered categorical of strings ('1', '2', '3'; '0.5', '1.5')
    from lopub import Synthesizer

    df = _categorical_frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = Synthesizer(epsilon=8, rng=0).fit(df)
    out = syn.sample(200, seed=1)
    assert out["level"].cat.ordered and list(out["level"].cat.categories) == ["lo", "mid", "hi"]
    assert list(out["size"].cat.categories) == [1, 2, 3] and out["size"].cat.categories.dtype == np.int64
    assert list(out["dose"].cat.categories) == [0.5, 1.5]
    assert out["band"].cat.ordered and list(out["band"].cat.categories) == ["(-10, -1]", "(-1, 0]", "(0, 1]", "(1, 10]"]
    assert not out["plain"].cat.ordered and list(out["plain"].cat.categories) == ["a", "b"]
    assert set(out["size"]) <= {1, 2, 3} and (out["level"] >= "lo").all()  # numbers; comparisons work
    assert syn.sample(5, seed=1, labels=True)["size"].cat.categories.tolist() == ["1", "2", "3"]
    syn.save(tmp_path / "s.json")
    back = Synthesizer.load(tmp_path / "s.json")
    pd.testing.assert_frame_equal(back.sample(200, seed=1), out)


def test_a_bad_dtypes_record_in_a_file_is_named():
    from lopub.pipeline.synth_dtypes import check

    assert check(None, "f") == {}
    good = {"a": {"type": "int", "ordered": False, "label": 0}, "b": {"type": "timedelta"}, "c": {"label": 2}}
    assert check(good, "f") == good
    for bad in ({"ordered": "yes", "type": "int"}, {"type": "str"}, {"label": True}, {}, {"label": 0, "x": 1}):
        with pytest.raises(ValueError, match=r"^'x.json': meta\['synthesizer'\]\['dtypes'\] .* must map"):
            check({"a": bad}, "'x.json'")


def test_durations_are_binned_seconds_and_come_back_as_durations(tmp_path):
    # before: a timedelta column was text, one category per distinct duration ('0 days 00:01:00',
    # 99 of them in 300 rows), given back as a categorical of those strings
    from lopub import Synthesizer

    rng = np.random.default_rng(0)
    minutes = rng.integers(0, 100, 300)
    df = pd.DataFrame({"wait": pd.to_timedelta(minutes, unit="min"), "g": np.where(minutes > 50, "a", "b")})
    df.loc[3, "wait"] = pd.NaT
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        attr = infer_domain(df).attributes[0]
        syn = Synthesizer(epsilon=8, rng=0).fit(df)
    assert attr.kind == "integer" and attr.binning is not None and len(attr.categories) <= 5
    assert attr.binning.edges[-1] == 99 * 60  # seconds
    out = syn.sample(300, seed=1)
    assert pd.api.types.is_timedelta64_dtype(out["wait"])
    assert out["wait"].min() >= pd.Timedelta(0) and out["wait"].max() <= pd.Timedelta(minutes=99)
    assert syn.dtypes_ == {"wait": {"type": "timedelta"}}
    syn.save(tmp_path / "s.json")
    pd.testing.assert_frame_equal(Synthesizer.load(tmp_path / "s.json").sample(300, seed=1), out)


def test_columns_outside_a_given_domain_are_announced():
    # before: left out of the model and the release without a word
    from lopub import Synthesizer

    df = _frame(200)
    df["note"] = "x"
    domain = infer_domain(df[["a"]])
    with pytest.warns(UserWarning, match=r"^data columns \['b', 'note'\] \(2\) are not in the domain "
                                         r"parameter: left out of the model and the release$"):
        syn = Synthesizer(epsilon=4, rng=0, domain=domain).fit(df)
    assert list(syn.sample(3, seed=0).columns) == ["a"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.filterwarnings("ignore", category=Warning, message="release verdict")
        Synthesizer(epsilon=4, rng=0, domain=domain).fit(df[["a"]])  # nothing left out: no warning
    df["id"] = [f"u{i}" for i in range(len(df))]  # inferred domain: infer_domain's own warning, once
    with pytest.warns(UserWarning) as caught:
        Synthesizer(epsilon=4, rng=0).fit(df.drop(columns="note"))
    texts = [str(w.message) for w in caught if "release verdict" not in str(w.message)]
    assert len(texts) == 1 and texts[0].startswith("column 'id': identifier-like")


def test_integer_column_labels_come_back(tmp_path):
    # pandas.read_csv(path, header=None) labels columns 0, 1, ...; before, the release had the strings
    # '0', '1' (release[0] a KeyError, pd.concat([df, release]) four columns)
    from lopub import Synthesizer

    df = _frame(300)
    df.columns = range(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = Synthesizer(epsilon=8, rng=0).fit(df)
    out = syn.sample(50, seed=1)
    assert list(out.columns) == [0, 1] and list(syn.sample(5, seed=1, labels=True).columns) == [0, 1]
    assert set(syn.sample(20, seed=2, conditions={0: "x"})[0]) == {"x"}
    assert set(syn.sample(20, seed=2, conditions={"0": "x"})[0]) == {"x"}  # the attribute's name
    assert list(syn.query("0").to_frame().columns[:1]) == ["0"]  # the model's names stay strings
    syn.save(tmp_path / "s.json")
    pd.testing.assert_frame_equal(Synthesizer.load(tmp_path / "s.json").sample(50, seed=1), out)
    syn.report(tmp_path / "r.html", real=df)


def test_a_column_of_lists_is_an_error_naming_it():
    # before: pandas' bare "TypeError: unhashable type: 'list'" from inside the kind inference
    from lopub import Synthesizer

    df = _frame(40)
    df["tags"] = [["a", "b"], ["c"]] * 20
    with pytest.raises(TypeError, match=r"^column 'tags': unhashable type: 'list' \(a cell holds a list, dict "
                                        r"or set\); an attribute takes one value per cell: join them"):
        Synthesizer(epsilon=4, rng=0).fit(df)


def test_a_noise_tvd_above_one_is_explained():
    # 10,000 categories at epsilon 1 for 20,000 users: the verdict said "typical expected noise TVD 7.77
    # per column", a distance above the largest one between two distributions, without a word
    from lopub.model.checks_signal import _noise_findings

    kinds = {"swamped": ["hc", "c"], "flat": []}
    (big,) = _noise_findings(kinds, {"hc": 7.77, "c": 7.77}, 2, 20_000, 1.0)
    assert ("noise TVD 7.77 per column: the noise alone moves a column's table farther than 1, the largest "
            "distance between two distributions); collect") in big.message
    (small,) = _noise_findings(kinds, {"hc": 0.4, "c": 0.4}, 2, 300, 1.0)
    assert "noise TVD 0.40 per column); collect" in small.message


def test_a_column_of_bytes_fits():
    # before: infer_schema's labels were "b'ab'" and the coding's 'ab' (pandas astype(str) decodes):
    # DomainError "unknown categories ['ab', 'cd']; expected one of [\"b'ab'\", \"b'cd'\"]"
    from lopub import Synthesizer

    df = _frame(100)
    df["raw"] = [b"ab", "é".encode()] * 50
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = Synthesizer(epsilon=4, rng=0).fit(df)
    assert syn.domain_.labels("raw") == ("ab", "é")
