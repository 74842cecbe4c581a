"""The lopub.cli package: explicit registration, library defaults, --quiet/--verbose, remarks."""
import argparse
import json
import logging
import warnings

import numpy as np
import pytest

from lopub import CollectionSpec, Dataset, Domain
from lopub.cli import build_parser, main
from lopub.cli._common import run
from lopub.client import encode
from lopub.dependency.junction import HEURISTICS
from lopub.estimate import METHODS
from lopub.pipeline.steps import DEFAULT_CLIQUE_BUDGET, PGM_CLIQUE_BUDGET

COMMANDS = {"schema", "encode", "privacy", "inspect-reports", "merge-reports", "demo", "estimate", "fit",
            "synthesize", "query", "graph", "evaluate", "collect", "estimate-freq",
            "compare-protocols", "report", "export", "plan", "serve-plan", "serve", "serve-export"}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    d = Domain.from_categories({"a": ["x", "y"], "b": ["u", "v", "w"], "c": ["0", "1"]})
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2, 600)
    codes = np.column_stack([a, (a + rng.integers(0, 2, 600)) % 3, rng.integers(0, 2, 600)])
    path = tmp_path_factory.mktemp("cli") / "r.parquet"
    encode(Dataset(codes, d), CollectionSpec.from_domain(d, f=0.3), rng=1).save(path)
    return path


def _subparsers(parser):
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_subcommand_help_exits_0(command, capsys):
    assert set(_subparsers(build_parser())) == COMMANDS
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and out.startswith(f"usage: lopub {command}")
    assert "--quiet" in out and "--verbose" in out


def test_defaults_and_choices_come_from_the_library():
    sub = _subparsers(build_parser())
    for command in ("fit", "graph", "estimate"):
        opts = {a.dest: a for a in sub[command]._actions}
        assert tuple(opts["method"].choices) == METHODS
        if command != "estimate":
            assert opts["clique_budget"].default is None  # fit's default for the chosen --release
    fit_help = {a.dest: a for a in sub["fit"]._actions}["clique_budget"].help
    assert f"{DEFAULT_CLIQUE_BUDGET:,}" in fit_help and f"{PGM_CLIQUE_BUDGET:,}" in fit_help
    assert tuple({a.dest: a for a in sub["fit"]._actions}["heuristic"].choices) == HEURISTICS


def test_fit_accepts_hybrid_lasso(reports, tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["fit", str(reports), "--method", "hybrid-lasso", "--quiet", "--json",
                 "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "hybrid-lasso" and out.exists()


@pytest.mark.parametrize("where", ["global", "subcommand"])
def test_quiet_silences_progress(reports, tmp_path, capsys, where):
    argv = ["graph", str(reports), "--method", "moment"]
    assert main(argv) == 0
    assert "pairwise joints: 3/3" in capsys.readouterr().err
    assert main(["--quiet"] + argv if where == "global" else argv + ["--quiet"]) == 0
    cap = capsys.readouterr()
    assert cap.err == "" and "structure auto (significant dependence): " in cap.out


def test_quiet_still_shows_warnings(tmp_path, capsys):
    p = tmp_path / "gaps.csv"
    p.write_text("a,b\nx,u\ny,\nx,v\n")
    assert main(["--quiet", "schema", str(p), "--missing", "drop"]) == 0  # issue 23: else a category
    err = capsys.readouterr().err
    assert err.startswith("warning: missing values ignored") and "b: 1" in err


@pytest.mark.parametrize("argv", [["--verbose", "privacy", "--f", "0.5"],
                                  ["privacy", "--f", "0.5", "--verbose"]])
def test_verbose_adds_debug_remarks_only(argv, capsys):
    assert main(["privacy", "--f", "0.5"]) == 0
    plain = capsys.readouterr()
    assert main(argv) == 0
    loud = capsys.readouterr()
    assert loud.out == plain.out and plain.err == ""
    assert "lopub privacy: debug: arguments" in loud.err and "lopub privacy: debug: done in" in loud.err


def test_quiet_and_verbose_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--quiet", "privacy", "--f", "0.5", "--verbose"])
    assert e.value.code == 2 and "exclude each other" in capsys.readouterr().err


def _command(func, **opts):
    return argparse.Namespace(**{"command": "probe", "func": func, "quiet": False, "verbose": False,
                                 **opts})


def _numerical_trouble(a):
    np.log(np.zeros(2))  # numpy: RuntimeWarning divide by zero
    warnings.warn("a library warning for the user", UserWarning)


def test_numpy_runtime_warnings_do_not_reach_users(capsys):
    assert run(_command(_numerical_trouble)) == 0
    err = capsys.readouterr().err
    assert err == "lopub probe: warning: a library warning for the user\n"
    assert run(_command(_numerical_trouble, verbose=True)) == 0
    assert "lopub probe: debug: RuntimeWarning: divide by zero" in capsys.readouterr().err


def test_errors_are_logged_with_status_2(caplog, capsys):
    def fail(a):
        raise ValueError("phi (3) must be in (0, 1]")
    with caplog.at_level(logging.DEBUG, logger="lopub"):
        assert run(_command(fail)) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "lopub probe: error: phi (3) must be in (0, 1]"
    err = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(err) == 1 and err[0].command == "probe"


def test_cli_remarks_are_log_records(reports, tmp_path, caplog):
    fit = ["fit", str(reports), "--method", "moment", "--phi", "0.01", "--clique-budget", "4",
           "--out", str(tmp_path / "m.json")]
    with caplog.at_level(logging.INFO, logger="lopub"):
        assert main(fit) == 0
    notes = [r for r in caplog.records if r.levelno == logging.INFO]
    assert len(notes) == 1 and notes[0].name == "lopub"
    assert notes[0].getMessage().startswith("clique budget (4 cells) exceeded")


@pytest.mark.parametrize("module", ["lopub", "lopub.cli"])
def test_python_dash_m_runs_the_command_line(module):
    import subprocess
    import sys

    from lopub import __version__

    done = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert __version__ in done.stdout + done.stderr
