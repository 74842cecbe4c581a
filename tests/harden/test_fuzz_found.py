"""Defects the generated cases of issue 25 found (tests/harden/bad_inputs.py --fuzz)."""
import math

import numpy as np

from lopub.collect.compare import compare


def test_compare_with_too_few_records_names_the_protocol_and_n():
    """2 records and 3 attributes under a sampling protocol leave an attribute without a report:
    the row says so (it was an exit-2 'NaN ... cannot post-process' naming nothing)."""
    codes = np.zeros((2, 3), dtype=np.int64)
    rows = compare(codes, [2, 2, 2], [1.0], ["smp-olh", "spl-grr"], rng=1)
    smp = next(r for r in rows if r["protocol"] == "smp-olh")
    assert smp["mse_avg"] is None and "2 records" in smp["error"] and "--n" in smp["error"]
    spl = next(r for r in rows if r["protocol"] == "spl-grr")
    assert spl["error"] is None and np.isfinite(spl["mse_avg"])


def test_demo_killed_leaves_no_half_written_folder(tmp_path):
    """kill -9 during demo left a folder without summary.json (found by the kill harness):
    now the demo is staged and renamed, so the folder is absent until complete."""
    from tests.harden.bad_inputs import _leftovers, fork_run

    out = tmp_path / "demo"
    argv = ["demo", "--n", "300", "--out", str(out)]
    assert fork_run(argv, delay=0.3) is None  # killed mid-way (a full run takes > 0.5 s)
    assert not out.exists()
    assert fork_run(argv) == 0
    assert (out / "summary.json").exists() and _leftovers(tmp_path) == []


def test_csv_header_cell_over_the_csv_field_limit_is_a_clear_error(tmp_path, capsys):
    """A CSV of 200,000 '[' (a header cell over csv's 131,072-character limit) was a csv.Error
    traceback in schema and report --synthetic."""
    from lopub.cli import main

    deep = tmp_path / "deep.csv"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    assert main(["schema", str(deep), "--out", str(tmp_path / "d.json"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "deep.csv" in err[0] and "header row" in err[0]
    assert not (tmp_path / "d.json").exists()


def test_append_removes_part_temporaries_and_locks_of_killed_appenders(files, tmp_path):
    """kill -9 of encode --append left ``.part-N.parquet.lock`` and the temporaries of the
    part's own temporary file; no later append removed them (found by the kill harness)."""
    from lopub.cli import main
    from lopub.reports.dataset import ReportsDataset
    from tests.harden.bad_inputs import _leftovers

    ds = tmp_path / "ds"
    argv = ["encode", files["d.csv"], "--domain", files["dom.json"], "--f", "0.3", "--append",
            "--out", str(ds), "--quiet"]
    assert main(argv) == 0
    stale = [".part-00015.parquet.lock", "..part-00005.parquet.gsom2cfj.tmp.lock",
             "..part-00005.parquet.gsom2cfj.tmp.w6liiq5g.tmp", ".part-00001.parquet.abcd1234.tmp"]
    for name in stale:
        (ds / name).write_bytes(b"left by a killed appender")
    assert len(_leftovers(tmp_path)) == 4
    assert main(argv) == 0
    assert _leftovers(tmp_path) == []
    assert ReportsDataset.open(ds).n == 2 * ReportsDataset.open(files["r.parquet"]).n


def test_lock_dies_with_its_process_not_with_its_pool_workers(tmp_path):
    """kill -9 of fit (the main process only) left its fork-pool workers holding the inherited
    output lock: an immediate re-run failed "being written by another process" (found by the
    kill harness: 1 re-run in 150 kills).  Workers now close the inherited lock files."""
    import os
    import signal
    import time

    from lopub.estimate.parallel import _pool
    from lopub.io import output_lock

    target = tmp_path / "m.json"
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the writer: takes the lock, starts a worker, waits to be killed
        try:
            with output_lock(target):
                pool = _pool(1)
                pool.apply(int)
                os.write(w, f"{pool._pool[0].pid}\n".encode())
                time.sleep(60)
        finally:
            os._exit(1)
    worker = int(os.read(r, 100).decode())
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    try:
        os.kill(worker, 0)  # the worker outlives its parent
        with output_lock(target):  # and holds no lock
            pass
    finally:
        os.kill(worker, signal.SIGKILL)


def test_a_subnormal_false_positive_rate_gives_a_bloom_size_not_an_overflow():
    # found by test_cli_numeric_options (`lopub encode --fp-rate 2.2250738585e-313`): 1 / fp_rate was inf
    from lopub.reports.spec import optimal_bloom

    m, h = optimal_bloom(3, 2.2250738585e-313)
    assert (m, h) == (math.ceil(-math.log(2.2250738585e-313) / math.log(2) ** 2 * 3),
                      round(-math.log(2.2250738585e-313) / math.log(2)))
    assert optimal_bloom(3, 0.01) == (math.ceil(math.log(100) / math.log(2) ** 2 * 3), round(math.log(100) / math.log(2)))
