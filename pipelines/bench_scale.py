"""Scaling of ``lopub fit`` (issue 13): time and peak memory against N, jobs, d, Dask and 10M users.

Sections (``--sections``; results and commands: docs/BENCHMARKS.md, "Scaling"):

``fit`` (default)  Adult resampled to N records (m = 128, h = 4, f = 0.5), ``lopub fit --jobs 2`` per
                   method and N; time ~ N^a; 1 vs 2 jobs at the largest N (``--speedup-repeats R``:
                   only that, R alternating pairs); the machine's own two-process speed-up.
``wide``           50,000 records x d (blocks of independently resampled Adult rows); time ~ d^b; a
                   wide EM fit beyond ``--em-timeout`` is timed per pair and extrapolated.
``dask``           10M x 15 encoded in batches, ``lopub fit --scheduler local``; EM on the first 2M.
``marginals``      10M users x 50 attributes, the planner's marginal plan, ``lopub fit`` on the .npz.

Every fit runs in a fresh process, its process tree's memory sampled (psutil).  Sections other than
``fit`` merge their results into ``--out`` (default docs/bench_scale_more.json; ``--table`` prints it).
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
DOCS = Path(__file__).resolve().parents[1] / "docs"
FULL = {"wide_n": 50_000, "wide_ds": (15, 30, 60, 100), "dask_n": 10_000_000, "dask_em_n": 2_000_000,
        "batch": 1_000_000, "marg_n": 10_000_000, "marg_d": 50, "epsilon": 8.0, "dask_em_extra": (), "dask_d": 15}
QUICK = {"wide_n": 3_000, "wide_ds": (15, 30), "dask_n": 40_000, "dask_em_n": 20_000,
         "batch": 10_000, "marg_n": 40_000, "marg_d": 20, "epsilon": 8.0,
         "dask_em_extra": ("--tol", "1e-2"), "dask_d": 6}  # EM on Dask pays a round trip per iteration


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


def run_monitored(args: list[str], *, timeout: float | None = None, every: float = 0.2) -> dict:
    """``lopub ARGS --json --quiet`` in a fresh process, its process tree sampled every ``every`` s (psutil,
    from the dask extra; without it nothing is sampled).

    Returns wall seconds, ``timed_out`` (the tree is then killed and the report is None), the report
    (parsed ``--json``), the client's peak RSS, each child's peak RSS (Dask workers or forked workers),
    the peak proportional set size of the whole tree (MiB, pages shared between processes counted
    once), ``ru_maxrss`` and the load average before and after.
    """
    try:
        import psutil
    except ImportError:
        psutil = None
    import threading

    load0 = os.getloadavg()
    cmd = [sys.executable, "-c", _WRAP] + args + ["--json", "--quiet"]
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
        timed_out = False
    except subprocess.TimeoutExpired:
        if psutil is not None:
            for p in psutil.Process(proc.pid).children(recursive=True):
                p.kill()
        proc.kill()
        proc.communicate()
        timed_out = True
    wall = time.perf_counter() - t0
    stop.set()
    if th is not None:
        th.join()
    res = {"args": args, "wall_seconds": round(wall, 2), "timed_out": timed_out,
           "load_before": [round(x, 2) for x in load0],
           "load_after": [round(x, 2) for x in os.getloadavg()],
           "client_peak_rss_mb": round(peaks.pop(proc.pid, 0) / 2**20, 1),
           "children_peak_rss_mb": sorted((round(v / 2**20, 1) for v in peaks.values()), reverse=True),
           "peak_pss_mb": None if psutil is None else round(pss[0], 1)}
    if timed_out:
        return res | {"report": None}
    if proc.returncode != 0:
        raise RuntimeError(f"lopub {' '.join(args)} failed:\n{err[-3000:]}")
    own, kids = (int(x) for x in err.rsplit("PEAK_KB", 1)[1].split())
    rep = json.loads(out)
    return res | {"ru_maxrss_mb": [round(own / 1024, 1), round(kids / 1024, 1)],
                  "report": {k: rep.get(k) for k in ("n", "method", "seconds", "edges", "estimator")}}


def fit_args(reports: Path, method: str | None, out: Path, *extra: str) -> list[str]:
    """``lopub fit`` arguments; ``method`` None for marginal-sampling reports (their oracles measure)."""
    how = [] if method is None else ["--method", method]
    return ["fit", str(reports), *how, "--phi", str(PHI), "--out", str(out), *extra]


def run_fit(reports: Path, method: str, jobs: int, out: Path) -> dict:
    """One ``lopub fit``: wall and stage seconds, peak memory (MiB) of the largest process
    (``peak_rss_mb``), of the fit plus its largest worker (``peak_rss_sum_mb``, an upper bound) and the
    sampled proportional set size of the whole tree (``peak_pss_mb``, shared pages counted once)."""
    r = run_monitored(fit_args(reports, method, out, "--jobs", str(jobs)))
    own, kids = r["ru_maxrss_mb"]
    rep = r["report"]
    return {"method": method, "jobs": jobs, "n": rep["n"], "wall_seconds": r["wall_seconds"],
            "seconds": rep["seconds"], "edges": rep["edges"], "peak_rss_mb": max(own, kids),
            "peak_rss_sum_mb": round(own + kids, 1), "peak_pss_mb": r["peak_pss_mb"],
            "load_before": r["load_before"][0]}


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


def section_fit(methods: list[str], sizes: list[int], workdir: Path, repeats: int = 0) -> dict:
    """Per method: ``lopub fit --jobs 2`` at each N (time ~ N^a) and ``--jobs 1`` at the largest.

    ``repeats`` R > 0: only 1 job vs 2 jobs at the largest N, R alternating pairs (1, 2, 1, 2, ...)
    so that load changes hit both alike; per method the median over the repeats of the ratio of the
    estimation stage's seconds (the pairwise stage, what ``--jobs`` parallelizes) and of the wall
    seconds.  The machine's own two-process speed-up is measured before and after.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    sizes = [max(sizes)] if repeats else sorted(sizes)
    paths = {n: make_reports(n, workdir) for n in sizes}
    runs, summary = [], {"machine_speedup_before": machine_speedup()}

    def fit(n: int, method: str, jobs: int, tag: str) -> dict:
        r = run_fit(paths[n], method, jobs, workdir / f"model_{method}_{tag}.json")
        runs.append(r)
        print(json.dumps(r), flush=True)
        return r

    for method in methods:
        if repeats:
            pairs = [(fit(sizes[-1], method, 1, "1job"), fit(sizes[-1], method, 2, "2jobs")) for _ in range(repeats)]
            est = [one["seconds"]["estimation"] / two["seconds"]["estimation"] for one, two in pairs]
            summary[method] = {"n": sizes[-1], "repeats": repeats, "estimation_speedup": [round(x, 2) for x in est],
                               "estimation_speedup_median": round(float(np.median(est)), 2),
                               "wall_speedup_median": round(float(np.median(
                                   [one["wall_seconds"] / two["wall_seconds"] for one, two in pairs])), 2)}
            continue
        by = {n: fit(n, method, 2, str(n)) for n in sizes}
        one = fit(sizes[-1], method, 1, "1job")
        ns = list(by)
        summary[method] = {"time_exponent_a": exponent(ns, [r["wall_seconds"] for r in by.values()]),
                           "fit_time_exponent_a": exponent(ns, [r["seconds"]["total"] for r in by.values()]),
                           "speedup_2_jobs": round(one["wall_seconds"] / by[sizes[-1]]["wall_seconds"], 2),
                           "largest_n": sizes[-1]}
    summary["machine_speedup_after"] = machine_speedup()
    return {"m": M, "h": H, "f": F, "phi": PHI, "cores": os.cpu_count(), "runs": runs, "summary": summary}


# wide, dask and marginals ----------------------------------------------------------------------
def wide_dataset(n: int, d: int, *, seed: int):
    """``n`` records x ``d`` attributes: independent resamplings of Adult, one per block of 15."""
    from lopub.data.dataset import Dataset
    from lopub.datasets import load_adult
    from lopub.data.domain import Attribute, Domain

    adult = load_adult()
    rng = np.random.default_rng(seed)
    blocks, attrs = [], []
    for b in range(-(-d // len(adult.domain))):
        rows = rng.integers(0, adult.n, size=n)
        blocks.append(adult.codes[rows])
        attrs += [Attribute(f"{a.name}_b{b}", a.categories) for a in adult.domain.attributes]
    return Dataset(np.concatenate(blocks, axis=1)[:, :d], Domain(tuple(attrs[:d])))


def build_bloom(folder: Path, n: int, d: int, batch: int, *, seed: int) -> Path:
    """Bloom reports (m, h, f as bench_scale) of ``n`` x ``d`` wide records, appended by batches."""
    from lopub.client import encode
    from lopub.reports.dataset import ReportsDataset
    from lopub.reports.spec import CollectionSpec

    if (folder / "DONE").exists():
        return folder
    if folder.exists():
        import shutil
        shutil.rmtree(folder)
    ds, spec = None, None
    for i, a in enumerate(range(0, n, batch)):
        data = wide_dataset(min(batch, n - a), d, seed=seed + 1000 * i)
        if ds is None:
            spec = CollectionSpec.from_domain(data.domain, f=F, m=M, h=H)
            ds = ReportsDataset.create(folder, spec)
        ds.append(encode(data, spec, rng=seed + 1000 * i + 1))
    (folder / "DONE").write_text(str(n))
    return folder


def subset_folder(src: Path, dst: Path, parts: int) -> Path:
    """A dataset of the first ``parts`` parts of ``src`` (a prefix of its users)."""
    from lopub.reports.dataset import ReportsDataset, merge_datasets

    if not (dst / "DONE").exists():
        if dst.exists():
            import shutil
            shutil.rmtree(dst)
        merge_datasets(dst, *ReportsDataset.open(src).part_paths()[:parts])
        (dst / "DONE").write_text("")
    return dst


def build_marginal_reports(path: Path, n: int, d: int, epsilon: float, batch: int, *, seed: int) -> dict:
    """Simulate ``n`` users under the planner's marginal plan, ``batch`` users at a time; save .npz."""
    from lopub.collect import collect_records, plan

    info_path = path.with_suffix(".json")
    if path.exists() and info_path.exists():
        return json.loads(info_path.read_text())
    t0 = time.perf_counter()
    first = wide_dataset(min(batch, n), d, seed=seed)
    report = plan(first.domain, n, epsilon)
    t_plan = time.perf_counter() - t0
    reports, t1 = None, time.perf_counter()
    for i, a in enumerate(range(0, n, batch)):
        data = first if i == 0 else wide_dataset(min(batch, n - a), d, seed=seed + 1000 * i)
        part = collect_records(data, report.marginal_plan, rng=seed + 1000 * i + 1)
        reports = part if reports is None else reports.merge(part)
    t_sim = time.perf_counter() - t1
    t2 = time.perf_counter()
    reports.save(path)
    mplan = report.marginal_plan
    info = {"n": n, "d": d, "epsilon": epsilon, "recommended": report.recommended,
            "plan_seconds": round(t_plan, 2), "simulate_seconds": round(t_sim, 2),
            "save_seconds": round(time.perf_counter() - t2, 2), "subsets": mplan.n_subsets,
            "subset_sizes": sorted({len(s) for s in mplan.subsets}),
            "oracles": sorted({type(mplan.oracle(i)).__name__ for i in range(mplan.n_subsets)}),
            "file_mb": round(path.stat().st_size / 2**20, 1)}
    info_path.write_text(json.dumps(info))
    return info


def per_pair_em(reports: Path, pairs: int, *, seed: int = 0) -> dict:
    """Serial EM seconds per pair on ``pairs`` random pairs (one-way likelihoods built first)."""
    from lopub.estimate import Estimator
    from lopub.reports.bloom import Reports

    rep = Reports.load(reports)
    est = Estimator(rep, method="em", jobs=1)
    attrs = rep.spec.domain.attrs
    t0 = time.perf_counter()
    for a in attrs:
        est.marginal((a,))
    t_one = time.perf_counter() - t0
    rng = np.random.default_rng(seed)
    chosen = {tuple(sorted(rng.choice(len(attrs), 2, replace=False))) for _ in range(pairs)}
    t1 = time.perf_counter()
    for i, j in chosen:
        est.marginal((attrs[i], attrs[j]))
    per = (time.perf_counter() - t1) / len(chosen)
    total_pairs = len(attrs) * (len(attrs) - 1) // 2
    return {"pairs_timed": len(chosen), "one_way_seconds": round(t_one, 2),
            "seconds_per_pair_serial": round(per, 4), "pairs_total": total_pairs,
            "pairwise_stage_serial_seconds_extrapolated": round(t_one + per * total_pairs, 1)}


def section_wide(cfg: dict, work: Path, methods: list[str], timeout: float, pair_sample: int,
                 build_only: bool) -> dict:
    n = cfg["wide_n"]
    paths = {d: build_bloom(work / f"wide_{n}_{d}", n, d, n, seed=d) for d in cfg["wide_ds"]}
    if build_only:
        return {}
    runs = []
    for method in methods:
        for d in cfg["wide_ds"]:
            r = run_monitored(fit_args(paths[d], method, work / f"model_wide_{method}_{d}.json", "--jobs", "2"),
                              timeout=timeout) | {"section": "wide", "method": method, "d": d}
            if r["timed_out"]:
                r["per_pair"] = per_pair_em(paths[d], pair_sample)
            runs.append(r)
            print(json.dumps(r), flush=True)
    return {"n": n, "runs": runs}


def merge_wide(old: dict, new: dict) -> dict:
    """Runs of both (a new run replaces the old one of its method and d); exponents b over all."""
    runs = {(r["method"], r["d"]): r for r in old.get("runs", []) + new["runs"]}
    out = {"n": new["n"], "runs": sorted(runs.values(), key=lambda r: (r["method"], r["d"])), "exponent_b": {}}
    for method in sorted({m for m, _ in runs}):
        done = [r for r in out["runs"] if r["method"] == method and not r["timed_out"]]
        ds = [r["d"] for r in done]
        out["exponent_b"][method] = {
            "b": exponent(ds, [r["wall_seconds"] for r in done]), "over_d": ds,
            "b_fit_total": exponent(ds, [r["report"]["seconds"]["total"] for r in done]),
            "b_estimation": exponent(ds, [r["report"]["seconds"]["estimation"] for r in done])}
    return out


def _peaks(r: dict) -> dict:
    kids = r["children_peak_rss_mb"]
    return {"client_peak_rss_mb": r["client_peak_rss_mb"], "worker_peak_rss_mb": kids[:2]}


def section_dask(cfg: dict, work: Path, methods: list[str], build_only: bool) -> dict:
    n, n_em = cfg["dask_n"], cfg["dask_em_n"]
    d = cfg["dask_d"]
    full = build_bloom(work / f"adult{d}_{n}", n, d, cfg["batch"], seed=7)
    sub = subset_folder(full, work / f"adult{d}_{n_em}", n_em // cfg["batch"])
    if build_only:
        return {}
    jobs = {"moment": (full, n, ()), "em": (sub, n_em, cfg["dask_em_extra"])}
    runs = []
    for method in methods:
        path, m, extra = jobs[method]
        r = run_monitored(fit_args(path, method, work / f"model_dask_{method}.json", "--scheduler", "local",
                                   *extra)) | {"section": "dask", "method": method, "n": m}
        r |= _peaks(r)
        runs.append(r)
        print(json.dumps(r), flush=True)
    return {"n": n, "runs": runs}


def merge_dask(old: dict, new: dict) -> dict:
    """Runs of both (a new run replaces the old one of its method); EM extrapolated linearly to n."""
    runs = {r["method"]: r for r in old.get("runs", []) + new["runs"]}
    out = {"n": new["n"], "runs": [runs[m] for m in sorted(runs)]}
    if "em" in runs:
        out["em_extrapolated_seconds"] = round(runs["em"]["wall_seconds"] * new["n"] / runs["em"]["n"], 1)
    return out


def section_marginals(cfg: dict, work: Path, build_only: bool) -> dict:
    n, d = cfg["marg_n"], cfg["marg_d"]
    path = work / f"marg_{n}_{d}.npz"
    info = build_marginal_reports(path, n, d, cfg["epsilon"], cfg["batch"], seed=11)
    if build_only:
        return {}
    r = run_monitored(fit_args(path, None, work / "model_marg.json")) | {"section": "marginals"}
    out = {"collection": info, "fit": r}
    print(json.dumps(r), flush=True)
    return out


def tables(res: dict) -> str:
    """Markdown tables of saved results (``--table``)."""
    lines = ["| method | d | wall s | estimation s | structure s (graph - estimation, junction tree) "
             "| model fit s | peak RSS client / largest worker MB | load before-after |", "|---" * 8 + "|"]
    for r in res.get("wide", {}).get("runs", []):
        s = (r.get("report") or {}).get("seconds")
        if s is None:
            pp = r.get("per_pair", {})
            lines.append(f"| {r['method']} | {r['d']} | stopped at {r['wall_seconds']:.0f} | serial "
                         f"{pp.get('seconds_per_pair_serial')} s/pair x {pp.get('pairs_total')} | | | | |")
            continue
        kids = r["children_peak_rss_mb"]
        lines.append(f"| {r['method']} | {r['d']} | {r['wall_seconds']:.1f} | {s['estimation']:.1f} | "
                     f"{s['graph'] - s['estimation']:.1f}, {s['junction_tree']:.1f} | {s['model_fit']:.1f} | "
                     f"{r['client_peak_rss_mb']:.0f} / {max(kids, default=0):.0f} | "
                     f"{r['load_before'][0]:.1f}-{r['load_after'][0]:.1f} |")
    for m, e in res.get("wide", {}).get("exponent_b", {}).items():
        lines.append(f"\n{m}: b = {e['b']:.2f} (wall), {e['b_fit_total']:.2f} (fit total), "
                     f"{e['b_estimation']:.2f} (estimation) over d = {e['over_d']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", default="fit", help="fit, or comma-separated among wide,dask,marginals")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    ap.add_argument("--methods", default="moment,em")
    ap.add_argument("--sizes", help="fit: comma-separated N (default: 125k..1M, or the quick ones)")
    ap.add_argument("--speedup-repeats", type=int, default=0, metavar="R",
                    help="fit: only the 1-vs-2-jobs speed-up, R alternating pairs of runs at the largest size")
    ap.add_argument("--build-only", action="store_true", help="only build the inputs (their time is no target)")
    ap.add_argument("--wide-ds", help="comma-separated d for section wide (default 15,30,60,100)")
    ap.add_argument("--em-timeout", type=float, default=900.0,
                    help="seconds after which a wide EM fit is stopped and timed per pair instead")
    ap.add_argument("--pair-sample", type=int, default=40, help="pairs timed when a wide EM fit is stopped")
    ap.add_argument("--workdir", help="inputs and models (default /tmp/lopub-scale, /tmp/lopub-scale-10m)")
    ap.add_argument("--out", help="JSON results (sections other than fit: merged into the file, "
                                  "default docs/bench_scale_more.json; none with --quick)")
    ap.add_argument("--table", action="store_true", help="print the tables of --out (no runs)")
    a = ap.parse_args(argv)
    if a.table:
        print(tables(json.loads(Path(a.out or DOCS / "bench_scale_more.json").read_text())))
        return
    sections = [s.strip() for s in a.sections.split(",") if s.strip()]
    if sections != ["fit"] and (not sections or set(sections) - {"wide", "dask", "marginals"}):
        ap.error(f"--sections ({a.sections!r}): expected fit, or some of wide, dask, marginals")
    if a.speedup_repeats < 0:
        ap.error(f"--speedup-repeats must be >= 0, got {a.speedup_repeats}")
    methods = a.methods.split(",")
    if sections == ["fit"]:
        sizes = ([int(x) for x in a.sizes.split(",")] if a.sizes
                 else list(QUICK_SIZES if a.quick else FULL_SIZES))
        work = Path(a.workdir or "/tmp/lopub-scale")
        res = section_fit(methods, sizes, work, a.speedup_repeats)
        print(json.dumps(res["summary"], indent=2))
        if a.out:
            Path(a.out).write_text(json.dumps(res, indent=2) + "\n")
        return
    cfg = dict(QUICK if a.quick else FULL)
    if a.wide_ds:
        cfg["wide_ds"] = tuple(int(x) for x in a.wide_ds.split(","))
    work = Path(a.workdir or ("/tmp/lopub-scale-more-quick" if a.quick else "/tmp/lopub-scale-10m"))
    work.mkdir(parents=True, exist_ok=True)
    res = {}
    for s in sections:
        if s == "wide":
            res[s] = section_wide(cfg, work, methods, a.em_timeout, a.pair_sample, a.build_only)
        elif s == "dask":
            res[s] = section_dask(cfg, work, methods, a.build_only)
        else:
            res[s] = section_marginals(cfg, work, a.build_only)
    out = a.out or (None if a.quick else str(DOCS / "bench_scale_more.json"))
    if out and not a.build_only:
        old = json.loads(Path(out).read_text()) if Path(out).exists() else {}
        stamp = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "quick": a.quick}
        if "wide" in res:
            res["wide"] = merge_wide(old["wide"] if old.get("wide", {}).get("n") == res["wide"]["n"] else {},
                                     res["wide"])
        if "dask" in res:
            prev = old.get("dask", {})
            res["dask"] = merge_dask(prev if prev.get("n") == res["dask"]["n"] else {}, res["dask"])
        old.update({k: v | stamp for k, v in res.items()})
        old["params"] = {"m": M, "h": H, "f": F, "phi": PHI, "cores": os.cpu_count()}
        Path(out).write_text(json.dumps(old, indent=2) + "\n")
    print(json.dumps(res, indent=1)[:4000])


if __name__ == "__main__":
    main()
