"""Defects found by session 40's command-line tour of a new user (tests fail before the fixes)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cli_run import run


def _three_columns(path, n=3000, **csv):
    rng = np.random.default_rng(0)
    a = rng.choice(["x", "y", "z"], n)
    b = np.where(rng.random(n) < 0.7, a, rng.choice(["x", "y", "z"], n))
    pd.DataFrame({"a": a, "b": b, "age": rng.integers(18, 80, n)}).to_csv(path, index=False, **csv)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A 3-column CSV of 3,000 rows, its domain, marginal reports and a model (the tour's start)."""
    from lopub.cli import main

    d = tmp_path_factory.mktemp("tour40")
    _three_columns(d / "d.csv")
    for argv in (["schema", d / "d.csv", "--out", d / "dom.json"],
                 ["collect", d / "d.csv", "--domain", d / "dom.json", "--epsilon", "2", "--seed", "0",
                  "--out", d / "r.npz"],
                 ["fit", d / "r.npz", "--out", d / "m.json"]):
        assert main([str(x) for x in argv]) == 0
    return d


# 1. outputs named like another format ---------------------------------------------------------------
MISNAMED = [  # (argv with {d} for the folder, the option, the misnamed output, what is expected)
    (["collect", "{d}/d.csv", "--domain", "{d}/dom.json", "--epsilon", "2", "--seed", "0"], "--out", "r.csv",
     "['.npz', '.parquet', '.pq']"),
    (["collect", "{d}/d.csv", "--domain", "{d}/dom.json", "--epsilon", "2", "--protocol", "grr", "--seed", "0"],
     "--out", "g.csv", "['.npz', '.parquet', '.pq']"),
    (["collect", "{d}/d.csv", "--domain", "{d}/dom.json", "--epsilon", "2", "--seed", "0"], "--out", "r.json",
     "['.npz', '.parquet', '.pq']"),
    (["fit", "{d}/r.npz"], "--out", "m.csv", "['.json', '.json.gz']"),
    (["fit", "{d}/r.npz", "--out", "{d}/new.json"], "--plot", "g.csv", "'.png'"),
    (["report", "{d}/m.json"], "--out", "rep.pdf", "['.html', '.htm']"),
    (["schema", "{d}/d.csv"], "--out", "dom.csv", "['.json']"),
    (["serve-plan", "--domain", "{d}/dom.json", "--n", "1000", "--epsilon", "2"], "--out", "plan.yaml",
     "['.json']"),
    (["export", "{d}/m.json", "--format", "uai"], "--out", "m.pkl", "['.uai']"),
    (["export", "{d}/m.json", "--format", "pgmpy"], "--out", "m.uai", "['.pkl', '.pickle']"),
    (["encode", "{d}/d.csv", "--domain", "{d}/dom.json", "--epsilon", "2", "--seed", "0"], "--out", "e.npz",
     "['.parquet', '.pq']"),
    (["graph", "{d}/m.json"], "--out-json", "g.html", "['.json']"),
    (["synthesize", "{d}/m.json", "--n", "10"], "--out", "s.json", "['.csv', '.parquet', '.pq']"),
]


@pytest.mark.parametrize("argv, option, name, expected", MISNAMED, ids=lambda x: x if isinstance(x, str) else None)
def test_an_output_named_like_another_format_is_refused_before_any_work(made, capsys, argv, option, name,
                                                                         expected):
    """`collect --out r.csv` wrote a NumPy archive named r.csv, `fit --out m.csv` JSON, `report --out
    rep.pdf` HTML, `export --format uai --out m.pkl` UAI text...: each is refused before any work,
    naming the option, the path, its suffix and the suffixes expected."""
    before = sorted(p.name for p in made.iterdir())
    out = made / name
    code, _, err = run(capsys, *[a.format(d=made) for a in argv], option, out)
    assert code == 2, err
    suffix = "." + name.rsplit(".", 1)[1]
    assert f"{option} ('{out}') has the suffix '{suffix}'" in err and expected in err, err
    assert sorted(p.name for p in made.iterdir()) == before  # nothing written, no stage left


@pytest.mark.parametrize("name", ["run.v2", "reports", "R.NPZ"])
def test_a_name_without_a_known_other_suffix_is_written_as_given(made, capsys, name):
    """A name without suffix, or with one no well-known format uses, is the user's choice: kept."""
    out = made / "kept" / name
    out.parent.mkdir(exist_ok=True)
    code, stdout, err = run(capsys, "collect", made / "d.csv", "--domain", made / "dom.json", "--epsilon", "2",
                            "--seed", "0", "--out", out)
    assert code == 0, err
    assert out.is_file() and str(out) in stdout


def test_a_gzip_model_and_a_pickle_export_keep_their_names(made, capsys):
    for argv, out in ((["fit", made / "r.npz", "--out"], made / "m2.JSON.gz"),
                      (["export", made / "m.json", "--format", "uai", "--out"], made / "m.UAI")):
        code, _, err = run(capsys, *argv, out)
        assert code == 0 and out.is_file(), err
    assert (made / "m2.JSON.gz").read_bytes()[:2] == b"\x1f\x8b"


def test_collect_auto_still_renames_an_npz_parquet_clash(made, capsys):
    """The auto protocol's kind is known only after planning: .parquet for marginal reports is
    written as .npz beside it, with a warning (as before)."""
    code, _, err = run(capsys, "collect", made / "d.csv", "--domain", made / "dom.json", "--epsilon", "2",
                       "--seed", "0", "--out", made / "auto.parquet")
    assert code == 0 and (made / "auto.npz").is_file() and not (made / "auto.parquet").exists()
    assert "written to" in err and "auto.npz" in err


# 2. --sep that reads the file as one column ------------------------------------------------------
def _semicolon_csv(path, n=600):
    rng = np.random.default_rng(2)  # labels and numbers without an 'x' or a ',' in them
    pd.DataFrame({"a": rng.choice(["p", "q"], n), "b": rng.choice(["r", "s", "t"], n),
                  "h": np.round(rng.normal(170, 10, n), 1)}).to_csv(path, sep=";", index=False)


@pytest.mark.parametrize("sep, shown", [("x", "'x'"), (",", "','"), ("|", "'|'")])
@pytest.mark.parametrize("command", ["schema", "collect"])
def test_a_wrong_sep_names_the_one_column_read_and_the_likely_delimiter(made, tmp_path, capsys, command, sep,
                                                                        shown):
    """`--sep x` on a ';' file read one column named 'a;b;h' and failed with 'identifier-like'
    (schema) or 'missing columns' (collect), never naming the delimiter."""
    csv = tmp_path / "semi.csv"
    _semicolon_csv(csv)
    argv = {"schema": ["schema", csv, "--out", tmp_path / "d.json"],
            "collect": ["collect", csv, "--domain", made / "dom.json", "--epsilon", "2", "--out", tmp_path / "r.npz"]}
    code, _, err = run(capsys, *argv[command], "--sep", sep)
    assert code == 2, err
    assert f"read with --sep {shown} is one column, named 'a;b;h' (the whole first line)" in err, err
    assert "the delimiter looks like ';'" in err and "Give --sep ';'" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["semi.csv"]


def test_a_tab_file_read_with_a_semicolon_suggests_sep_tab(tmp_path, capsys):
    csv = tmp_path / "t.tsv"
    csv.write_text("a\tb\n1\t2\n3\t4\n5\t6\n")
    code, _, err = run(capsys, "schema", csv, "--sep", ";")
    assert code == 2 and "the delimiter looks like '\\t'" in err and "Give --sep tab" in err, err


def test_a_true_one_column_file_is_read_with_its_sep(tmp_path, capsys):
    """A one-column file whose values hold a ';' in some rows only is no wrong --sep."""
    csv = tmp_path / "one.csv"
    csv.write_text("name\nx;y\nz\nz\n")
    code, out, err = run(capsys, "schema", csv, "--sep", ",", "--out", tmp_path / "d.json")
    assert code == 0, err
    assert "x;y" in out
