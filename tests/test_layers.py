"""The package layers and the absence of import cycles (docs/ARCHITECTURE.md, "The layer rule").

The contracts live in pyproject.toml ([tool.importlinter]); this runs them,
and checks that they do bite: a module graph with an upward import or a cycle
is refused.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("importlinter")


def _lint(config: Path, cwd: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports") or "lint-imports"
    return subprocess.run([exe, "--config", str(config), "--no-cache"], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(cwd), "PATH": str(Path(sys.executable).parent)
                                                       + ":/usr/bin:/bin"})


def test_lopub_keeps_its_contracts():
    res = _lint(ROOT / "pyproject.toml", ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 broken" in res.stdout


def _toy(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "toy"
    for name, text in {"__init__.py": "", **files}.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    (tmp_path / "lint.toml").write_text(
        '[tool.importlinter]\nroot_package = "toy"\n\n'
        '[[tool.importlinter.contracts]]\nname = "layers"\ntype = "layers"\nlayers = ["toy.high", "toy.low"]\n\n'
        '[[tool.importlinter.contracts]]\nname = "acyclic"\ntype = "acyclic_siblings"\nancestors = ["toy"]\n')
    return tmp_path / "lint.toml"


@pytest.mark.parametrize("files, broken", [
    ({"high.py": "import toy.low\n", "low.py": ""}, None),
    ({"high.py": "", "low.py": "import toy.high\n"}, "layers"),  # an upward import
    ({"high.py": "", "low.py": "", "a.py": "import toy.b\n", "b.py": "def f():\n    import toy.a\n"},
     "acyclic"),  # a cycle, one side a lazy import
])
def test_the_contracts_bite(tmp_path, files, broken):
    res = _lint(_toy(tmp_path, files), tmp_path)
    if broken is None:
        assert res.returncode == 0, res.stdout + res.stderr
    else:
        assert res.returncode != 0 and f"{broken} BROKEN" in res.stdout, res.stdout + res.stderr


def test_benchmarks_never_import_the_tests():
    """pipelines/ (the benchmarks) may be imported by tests, never the other way (docs/ARCHITECTURE.md):
    no ``tests`` import and no bare import of a module that lives in tests/ (a sys.path trick)."""
    import ast

    test_modules = {p.stem for p in (ROOT / "tests").glob("*.py")} | {"tests"}
    found = []
    for path in sorted((ROOT / "pipelines").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in test_modules]
    assert not found, found
