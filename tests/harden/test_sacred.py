"""Issue 25: nothing the user gave is ever lost, and every bad input gets a clear answer.

Each test reproduces one of the issue's defects and checks the clear error (exit 2, one line
naming the option and the file) or the right result, with every input byte for byte unchanged.
"""
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lopub.cli import main
from lopub.cli._commands import command_of
from lopub.collect.reports import MarginalReports
from lopub.errors import ReportsFormatError
from lopub.io import unverified_reads
from lopub.model.graphical import Model
from lopub.pipeline.synthesizer import Synthesizer

from .conftest import run_cli

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def more(files, tmp_path_factory):
    """Besides the shared files: marginal-sampling reports and a dataset folder."""
    d = tmp_path_factory.mktemp("sacred")
    f = dict(files)
    f["ms.npz"], f["dset"] = str(d / "ms.npz"), str(d / "dset")
    assert main(["collect", files["d.csv"], "--domain", files["dom.json"], "--protocol", "marginals",
                 "--epsilon", "2", "--seed", "1", "--out", f["ms.npz"], "--quiet"]) == 0
    assert main(["merge-reports", f["dset"], files["r.parquet"], "--quiet"]) == 0
    return f


def digests(paths):
    out = {}
    for p in paths:
        p = Path(p)
        for q in ([p] if p.is_file() else sorted(p.rglob("*"))):
            out[str(q)] = hashlib.sha256(q.read_bytes()).hexdigest() if q.is_file() else "dir"
    return out


def one_line(code, err, *words):
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, (w, err)


def copy(src, folder, name):
    dst = Path(folder) / name
    dst.write_bytes(Path(src).read_bytes())
    return str(dst)


# 1. --out equal to (or inside) an input ------------------------------------------------------
def _same_file_cases(f, w):
    return [
        (["schema", f["d.csv"], "--out", f["d.csv"]], "input csv"),
        (["encode", f["d.csv"], "--domain", f["dom.json"], "--f", "0.3", "--out", f["dom.json"]],
         "input --domain"),
        (["collect", f["d.csv"], "--domain", f["dom.json"], "--protocol", "grr", "--epsilon", "1",
          "--out", f["d.csv"]], "input csv"),
        (["fit", f["r.parquet"], "--out", f["r.parquet"]], "input reports"),
        (["fit", f["ms.npz"], "--out", f["ms.npz"]], "input reports"),
        (["fit", f["dset"], "--out", os.path.join(f["dset"], "_lopub_dataset.json")], "inside the input"),
        (["fit", f["dset"], "--out", os.path.join(f["dset"], "part-00000.parquet")], "inside the input"),
        (["synthesize", f["m.json"], "--n", "5", "--out", f["m.json"]], "input model"),
        (["graph", f["m.json"], "--out-json", f["m.json"]], "input source"),
        (["report", f["m.json"], "--out", f["m.json"]], "input model"),
        (["report", f["m.json"], "--synthetic", f["d.csv"], "--out", f["d.csv"]], "input --synthetic"),
        (["report", f["m.json"], "--real", f["d.csv"], "--out", f["d.csv"]], "input --real"),
        (["export", f["m.json"], "--format", "uai", "--out", f["m.json"]], "input model"),
        (["merge-reports", f["dset"], f["r.parquet"]], "reports dataset already"),
    ]


@pytest.mark.parametrize("case", range(14))
def test_out_that_is_an_input_is_refused_and_the_input_kept(more, tmp_path, capsys, case):
    argv, words = _same_file_cases(more, tmp_path)[case]
    inputs = [more[k] for k in ("d.csv", "dom.json", "r.parquet", "m.json", "ms.npz", "dset")]
    before = digests(inputs)
    code, err = run_cli(argv + ["--quiet"], capsys)
    one_line(code, err, words)
    assert digests(inputs) == before


def test_a_hard_link_to_an_input_is_the_input(more, tmp_path, capsys):
    model = copy(more["m.json"], tmp_path, "m.json")
    os.link(model, tmp_path / "alias.json")
    before = digests([model])
    code, err = run_cli(["synthesize", model, "--n", "5", "--out", tmp_path / "alias.json"], capsys)
    one_line(code, err, "--out", "input model")
    assert digests([model]) == before


# 2. special files -------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["fifo", "symlink", "self-link", "dev-null"])
def test_special_output_refused_unless_force(more, tmp_path, capsys, kind):
    out = tmp_path / "out.csv"
    if kind == "fifo":
        os.mkfifo(out)
    elif kind == "symlink":
        target = tmp_path / "target.csv"
        target.write_text("keep\n")
        out.symlink_to(target)
    elif kind == "self-link":
        out.symlink_to(out)
    else:
        out = Path(os.devnull)
    code, err = run_cli(["synthesize", more["m.json"], "--n", "5", "--out", out], capsys)
    one_line(code, err, "--out", "--force")
    if kind == "symlink":
        assert (tmp_path / "target.csv").read_text() == "keep\n" and out.is_symlink()
    if kind in ("fifo", "self-link"):
        code, err = run_cli(["synthesize", more["m.json"], "--n", "5", "--out", out, "--force",
                             "--quiet"], capsys)
        assert code == 0, err
        assert out.is_file() and not out.is_symlink() and len(pd.read_csv(out)) == 5


# 3. deeply nested JSON --------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["plan", "--domain", "{deep}", "--n", "100", "--epsilon", "1"],
    ["synthesize", "{deep}", "--n", "5", "--out", "{w}/s.csv"],
    ["query", "{deep}", "--attrs", "a"],
    ["export", "{deep}", "--format", "uai", "--out", "{w}/e.uai"],
    ["report", "{deep}", "--out", "{w}/r.html"],
    ["collect", "{csv}", "--domain", "{deep}", "--protocol", "grr", "--epsilon", "1", "--out", "{w}/c.npz"],
    ["encode", "{csv}", "--domain", "{deep}", "--f", "0.3", "--out", "{w}/e.parquet"],
    ["evaluate", "--real", "{csv}", "--synthetic", "{csv}", "--domain", "{deep}"],
])
def test_deeply_nested_json_is_a_clear_error(more, tmp_path, capsys, argv):
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    argv = [x.format(deep=deep, w=tmp_path, csv=more["d.csv"]) for x in argv]
    code, err = run_cli(argv + ["--quiet"], capsys)
    one_line(code, err, "deep.json", "nested too deeply")


def test_deeply_nested_json_in_the_python_api(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text('{"a":' * 50_000 + "1" + "}" * 50_000)
    for load in (Model.load, Synthesizer.load):
        with pytest.raises(ValueError, match="nested too deeply"):
            load(deep)


# 4. marginal-sampling .npz carries a checksum ---------------------------------------------
def test_marginal_reports_checksum_catches_an_edit(more, tmp_path):
    z = dict(np.load(more["ms.npz"]))
    g = z["group_0"].copy()
    g[:50] = (g[:50] + 1) % max(2, int(g.max()) + 1)
    z["group_0"] = g
    np.savez_compressed(tmp_path / "edit.npz", **z)
    with pytest.raises(ReportsFormatError, match="edit.npz.*fails its checksum"):
        MarginalReports.load(tmp_path / "edit.npz")


def test_marginal_reports_bit_flips_are_clear_errors_or_unchanged(more, tmp_path):
    data = Path(more["ms.npz"]).read_bytes()
    good = MarginalReports.load(more["ms.npz"])
    bad = tmp_path / "flip.npz"
    rng = np.random.default_rng()
    for pos in rng.choice(len(data), 80, replace=False):
        flipped = bytearray(data)
        flipped[pos] ^= 0xFF
        bad.write_bytes(bytes(flipped))
        try:
            got = MarginalReports.load(bad)
        except ReportsFormatError as exc:
            assert "flip.npz" in str(exc) and "\n" not in str(exc)
            continue
        assert np.array_equal(got.subset, good.subset)  # a redundant zip field: contents intact
        assert all(np.array_equal(a, b) for a, b in zip(got.groups, good.groups))


def test_version_1_marginal_reports_need_no_verify(more, tmp_path, capsys):
    z = dict(np.load(more["ms.npz"]))
    meta = json.loads(bytes(z["meta"]).decode())
    meta.pop("checksum")
    meta["version"] = 1
    z["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    old = tmp_path / "old.npz"
    np.savez_compressed(old, **z)
    code, err = run_cli(["fit", old, "--out", tmp_path / "m.json", "--quiet"], capsys)
    one_line(code, err, "old.npz", "no checksum", "--no-verify")
    assert not (tmp_path / "m.json").exists()
    code, err = run_cli(["fit", old, "--out", tmp_path / "m.json", "--no-verify", "--quiet"], capsys)
    assert code == 0 and "WITHOUT any integrity check" in err
    with unverified_reads(), pytest.warns(UserWarning, match="no checksum"):
        assert MarginalReports.load(old).n == MarginalReports.load(more["ms.npz"]).n


# 5. every reader checks the dataset parts' SHA-256 -----------------------------------------
@pytest.mark.parametrize("argv", [["estimate", "{d}", "--attrs", "a"], ["fit", "{d}", "--out", "{w}/m.json"],
                                  ["estimate-freq", "{d}"], ["graph", "{d}"], ["inspect-reports", "{d}"]])
def test_swapped_part_is_refused_by_every_reader(files, tmp_path, capsys, argv):
    one, two = tmp_path / "one", tmp_path / "two"
    other = tmp_path / "other.parquet"
    assert main(["encode", files["d.csv"], "--domain", files["dom.json"], "--f", "0.3", "--seed", "9",
                 "--out", str(other), "--quiet"]) == 0
    assert main(["merge-reports", str(one), files["r.parquet"], "--quiet"]) == 0
    assert main(["merge-reports", str(two), str(other), "--quiet"]) == 0
    (one / "part-00000.parquet").write_bytes((two / "part-00000.parquet").read_bytes())
    manifest = json.loads((one / "_lopub_dataset.json").read_text())
    manifest["parts"][0]["bytes"] = (one / "part-00000.parquet").stat().st_size  # same size
    (one / "_lopub_dataset.json").write_text(json.dumps(manifest))
    code, err = run_cli([x.format(d=one, w=tmp_path) for x in argv] + ["--quiet"], capsys)
    one_line(code, err, "part-00000.parquet", "SHA-256")


def test_model_without_checksum_refused_by_synthesize_and_query(more, tmp_path, capsys):
    obj = json.loads(Path(more["m.json"]).read_text())
    del obj["checksum"]
    obj["n"] = 10 ** 6
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(obj))
    for argv in (["synthesize", edited, "--n", "5", "--out", tmp_path / "s.csv"],
                 ["query", edited, "--attrs", "a"]):
        code, err = run_cli(argv + ["--quiet"], capsys)
        one_line(code, err, "edited.json", "no checksum", "--no-verify")
    code, err = run_cli(["query", edited, "--attrs", "a", "--no-verify"], capsys)
    assert code == 0 and "WITHOUT any integrity check" in err


# 7. tracebacks of the Python API ----------------------------------------------------------
def test_synthesizer_huge_epsilon_and_duplicate_columns():
    with pytest.raises(ValueError, match="epsilon .*401 digits"):
        Synthesizer(epsilon=10 ** 400)
    with pytest.raises(ValueError, match=r"columns \['a'\] more than once"):
        Synthesizer(epsilon=1).fit(pd.DataFrame([["x", "y"], ["y", "x"]], columns=["a", "a"]))


# 8. options that do not apply; global options in both positions ----------------------------
@pytest.mark.parametrize("argv,words", [
    (["fit", "{ms}", "--out", "{w}/m.json", "--scheduler", "tcp://127.0.0.1:1"], ["--scheduler", "marginal-sampling"]),
    (["fit", "{ms}", "--out", "{w}/m.json", "--method", "lasso"], ["--method", "marginal-sampling"]),
    (["estimate-freq", "{o}", "--lip-method", "bayes"], ["--lip-method", "oue reports"]),
    (["export", "{m}", "--format", "uai", "--kind", "junction", "--out", "{w}/e.uai"], ["--kind", "uai"]),
    (["fit", "{r}", "--out", "{w}/m.json", "--max-memory-mb", "0.05"], ["--max-memory-mb", "needs about"]),
    (["estimate", "{r}", "--attrs", "a,b", "--max-memory-mb", "0.05"], ["--max-memory-mb", "needs about"]),
])
def test_options_that_do_not_apply_are_refused(more, tmp_path, capsys, argv, words):
    argv = [x.format(ms=more["ms.npz"], o=more["o.npz"], m=more["m.json"], r=more["r.parquet"],
                     w=tmp_path) for x in argv]
    code, err = run_cli(argv + ["--quiet"], capsys)
    one_line(code, err, *words)
    assert not any(tmp_path.iterdir())  # no result written


def test_global_options_before_the_subcommand(more, tmp_path, capsys):
    assert command_of(["--max-memory-mb", "4000", "fit", "x"]) == "fit"
    assert command_of(["--max-memory-mb=4000", "fit"]) == "fit"
    code, err = run_cli(["--max-memory-mb", "4000", "--quiet", "fit", more["r.parquet"], "--out",
                         tmp_path / "m.json"], capsys)
    assert code == 0, err
    code, err = run_cli(["--max-memory-mb", "0.05", "fit", more["r.parquet"], "--out",
                         tmp_path / "m2.json"], capsys)
    one_line(code, err, "--max-memory-mb")


# 9. silent or vague ------------------------------------------------------------------------
def test_privacy_subnormal_f(capsys):
    capsys.readouterr()
    assert main(["privacy", "--f", "1e-320", "--json"]) == 0
    out = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))
    # 2 h (ln(2 - f) - ln f) with h = 4: finite, about 5890
    assert out["epsilon_per_record"] == pytest.approx(8 * (np.log(2) - np.log(1e-320)), rel=1e-12)


def test_unknown_attribute_in_prior_is_refused(more, tmp_path, capsys):
    prior = tmp_path / "prior.json"
    prior.write_text(json.dumps({"a": [0.3, 0.3, 0.4], "b": [0.5, 0.5], "c": [0.5, 0.5],
                                 "typo": [1.0]}))
    code, err = run_cli(["collect", more["d.csv"], "--domain", more["dom.json"], "--protocol", "rr-lip",
                         "--epsilon", "2", "--prior", prior, "--out", tmp_path / "o.npz", "--quiet"], capsys)
    one_line(code, err, "--prior", "typo")


def test_merge_the_same_input_twice_is_refused(more, tmp_path, capsys):
    code, err = run_cli(["merge-reports", tmp_path / "out", more["r.parquet"], more["r.parquet"]], capsys)
    one_line(code, err, "given twice")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv,words", [
    (["fit", "{o}", "--out", "{w}/m.json"], ["one-way oracle", "estimate-freq"]),
    (["estimate", "{ms}", "--attrs", "a"], ["marginal-sampling", "lopub fit"]),
    (["estimate", "{o}", "--attrs", "a"], ["one-way oracle", "lopub estimate-freq"]),
    (["graph", "{ms}"], ["marginal-sampling", "lopub fit"]),
])
def test_wrong_npz_kind_names_its_type_and_reader(more, tmp_path, capsys, argv, words):
    argv = [x.format(ms=more["ms.npz"], o=more["o.npz"], w=tmp_path) for x in argv]
    code, err = run_cli(argv + ["--quiet"], capsys)
    one_line(code, err, *words)


@pytest.mark.parametrize("argv", [["estimate-freq", "{ms}"], ["inspect-reports", "{o}"],
                                  ["inspect-reports", "{ms}"]])
def test_every_npz_collect_writes_is_read_by_the_inspecting_commands(more, tmp_path, capsys, argv):
    """Issue 23: what collect writes is readable by inspect-reports and estimate-freq (no refusal)."""
    argv = [x.format(ms=more["ms.npz"], o=more["o.npz"], w=tmp_path) for x in argv]
    code, err = run_cli(argv + ["--quiet", "--json"], capsys)
    assert code == 0 and "Traceback" not in err, err


# 6. bounded work ---------------------------------------------------------------------------
def test_schema_of_a_huge_header_row_is_refused_at_once(tmp_path, capsys):
    wide = tmp_path / "wide.csv"
    n = 20_001
    wide.write_text(",".join(f"c{i}" for i in range(n)) + "\n" + ",".join("x" * n) + "\n")
    code, err = run_cli(["schema", wide, "--out", tmp_path / "d.json"], capsys)
    one_line(code, err, "wide.csv", "20,001 columns", "10,000")
    assert not (tmp_path / "d.json").exists()
