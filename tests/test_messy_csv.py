"""Messy CSV files from spreadsheets and other locales (the new-user tour): each is read as meant,
or refused with a message naming the file and the way out."""
import json

import numpy as np
import pytest

from lopub.cli import main, read_csv


def _euro(tmp_path, n=60):
    p = tmp_path / "euro.csv"
    rows = [f"{20 + i % 50};{'FM'[i % 2]};{60 + i % 30},{i % 10}" for i in range(n)]
    p.write_text("age;sex;weight\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return p


def test_semicolon_file_is_read_with_decimal_commas(tmp_path):
    df = read_csv(str(_euro(tmp_path)))
    assert list(df.columns) == ["age", "sex", "weight"]
    assert df["weight"].iloc[1] == "61.1"
    assert np.isfinite(df["weight"].astype(float)).all()
    p = tmp_path / "c.csv"  # a comma file with semicolons inside quoted text stays a comma file
    p.write_text('a,b,c\n1,"x;y",2\n3,"u;v",4\n', encoding="utf-8")
    assert list(read_csv(str(p)).columns) == ["a", "b", "c"]


def test_schema_of_semicolon_file_bins_the_decimal_comma_column(tmp_path, capsys):
    out = tmp_path / "d.json"
    assert main(["schema", str(_euro(tmp_path)), "--out", str(out)]) == 0
    attrs = {a["name"]: a for a in json.loads(out.read_text())["attributes"]}
    assert set(attrs) == {"age", "sex", "weight"}
    assert attrs["weight"]["kind"] == "number"
    assert "decimal comma" in capsys.readouterr().err


def test_wrong_sep_names_the_likely_delimiter(tmp_path):
    with pytest.raises(ValueError, match=r"euro.csv.*delimiter ','.*3 columns at ';'.*--sep ';'"):
        read_csv(str(_euro(tmp_path)), sep=",")


def test_sep_and_decimal_options(tmp_path, capsys):
    p = tmp_path / "tab.csv"
    p.write_text("a\tb\n1,5\tx\n2,5\ty\n", encoding="utf-8")
    assert read_csv(str(p))["a"].tolist() == ["1,5", "2,5"]  # a tab file: '.' decimals by default
    assert read_csv(str(p), sep="\t", decimal=",")["a"].tolist() == ["1.5", "2.5"]
    with pytest.raises(ValueError, match=r"decimal \(';'\) must be '\.' or ','"):
        read_csv(str(p), decimal=";")
    assert main(["schema", str(p), "--sep", "tab", "--decimal", ",", "--json"]) == 0
    decisions = json.loads(capsys.readouterr().out)["decisions"]["columns"]
    assert decisions[0]["kind"] == "number"
    with pytest.raises(SystemExit):
        main(["schema", str(p), "--sep", "ab"])
    assert "--sep ('ab') must be one character" in capsys.readouterr().err



def _trailing(tmp_path, last="", n=40):
    p = tmp_path / "excel.csv"
    rows = [f"{20 + i},{'FM'[i % 2]},{last}" for i in range(n)]
    p.write_text(" Age , Sex ,\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return p


def test_trailing_empty_column_is_left_out_with_a_note(tmp_path, capsys):
    out = tmp_path / "d.json"
    assert main(["schema", str(_trailing(tmp_path)), "--out", str(out)]) == 0
    assert [a["name"] for a in json.loads(out.read_text())["attributes"]] == ["Age", "Sex"]
    assert "column 3 of 3 has no name in the header row and no value" in capsys.readouterr().out


def test_pandas_unnamed_empty_column_is_left_out(tmp_path):
    import pandas as pd

    from lopub import infer_schema

    _trailing(tmp_path)
    report = infer_schema(pd.read_csv(tmp_path / "excel.csv"))
    assert report.excluded == ["Unnamed: 2"] and len(report.domain) == 2


def test_unnamed_column_with_values_names_file_and_position(tmp_path, capsys):
    p = _trailing(tmp_path, last="x")
    assert main(["schema", str(p)]) == 2
    err = capsys.readouterr().err
    assert "excel.csv" in err and "column 3 of 3 has no name in the header row" in err


def _salaries(tmp_path, n=200):
    p = tmp_path / "sal.csv"
    rng = np.random.default_rng(0)
    sal = [f'"{v:,}"' if i % 20 else "N/A" for i, v in enumerate(rng.integers(20000, 200000, n))]
    weight = [f'"{v:.1f}"'.replace(".", ",") for v in rng.normal(70, 10, n)]
    p.write_text("salary,weight\n" + "\n".join(f"{s},{w}" for s, w in zip(sal, weight)) + "\n",
                 encoding="utf-8")
    return p


def test_thousands_separators_are_read_as_numbers(tmp_path, capsys):
    out = tmp_path / "d.json"
    assert main(["schema", str(_salaries(tmp_path)), "--out", str(out), "--json"]) == 0
    attrs = {a["name"]: a for a in json.loads(out.read_text())["attributes"]}
    assert attrs["salary"]["kind"] == "integer"
    assert "',' thousands separators" in capsys.readouterr().err


def test_numbers_kept_as_text_get_a_hint(tmp_path):
    import pandas as pd

    from lopub import infer_schema

    df = pd.read_csv(_salaries(tmp_path), dtype=str, keep_default_na=False)
    notes = {c.column: " ".join(c.notes) for c in infer_schema(df).columns}
    assert "thousands separators (123,456)" in notes["salary"] and "thousands=','" in notes["salary"]
    assert "decimal comma (1,5)" in notes["weight"] and "--decimal ','" in notes["weight"]


def _dates(n=60, first_day=False):
    import pandas as pd

    days = pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(n) * 6, "D")
    stamps = pd.Timestamp("2023-01-01") + pd.to_timedelta(np.arange(n) * 100_003, "s")
    return pd.DataFrame({"us": days.strftime("%m/%d/%Y"), "eu": days.strftime("%d/%m/%Y"),
                         "seen": stamps.strftime("%Y-%m-%d %H:%M:%S")})


def test_us_dates_are_dates_and_day_first_ones_get_a_note():
    from lopub import Dataset, infer_schema

    df = _dates()
    report = infer_schema(df, bins=4, max_categories=5)
    us, eu = report.domain["us"], {c.column: c for c in report.columns}["eu"]
    assert us.kind == "date" and us.binning is not None and us.categories[0].startswith("[2020-01-01")
    assert eu.kind == "text" and "look like dates ../../YYYY with day first" in " ".join(eu.notes)
    codes = Dataset.from_pandas(df, report.domain).codes[:, 0]
    iso = infer_schema(df.assign(us=pd_iso(df["us"])), bins=4, max_categories=5).domain["us"]
    assert us.binning == iso.binning and np.array_equal(codes, np.sort(codes))


def pd_iso(col):
    import pandas as pd

    return pd.to_datetime(col, format="%m/%d/%Y").dt.strftime("%Y-%m-%d")


def test_ambiguous_slash_dates_stay_text_with_a_note():
    import pandas as pd

    from lopub import infer_schema

    df = pd.DataFrame({"d": [f"{m:02d}/{d:02d}/2021" for m in range(1, 13) for d in range(1, 13)] * 2})
    col = infer_schema(df).columns[0]
    assert col.kind == "text" and "day and month order unclear" in " ".join(col.notes)


def test_timestamps_are_datetimes_and_a_release_keeps_their_time_of_day():
    """Binned timestamps gave dates at midnight (session 34's tour): now kind "datetime", every value
    of a release inside its bin and with a time of day; plain dates stay "date" (midnight)."""
    import pandas as pd

    from lopub import Dataset, infer_schema
    from lopub.data.values import to_values

    df = _dates()
    schema = infer_schema(df, bins=4, max_categories=5)
    cols = {c.column: c for c in schema.columns}
    assert cols["seen"].kind == "datetime" and cols["us"].kind == "date"
    assert not any("time of day" in n for n in cols["seen"].notes)
    data = Dataset.from_pandas(df, schema.domain)
    attr = schema.domain.attributes[list(schema.domain.attrs).index("seen")]
    out = to_values(data.codes, schema.domain.attributes, rng=np.random.default_rng(0))
    seen = pd.to_datetime(out["seen"])
    assert (seen.dt.floor("D") != seen).mean() > 0.9  # times of day, not midnight
    back = attr.binning.codes(((seen - pd.Timestamp("1970-01-01")) / pd.Timedelta(days=1)).to_numpy(), "seen")
    np.testing.assert_array_equal(back, data.codes[:, list(schema.domain.attrs).index("seen")])
    assert (pd.to_datetime(out["us"]).dt.floor("D") == pd.to_datetime(out["us"])).all()


def test_datetime_bins_within_a_day_are_labelled_to_the_minute():
    import pandas as pd

    from lopub import infer_schema

    stamps = pd.Timestamp("2024-03-01 08:00") + pd.to_timedelta(np.arange(200) * 97, "s")
    col = infer_schema(pd.DataFrame({"t": stamps.strftime("%Y-%m-%d %H:%M:%S")}), bins=4).columns[0]
    assert col.kind == "datetime" and len(set(col.categories)) == len(col.categories)
    assert col.categories[0].startswith("[2024-03-01 08:00, 2024-03-01 ")


def test_sentinel_value_gets_its_own_bin_not_a_gap():
    from lopub.data.schema_bins import numeric_binning

    rng = np.random.default_rng(0)
    h = np.round(rng.normal(170, 10, 1000))
    h[:40] = -999  # 4 %: below the 5 % of a point mass, far below every height
    b, notes = numeric_binning(h, 8)
    assert -999 in b.points and min(b.edges) > 100
    assert any("far from every other value" in n for n in notes)
    b, _ = numeric_binning(np.round(rng.lognormal(8, 1, 1000)), 8)  # a long tail is no sentinel
    assert b.points == ()


def test_case_variants_get_a_note_and_are_kept_apart():
    import pandas as pd

    from lopub import infer_schema

    df = pd.DataFrame({"news": ["yes", "Yes", "YES", "y", "no", "No", "n"] * 10})
    col = infer_schema(df).columns[0]
    assert len(col.categories) == 7
    assert "differing only in case may be one value ('No', 'no'; 'YES', 'Yes', 'yes')" in " ".join(col.notes)


def test_total_cells_of_a_wide_schema_in_scientific_form():
    import pandas as pd

    from lopub import infer_schema

    df = pd.DataFrame({f"c{j:03d}": list("abcde") * 20 for j in range(200)})
    text = infer_schema(df).table()
    assert "total cells: 6.2e139" in text  # 5 ** 200 has 140 digits


def test_an_integer_column_with_missing_values_decodes_without_a_cast_warning():
    """Unbinned Int64 with NA (a few distinct integers and a missing category): the missing cells gave
    "RuntimeWarning: invalid value encountered in cast" (NaN cast to int64) in every release."""
    import warnings

    import pandas as pd

    from lopub import Dataset, infer_schema
    from lopub.data.values import to_values

    df = pd.DataFrame({"n": pd.array([1, 2, None, 3, 2, None] * 20, dtype="Int64")})
    domain = infer_schema(df, missing="category").domain
    data = Dataset.from_pandas(df, domain)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = to_values(data.codes, domain.attributes, rng=np.random.default_rng(0))
    assert str(out["n"].dtype) == "Int64"
    pd.testing.assert_series_equal(out["n"], df["n"], check_names=False)


def test_synthesizer_sample_names_its_seed_parameter():
    """``Synthesizer.sample(seed=-1)`` said "rng (-1) must be ...": a name the method does not have."""
    import pandas as pd
    import pytest

    from lopub import Synthesizer

    df = pd.DataFrame({"a": ["x", "y"] * 200, "b": ["u", "u", "v", "v"] * 100})
    syn = Synthesizer(epsilon=4, rng=0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn.fit(df)
    with pytest.raises(ValueError, match=r"^seed \(-1\) must be a non-negative integer seed"):
        syn.sample(5, seed=-1)
    pd.testing.assert_frame_equal(syn.sample(5, seed=3), syn.sample(5, seed=3))
