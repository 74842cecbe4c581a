"""Oracle reports files: version 4 (bits packed 8 a byte, integers in the smallest unsigned dtype
of their range) against versions 1-3 (a byte per bit, int64 codes, hashed rows and attributes).

For each reports file given (``lopub collect --protocol oue|grr|olh|... --out r.npz``), the
same reports are written in both layouts (version 3: the bool and int64 arrays as lopub wrote them
before; version 4: as ``lopub collect`` writes now) and, for comparison, through ``np.savez_compressed``;
prints the sizes and the in-process times of reading (``load_reports``) and of estimating
(``estimate_file_with_stderr``, what ``lopub estimate-freq`` runs), the layouts alternated so that
a shared machine's load changes hit both alike.  Figures: docs/BENCHMARKS.md, "Oracle reports
files: packed unary reports and narrow integers".

    python pipelines/bench_oracle_files.py /tmp/hA/r_oue.npz /tmp/hA/r_grr.npz --reps 15
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[1]))  # run as a script: the repository root
from lopub.cli.oracle_files import estimate_file_with_stderr, load_reports
from lopub.cli.oracle_npz import checksum, save_npz
from pipelines.harness.common import timed


def _layouts(src: str, folder: str) -> dict:
    """``{layout: path}``: the reports of ``src`` as version 3, version 4 and version 4 deflated."""
    meta, arrays = load_reports(src)
    paths = {x: os.path.join(folder, f"{x}.npz") for x in ("v3", "v4", "v4+deflate")}
    old = {k: v for k, v in meta.items() if k != "checksum"} | {"version": 3}
    old["checksum"] = checksum(old, arrays)
    np.savez(paths["v3"], meta=np.array(json.dumps(old)), **arrays)
    save_npz(paths["v4"], {**meta, "version": 4}, arrays)
    with np.load(paths["v4"]) as z:  # the same entries, deflated (read by load_reports as well)
        np.savez_compressed(paths["v4+deflate"], **{k: z[k] for k in z.files})
    return paths


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("reports", nargs="+", help="oracle reports files (lopub collect --out)")
    p.add_argument("--reps", type=int, default=15, help="timed repetitions of each step (median)")
    a = p.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for src in a.reports:
            paths = _layouts(src, folder)
            times: dict = {x: {"load": [], "estimate": []} for x in paths}
            for _ in range(a.reps):  # alternate the layouts
                for x, path in paths.items():
                    times[x]["load"].append(timed(lambda p=path: load_reports(p))[1])
                    times[x]["estimate"].append(timed(lambda p=path: estimate_file_with_stderr(p))[1])
            base = paths["v3"]
            for x, path in paths.items():
                row = {"file": os.path.basename(src), "layout": x, "bytes": os.path.getsize(path),
                       "smaller": round(os.path.getsize(base) / os.path.getsize(path), 2),
                       **{f"{k} ms": round(1e3 * statistics.median(v), 1) for k, v in times[x].items()}}
                rows.append(row)
                print("  ".join(f"{k}: {v}" for k, v in row.items()))
    return rows


if __name__ == "__main__":
    main()
