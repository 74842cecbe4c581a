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
