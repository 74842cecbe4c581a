"""pipelines/bench_scale.py runs end to end on a tiny size (the script, not its timings)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
needs_adult = pytest.mark.skipif(not os.environ.get("LOPUB_DATA_DIR"),
                                 reason="LOPUB_DATA_DIR (UCI Adult) is not set")


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(ROOT / "pipelines" / "bench_scale.py"), "--methods", "moment",
           "--sizes", "3000", "--workdir", str(tmp_path / "work"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)


@needs_adult
def test_speedup_mode_records_both_job_counts_and_memory(tmp_path):
    out = tmp_path / "speedup.json"
    done = _run(tmp_path, "--speedup-repeats", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    res = json.loads(out.read_text())
    assert sorted(r["jobs"] for r in res["runs"]) == [1, 2]
    for r in res["runs"]:
        assert r["n"] == 3000 and r["wall_seconds"] > 0
        assert r["peak_pss_mb"] is None or 0 < r["peak_pss_mb"] <= r["peak_rss_sum_mb"] * 1.05
    summary = res["summary"]["moment"]
    one, two = (next(r for r in res["runs"] if r["jobs"] == j) for j in (1, 2))
    assert summary["estimation_speedup"] == [
        round(one["seconds"]["estimation"] / two["seconds"]["estimation"], 2)]


def test_negative_repeats_is_refused(tmp_path):
    done = _run(tmp_path, "--speedup-repeats", "-1")
    assert done.returncode == 2 and "--speedup-repeats" in done.stderr
