"""Issue 25, item 6: a fast subset of the file-fuzzing and kill -9 harness
(:mod:`tests.harden.bad_inputs`; the full runs are ``python -m tests.harden.bad_inputs --fuzz 2000
--kill 100``), and the atomicity of merge-reports and encode --append."""
import contextlib
import io
import os
import signal
import subprocess
import sys
import time

import pytest

from lopub.cli import main
from lopub.reports.dataset import ReportsDataset
from lopub.reports.folder import build_folder, locked, remove_stale_stages
from tests.harden.bad_inputs import _leftovers, fuzz, kill


def test_generated_files_and_command_lines_give_clear_errors_or_correct_results(tmp_path):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        counts, failures = fuzz(tmp_path, 40)
    assert sum(sum(c.values()) for c in counts.values()) == 40
    assert not failures, failures
    assert set().union(*counts.values()) <= {"clear", "correct"}


@pytest.mark.parametrize("writer", ["merge-reports", "encode-append", "fit"])
def test_kill_9_leaves_nothing_half_written(tmp_path, writer):
    """A few kills of three writers through the fork server (the full run kills each writer 100 times)."""
    with contextlib.redirect_stdout(io.StringIO()):
        counts, failures = kill(tmp_path, 3, seed=3, only=[writer])
    assert not failures, failures
    assert counts[writer]["absent"] + counts[writer]["complete"] + counts[writer]["finished"] == 3


def test_merge_killed_mid_way_leaves_no_dataset_and_reruns(files, tmp_path):
    """A merge killed before its rename leaves only its staging folder, removed by the next merge."""
    out = tmp_path / "merged"
    stage = tmp_path / f".merged.{2**22 + 12345}.abcd1234.new"  # a PID no process has
    stage.mkdir()
    (stage / "part-00000.parquet").write_bytes(b"half")
    assert not out.exists()
    assert main(["merge-reports", str(out), files["r.parquet"], "--quiet"]) == 0
    assert ReportsDataset.open(out).n > 0 and not stage.exists()
    assert _leftovers(tmp_path) == []


def test_stale_stage_of_a_live_process_is_kept(tmp_path):
    live = tmp_path / f".x.{os.getpid()}.abcd1234.new"
    live.mkdir()
    assert remove_stale_stages(tmp_path / "x") == [] and live.exists()


def test_failing_build_leaves_nothing(files, tmp_path):
    spec = ReportsDataset.open(files["r.parquet"]).spec

    def fail(stage):
        (stage / "part-00000.parquet").write_bytes(b"x")
        raise ValueError("disk on fire")

    with pytest.raises(ValueError, match="disk on fire"):
        build_folder(tmp_path / "ds", spec, fail)
    assert list(tmp_path.iterdir()) == []


def test_dataset_lock_file_removed_and_a_killed_holder_does_not_block(files, tmp_path):
    ds = tmp_path / "ds"
    assert main(["merge-reports", str(ds), files["r.parquet"], "--quiet"]) == 0
    with locked(ds):
        assert (ds / ".lopub_dataset.lock").read_text().strip() == str(os.getpid())
    assert not (ds / ".lopub_dataset.lock").exists()
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from lopub.reports.folder import "
                               f"locked\nwith locked({str(ds)!r}):\n print('in', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "in"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    t0 = time.monotonic()
    assert main(["encode", files["d.csv"], "--domain", files["dom.json"], "--f", "0.3", "--append",
                 "--out", str(ds), "--quiet"]) == 0
    assert time.monotonic() - t0 < 30  # the dead holder's flock is gone: no wait
    assert ReportsDataset.open(ds).n == 2 * ReportsDataset.open(files["r.parquet"]).n
    assert _leftovers(tmp_path) == []
