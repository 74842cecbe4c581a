import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from lopub import Domain, Reports
from lopub.cli import build_parser, main


@pytest.fixture
def csv(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"age": rng.integers(18, 90, 300), "color": rng.choice(["red", "blue", "green"], 300), "flag": rng.choice(["yes", "no"], 300)})
    p = tmp_path / "data.csv"
    df.to_csv(p, index=False)
    return p


def test_every_subcommand_has_help(capsys):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert {"schema", "encode", "privacy", "inspect-reports", "demo"} <= set(sub.choices)
    for name in sub.choices:
        with pytest.raises(SystemExit) as e:
            main([name, "--help"])
        assert e.value.code == 0
        assert "usage: lopub" in capsys.readouterr().out


def test_schema_encode_inspect(csv, tmp_path, capsys):
    dom = tmp_path / "domain.json"
    assert main(["schema", str(csv), "--out", str(dom), "--bins", "4", "--max-categories", "10"]) == 0
    d = Domain.from_json(dom)
    assert d.attrs == ("age", "color", "flag") and d.size("age") == 4
    assert re.search(r"^age\s+\w+\s+bins\s+4\s", capsys.readouterr().out, re.M)  # the decisions table
    rep = tmp_path / "r.parquet"
    assert main(["encode", str(csv), "--domain", str(dom), "--f", "0.5", "--seed", "3", "--out", str(rep), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 300
    r = Reports.load(rep)
    assert r.n == 300 and r.spec.f == 0.5
    assert main(["inspect-reports", str(rep), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["n"] == 300 and info["epsilon_per_record"] == pytest.approx(r.spec.epsilon)


def test_schema_warns_about_missing_values_and_encode_refuses_them(tmp_path, capsys):
    p = tmp_path / "gaps.csv"
    pd.DataFrame({"a": ["x", "y", "x"], "b": ["u", None, "v"]}).to_csv(p, index=False)
    dom = tmp_path / "domain.json"
    assert main(["schema", str(p), "--out", str(dom)]) == 0  # issue 23: a category by default
    assert Domain.from_json(dom).labels("b") == ("u", "v", "(missing)")
    assert main(["schema", str(p), "--out", str(dom), "--missing", "drop"]) == 0
    err = capsys.readouterr().err
    assert "missing values" in err and "b: 1" in err and "a:" not in err
    assert Domain.from_json(dom).labels("b") == ("u", "v")
    assert main(["encode", str(p), "--domain", str(dom), "--f", "0.5", "--out", str(tmp_path / "r.parquet")]) == 2
    assert "'b'" in capsys.readouterr().err and not (tmp_path / "r.parquet").exists()


def test_encode_with_epsilon(csv, tmp_path, capsys):
    dom = tmp_path / "domain.json"
    main(["schema", str(csv), "--out", str(dom), "--max-categories", "10"])
    capsys.readouterr()
    rep = tmp_path / "r.parquet"
    assert main(["encode", str(csv), "--domain", str(dom), "--epsilon", "3", "--m", "64", "--h", "2", "--out", str(rep), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["epsilon_per_record"] == pytest.approx(3.0) and s["m"] == [64, 64, 64]


def test_privacy_command(capsys):
    assert main(["privacy", "--f", "0.5", "--h", "4", "--d", "15", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["epsilon_per_record"] == pytest.approx(15 * 8 * np.log(3))
    assert main(["privacy", "--epsilon", str(out["epsilon_per_record"]), "--h", "4", "--d", "15", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["f"] == pytest.approx(0.5)


@pytest.mark.parametrize("argv, match", [
    (["privacy", "--f", "1.5"], r"f \(1.5\) must be in \(0, 1\)"),
    (["privacy"], "exactly one of --f or --epsilon"),
    (["inspect-reports", "nope.parquet"], "does not exist"),
    (["schema", "nope.csv"], "CSV file 'nope.csv' does not exist"),
])
def test_cli_errors(argv, match, capsys):
    assert main(argv) == 2
    assert __import__("re").search(match, capsys.readouterr().err)


def test_encode_bad_category_writes_nothing(csv, tmp_path, capsys):
    dom = tmp_path / "domain.json"
    Domain.from_categories({"age": ["1"], "color": ["red"], "flag": ["yes", "no"]}).to_json(dom)
    rep = tmp_path / "r.parquet"
    assert main(["encode", str(csv), "--domain", str(dom), "--f", "0.5", "--out", str(rep)]) == 2
    assert "attribute 'age': unknown categor" in capsys.readouterr().err
    assert not rep.exists()


def test_console_entry_point():
    out = subprocess.run([sys.executable, "-m", "lopub", "privacy", "--f", "0.5", "--json"], capture_output=True, text=True)
    assert out.returncode == 0 and json.loads(out.stdout)["epsilon_per_attribute"] == pytest.approx(8 * np.log(3))


def test_output_into_a_closed_pipe_is_not_an_error():
    proc = subprocess.Popen([sys.executable, "-m", "lopub", "privacy", "--f", "0.5", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # like `| head -0`
    err = proc.stderr.read().decode()
    assert proc.wait() == 0 and "Traceback" not in err and "BrokenPipe" not in err


def test_an_output_ending_with_a_slash_is_refused_not_written_as_a_file(tmp_path, capsys):
    """``--out newd/`` wrote a file named ``newd`` (Path() drops the trailing slash); now exit 2 naming it."""
    import pandas as pd

    csv = tmp_path / "d.csv"
    pd.DataFrame({"a": ["x", "y"] * 50}).to_csv(csv, index=False)
    out = f"{tmp_path}/newd/"
    assert main(["schema", str(csv), "--out", out]) == 2
    assert "names a folder (it ends with '/')" in capsys.readouterr().err
    assert not (tmp_path / "newd").exists()
