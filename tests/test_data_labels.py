"""Data files keep every label as written (issue 14, item 4).

Missing values are only empty cells (plus ``--na-values``); ``None``, ``NA``,
``null``, ``nan``, ``TRUE``, ``01`` are labels; a release written by
``lopub synthesize`` reads back with exactly the same labels.
"""
import json

import numpy as np
import pandas as pd
import pytest

from lopub import Attribute, Binning, Dataset, Domain, infer_domain
from lopub.cli import main, read_csv
from lopub.datasets import load_adult
from lopub.errors import DomainError
from lopub.model.graphical import Model
from lopub.publish.synthesize import synthesize, write_release

#: labels pandas' defaults would turn into missing values, booleans or numbers
NA_LIKE = ["None", "NA", "null", "nan", "N/A", "NULL", "NaN", "n/a", "#N/A", "-nan"]
BOOLS = ["TRUE", "FALSE", "True", "false"]
NUMBERS = ["1", "01", "1.0", "2"]
QUOTED = ["a,b", 'say "hi"', "x y", "y"]


def _data(n=800, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: rng.choice(labels, n) for c, labels in
                         {"s": NA_LIKE, "b": BOOLS, "n": NUMBERS, "q": QUOTED}.items()})


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """schema -> encode -> fit of a CSV whose labels are all of the above."""
    d = tmp_path_factory.mktemp("labels")
    df = _data()
    df.to_csv(d / "real.csv", index=False)
    steps = [["schema", str(d / "real.csv"), "--out", str(d / "domain.json")],
             ["encode", str(d / "real.csv"), "--domain", str(d / "domain.json"), "--f", "0.3",
              "--seed", "1", "--out", str(d / "reports.parquet")],
             ["fit", str(d / "reports.parquet"), "--method", "moment", "--out", str(d / "model.json")]]
    for argv in steps:
        assert main(argv + ["--quiet"]) == 0, argv
    return d, df


def test_schema_keeps_every_label(pipeline):
    d, df = pipeline
    domain = Domain.from_json(d / "domain.json")
    for c in df.columns:
        assert set(domain.labels(c)) == set(df[c]), c
        assert domain[c].binning is None


def test_encoded_codes_are_the_labels_positions(pipeline):
    d, df = pipeline
    domain = Domain.from_json(d / "domain.json")
    codes = Dataset.from_pandas(read_csv(str(d / "real.csv")), domain).codes
    for j, c in enumerate(df.columns):
        assert [domain.labels(c)[k] for k in codes[:, j]] == df[c].tolist()


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_release_round_trip(pipeline, suffix):
    d, _ = pipeline
    model = Model.load(d / "model.json")
    release = synthesize(model, 2000, rng=5)
    write_release(release, d / f"lib{suffix}")
    back = read_csv(str(d / f"lib{suffix}"))
    assert list(back.columns) == list(release.columns)
    for c in release.columns:
        assert back[c].tolist() == release[c].astype(str).tolist(), c


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_cli_release_reads_back_against_the_domain(pipeline, suffix, capsys):
    d, _ = pipeline
    out = d / f"syn{suffix}"
    assert main(["synthesize", str(d / "model.json"), "--n", "500", "--seed", "2",
                 "--out", str(out), "--quiet"]) == 0
    domain = Domain.from_json(d / "domain.json")
    back = read_csv(str(out))
    for c in domain.attrs:
        assert back[c].notna().all() and set(back[c]) <= set(domain.labels(c)), c
    capsys.readouterr()
    assert main(["evaluate", "--real", str(d / "real.csv"), "--synthetic", str(out),
                 "--domain", str(d / "domain.json"), "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["per_attribute"]) == set(domain.attrs)


def test_csv_quoting_and_spaces(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('a,b\n"x, y","say ""hi"""\n x ,  None  \n"",NA\n')
    df = read_csv(str(path))
    assert df["a"].tolist()[:2] == ["x, y", "x"] and df["b"].tolist() == ['say "hi"', "None", "NA"]
    assert df["a"].isna().tolist() == [False, False, True]  # only the empty cell


def test_na_values_make_chosen_tokens_missing(tmp_path, capsys):
    csv = tmp_path / "m.csv"
    pd.DataFrame({"s": ["a", "NA", "b", "?", "None"], "t": ["u", "v", "u", "v", "u"]}).to_csv(csv, index=False)
    dom = tmp_path / "dom.json"
    assert main(["schema", str(csv), "--out", str(dom), "--na-values", "?, None"]) == 0
    assert Domain.from_json(dom).labels("s") == ("NA", "a", "b", "(missing)")  # issue 23: a category
    assert Domain.from_json(dom)["s"].missing == "(missing)"
    assert main(["schema", str(csv), "--out", str(dom), "--na-values", "?, None", "--missing", "drop"]) == 0
    assert Domain.from_json(dom).labels("s") == ("NA", "a", "b")
    assert "s: 2" in capsys.readouterr().err  # the schema warns about them
    assert main(["encode", str(csv), "--domain", str(dom), "--f", "0.5", "--na-values", "?,None",
                 "--out", str(tmp_path / "r.parquet")]) == 2
    err = capsys.readouterr().err
    assert "attribute 's': 2 missing value(s), first at row 3" in err
    # without --na-values the tokens are labels and encoding succeeds
    assert main(["schema", str(csv), "--out", str(dom)]) == 0
    assert Domain.from_json(dom).labels("s") == ("?", "NA", "None", "a", "b")
    assert main(["encode", str(csv), "--domain", str(dom), "--f", "0.5",
                 "--out", str(tmp_path / "r.parquet"), "--quiet"]) == 0


@pytest.mark.parametrize("argv", [
    ["schema", "d.csv"], ["encode", "d.csv", "--domain", "x", "--f", "0.5", "--out", "o"],
    ["collect", "d.csv", "--domain", "x", "--protocol", "bloom", "--epsilon", "1", "--out", "o"],
    ["evaluate", "--real", "d.csv", "--synthetic", "d.csv", "--domain", "x"],
    ["compare-protocols", "--dataset", "d.csv"], ["report", "m", "--out", "o"],
])
def test_every_data_reading_command_takes_na_values(argv):
    from lopub.cli import build_parser

    a = build_parser().parse_args(argv + ["--na-values", "NA,?"])
    assert a.na_values == ["NA", "?"]
    assert build_parser().parse_args(argv).na_values == []


def test_numeric_columns_are_still_binned_from_csv(tmp_path):
    rng = np.random.default_rng(3)
    age = rng.integers(18, 90, 400)
    csv = tmp_path / "n.csv"
    pd.DataFrame({"age": age, "code": rng.choice(["1", "01", "2"], 400)}).to_csv(csv, index=False)
    dom = tmp_path / "dom.json"
    assert main(["schema", str(csv), "--out", str(dom), "--bins", "4", "--quiet"]) == 0
    domain = Domain.from_json(dom)
    assert domain["age"].binning is not None and domain.size("age") == 4
    assert domain.labels("code") == ("01", "1", "2")  # few values: categorical, as written
    data = Dataset.from_pandas(read_csv(str(csv)), domain)
    np.testing.assert_array_equal(data.codes[:, 0], domain["age"].binning.codes(age, "age"))
    assert main(["encode", str(csv), "--domain", str(dom), "--f", "0.5",
                 "--out", str(tmp_path / "r.parquet"), "--quiet"]) == 0


def test_binned_attribute_given_as_strings():
    b = Binning((0.0, 10.0, 20.0))
    domain = Domain((Attribute("x", b.labels, b),))
    df = pd.DataFrame({"x": ["5", " 15.5", "[0, 10)", "20", "10"]}, dtype=object)
    assert Dataset.from_pandas(df, domain).codes[:, 0].tolist() == [0, 1, 0, 1, 1]
    with pytest.raises(DomainError, match="outside the binning edges"):
        Dataset.from_pandas(pd.DataFrame({"x": ["25"]}), domain)
    with pytest.raises(DomainError, match=r"unknown category \['abc'\]"):
        Dataset.from_pandas(pd.DataFrame({"x": ["5", "abc"]}), domain)


def test_infer_domain_on_strings_spelling_numbers():
    many = pd.DataFrame({"v": [str(i) for i in range(100)]})
    assert infer_domain(many, bins=5)["v"].binning is not None
    few = pd.DataFrame({"v": ["1", "01", "1.0", "nan", "inf"]})
    with pytest.warns(UserWarning, match=r"every value but \['inf', 'nan'\]"):
        assert infer_domain(few, max_categories=2).labels("v") == ("01", "1", "1.0", "inf", "nan")
    # numbers keep today's spelling: integral floats as integers
    assert infer_domain(pd.DataFrame({"v": [1.0, 2.5, np.nan]}), missing="drop").labels("v") == ("1", "2.5")
    assert infer_domain(pd.DataFrame({"v": [1.0, 2.5, np.nan]})).labels("v") == ("1", "2.5", "(missing)")


@pytest.mark.parametrize("dtype", [object, "string"])
def test_library_dataframes_do_not_guess_missing_values(dtype):
    df = pd.DataFrame({"s": ["None", "NA", "nan", "TRUE", "null"]}, dtype=dtype)
    domain = infer_domain(df)
    assert set(domain.labels("s")) == set(df["s"])
    codes = Dataset.from_pandas(df, domain).codes[:, 0]
    assert [domain.labels("s")[k] for k in codes] == df["s"].tolist()
    real_missing = pd.DataFrame({"s": ["None", None]}, dtype=dtype)
    with pytest.raises(DomainError, match="1 missing value"):
        Dataset.from_pandas(real_missing, domain)


def test_surrounding_spaces_are_not_part_of_a_label():
    domain = Domain((Attribute("a", (" x", "y")),))  # a hand-made domain with a spaced label
    df = pd.DataFrame({"a": ["x", " x", "y "]})
    assert Dataset.from_pandas(df, domain).codes[:, 0].tolist() == [0, 0, 1]


ADULT_LINES = """\
39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K
54, ?, 180211, Some-college, 10, Married-civ-spouse, ?, Husband, Asian-Pac-Islander, Male, 0, 0, 60, South, >50K
50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 0, 0, 13, United-States, <=50K
"""


def test_adult_loader_still_reads_question_marks_as_missing(tmp_path):
    path = tmp_path / "adult.data"
    path.write_text(ADULT_LINES)
    kept = load_adult(path, split="train", drop_missing=False, download=False)
    assert kept.n == 3
    work = kept.domain.labels("workclass")
    assert [work[k] for k in kept.codes[:, 1]] == ["State-gov", "?", "Self-emp-not-inc"]
    assert load_adult(path, split="train", drop_missing=True, download=False).n == 2


def test_parquet_keeps_empty_and_spaced_labels(tmp_path):
    labels = ["", " x", "x", "None", "NA", "TRUE", "01"]
    df = pd.DataFrame({"a": pd.Categorical(labels * 3, categories=labels)})
    write_release(df, tmp_path / "r.parquet")
    back = read_csv(str(tmp_path / "r.parquet"))
    assert back["a"].tolist() == labels * 3
    assert read_csv(str(tmp_path / "r.parquet"), ["NA"])["a"].isna().sum() == 3
    domain = Domain((Attribute("a", tuple(labels)),))
    codes = Dataset.from_pandas(back, domain).codes[:, 0]
    assert [labels[k] for k in codes] == labels * 3


def test_schema_says_which_tokens_keep_a_numeric_column_from_binning(tmp_path, capsys):
    csv = tmp_path / "a.csv"
    pd.DataFrame({"age": [str(i) for i in range(18, 98)] + ["NA", "?"]}).to_csv(csv, index=False)
    dom = tmp_path / "dom.json"
    assert main(["schema", str(csv), "--out", str(dom)]) == 0  # issue 23: ? and NA are missing
    assert "2 missing ('?' or 'NA'): kept as their own category" in capsys.readouterr().out
    age = Domain.from_json(dom)["age"]
    assert age.binning is not None and age.missing == "(missing)" and age.kind == "integer"
    assert main(["schema", str(csv), "--out", str(dom), "--na-values", "?,NA"]) == 0
    assert Domain.from_json(dom)["age"].binning is not None
    with pytest.warns(UserWarning, match=r"every value but \['x'\] is a number"):
        infer_domain(pd.DataFrame({"v": [str(i) for i in range(70)] + ["x"]}))
