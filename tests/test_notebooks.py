"""Every notebook's code cells run top to bottom (no Jupyter needed)."""
import json
from pathlib import Path

import matplotlib
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    cells = json.loads(path.read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    assert code, f"{path.name} has no code"
    ns: dict = {}
    for i, src in enumerate(code):
        exec(compile(src, f"{path.name}[cell {i}]", "exec"), ns)
    assert "release" in ns and len(ns["release"]) == 20_000
