"""Scaling of ``lopub fit`` (issue 13): time and peak memory against N, jobs, d, Dask and 10M users.

Sections (``--sections``): ``fit`` (Adult resampled to N; 1 vs 2 jobs), ``wide`` (50k x d), ``dask`` (10M x 15,
``--scheduler local``) and ``marginals`` (10M x 50, the planner's marginal plan); each fit in a fresh process,
its process tree's memory sampled.  Commands and figures: docs/BENCHMARKS.md, "Scaling: both cores, streaming
sums, Dask" (``--table`` prints its table of wide data from docs/bench_scale_more.json).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repository root

from pipelines.harness.common import bloom_reports, ints, names, timed, write_json

M, H, F, PHI = 128, 4, 0.5, 0.4
PARAMS = {"m": M, "h": H, "f": F, "phi": PHI, "cores": os.cpu_count()}
FULL_SIZES, QUICK_SIZES = (125_000, 250_000, 500_000, 1_000_000), (10_000, 20_000, 40_000)
DOCS = Path(__file__).resolve().parents[1] / "docs"
FULL = {"wide_n": 50_000, "wide_ds": (15, 30, 60, 100), "dask_n": 10_000_000, "dask_em_n": 2_000_000,
        "batch": 1_000_000, "marg_n": 10_000_000, "marg_d": 50, "epsilon": 8.0, "dask_em_extra": (), "dask_d": 15}
QUICK = {"wide_n": 3_000, "wide_ds": (15, 30), "dask_n": 40_000, "dask_em_n": 20_000,
         "batch": 10_000, "marg_n": 40_000, "marg_d": 20, "epsilon": 8.0,
         "dask_em_extra": ("--tol", "1e-2"), "dask_d": 6}  # EM on Dask pays a round trip per iteration
# ``lopub ARGS``, then its own and its children's peak RSS (ru_maxrss, kB) on stderr
_WRAP = ("import resource, sys\nfrom lopub.cli import main\nrc = main(sys.argv[1:])\n"
         "kb = [resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]\n"
         "sys.stderr.write(f'\\nPEAK_KB {kb[0]} {kb[1]}\\n')\nsys.exit(rc)\n")


def run_monitored(args: list[str], *, timeout: float | None = None, **tags) -> dict:
    """``lopub ARGS --json --quiet`` in a fresh process, its tree's memory sampled; the record (with ``tags``)
    is printed and returned.  After ``timeout`` s the tree is killed (``timed_out``, report None)."""
    load0, peaks, pss, stop = os.getloadavg(), {}, [0.0], threading.Event()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", _WRAP, *args, "--json", "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def sample() -> None:  # every 0.2 s: each process's peak RSS, the tree's peak PSS (shared pages once)
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
                stop.wait(0.2)
        except psutil.Error:  # the command has ended
            return

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        for p in psutil.Process(proc.pid).children(recursive=True) + [proc]:
            p.kill()
        out, err = None, proc.communicate()[1]
    wall = time.perf_counter() - t0
    stop.set()
    sampler.join()
    res = {"args": args, "wall_seconds": round(wall, 2), "timed_out": out is None,
           "load_before": [round(x, 2) for x in load0], "load_after": [round(x, 2) for x in os.getloadavg()],
           "client_peak_rss_mb": round(peaks.pop(proc.pid, 0) / 2**20, 1),
           "children_peak_rss_mb": sorted((round(v / 2**20, 1) for v in peaks.values()), reverse=True),
           "peak_pss_mb": round(pss[0], 1)}
    if out is None:
        res["report"] = None
    elif proc.returncode != 0:
        raise RuntimeError(f"lopub {' '.join(args)} failed:\n{err[-3000:]}")
    else:
        # the two numbers after the marker; a Dask cluster may still log lines after it at exit
        own, kids = (int(x) for x in err.rsplit("PEAK_KB", 1)[1].split()[:2])
        rep = json.loads(out)
        res |= {"ru_maxrss_mb": [round(own / 1024, 1), round(kids / 1024, 1)],
                "report": {k: rep.get(k) for k in ("n", "method", "seconds", "edges", "estimator")}}
    print(json.dumps(res | tags), flush=True)
    return res | tags


def fit_args(reports: Path, method: str | None, out: Path, *extra: str) -> list[str]:
    """``lopub fit`` arguments; ``method`` None for marginal-sampling reports (their oracles measure)."""
    how = [] if method is None else ["--method", method]
    return ["fit", str(reports), *how, "--phi", str(PHI), "--out", str(out), *extra]


def machine_speedup(n: int = 20_000_000) -> float:
    """Two processes over one on pure CPU work: about 2 on an idle 2-core machine, 1 on a busy one."""
    _, serial, _ = timed(lambda: (sum(range(n)), sum(range(n))))
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(sum, [range(1000)] * 2)  # start-up outside the timing
        _, both, _ = timed(lambda: pool.map(sum, [range(n)] * 2))
    return round(serial / both, 2)


def exponent(xs: list[int], secs: list[float]) -> float | None:
    """Least-squares slope of log(seconds) on log(x)."""
    return float(np.polyfit(np.log(xs), np.log(secs), 1)[0]) if len(xs) > 1 else None


def section_fit(methods: list[str], sizes: list[int], workdir: Path, repeats: int = 0) -> dict:
    """Per method ``--jobs 2`` at each N, ``--jobs 1`` at the largest (``repeats``: only R pairs of both there)."""
    workdir.mkdir(parents=True, exist_ok=True)
    sizes = [max(sizes)] if repeats else sorted(sizes)
    paths = {n: build_bloom(workdir / f"adult_{n}", n, None, n, seed=0) for n in sizes}
    runs, summary = [], {"machine_speedup_before": machine_speedup()}

    def fit(n: int, method: str, jobs: int, tag: str) -> dict:
        r = run_monitored(fit_args(paths[n], method, workdir / f"model_{method}_{tag}.json", "--jobs", str(jobs)))
        (own, kids), rep = r["ru_maxrss_mb"], r["report"]
        runs.append({"method": method, "jobs": jobs, "n": rep["n"], "wall_seconds": r["wall_seconds"],
                     "seconds": rep["seconds"], "edges": rep["edges"], "peak_rss_mb": max(own, kids),
                     "peak_rss_sum_mb": round(own + kids, 1), "peak_pss_mb": r["peak_pss_mb"],
                     "load_before": r["load_before"][0]})
        return runs[-1]

    for method in methods:
        if repeats:  # alternating 1, 2, 1, 2 jobs, so that load changes hit both alike
            pairs = [(fit(sizes[-1], method, 1, "1job"), fit(sizes[-1], method, 2, "2jobs")) for _ in range(repeats)]
            est = [one["seconds"]["estimation"] / two["seconds"]["estimation"] for one, two in pairs]
            wall = [one["wall_seconds"] / two["wall_seconds"] for one, two in pairs]
            summary[method] = {"n": sizes[-1], "repeats": repeats, "estimation_speedup": [round(x, 2) for x in est],
                               "estimation_speedup_median": round(float(np.median(est)), 2),
                               "wall_speedup_median": round(float(np.median(wall)), 2)}
            continue
        by = [fit(n, method, 2, str(n)) for n in sizes]
        one = fit(sizes[-1], method, 1, "1job")
        summary[method] = {"time_exponent_a": exponent(sizes, [r["wall_seconds"] for r in by]),
                           "fit_time_exponent_a": exponent(sizes, [r["seconds"]["total"] for r in by]),
                           "speedup_2_jobs": round(one["wall_seconds"] / by[-1]["wall_seconds"], 2),
                           "largest_n": sizes[-1]}
    summary["machine_speedup_after"] = machine_speedup()
    return PARAMS | {"runs": runs, "summary": summary}


def wide_dataset(n: int, d: int | None, *, seed: int):
    """``n`` records x ``d`` attributes, a resampling of Adult per block of 15 (``age_b3``); None: Adult as it is."""
    from lopub.data.dataset import Dataset
    from lopub.data.domain import Attribute, Domain
    from lopub.datasets import load_adult

    adult = load_adult()
    rng = np.random.default_rng(seed)
    if d is None:
        return adult.subset(rng.integers(0, adult.n, size=n))
    blocks, attrs = [], []
    for b in range(-(-d // len(adult.domain))):
        blocks.append(adult.codes[rng.integers(0, adult.n, size=n)])
        attrs += [Attribute(f"{a.name}_b{b}", a.categories) for a in adult.domain.attributes]
    return Dataset(np.concatenate(blocks, axis=1)[:, :d], Domain(tuple(attrs[:d])))


def build_bloom(folder: Path, n: int, d: int | None, batch: int, *, seed: int) -> Path:
    """Bloom reports of ``n`` x ``d`` wide records, by batches (seeds 1000 apart), in a dataset folder; reused
    when an earlier run finished it."""
    from lopub.reports.dataset import ReportsDataset

    if not (folder / "DONE").exists():
        shutil.rmtree(folder, ignore_errors=True)
        ds = None
        for i, a in enumerate(range(0, n, batch)):
            part = bloom_reports(wide_dataset(min(batch, n - a), d, seed=seed + 1000 * i), seed + 1000 * i + 1,
                                 f=F, m=M, h=H)
            ds = ReportsDataset.create(folder, part.spec) if ds is None else ds
            ds.append(part)
        (folder / "DONE").write_text(str(n))
    return folder


def per_pair_em(reports: Path, pairs: int, *, seed: int = 0) -> dict:
    """Serial EM seconds per pair on ``pairs`` random pairs (one-way likelihoods built first)."""
    from lopub.estimate import Estimator
    from lopub.reports.bloom import Reports

    rep = Reports.load(reports)
    est, attrs = Estimator(rep, method="em", jobs=1), rep.spec.domain.attrs
    _, t_one, _ = timed(lambda: [est.marginal((a,)) for a in attrs])
    rng = np.random.default_rng(seed)
    chosen = {tuple(sorted(rng.choice(len(attrs), 2, replace=False))) for _ in range(pairs)}
    _, t_pairs, _ = timed(lambda: [est.marginal((attrs[i], attrs[j])) for i, j in chosen])
    per, total = t_pairs / len(chosen), len(attrs) * (len(attrs) - 1) // 2
    return {"pairs_timed": len(chosen), "one_way_seconds": round(t_one, 2),
            "seconds_per_pair_serial": round(per, 4), "pairs_total": total,
            "pairwise_stage_serial_seconds_extrapolated": round(t_one + per * total, 1)}


def section_wide(cfg: dict, work: Path, a: argparse.Namespace) -> dict:
    n = cfg["wide_n"]
    paths = {d: build_bloom(work / f"wide_{n}_{d}", n, d, n, seed=d) for d in cfg["wide_ds"]}
    if a.build_only:
        return {}
    runs = []
    for method in a.methods:
        for d, path in paths.items():
            runs.append(run_monitored(fit_args(path, method, work / f"model_wide_{method}_{d}.json", "--jobs", "2"),
                                      timeout=a.em_timeout, section="wide", method=method, d=d))
            if runs[-1]["timed_out"]:
                runs[-1]["per_pair"] = per_pair_em(path, a.pair_sample)
    return {"n": n, "runs": runs}


def section_dask(cfg: dict, work: Path, a: argparse.Namespace) -> dict:
    """10M x 15 by moment; EM on the first 2M (the same batches: a prefix of the users)."""
    n, n_em, d, batch = cfg["dask_n"], cfg["dask_em_n"], cfg["dask_d"], cfg["batch"]
    jobs = {"moment": (build_bloom(work / f"adult{d}_{n}", n, d, batch, seed=7), n, ()),
            "em": (build_bloom(work / f"adult{d}_{n_em}", n_em, d, batch, seed=7), n_em, cfg["dask_em_extra"])}
    if a.build_only:
        return {}
    runs = []
    for method in a.methods:
        path, m, extra = jobs[method]
        runs.append(run_monitored(fit_args(path, method, work / f"model_dask_{method}.json", "--scheduler", "local",
                                           *extra), section="dask", method=method, n=m))
        runs[-1]["worker_peak_rss_mb"] = runs[-1]["children_peak_rss_mb"][:2]
    return {"n": n, "runs": runs}


def section_marginals(cfg: dict, work: Path, a: argparse.Namespace) -> dict:
    """``marg_n`` users simulated under the planner's one-phase marginal plan (what a service collects:
    ``plan_marginals``; a two-phase report's ``marginal_plan`` is its screen), ``batch`` at a time, saved
    as .npz; the fit."""
    from lopub.collect import collect_records, plan, plan_marginals

    n, d, batch, seed = cfg["marg_n"], cfg["marg_d"], cfg["batch"], 11
    path = work / f"marg_{n}_{d}.npz"
    if not (path.exists() and path.with_suffix(".json").exists()):
        t0 = time.perf_counter()
        first = wide_dataset(min(batch, n), d, seed=seed)
        report = plan(first.domain, n, cfg["epsilon"])
        mplan, t1 = plan_marginals(first.domain, n, cfg["epsilon"]), time.perf_counter()
        reports = collect_records(first, mplan, rng=seed + 1)
        for i, at in enumerate(range(batch, n, batch), start=1):
            data = wide_dataset(min(batch, n - at), d, seed=seed + 1000 * i)
            reports = reports.merge(collect_records(data, mplan, rng=seed + 1000 * i + 1))
        t2 = time.perf_counter()
        reports.save(path)
        info = {"n": n, "d": d, "epsilon": cfg["epsilon"], "recommended": report.recommended,
                "plan_seconds": round(t1 - t0, 2), "simulate_seconds": round(t2 - t1, 2),
                "save_seconds": round(time.perf_counter() - t2, 2), "subsets": mplan.n_subsets,
                "subset_sizes": sorted({len(s) for s in mplan.subsets}),
                "oracles": sorted({type(mplan.oracle(i)).__name__ for i in range(mplan.n_subsets)}),
                "file_mb": round(path.stat().st_size / 2**20, 1)}
        path.with_suffix(".json").write_text(json.dumps(info))
    if a.build_only:
        return {}
    return {"collection": json.loads(path.with_suffix(".json").read_text()),
            "fit": run_monitored(fit_args(path, None, work / "model_marg.json"), section="marginals")}


def _merged(old: dict, new: dict, *key: str) -> dict:
    """The runs of both, a new run replacing the old one of the same ``key`` (old runs only at the same n)."""
    prev = old.get("runs", []) if old.get("n") == new["n"] else []
    runs = {tuple(r[k] for k in key): r for r in prev + new["runs"]}
    return {"n": new["n"], "runs": [runs[k] for k in sorted(runs)]}


def merge_wide(old: dict, new: dict) -> dict:
    """Runs of both (a new run replaces the old one of its method and d); exponents b over all."""
    out = _merged(old, new, "method", "d") | {"exponent_b": {}}
    for method in sorted({r["method"] for r in out["runs"]}):
        done = [r for r in out["runs"] if r["method"] == method and not r["timed_out"]]
        ds = [r["d"] for r in done]
        out["exponent_b"][method] = {
            "b": exponent(ds, [r["wall_seconds"] for r in done]), "over_d": ds,
            "b_fit_total": exponent(ds, [r["report"]["seconds"]["total"] for r in done]),
            "b_estimation": exponent(ds, [r["report"]["seconds"]["estimation"] for r in done])}
    return out


def merge_dask(old: dict, new: dict) -> dict:
    """Runs of both (a new run replaces the old one of its method); EM extrapolated linearly to n."""
    out = _merged(old, new, "method")
    em = {r["method"]: r for r in out["runs"]}.get("em")
    if em:
        out["em_extrapolated_seconds"] = round(em["wall_seconds"] * new["n"] / em["n"], 1)
    return out


#: section -> (its runs, how they merge into the saved ones)
SECTIONS = {"wide": (section_wide, merge_wide), "dask": (section_dask, merge_dask),
            "marginals": (section_marginals, lambda old, new: new)}


def tables(res: dict) -> str:
    """Markdown table of the saved wide runs and their exponents b (``--table``)."""
    lines = [("| method | d | wall s | estimation s | structure s (graph - estimation, junction tree) "
              "| model fit s | peak RSS client / largest worker MB | load before-after |"), "|---" * 8 + "|"]
    for r in res.get("wide", {}).get("runs", []):
        s, pp = (r.get("report") or {}).get("seconds"), r.get("per_pair", {})
        cells = [r["method"], r["d"], f"stopped at {r['wall_seconds']:.0f}",  # and four empty cells
                 f"serial {pp.get('seconds_per_pair_serial')} s/pair x {pp.get('pairs_total')} | | | |"]
        if s is not None:
            cells[2:] = [f"{r['wall_seconds']:.1f}", f"{s['estimation']:.1f}",
                         f"{s['graph'] - s['estimation']:.1f}, {s['junction_tree']:.1f}", f"{s['model_fit']:.1f}",
                         f"{r['client_peak_rss_mb']:.0f} / {max(r['children_peak_rss_mb'], default=0):.0f}",
                         f"{r['load_before'][0]:.1f}-{r['load_after'][0]:.1f}"]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    for m, e in res.get("wide", {}).get("exponent_b", {}).items():
        if e["b"] is None:  # one finished d (the others timed out): no slope
            lines.append(f"\n{m}: b needs two finished d (finished: {e['over_d']})")
            continue
        lines.append(f"\n{m}: b = {e['b']:.2f} (wall), {e['b_fit_total']:.2f} (fit total), "
                     f"{e['b_estimation']:.2f} (estimation) over d = {e['over_d']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", type=names, default="fit", help="fit, or comma-separated among wide,dask,marginals")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    ap.add_argument("--methods", type=names, default="moment,em")
    ap.add_argument("--sizes", type=ints, help="fit: comma-separated N (default: 125k..1M, or the quick ones)")
    ap.add_argument("--speedup-repeats", type=int, default=0, metavar="R", help="fit: only R pairs of 1 and 2 jobs")
    ap.add_argument("--build-only", action="store_true", help="only build the inputs (their time is no target)")
    ap.add_argument("--wide-ds", type=ints, help="comma-separated d for section wide (default 15,30,60,100)")
    ap.add_argument("--em-timeout", type=float, default=900.0, help="wide: seconds before a fit is timed per pair")
    ap.add_argument("--pair-sample", type=int, default=40, help="pairs timed when a wide EM fit is stopped")
    ap.add_argument("--workdir", help="inputs and models (default /tmp/lopub-scale, /tmp/lopub-scale-10m)")
    ap.add_argument("--out", help="JSON results (other sections than fit merge into it; default "
                                  "docs/bench_scale_more.json, none with --quick)")
    ap.add_argument("--table", action="store_true", help="print the tables of --out (no runs)")
    a = ap.parse_args(argv)
    if a.sections != ["fit"] and (not a.sections or set(a.sections) - set(SECTIONS)):
        ap.error(f"--sections ({','.join(a.sections)!r}): expected fit, or some of wide, dask, marginals")
    if a.speedup_repeats < 0:
        ap.error(f"--speedup-repeats must be >= 0, got {a.speedup_repeats}")
    if a.table:
        print(tables(json.loads(Path(a.out or DOCS / "bench_scale_more.json").read_text())))
        return
    if a.sections == ["fit"]:
        res = section_fit(a.methods, a.sizes or list(QUICK_SIZES if a.quick else FULL_SIZES),
                          Path(a.workdir or "/tmp/lopub-scale"), a.speedup_repeats)
        print(json.dumps(res["summary"], indent=2))
        if a.out:
            write_json(a.out, res)
        return
    cfg = dict(QUICK if a.quick else FULL)
    cfg["wide_ds"] = a.wide_ds or cfg["wide_ds"]
    work = Path(a.workdir or ("/tmp/lopub-scale-more-quick" if a.quick else "/tmp/lopub-scale-10m"))
    work.mkdir(parents=True, exist_ok=True)
    res = {s: SECTIONS[s][0](cfg, work, a) for s in a.sections}
    out = a.out or (None if a.quick else DOCS / "bench_scale_more.json")
    if out and not a.build_only:
        saved = json.loads(Path(out).read_text()) if Path(out).exists() else {}
        stamp = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "quick": a.quick}
        res = {s: SECTIONS[s][1](saved.get(s, {}), r) for s, r in res.items()}
        write_json(out, saved | {s: r | stamp for s, r in res.items()} | {"params": PARAMS})
    print(json.dumps(res, indent=1)[:4000])


if __name__ == "__main__":
    main()
