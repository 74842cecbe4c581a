"""Defects found by session 40's command-line tour of a new user (tests fail before the fixes)."""
from __future__ import annotations

import re

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


# 3. a ';' / decimal-comma input gets its release in its own dialect -------------------------------
def _european_csv(path, n=600):
    rng = np.random.default_rng(4)
    pd.DataFrame({"g": rng.choice(["p", "q"], n), "h": np.round(rng.normal(170, 10, n), 1)}).to_csv(
        path, sep=";", decimal=",", index=False)


@pytest.fixture(scope="module")
def european(tmp_path_factory):
    """A ';'-separated, decimal-comma CSV read with --sep ';' --decimal ,: its domain and model."""
    from lopub.cli import main

    d = tmp_path_factory.mktemp("european")
    _european_csv(d / "eu.csv")
    for argv in (["schema", d / "eu.csv", "--sep", ";", "--decimal", ",", "--out", d / "dom.json"],
                 ["collect", d / "eu.csv", "--domain", d / "dom.json", "--epsilon", "8", "--seed", "0",
                  "--out", d / "r.npz"],
                 ["fit", d / "r.npz", "--out", d / "m.json"]):
        assert main([str(x) for x in argv]) == 0
    return d


def test_schema_records_the_csv_dialect_it_read(european, tmp_path, capsys):
    import json

    assert json.loads((european / "dom.json").read_text())["csv"] == {"sep": ";", "decimal": ","}
    assert json.loads((european / "m.json").read_text())["domain"]["csv"] == {"sep": ";", "decimal": ","}
    # a plain ',' / '.' file records nothing (absent means ',' and '.')
    plain = tmp_path / "p.csv"
    _three_columns(plain, n=200)
    assert run(capsys, "schema", plain, "--out", tmp_path / "p.json")[0] == 0
    assert "csv" not in json.loads((tmp_path / "p.json").read_text())


def test_a_release_is_written_in_the_input_dialect(european, tmp_path, capsys):
    """synthesize wrote a ','-separated, decimal-point release of a ';' / decimal-comma input."""
    out = tmp_path / "s.csv"
    code, _, err = run(capsys, "synthesize", european / "m.json", "--n", "50", "--seed", "1", "--out", out)
    assert code == 0, err
    lines = out.read_text().splitlines()
    assert lines[0] == "g;h"
    heights = pd.read_csv(out, sep=";", decimal=",")["h"]
    assert heights.dtype == float and heights.between(100, 250).all()
    cells = [s.split(";")[1] for s in lines[1:]]
    assert all(re.fullmatch(r"\d+,\d", c) for c in cells), cells  # decimal commas, to 0.1 as the input


def test_synthesize_sep_and_decimal_override_the_recorded_dialect(european, tmp_path, capsys):
    out = tmp_path / "s.csv"
    code, _, err = run(capsys, "synthesize", european / "m.json", "--n", "20", "--seed", "1", "--sep", ",",
                       "--out", out)
    assert code == 0, err
    df = pd.read_csv(out)
    assert list(df.columns) == ["g", "h"] and df["h"].dtype == float
    code, _, err = run(capsys, "synthesize", european / "m.json", "--n", "20", "--sep", "tab", "--decimal", ",",
                       "--out", tmp_path / "t.csv")
    assert code == 0 and (tmp_path / "t.csv").read_text().splitlines()[0] == "g\th", err
    code, _, err = run(capsys, "synthesize", european / "m.json", "--sep", ",", "--decimal", ",",
                       "--out", tmp_path / "bad.csv")
    assert code == 2 and "--decimal (',') is the release's delimiter (',', --sep)" in err, err
    assert not (tmp_path / "bad.csv").exists()


def test_an_older_domain_without_the_field_still_gives_a_comma_release(european, tmp_path, capsys):
    import json

    old = json.loads((european / "dom.json").read_text())
    del old["csv"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    for argv in (["collect", european / "eu.csv", "--domain", tmp_path / "old.json", "--epsilon", "8", "--seed",
                  "0", "--out", tmp_path / "r.npz"], ["fit", tmp_path / "r.npz", "--out", tmp_path / "m.json"],
                 ["synthesize", tmp_path / "m.json", "--n", "20", "--out", tmp_path / "s.csv"]):
        code, _, err = run(capsys, *argv)
        assert code == 0, err
    assert pd.read_csv(tmp_path / "s.csv")["h"].dtype == float


@pytest.mark.parametrize("bad, words", [({"sep": ";;"}, "csv sep (';;') must be one character"),
                                        ({"decimal": ";"}, "csv decimal (';') must be '.' or ','"),
                                        ({"sep": ",", "decimal": ","}, "csv sep and decimal (',') must differ"),
                                        ({"delimiter": ";"}, "\"csv\" must be")])
def test_a_malformed_csv_field_is_a_domain_error(european, bad, words):
    import json

    from lopub.data.domain import Domain
    from lopub.errors import DomainError

    obj = json.loads((european / "dom.json").read_text()) | {"csv": bad}
    with pytest.raises(DomainError, match=words.replace("(", r"\(").replace(")", r"\)")):
        Domain.from_dict(obj)


def test_saturate_takes_a_tiny_raw_error_without_overflow():
    """The cost model's soft minimum at a vanishing raw error (huge epsilon): ``raw ** -4`` overflowed
    (OverflowError from `lopub encode --epsilon 2083`, the planner's Bloom cost; found by
    tests/harden/test_properties.py); the same value as the formula wherever that is finite."""
    import math

    from lopub.collect.cost import saturate

    for raw in (8e-78, 1e-300, 5e-324):
        assert saturate(raw, 2) == raw
    assert saturate(1e300, 3) == 1 - 1 / 3
    for raw in (1e-3, 0.1, 0.5, 0.9, 4.0):
        cap = 1 - 1 / 4
        assert math.isclose(saturate(raw, 4), (raw ** -4 + cap ** -4) ** -0.25, rel_tol=1e-12)


def test_encode_at_a_huge_epsilon_plans_without_overflow(tmp_path, capsys):
    """`lopub encode --epsilon 2083` (Bloom reports, epsilon split over the hashes) ended in an
    OverflowError traceback from the planner's cost model; it now writes the reports."""
    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.choice(list("xyz"), 300), "b": rng.choice(list("pq"), 300)}).to_csv(
        tmp_path / "d.csv", index=False)
    assert run(capsys, "schema", tmp_path / "d.csv", "--out", tmp_path / "dom.json")[0] == 0
    code, _, err = run(capsys, "encode", tmp_path / "d.csv", "--domain", tmp_path / "dom.json",
                       "--epsilon", "2083", "--out", tmp_path / "r.parquet")
    assert code == 0, err
    assert (tmp_path / "r.parquet").is_file()
