"""Start-up cost of the ``lopub`` command line (issue 13, fast start): for each of COMMANDS, the median over
``--runs`` fresh ``python -m lopub`` processes (this checkout first on the path) of the child's CPU seconds
(user + system) and peak RSS; exits 1 when a median is above ``--limit`` CPU seconds (a release gate).
Figures: docs/BENCHMARKS.md, "Startup (issue 13, fast start)".

    python pipelines/bench_startup.py [--runs 5] [--limit 0.3] [--json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = (["--help"], ["--version"], ["privacy", "--f", "0.5", "--h", "4", "--d", "15"])


def measure(argv: list[str]) -> tuple[float, float]:
    """(CPU seconds, peak RSS in MB) of one ``python -m lopub ARGV`` run."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen([sys.executable, "-m", "lopub", *argv], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)  # the child's own resource usage
    proc.returncode = os.waitstatus_to_exitcode(status)
    with proc.stderr:
        if proc.returncode != 0:
            raise RuntimeError(f"lopub {' '.join(argv)} exited {proc.returncode}: {proc.stderr.read().decode()}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # ru_maxrss: KiB on Linux


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5, help="fresh processes per command (median; default 5)")
    p.add_argument("--limit", type=float, default=0.3, help="largest allowed median CPU seconds (default 0.3)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    if a.runs < 1:
        p.error(f"--runs ({a.runs}) must be >= 1")
    rows = []
    for cmd in COMMANDS:
        cpu, rss = zip(*(measure(cmd) for _ in range(a.runs)))
        rows.append({"command": "lopub " + " ".join(cmd), "cpu_s": statistics.median(cpu),
                     "peak_rss_mb": statistics.median(rss)})
    if a.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{'command':45s} {'CPU s':>7s} {'peak RSS MB':>12s}   (median of {a.runs})")
        for r in rows:
            print(f"{r['command']:45s} {r['cpu_s']:7.3f} {r['peak_rss_mb']:12.1f}")
    slow = [r["command"] for r in rows if r["cpu_s"] > a.limit]
    if slow:
        print(f"above {a.limit} CPU s: {', '.join(slow)}", file=sys.stderr)
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
