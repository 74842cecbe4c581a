"""Fast start: `import lopub`, `lopub --help`, `--version` and `privacy` load no heavy package.

The import graph is checked here, in fresh interpreters; the CPU time is measured by
pipelines/bench_startup.py.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lopub
from lopub.cli import build_parser
from lopub.cli._commands import COMMANDS

HEAVY = ("scipy", "pandas", "sklearn", "matplotlib", "pyarrow", "networkx")
ROOT = Path(lopub.__file__).resolve().parent.parent

PROBE = """
import json, sys
{code}
print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))))
"""


def _heavy_after(code: str) -> list[str]:
    """The heavy top-level packages imported by ``code`` in a fresh interpreter."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", PROBE.format(code=code, heavy=HEAVY)], env=env,
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cli(argv: list[str]) -> str:
    return ("import contextlib, io\nfrom lopub.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    try:\n        main({argv!r})\n    except SystemExit:\n        pass")


@pytest.mark.parametrize("argv", [["--help"], ["--version"], [],
                                  ["privacy", "--f", "0.5", "--h", "4", "--d", "15"],
                                  ["privacy", "--help"], ["no-such-command"]])
def test_cli_start_imports_no_heavy_package(argv):
    assert _heavy_after(_cli(argv)) == []


def test_import_lopub_is_light_and_names_resolve_on_use():
    assert _heavy_after("import lopub, lopub.cli") == []
    assert _heavy_after("import lopub; lopub.Domain") == []  # a light class stays light
    assert "pyarrow" in _heavy_after("import lopub; lopub.Reports")  # the control: loads on use


def test_lazy_public_names():
    for name in lopub.__all__:
        assert getattr(lopub, name) is not None and name in dir(lopub)
    from lopub.reports.dataset import ReportsDataset

    assert lopub.ReportsDataset is ReportsDataset
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        lopub.nope  # noqa: B018


def test_a_run_command_still_loads_what_it_needs():
    assert "pandas" in _heavy_after(_cli(["schema", "--help"]))  # defaults from infer_domain


def test_placeholders_give_the_same_top_level_help():
    lazy, full = build_parser(set()), build_parser()
    assert lazy.format_help() == full.format_help()
    sub = next(a for a in full._actions if a.__class__.__name__ == "_SubParsersAction")
    assert list(sub.choices) == list(COMMANDS)
    for name, (_, help_) in COMMANDS.items():
        assert sub.choices[name].prog == f"lopub {name}"
        assert next(c.help for c in sub._choices_actions if c.dest == name) == help_


def test_every_module_registers_exactly_its_commands():
    import importlib

    for module in {m for m, _ in COMMANDS.values()}:
        registered = importlib.import_module(f"lopub.cli.{module}").REGISTER
        assert set(registered) == {n for n, (m, _) in COMMANDS.items() if m == module}
