"""Scaling benchmark of ``lopub fit`` (issue 13): wall time and peak memory vs N and jobs.

Usage::

    LOPUB_DATA_DIR=/path/to/datasets python pipelines/bench_scale.py [--quick] \
        [--methods moment,em] [--sizes 125000,250000,500000,1000000] [--workdir /tmp/lopub-scale] \
        [--out bench_scale.json]

Data: UCI Adult (15 attributes) resampled with replacement to N records,
encoded with m = 128, h = 4, f = 0.5 (seeded), saved once per N in
``--workdir`` as a reports dataset folder and reused.  Every ``lopub fit``
(phi 0.4, default options) runs in a fresh subprocess; recorded per run: wall
seconds, the fit's own stage seconds and the peak RSS of the largest process
(``ru_maxrss`` of the children: the fit and its forked workers).  For every
method:

* time ~ N^a fitted by least squares on log-log over the sizes (2 jobs), on
  the wall time (with the process start) and on the fit's own total;
* at the largest N, 1 job vs 2 jobs: the speed-up ratio;
* before and after, the speed-up of two processes on pure CPU work
  (``machine_speedup_*``): about 2 on an idle machine; near 1 when other
  programs hold the cores, and then the jobs ratio means nothing.

``--quick`` runs N = 10k, 20k, 40k (a minute or two): a smoke test of the
script and of the exponents' order, not the issue's targets (the full run at
1M takes tens of minutes and needs a quiet machine).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

M, H, F, PHI = 128, 4, 0.5, 0.4
FULL_SIZES = (125_000, 250_000, 500_000, 1_000_000)
QUICK_SIZES = (10_000, 20_000, 40_000)


def make_reports(n: int, workdir: Path, seed: int = 0) -> Path:
    """Adult resampled to ``n`` records, encoded, saved as a dataset folder (reused if present)."""
    path = workdir / f"adult_{n}"
    if path.exists():  # made by an earlier run
        return path
    from lopub.client import encode
    from lopub.datasets import load_adult
    from lopub.reports.spec import CollectionSpec

    data = load_adult()
    rows = np.random.default_rng(seed).integers(0, data.n, size=n)
    spec = CollectionSpec.from_domain(data.domain, f=F, m=M, h=H)
    encode(data.subset(rows), spec, rng=seed + 1).save(path)
    return path


_WRAP = ("import resource, sys\n"
         "from lopub.cli import main\n"
         "rc = main(sys.argv[1:])\n"
         "own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
         "kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
         "sys.stderr.write(f'\\nPEAK_KB {own} {kids}\\n')\n"
         "sys.exit(rc)\n")


def monitor(cmd: list[str], *, timeout: float | None = None, every: float = 0.2) -> dict:
    """Run ``cmd``, sampling its process tree every ``every`` s (psutil, from the dask extra).

    Returns ``done`` (CompletedProcess; None on timeout: the tree is killed),
    ``wall`` seconds, ``timed_out``, ``root`` (the pid of ``cmd``), ``rss``
    (peak RSS in bytes per pid) and ``pss_mb`` (peak proportional set size of
    the whole tree, MiB: pages shared between processes counted once; None
    without psutil).
    """
    try:
        import psutil
    except ImportError:  # psutil comes with the dask extra; without it nothing is sampled
        psutil = None
    import threading

    peaks: dict[int, int] = {}
    pss = [0.0]
    stop = threading.Event()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def sample() -> None:
        try:
            root = psutil.Process(proc.pid)
            while not stop.is_set():
                total = 0
                for p in [root] + root.children(recursive=True):
                    try:
                        info = p.memory_full_info()
                    except psutil.Error:  # ended between listing and reading
                        continue
                    peaks[p.pid] = max(peaks.get(p.pid, 0), info.rss)
                    total += info.pss
                pss[0] = max(pss[0], total / 2**20)
                stop.wait(every)
        except psutil.Error:  # the command has ended
            return

    th = threading.Thread(target=sample, daemon=True) if psutil is not None else None
    if th is not None:
        th.start()
    try:
        out, err = proc.communicate(timeout=timeout)
        done, timed_out = subprocess.CompletedProcess(cmd, proc.returncode, out, err), False
    except subprocess.TimeoutExpired:
        if psutil is not None:
            for p in psutil.Process(proc.pid).children(recursive=True):
                p.kill()
        proc.kill()
        proc.communicate()
        done, timed_out = None, True
    wall = time.perf_counter() - t0
    stop.set()
    if th is not None:
        th.join()
    return {"done": done, "wall": wall, "timed_out": timed_out, "root": proc.pid, "rss": peaks,
            "pss_mb": pss[0] if psutil is not None else None}


def run_fit(reports: Path, method: str, jobs: int, out: Path, extra: list[str] | None = None) -> dict:
    """One ``lopub fit`` in a fresh process: wall seconds, stage seconds, peak memory (MiB).

    ``peak_rss_mb`` is the largest process (the fit or one of its workers);
    ``peak_rss_sum_mb`` adds the fit's peak and the largest worker's, an upper
    bound on the total (pages the workers share with the fit count twice);
    ``peak_pss_mb`` is the sampled peak (:func:`monitor`) of the whole process tree's
    proportional set size (shared pages counted once), the memory the fit
    really holds.
    """
    cmd = [sys.executable, "-c", _WRAP, "fit", str(reports), "--method", method, "--phi", str(PHI),
           "--jobs", str(jobs), "--out", str(out), "--json", "--quiet"] + list(extra or [])
    load = os.getloadavg()[0]
    mon = monitor(cmd)
    done, wall, pss = mon["done"], mon["wall"], mon["pss_mb"]
    if done.returncode != 0:
        raise RuntimeError(f"lopub fit {reports} --method {method} --jobs {jobs} failed:\n{done.stderr}")
    own, kids = (int(x) for x in done.stderr.rsplit("PEAK_KB", 1)[1].split())
    rep = json.loads(done.stdout)
    return {"method": method, "jobs": jobs, "n": rep["n"], "wall_seconds": round(wall, 2),
            "seconds": rep["seconds"], "edges": rep["edges"],
            "peak_rss_mb": round(max(own, kids) / 1024, 1),
            "peak_rss_sum_mb": round((own + kids) / 1024, 1),
            "peak_pss_mb": None if pss is None else round(pss, 1),
            "load_before": round(load, 2)}


def _burn(n: int) -> float:
    t0 = time.perf_counter()
    x = 0
    for i in range(n):  # pure-Python CPU work, no memory traffic
        x += i * i
    return time.perf_counter() - t0


def machine_speedup(n: int = 5_000_000) -> float:
    """Speed-up of two processes over one on pure CPU work: what 2 jobs can gain right now.

    About 2 on an idle 2-core machine; about 1 when other programs keep the
    cores busy (then no job count can help and the 1 vs 2 jobs ratio below
    means nothing).
    """
    import multiprocessing

    t0 = time.perf_counter()
    _burn(n)
    _burn(n)
    serial = time.perf_counter() - t0
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_burn, [1000, 1000])  # start-up outside the timing
        t0 = time.perf_counter()
        pool.map(_burn, [n, n])
        both = time.perf_counter() - t0
    return round(serial / both, 2)


def exponent(ns: list[int], secs: list[float]) -> float | None:
    """Least-squares slope of log(seconds) on log(N)."""
    if len(ns) < 2:
        return None
    return float(np.polyfit(np.log(ns), np.log(secs), 1)[0])


def bench(methods: list[str], sizes: list[int], workdir: Path) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    paths = {n: make_reports(n, workdir) for n in sizes}
    runs, summary = [], {"machine_speedup_before": machine_speedup()}
    for method in methods:
        by_n, fit_n = {}, {}
        for n in sizes:
            r = run_fit(paths[n], method, 2, workdir / f"model_{method}_{n}.json")
            runs.append(r)
            by_n[n], fit_n[n] = r["wall_seconds"], r["seconds"]["total"]
            print(json.dumps(r), flush=True)
        one = run_fit(paths[sizes[-1]], method, 1, workdir / f"model_{method}_1job.json")
        runs.append(one)
        print(json.dumps(one), flush=True)
        summary[method] = {"time_exponent_a": exponent(list(by_n), list(by_n.values())),
                           "fit_time_exponent_a": exponent(list(fit_n), list(fit_n.values())),
                           "speedup_2_jobs": round(one["wall_seconds"] / by_n[sizes[-1]], 2),
                           "largest_n": sizes[-1]}
    summary["machine_speedup_after"] = machine_speedup()
    return {"m": M, "h": H, "f": F, "phi": PHI, "cores": os.cpu_count(), "runs": runs,
            "summary": summary}


def speedup(methods: list[str], n: int, workdir: Path, repeats: int) -> dict:
    """1 job vs 2 jobs at ``n``, alternating (1, 2, 1, 2, ...) so load changes hit both alike.

    Reports per method the median over the repeats of the ratio of the
    estimation stage's seconds (the pairwise stage, what ``--jobs`` parallelizes)
    and of the wall seconds, with the machine's own two-process speed-up
    before and after.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    path = make_reports(n, workdir)
    runs, summary = [], {"machine_speedup_before": machine_speedup()}
    for method in methods:
        est, wall = [], []
        for _ in range(repeats):
            one = run_fit(path, method, 1, workdir / f"model_{method}_1job.json")
            two = run_fit(path, method, 2, workdir / f"model_{method}_2jobs.json")
            for r in (one, two):
                runs.append(r)
                print(json.dumps(r), flush=True)
            est.append(one["seconds"]["estimation"] / two["seconds"]["estimation"])
            wall.append(one["wall_seconds"] / two["wall_seconds"])
        summary[method] = {"n": n, "repeats": repeats,
                           "estimation_speedup": [round(x, 2) for x in est],
                           "estimation_speedup_median": round(float(np.median(est)), 2),
                           "wall_speedup_median": round(float(np.median(wall)), 2)}
    summary["machine_speedup_after"] = machine_speedup()
    return {"m": M, "h": H, "f": F, "phi": PHI, "cores": os.cpu_count(), "runs": runs,
            "summary": summary}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N = 10k, 20k, 40k")
    ap.add_argument("--methods", default="moment,em")
    ap.add_argument("--sizes", help="comma-separated N (default: 125k..1M, or the quick ones)")
    ap.add_argument("--workdir", default="/tmp/lopub-scale", help="reports and models go here")
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument("--speedup-repeats", type=int, default=0, metavar="R",
                    help="only the 1-vs-2-jobs speed-up: R alternating pairs of runs at the largest size")
    a = ap.parse_args(argv)
    sizes = ([int(x) for x in a.sizes.split(",")] if a.sizes
             else list(QUICK_SIZES if a.quick else FULL_SIZES))
    if a.speedup_repeats < 0:
        ap.error(f"--speedup-repeats must be >= 0, got {a.speedup_repeats}")
    if a.speedup_repeats:
        res = speedup(a.methods.split(","), max(sizes), Path(a.workdir), a.speedup_repeats)
    else:
        res = bench(a.methods.split(","), sorted(sizes), Path(a.workdir))
    print(json.dumps(res["summary"], indent=2))
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
