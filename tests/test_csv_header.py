"""CSV files without a header row (UCI Adult's ``adult.data`` as shipped): a first row that looks
like a record is warned about, naming the evidence and the way out; ``--names`` / ``--no-header``
read such a file on every command reading a data CSV, with one meaning."""
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lopub.cli import main, read_csv
from lopub.cli._header import header_evidence

ADULT_NAMES = ("age,workclass,fnlwgt,education,education_num,marital_status,occupation,relationship,"
               "race,sex,capital_gain,capital_loss,hours_per_week,native_country,income")
LOOKS_LIKE_A_RECORD = "its first row looks like a record, not a header"


def _adult() -> Path:
    path = Path(os.environ.get("LOPUB_DATA_DIR", "")) / "adult" / "adult.data"
    if not path.is_file():
        pytest.skip("LOPUB_DATA_DIR holds no adult/adult.data")
    return path


def _write(path: Path, header: str | None, rows: list[str]) -> Path:
    path.write_text(("" if header is None else header + "\n") + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _records(n: int = 60) -> list[str]:
    """Rows of (age, sex, income, hours): two text columns whose every label recurs."""
    return [f"{20 + (7 * i) % 50},{'MF'[i % 2]},{'<=50K' if i % 3 else '>50K'},{30 + i % 20}"
            for i in range(n)]


def test_adult_as_shipped_warns_naming_the_evidence_and_the_way_out(tmp_path, capsys):
    assert main(["schema", str(_adult()), "--out", str(tmp_path / "d.json")]) == 0
    err = capsys.readouterr().err
    assert LOOKS_LIKE_A_RECORD in err
    # numbers in columns of numbers, and labels that are values of their own column
    assert "6 are numbers in columns of numbers ('39', '77516', '13', '2174', '0', '40')" in err
    assert "9 are also values of their own column ('State-gov', 'Bachelors'" in err
    assert "--names NAME,NAME,... (its 15 column names, in order) or --no-header" in err


def test_adult_with_the_guide_header_does_not_warn(tmp_path):
    text = _adult().read_text(encoding="utf-8")
    path = tmp_path / "adult.csv"
    path.write_text(ADULT_NAMES + "\n" + text, encoding="utf-8")
    assert header_evidence(read_csv(str(path))) == ([], [])


@pytest.mark.parametrize("header, rows", [
    ("age,sex,income,hours", _records()),
    ("x1,x2", [f"{i % 7},{(i * 3) % 11}" for i in range(50)]),
    ("2019,2020", [f"{'abc'[i % 3]},{'uv'[i % 2]}" for i in range(50)]),  # years naming text columns
    ("region,2019,2020", [f"{'NSEW'[i % 4]},{1990 + i},{2000 + i}" for i in range(50)]),  # years over numbers
    ("0,1,2", [f"{i % 2},{(i + 1) % 2},{i % 3}" for i in range(50)]),  # pandas' default column names
])
def test_a_real_header_does_not_warn(tmp_path, capsys, header, rows):
    path = _write(tmp_path / "d.csv", header, rows)
    assert main(["schema", str(path), "--out", str(tmp_path / "d.json")]) == 0
    assert LOOKS_LIKE_A_RECORD not in capsys.readouterr().err


@pytest.mark.parametrize("rows, number, value", [
    (_records(), ["20", "30"], ["M", ">50K"]),  # first record 20,M,>50K,30
    ([f"{0.5 + i / 100:.2f},{-i},{i * i}" for i in range(1, 41)], ["0.51", "-1", "1"], []),  # numbers only
])
def test_a_headerless_file_warns(tmp_path, capsys, rows, number, value):
    path = _write(tmp_path / "d.csv", None, rows)
    assert header_evidence(read_csv(str(path))) == (number, value)
    assert main(["schema", str(path), "--out", str(tmp_path / "d.json")]) == 0
    assert LOOKS_LIKE_A_RECORD in capsys.readouterr().err


def test_a_repeated_header_cell_names_the_options_of_a_headerless_file(tmp_path):
    path = _write(tmp_path / "d.csv", None, [f"{i % 2},{i % 2}" for i in range(10)])
    with pytest.raises(ValueError, match=r"column '0' twice in its header row.*--names NAME,NAME,\.\.\. or --no-header"):
        read_csv(str(path))
    assert list(read_csv(str(path), no_header=True).columns) == ["col_1", "col_2"]


def test_names_and_no_header_keep_the_first_record(tmp_path):
    rows = _records(30)
    path = _write(tmp_path / "d.csv", None, rows)
    named = read_csv(str(path), names=["age", "sex", "income", "hours"])
    assert list(named.columns) == ["age", "sex", "income", "hours"]
    assert len(named) == 30 and named.iloc[0].tolist() == rows[0].split(",")
    numbered = read_csv(str(path), no_header=True)
    assert list(numbered.columns) == ["col_1", "col_2", "col_3", "col_4"]
    assert numbered.equals(named.set_axis(numbered.columns, axis=1))


def test_names_are_checked(tmp_path):
    path = _write(tmp_path / "d.csv", None, _records(10))
    with pytest.raises(ValueError, match=r"--names gives 3 column names but CSV file '.*d.csv' has 4 columns"):
        read_csv(str(path), names=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"--names gives \['a'\] more than once"):
        read_csv(str(path), names=["a", "b", "a", "c"])
    with pytest.raises(ValueError, match=r"--names \(a,,b,c\) holds a blank name"):
        read_csv(str(path), names=["a", " ", "b", "c"])
    with pytest.raises(TypeError, match=r"names \('abcd'\) must be a list of column names"):
        read_csv(str(path), names="abcd")
    pq = tmp_path / "d.parquet"
    pd.DataFrame({"a": ["x"]}).to_parquet(pq)
    with pytest.raises(ValueError, match=r"--names and --no-header are for CSV files.*Parquet file"):
        read_csv(str(pq), no_header=True)


def test_cli_names_count_and_exclusive_options(tmp_path, capsys):
    path = _write(tmp_path / "d.csv", None, _records(10))
    assert main(["schema", str(path), "--names", "a,b"]) == 2
    assert "--names gives 2 column names but CSV file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["schema", str(path), "--names", "a,b,c,d", "--no-header"])
    assert "--no-header: not allowed with argument --names" in capsys.readouterr().err


def test_schema_then_collect_and_encode_with_the_same_names(tmp_path, capsys):
    rows = _records(200)
    path = _write(tmp_path / "d.data", None, rows)
    names = "age,sex,income,hours"
    dom = tmp_path / "d.json"
    assert main(["schema", str(path), "--names", names, "--out", str(dom)]) == 0
    assert LOOKS_LIKE_A_RECORD not in capsys.readouterr().err
    assert [a["name"] for a in json.loads(dom.read_text())["attributes"]] == names.split(",")
    out = tmp_path / "r.npz"
    assert main(["collect", str(path), "--domain", str(dom), "--names", names, "--protocol", "grr",
                 "--epsilon", "1", "--seed", "0", "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 200  # the first record is collected too
    enc = tmp_path / "r.parquet"
    assert main(["encode", str(path), "--domain", str(dom), "--names", names, "--f", "0.5",
                 "--seed", "0", "--out", str(enc), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 200
    # names other than the domain's: the domain's clear error
    assert main(["collect", str(path), "--domain", str(dom), "--no-header", "--protocol", "grr",
                 "--epsilon", "1", "--out", str(tmp_path / "x.npz")]) == 2
    assert "missing columns ['age', 'sex', 'income', 'hours']" in capsys.readouterr().err


def test_evaluate_reads_real_without_header_and_the_release_with_its_own(tmp_path, capsys):
    rows = _records(120)
    real = _write(tmp_path / "real.data", None, rows)
    names = "age,sex,income,hours"
    dom = tmp_path / "d.json"
    assert main(["schema", str(real), "--names", names, "--out", str(dom)]) == 0
    capsys.readouterr()
    syn = _write(tmp_path / "syn.csv", names, rows)  # the same records: every TVD is 0
    assert main(["evaluate", "--real", str(real), "--synthetic", str(syn), "--domain", str(dom),
                 "--names", names, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["max"] == 0.0
    short = _write(tmp_path / "short.csv", names, rows[1:])  # one record fewer: a TVD of 1/120 at most
    assert main(["evaluate", "--real", str(real), "--synthetic", str(short), "--domain", str(dom),
                 "--names", names, "--json"]) == 0
    assert 0 < json.loads(capsys.readouterr().out)["max"] <= 1 / 120 + 1e-12


def test_compare_protocols_csv_without_header(tmp_path, capsys):
    path = _write(tmp_path / "d.data", None, _records(300))
    dom = tmp_path / "d.json"
    assert main(["schema", str(path), "--no-header", "--out", str(dom)]) == 0
    capsys.readouterr()
    assert main(["compare-protocols", "--dataset", str(path), "--domain", str(dom), "--no-header",
                 "--protocols", "spl-grr", "--epsilons", "2", "--runs", "1", "--seed", "0", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 1 and np.isfinite(rows[0]["mse_avg"])


def test_a_header_read_as_a_record_is_refused_or_warned(tmp_path, capsys):
    path = _write(tmp_path / "d.csv", "age,sex,income,hours", _records(30))
    with pytest.raises(ValueError, match=r"its first row is the --names given: the file has a header row"):
        read_csv(str(path), names=["age", "sex", "income", "hours"])
    assert main(["schema", str(path), "--no-header", "--out", str(tmp_path / "d.json")]) == 0
    err = capsys.readouterr().err
    assert "read without a header row (--names/--no-header): its first row looks like a header: " \
           "'age', 'hours' are text in columns of numbers" in err
    headerless = _write(tmp_path / "h.csv", None, _records(30))  # a record first: no warning
    assert main(["schema", str(headerless), "--no-header", "--out", str(tmp_path / "h.json")]) == 0
    assert "looks like a header" not in capsys.readouterr().err


def test_an_empty_header_cell_over_values_is_one_error_not_a_warning_and_an_error(tmp_path, capsys):
    """Found by tests/harden/test_properties.py::test_csv_reader (rows ``,:`` / ``0,:``): the header
    warning (':' is also a value of its column) came before schema's refusal of the unnamed column,
    two messages on stderr; the malformed header is now refused in one line."""
    path = tmp_path / "x.csv"
    path.write_text(",:\n0,:\n", encoding="utf-8")
    assert main(["schema", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has no name in the header row" in err[0]
    path.write_text("age,:\n30,:\n40,x\n", encoding="utf-8")  # a named header still gets the warning
    main(["schema", str(path), "--out", str(tmp_path / "d.json"), "--quiet"])
    assert LOOKS_LIKE_A_RECORD in capsys.readouterr().err
