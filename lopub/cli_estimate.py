"""``lopub estimate``: the k-way joint of some attributes from a reports file.

Registered into the main ``lopub`` command by :func:`register`::

    lopub estimate REPORTS --attrs a,b[,c...] --method em|lasso|moment|hybrid [--json]

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 1-3.
"""
from __future__ import annotations

import argparse
import json
import sys

from .estimate import METHODS, POSTPROCESS, estimate
from .reports import Reports


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``estimate`` subcommand to an argparse ``subparsers`` object."""
    p = subparsers.add_parser(
        "estimate", help="estimate the joint distribution of some attributes from reports",
        description="Estimate the k-way joint distribution of --attrs from a reports file "
                    "(EM, Alg. 1; Lasso, Alg. 2, which only sees one-way marginals for k >= 2; "
                    "moment regression; hybrid Lasso+EM, Alg. 3).")
    p.add_argument("reports", metavar="REPORTS", help="reports file (lopub-reports Parquet)")
    p.add_argument("--attrs", required=True, help="comma-separated attribute names, e.g. age,sex")
    p.add_argument("--method", default="em", choices=METHODS, help="estimator (default em)")
    p.add_argument("--support", choices=("moment", "lasso"), default=None,
                   help="hybrid only: where the support comes from (default moment)")
    p.add_argument("--postprocess", default="clip", choices=POSTPROCESS, help="default clip")
    p.add_argument("--tol", type=float, default=1e-6, help="largest cell change to stop EM (default 1e-6)")
    p.add_argument("--max-iter", type=int, default=None, help="maximum EM evaluations / solver iterations")
    p.add_argument("--stop-rule", choices=("max_change", "paper"), default="max_change")
    p.add_argument("--memory-budget-mb", type=float, default=None, help="memory budget in MiB (default 2048)")
    p.add_argument("--json", action="store_true", help="print the table and metadata as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_estimate)
    return p


def _progress(quiet: bool):
    if quiet:
        return None

    def show(done: int, total: int) -> None:
        if done % 50 == 0:
            print(f"\r  EM evaluations: {done}", end="", file=sys.stderr, flush=True)

    return show


def cmd_estimate(a: argparse.Namespace) -> None:
    """Run the estimate subcommand; errors propagate as ValueError/BudgetError for main()."""
    attrs = [x.strip() for x in a.attrs.split(",") if x.strip()]
    if not attrs:
        raise ValueError(f"--attrs ({a.attrs!r}) must name at least one attribute")
    reports = Reports.load(a.reports)
    opts = {}
    if a.support is not None and a.method not in ("hybrid", "hybrid-lasso"):
        raise ValueError(f"--support ({a.support}) applies to --method hybrid only, not {a.method!r}")
    if a.support is not None:
        opts["support"] = a.support
    if a.memory_budget_mb is not None:
        opts["memory_budget"] = int(a.memory_budget_mb * 2**20)
    m = estimate(reports, attrs, a.method, postprocess=a.postprocess, tol=a.tol, max_iter=a.max_iter,
                 stop_rule=a.stop_rule, progress=_progress(a.quiet), **opts)
    if not a.quiet:
        print("\r", end="", file=sys.stderr)
    if a.json:
        out = m.to_dict()
        out["meta"].pop("loglik_trace", None)
        print(json.dumps(out, indent=2, default=str))
        return
    meta = m.meta
    ll = "n/a" if meta.get("loglik") is None else f"{meta['loglik']:.2f}"
    print(f"method={meta['method']} n={m.n} iterations={meta['iterations']} "
          f"converged={meta['converged']} seconds={meta['seconds']:.3f} loglik={ll} "
          f"postprocess={meta['postprocess']}")
    print(m.to_frame().to_string(index=False))
