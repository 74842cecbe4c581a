"""Every notebook runs top to bottom in a real Jupyter kernel (nbclient), quietly, with pictures inline.

The committed notebooks carry their outputs (so they read on GitHub without running);
this test re-executes a copy in a temporary folder and never writes the file back.
"""
import json
import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TIMEOUT = 300  # seconds per cell


def _outputs(nb, kind):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if kind(o)]


def test_notebooks_present():
    names = {p.name for p in NOTEBOOKS}
    assert {"walkthrough.ipynb", "quick_tour.ipynb", "choosing_a_budget.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_committed_with_outputs(path):
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    assert cells, f"{path.name} has no code"
    assert all(c.get("execution_count") for c in cells), f"{path.name}: a code cell was never executed"
    assert any("image/png" in o.get("data", {}) for c in cells for o in c["outputs"]), \
        f"{path.name}: no inline picture in the committed outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_in_kernel(path, tmp_path, monkeypatch):
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's own inline backend
    paths = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))  # this checkout's lopub in the kernel
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError naming the cell on any error
    stderr = _outputs(nb, lambda o: o.output_type == "stream" and o.name == "stderr")
    assert not stderr, f"{path.name} wrote to stderr (a warning?): {[o.text[:300] for o in stderr]}"
    pictures = _outputs(nb, lambda o: "image/png" in o.get("data", {}))
    assert pictures, f"{path.name} showed no picture inline"
    # the kernel ran in tmp_path, as it would in the checkout's notebooks/: nothing may land there
    left = sorted(p.name for p in tmp_path.iterdir())
    assert not left, f"{path.name} wrote {left} into its working folder (write into a temporary folder)"
