"""Defects the generated cases of issue 25 found (pipelines/fault_harness.py --fuzz)."""
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
