"""lopub's model fit (``lopub.model.pgm.fit_mrf``) against mbi (Private-PGM) on the same measurements.

Two halves in two environments (mbi is never a lopub dependency) talk through one interchange file:
lopub's half measures Adult's one-way and pairwise marginals (Bloom reports and the moment estimator, or
``--synthetic-noise``), writes them with lopub's junction tree (``lopub.publish.interchange``) and fits ``fit_mrf``; the mbi half
(``--mbi-half STEM``, run by ``--mbi-python``) fits mbi's ``MirrorDescent`` (McKenna et al., ICML 2019) on
the same cliques; both are scored under ONE objective ``L(mu) = sum_i ||mu_{C_i} - y_i||^2 / (2 sigma_i^2)``.
Exit status 0 when the losses agree within ``--rel-tol``, 1 when not, 2 when a half cannot run.
Run ``python pipelines/check_mbi.py --quick``; commands, interchange format and figures: docs/bench_mbi.md
(summary: docs/BENCHMARKS.md, "Release model fitted to the measurements").
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # as a script, also in mbi's env: the repo root

from lopub.publish.interchange import (export_measurements, homes, measured, objective, read_interchange,
                                       read_result, write_result)
from pipelines.harness.common import bloom_reports, timed

DEFAULT_MBI_PYTHON = os.environ.get("LOPUB_MBI_PYTHON", "/work/mbi-venv/bin/python")
QUICK_ATTRS = "age,workclass,education,marital-status,relationship,sex"
M_BITS, H_HASHES, PHI = 128, 4, 0.4  # PHI: dependency degree of the graph


class HalfUnavailable(RuntimeError):
    """One half of the check cannot run in this environment (exit status 2)."""


# the mbi half: runs in the mbi environment, never imports lopub -----------------
def mbi_fit(inter: dict, *, iters: int = 20000, tol: float = 1e-10, warm: bool = True
            ) -> tuple[list[np.ndarray], dict]:
    """Fit mbi's ``MirrorDescent`` on the interchange's cliques; clique marginals and timing."""
    import dataclasses
    import warnings
    from importlib.metadata import version

    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import mbi
        from mbi import Domain, LinearMeasurement, marginal_loss
        from mbi.estimation import CALLBACK_EVERY, MirrorDescent

    domain = Domain(inter["attributes"], inter["sizes"])
    cliques = [tuple(c) for c in inter["cliques"]]
    ms = [LinearMeasurement(m["y"], m["attrs"], stddev=m["sigma"]) for m in inter["measurements"]]
    loss = marginal_loss.from_linear_measurements(ms, domain)
    loss = dataclasses.replace(loss, cliques=tuple(cliques), lipschitz=mbi_lipschitz(inter))
    value = jax.jit(lambda fn, mu: fn(mu))
    trace: list[list[float]] = []

    def run(track: bool) -> tuple[Any, float, int]:
        blocks: list[int] = []
        t0 = time.perf_counter()

        def callback(mu: Any) -> None:
            blocks.append(1)
            if track:  # [steps, seconds, loss] every 50 steps (a jitted loss: small overhead)
                trace.append([len(blocks) * CALLBACK_EVERY, time.perf_counter() - t0, float(value(loss, mu))])

        model = MirrorDescent().estimate(domain, loss, known_total=1.0, iters=iters, tol=tol, callback_fn=callback)
        jax.block_until_ready(model.marginals)
        return model, time.perf_counter() - t0, len(blocks) * CALLBACK_EVERY

    model, seconds, n_iter = run(False)
    meta = {"seconds": seconds, "iterations": n_iter, "converged": n_iter < iters,
            "iters": iters, "tol": tol, "loss_mbi_own": float(loss(model.marginals)),
            "mbi_version": getattr(mbi, "__version__", version("mbi")),
            "jax_version": jax.__version__, "estimator": "mbi.estimation.MirrorDescent()",
            "known_total": 1.0, "stddev": "sigma_i (probabilities)"}
    if warm:  # same program again: JIT compilation cached, the solver's own time
        value(loss, model.marginals)
        _, meta["seconds_warm"], _ = run(True)
        meta["trace"] = trace
    tables = [np.asarray(model.project(c).transpose(c).datavector(), dtype=np.float64) for c in cliques]
    return tables, meta


def mbi_lipschitz(inter: dict) -> float:
    """mbi's metadata Lipschitz bound routed to the *model* cliques (exact for marginal queries)."""
    size_of = dict(zip(inter["attributes"], inter["sizes"]))
    cells = [math.prod(size_of[a] for a in c) for c in inter["cliques"]]
    blocks: dict[int, float] = {}
    for m, j in zip(inter["measurements"], homes(inter)):
        blocks[j] = blocks.get(j, 0.0) + cells[j] / m["y"].size / m["sigma"] ** 2
    return max(blocks.values()) if blocks else 1.0


def check_mbi_python(python: str) -> None:
    if not Path(python).exists():
        raise HalfUnavailable(f"--mbi-python ({python}) does not exist; create it with "
                              f"`python3 -m venv /work/mbi-venv && /work/mbi-venv/bin/pip install mbi`")


def run_mbi(stem: Path, python: str, iters: int, tol: float, warm: bool = True) -> tuple[list, dict]:
    """Run the mbi half in ``python`` (the mbi environment) as a subprocess."""
    check_mbi_python(python)
    cmd = [python, str(Path(__file__).resolve()), "--mbi-half", str(stem), "--mbi-iters", str(iters),
           "--mbi-tol", str(tol)] + ([] if warm else ["--no-warm"])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, env={**env, "JAX_PLATFORMS": "cpu"})
    if done.returncode != 0:
        raise HalfUnavailable(f"the mbi half failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return read_result(stem)


# lopub's half --------------------------------------------------------------------
def build_measurements(args: argparse.Namespace) -> tuple[Any, Any, list, dict]:
    """Adult measurements (1-way and pairs inside a model clique), the junction tree and provenance."""
    import itertools
    import warnings

    from lopub.datasets import load_adult
    from lopub.dependency import MarginalCache
    from lopub.estimate import Estimator
    from lopub.pipeline.steps import dependency

    data = load_adult()
    if args.attrs:
        data = data.select(args.attrs.split(","))
    rng = np.random.default_rng(0)
    info = {"dataset": "adult", "records": data.n, "attributes": list(data.domain.attrs),
            "phi": PHI, "model_phi": args.model_phi, "seed": 0}
    if args.synthetic_noise:
        source = data
        info.update(measurements="exact marginals + N(0, sigma^2) per cell", sigma=args.synthetic_noise)
    else:  # the moment estimator's tables are Measurements with their own variance
        source = Estimator(bloom_reports(data, 0, f=args.f, m=M_BITS, h=H_HASHES), method="moment")
        info.update(measurements="Bloom reports, moment estimator", f=args.f, m=M_BITS, h=H_HASHES)
    cache = MarginalCache(source)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, tree, _, _ = dependency(cache, phi=PHI, model_phi=args.model_phi)
    attrs = list(data.domain.attrs)
    scopes = [(a,) for a in attrs] + list(itertools.combinations(attrs, 2))
    covered = [s for s in scopes if any(set(s) <= set(c) for c in tree.cliques)]
    info["measurements_left_out"] = len(scopes) - len(covered)
    ms = [cache.marginal(list(s)) for s in covered]
    if args.synthetic_noise:
        ms = [_noisy(m, args.synthetic_noise, rng) for m in ms]
    return data.domain, tree, ms, info


def _noisy(marginal: Any, sigma: float, rng: np.random.Generator) -> Any:
    from lopub.estimate.measurement import Measurement

    y = marginal.values + rng.normal(0.0, sigma, marginal.values.shape)
    return Measurement(marginal.domain, y, marginal.n, {}, variance=sigma ** 2,
                       provenance={"protocol": "exact", "estimator": "exact+gaussian",
                                   "postprocess": "none", "variance": "known"})


def lopub_fitter() -> Any:
    """``lopub.model.pgm.fit_mrf``, imported lazily; :class:`HalfUnavailable` when it is not there."""
    try:
        from lopub.model.pgm import fit_mrf
    except ImportError as exc:
        raise HalfUnavailable(f"lopub.model.pgm.fit_mrf is not importable here ({exc}); "
                              "this check needs lopub's own fitter (issue 11)") from exc
    return fit_mrf


def fit_lopub(domain: Any, tree: Any, measurements: list, cliques: list) -> tuple[list[np.ndarray], dict]:
    """``lopub.model.pgm.fit_mrf``; clique tables in the order and axis order of ``cliques``."""
    fit_mrf = lopub_fitter()
    fit, wall, _ = timed(lambda: fit_mrf(domain, tree, measurements))
    by_scope = {frozenset(m.attrs): m for m in fit.marginals}
    tables = [by_scope[frozenset(c)].project(list(c)).values.ravel() for c in cliques]
    return tables, {"seconds": float(getattr(fit, "seconds", wall)), "seconds_wall": wall,
                    "iterations": int(fit.iterations), "converged": bool(fit.converged),
                    "loss_lopub_own": float(fit.loss)}


# comparison ----------------------------------------------------------------------
def compare(inter: dict, lopub_tables: Sequence[np.ndarray], lopub_meta: dict,
            mbi_tables: Sequence[np.ndarray], mbi_meta: dict, rel_tol: float = 0.01) -> dict:
    """Both solutions under the one objective; relative difference (to mbi) and time ratio."""
    a, b = objective(inter, lopub_tables), objective(inter, mbi_tables)
    rel = (a - b) / b if b > 0 else (0.0 if a == b else math.inf)
    warm = mbi_meta.get("seconds_warm")
    reach = [t for t in mbi_meta.get("trace", []) if t[2] <= a * (1 + rel_tol)]
    return {"loss_lopub": a, "loss_mbi": b, "relative_difference": rel, "rel_tol": rel_tol,
            "ok": abs(rel) <= rel_tol,
            "seconds_lopub": lopub_meta["seconds"], "seconds_mbi": mbi_meta["seconds"],
            "seconds_mbi_warm": warm, "time_ratio": lopub_meta["seconds"] / mbi_meta["seconds"],
            "time_ratio_warm": None if not warm else lopub_meta["seconds"] / warm,
            "mbi_to_lopub_loss": None if not reach else {"steps": reach[0][0], "seconds_warm": reach[0][1],
                                                         "loss_at_most": a * (1 + rel_tol)},
            "max_abs_marginal_difference": max(float(np.max(np.abs(np.ravel(x) - np.ravel(y))))
                                               for x, y in zip(lopub_tables, mbi_tables)),
            "max_abs_measured_difference": max(float(np.max(np.abs(x - y))) for x, y in
                                               zip(measured(inter, lopub_tables), measured(inter, mbi_tables))),
            "measurements": len(inter["measurements"]), "cliques": len(inter["cliques"]),
            "max_clique_cells": max(t.size for t in lopub_tables), "lopub": lopub_meta, "mbi": mbi_meta,
            "info": inter["info"]}


def print_summary(r: dict) -> None:
    lp, mb, info, tol = r["lopub"], r["mbi"], r["info"], 100 * r["rel_tol"]
    warm = "" if r["seconds_mbi_warm"] is None else f", {r['seconds_mbi_warm']:.2f} s warm"
    ratio_w = "" if r["time_ratio_warm"] is None else f", {r['time_ratio_warm']:.2f} vs warm"
    print(f"{info.get('measurements')}: {r['measurements']} measurements "
          f"({info.get('measurements_left_out', 0)} outside every model clique, left out), "
          f"{r['cliques']} cliques (largest {r['max_clique_cells']} cells)")
    print(f"loss_lopub  {r['loss_lopub']:.6g}  ({r['seconds_lopub']:.2f} s, {lp['iterations']} iterations, "
          f"converged={lp['converged']})")
    print(f"loss_mbi    {r['loss_mbi']:.6g}  ({r['seconds_mbi']:.2f} s incl. JIT{warm}, "
          f"{mb['iterations']} iterations, converged={mb['converged']})")
    print(f"relative difference (lopub - mbi) / mbi  {100 * r['relative_difference']:+.4f} % "
          f"(limit {tol:g} %): {'OK' if r['ok'] else 'FAIL'}")
    print(f"time ratio lopub / mbi  {r['time_ratio']:.2f}{ratio_w}")
    if hit := r["mbi_to_lopub_loss"]:
        print(f"mbi (warm) first at or below loss_lopub + {tol:g} % after {hit['steps']} steps, "
              f"{hit['seconds_warm']:.2f} s (time ratio {r['seconds_lopub'] / max(hit['seconds_warm'], 1e-9):.2f})")
    if r["relative_difference"] < -r["rel_tol"]:
        print("lopub's loss is the lower one: mbi may not have converged (raise --mbi-iters)")
    print(f"max |mu_lopub - mu_mbi|  {r['max_abs_measured_difference']:.3g} on the measured scopes "
          f"(unique at the optimum), {r['max_abs_marginal_difference']:.3g} over all clique cells")


def lopub_main(a: argparse.Namespace) -> int:
    if not a.write_only:  # fail fast, before any estimation
        lopub_fitter()
        check_mbi_python(a.mbi_python)
    out_dir = Path(a.out_dir or tempfile.mkdtemp(prefix="check_mbi_"))
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / "check_mbi"
    domain, tree, ms, info = build_measurements(a)
    cliques = [tuple(c) for c in tree.cliques]
    export_measurements(stem, domain, cliques, ms, info)
    print(f"interchange written: {stem}.json / .npz", file=sys.stderr)
    if a.write_only:
        return 0
    lopub_tables, lopub_meta = fit_lopub(domain, tree, ms, cliques)
    mbi_tables, mbi_meta = run_mbi(stem, a.mbi_python, a.mbi_iters, a.mbi_tol, not a.no_warm)
    r = compare(read_interchange(stem), lopub_tables, lopub_meta, mbi_tables, mbi_meta, a.rel_tol)
    if a.json:
        print(json.dumps(r, indent=1, default=float))
    else:
        print_summary(r)
    return 0 if r["ok"] else 1


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="Commands, interchange format and scale: docs/bench_mbi.md.")
    p.add_argument("--quick", action="store_true",
                   help=f"tiny case: --attrs {QUICK_ATTRS} --synthetic-noise 0.005 --model-phi 0.1")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument("--f", type=float, default=0.5, help="Bloom flip probability (default 0.5)")
    p.add_argument("--synthetic-noise", type=float, metavar="SIGMA",
                   help="exact marginals + N(0, SIGMA^2) per cell instead of Bloom reports")
    p.add_argument("--attrs", help="comma-separated Adult attributes (default: all 15)")
    p.add_argument("--model-phi", type=float, help="junction tree on the MI graph at this phi")
    p.add_argument("--mbi-python", default=DEFAULT_MBI_PYTHON, help="python of the mbi environment")
    p.add_argument("--mbi-iters", type=int, default=20000, help="MirrorDescent iterations at most")
    p.add_argument("--mbi-tol", type=float, default=1e-10,
                   help="mbi stops when the relative loss gain per 50 steps stays <= this")
    p.add_argument("--no-warm", action="store_true", help="skip mbi's second (JIT-cached) timing run")
    p.add_argument("--rel-tol", type=float, default=0.01, help="allowed relative loss difference")
    p.add_argument("--out-dir", help="where the interchange files go (default: a temporary dir)")
    p.add_argument("--write-only", action="store_true", help="write the interchange file and stop")
    p.add_argument("--mbi-half", metavar="STEM", help="run the mbi half on STEM (mbi environment)")
    a = p.parse_args(argv)
    if a.quick:
        a.attrs = a.attrs or QUICK_ATTRS
        a.synthetic_noise = a.synthetic_noise or 0.005
        a.model_phi = a.model_phi or 0.1
    return a


def main(argv: Sequence[str] | None = None) -> int:
    a = parse_args(argv)
    if a.mbi_half:
        write_result(a.mbi_half, *mbi_fit(read_interchange(a.mbi_half), iters=a.mbi_iters, tol=a.mbi_tol,
                                          warm=not a.no_warm))
        return 0
    try:
        return lopub_main(a)
    except HalfUnavailable as exc:  # exit status 2: a half cannot run here
        print(f"check_mbi: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
