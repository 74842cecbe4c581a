"""The naive CALM-style baseline of pipelines/bench_budgets.py --calm-naive: its consistency step and its run."""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipelines.harness.methods import consistent_pairs  # noqa: E402


def _true_tables(rng, sizes):
    joint = rng.dirichlet(np.ones(int(np.prod(sizes)))).reshape(sizes)
    out = {}
    for i, j in itertools.combinations(range(len(sizes)), 2):
        axes = tuple(k for k in range(len(sizes)) if k not in (i, j))
        out[(f"x{i}", f"x{j}")] = joint.sum(axis=axes)
    return out


def test_exact_tables_are_left_unchanged():
    tables = _true_tables(np.random.default_rng(1), (3, 4, 2))
    out = consistent_pairs(tables, {k: 1e-4 for k in tables})
    for k in tables:
        np.testing.assert_allclose(out[k], tables[k], atol=1e-12)


def test_noisy_tables_become_distributions_with_closer_shared_marginals():
    rng = np.random.default_rng(2)
    true = _true_tables(rng, (3, 4, 5))
    noisy = {k: v + rng.normal(0.0, 0.02, v.shape) for k, v in true.items()}
    out = consistent_pairs(noisy, {k: 0.02**2 for k in noisy})

    def spread(tabs):  # disagreement of x0's one-way table between (x0, x1) and (x0, x2)
        return float(np.abs(tabs[("x0", "x1")].sum(axis=1) - tabs[("x0", "x2")].sum(axis=1)).sum())

    for v in out.values():
        assert v.min() >= 0.0 and abs(v.sum() - 1.0) < 1e-9
    assert spread(out) < spread(noisy)


def test_the_precise_table_sets_the_shared_marginal():
    rng = np.random.default_rng(3)
    true = _true_tables(rng, (3, 4, 5))
    noisy = dict(true)
    noisy[("x0", "x2")] = true[("x0", "x2")] + rng.normal(0.0, 0.03, (3, 5))
    var = {("x0", "x1"): 1e-12, ("x0", "x2"): 0.03**2, ("x1", "x2"): 1e-12}
    out = consistent_pairs(noisy, var, rounds=1)
    # x0's one-way table comes from the precise (x0, x1) table, not from the noisy one
    np.testing.assert_allclose(out[("x0", "x2")].sum(axis=1), true[("x0", "x1")].sum(axis=1), atol=0.02)


def test_rounds_must_be_positive():
    with pytest.raises(ValueError, match="rounds"):
        consistent_pairs({("a", "b"): np.full((2, 2), 0.25)}, {("a", "b"): 1e-3}, rounds=0)


@pytest.mark.skipif(not os.environ.get("LOPUB_DATA_DIR"), reason="LOPUB_DATA_DIR is not set")
def test_quick_run_scores_all_three_releases(tmp_path):
    out = tmp_path / "calm.json"
    done = subprocess.run([sys.executable, str(ROOT / "pipelines" / "bench_budgets.py"), "--calm-naive", "--quick",
                           "--out", str(out)], capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    row = json.loads(out.read_text())["rows"][0]
    for f in ("planned", "pairs_naive_consistency", "pairs_fitted_model"):
        assert 0.0 < row[f] < 1.0
    assert row["ratio_planned_to_naive"] == pytest.approx(row["planned"] / row["pairs_naive_consistency"])
