"""Defects found by session 39's command-line tour with a user's own CSVs (tests fail before the fixes)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from lopub.cli import main


def _dotted_dates_csv(path, n=300):
    rng = np.random.default_rng(0)
    days = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 365, n), "D")
    pd.DataFrame({"visit": days.strftime("%d.%m.%Y"),
                  "g": rng.choice(["a", "b"], n)}).to_csv(path, sep=";", index=False)


def test_dotted_day_first_dates_get_a_note(tmp_path, capsys):
    """'14.03.2024' dates (a German or other European export) were text with one category per
    distinct day (200+ categories in 300 rows) and no note; ../../YYYY dates got one."""
    csv = tmp_path / "de.csv"
    _dotted_dates_csv(csv)
    assert main(["schema", str(csv), "--out", str(tmp_path / "d.json")]) == 0
    out = capsys.readouterr().out
    line = next(s for s in out.splitlines() if s.startswith("visit"))
    assert "look like dates DD.MM.YYYY" in line and "YYYY-MM-DD" in line


def test_collect_names_the_columns_it_leaves_out(tmp_path, capsys):
    """A CSV column the domain does not hold (a free-text column the schema left out, a domain
    written by hand) was dropped by lopub collect / encode without a word; evaluate and report
    already named it."""
    rng = np.random.default_rng(1)
    csv = tmp_path / "s.csv"
    pd.DataFrame({"a": rng.choice(["x", "y"], 200), "b": rng.choice(["p", "q", "r"], 200),
                  "comments": [f"text {i}" for i in range(200)]}).to_csv(csv, index=False)
    dom = tmp_path / "d.json"
    assert main(["schema", str(csv), "--out", str(dom)]) == 0
    capsys.readouterr()
    assert main(["collect", str(csv), "--domain", str(dom), "--epsilon", "1", "--seed", "0",
                 "--out", str(tmp_path / "r.npz")]) == 0
    err = capsys.readouterr().err
    assert "['comments'] are not in the domain: left out" in err
    # a trailing delimiter's unnamed empty column is not announced
    lines = csv.read_text().splitlines()
    trail = tmp_path / "t.csv"
    trail.write_text("\n".join(s.rsplit(",", 1)[0] + "," for s in lines) + "\n")
    assert main(["collect", str(trail), "--domain", str(dom), "--epsilon", "1", "--seed", "0",
                 "--out", str(tmp_path / "r2.npz")]) == 0
    assert "not in the domain" not in capsys.readouterr().err


def test_a_release_writes_numbers_to_the_input_precision(tmp_path):
    """Heights written to 0.1 cm and weights to 0.01 kg (a ';' file with decimal commas) were
    released as 175.679667233427 and 65.23979721876651: every float drawn at full precision.
    The schema records the input's decimals; the release draws among the bin's multiples of
    10^-decimals, each value back in its bin."""
    rng = np.random.default_rng(3)
    n = 300
    csv = tmp_path / "m.csv"
    pd.DataFrame({"height": np.round(rng.normal(170, 10, n), 1), "weight": np.round(rng.normal(70, 12, n), 2),
                  "g": rng.choice(["a", "b"], n)}).to_csv(csv, sep=";", decimal=",", index=False)
    dom, rep, model, out = (tmp_path / f for f in ("d.json", "r.npz", "m.json", "s.csv"))
    assert main(["schema", str(csv), "--out", str(dom)]) == 0
    assert main(["collect", str(csv), "--domain", str(dom), "--epsilon", "8", "--seed", "0",
                 "--out", str(rep)]) == 0
    assert main(["fit", str(rep), "--out", str(model)]) == 0
    assert main(["synthesize", str(model), "--seed", "1", "--out", str(out)]) == 0
    text = pd.read_csv(out, dtype=str, sep=";")  # the input's dialect: ';', decimal commas (test_tour40_cli)
    for col, places in (("height", 1), ("weight", 2)):
        assert text[col].str.split(",").str[1].fillna("").str.len().max() <= places, text[col].head()
    from lopub.data.domain import Domain

    domain = Domain.from_json(dom)
    assert domain["height"].decimals == 1 and domain["weight"].decimals == 2 and domain["g"].decimals is None


def test_values_with_decimals_stay_in_their_bins():
    from lopub.data.domain import Attribute, Binning
    from lopub.data.values import decode_column

    b = Binning((0.0, 0.125, 0.25, 1.0), (0.5,))
    a = Attribute("x", ("[0, 0.125)", "[0.125, 0.25)", "[0.25, 1]", "0.5"), b, "number", None, None, 2)
    codes = np.repeat(np.arange(4), 500)
    x = decode_column(codes, a, rng=np.random.default_rng(0)).to_numpy()
    assert np.array_equal(b.codes(x, "x"), codes)
    assert np.allclose(x * 100, np.round(x * 100)) and set(np.unique(x[codes == 3])) == {0.5}
    assert np.isclose(x.max(), 1.0) and 0.13 <= x[codes == 1].min()


def test_a_release_writes_us_dates_as_the_input_did(tmp_path):
    """A CSV of MM/DD/YYYY dates (03/14/2024, read as dates) was released as ISO 2024-02-20.
    The schema records the attribute's date_format and a CSV release writes the dates so;
    ISO input stays ISO, and a Parquet release keeps datetime values."""
    import pytest

    from lopub.data.domain import Attribute, Domain
    from lopub.errors import DomainError

    rng = np.random.default_rng(4)
    n = 300
    days = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 365, n), "D")
    csv = tmp_path / "us.csv"
    pd.DataFrame({"visit": days.strftime("%m/%d/%Y"), "iso": days.strftime("%Y-%m-%d"),
                  "g": rng.choice(["a", "b"], n)}).to_csv(csv, index=False)
    dom, rep, model, out = (tmp_path / f for f in ("d.json", "r.npz", "m.json", "s.csv"))
    assert main(["schema", str(csv), "--out", str(dom)]) == 0
    domain = Domain.from_json(dom)
    assert domain["visit"].kind == "date" and domain["visit"].date_format == "%m/%d/%Y"
    assert domain["iso"].date_format is None
    assert main(["collect", str(csv), "--domain", str(dom), "--epsilon", "8", "--seed", "0",
                 "--out", str(rep)]) == 0
    assert main(["fit", str(rep), "--out", str(model)]) == 0
    assert main(["synthesize", str(model), "--seed", "1", "--out", str(out)]) == 0
    text = pd.read_csv(out, dtype=str)
    assert text["visit"].str.fullmatch(r"\d\d/\d\d/2024").all()
    assert text["iso"].str.fullmatch(r"2024-\d\d-\d\d").all()
    assert main(["synthesize", str(model), "--seed", "1", "--out", str(tmp_path / "s.parquet")]) == 0
    assert pd.api.types.is_datetime64_any_dtype(pd.read_parquet(tmp_path / "s.parquet")["visit"])
    with pytest.raises(DomainError, match="date_format"):
        Attribute("d", ("[0, 1)",), None, "date", None, None, None, "%H:%M")
    with pytest.raises(DomainError, match="needs kind 'date'"):
        Attribute("d", ("a",), None, "text", None, None, None, "%m/%d/%Y")


def test_a_respondent_id_below_1000_rows_gets_a_note(tmp_path, capsys):
    """RespondentID 1000..1299 in a 300-row survey export was binned into 4 bins like any number,
    with only 'quantile bins' as its note: nothing said it looks like an identifier (those are
    left out from 1,000 rows on). It is kept, with a note naming the way to leave it out."""
    rng = np.random.default_rng(5)
    csv = tmp_path / "ids.csv"
    pd.DataFrame({"RespondentID": 1000 + rng.permutation(300), "age": rng.integers(18, 80, 300),
                  "g": rng.choice(["a", "b"], 300)}).to_csv(csv, index=False)
    assert main(["schema", str(csv), "--out", str(tmp_path / "d.json")]) == 0
    lines = {s.split()[0]: s for s in capsys.readouterr().out.splitlines() if s}
    assert "may be an identifier or a row number" in lines["RespondentID"]
    assert "--columns" in lines["RespondentID"] and "identifier" not in lines["age"]


def test_one_column_beyond_the_noise_is_singular(tmp_path, capsys):
    """lopub fit printed 'The model keeps every column's measured distribution (1 differ from
    uniform beyond the noise).' when one column did."""
    rng = np.random.default_rng(6)
    n = 4000
    csv = tmp_path / "one.csv"
    pd.DataFrame({"skew": rng.choice(["a", "b"], n, p=[0.9, 0.1]), "u": rng.choice(["x", "y"], n),
                  "v": rng.choice(["p", "q"], n)}).to_csv(csv, index=False)
    dom, rep = tmp_path / "d.json", tmp_path / "r.npz"
    assert main(["schema", str(csv), "--out", str(dom)]) == 0
    assert main(["collect", str(csv), "--domain", str(dom), "--epsilon", "4", "--seed", "0",
                 "--out", str(rep)]) == 0
    capsys.readouterr()
    assert main(["fit", str(rep), "--out", str(tmp_path / "m.json")]) == 0
    out = capsys.readouterr().out
    assert "(1 differs from uniform beyond the noise)" in out, out


def test_fit_refuses_a_plot_suffix_before_fitting(tmp_path, capsys):
    """lopub fit r.npz --out m.json --plot g.txt ran the whole fit, then failed with matplotlib's
    "Format 'txt' is not supported (supported formats: ...)", naming no option, and wrote no model."""
    csv = tmp_path / "t.csv"
    rng = np.random.default_rng(7)
    pd.DataFrame({"a": rng.choice(["x", "y"], 300), "b": rng.choice(["p", "q"], 300)}).to_csv(csv, index=False)
    dom, rep, model = tmp_path / "d.json", tmp_path / "r.npz", tmp_path / "m.json"
    assert main(["schema", str(csv), "--out", str(dom)]) == 0
    assert main(["collect", str(csv), "--domain", str(dom), "--epsilon", "4", "--seed", "0",
                 "--out", str(rep)]) == 0
    capsys.readouterr()
    assert main(["fit", str(rep), "--out", str(model), "--plot", str(tmp_path / "g.txt")]) == 2
    err = capsys.readouterr().err
    assert "--plot" in err and "'.txt'" in err and "'.png'" in err and "one-way marginals" not in err
    assert not model.exists()
    assert main(["fit", str(rep), "--out", str(model)]) == 0
    assert main(["graph", str(model), "--plot", str(tmp_path / "g.TXT")]) == 2
    assert "--plot" in capsys.readouterr().err


def test_schema_table_keeps_a_label_with_a_line_break_on_its_row(tmp_path, capsys):
    """A quoted cell with a line break (an Excel export's comment "line1\\r\\nline2") broke
    lopub schema's table: the row went on over two lines."""
    csv = tmp_path / "x.csv"
    rows = ['"ID","Comment"'] + [f'{i},{c}' for i, c in enumerate(['"line1\r\nline2"', 'plain', '"a\tb"'] * 20)]
    csv.write_bytes(("\r\n".join(rows) + "\r\n").encode())
    assert main(["schema", str(csv), "--out", str(tmp_path / "d.json")]) == 0
    out = capsys.readouterr().out.splitlines()
    row = next(s for s in out if s.startswith("Comment"))
    assert "line1\\r\\nline2" in row and "a\\tb" in row
    assert not any(s.startswith("line2") for s in out)
