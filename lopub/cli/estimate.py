"""``lopub estimate``: the k-way joint of some attributes from a reports file.

::

    lopub estimate REPORTS --attrs a,b[,c...] --method em|lasso|moment|hybrid|hybrid-lasso [--json]
"""
from __future__ import annotations

import argparse
from typing import Any

from lopub.estimate import METHODS, POSTPROCESS, estimate
from lopub.estimate.em import STOP_RULES
from lopub.estimate.registry import defaults
from lopub.cli._commands import add_command
from lopub.cli._common import add_verbosity, default, emit, load_bloom_reports, memory_mb, progress, split_list
from lopub.cli._scale import add_scale_options, check_work_memory, reports_for, scale_options

HYBRID = tuple(m for m in METHODS if m.startswith("hybrid"))


def register(sub: Any) -> argparse.ArgumentParser:
    """Add the ``estimate`` subcommand to an argparse ``subparsers`` object."""
    method = default(estimate, "method")
    opts = defaults(method)
    post, tol, stop, budget = opts["postprocess"], opts["tol"], opts["stop_rule"], opts["memory_budget"]
    p = add_command(sub, "estimate", description="Estimate the k-way joint distribution of --attrs from a reports file "
                    "(EM, Alg. 1; Lasso, Alg. 2, which only sees one-way marginals for k >= 2; "
                    "moment regression; hybrid Lasso+EM, Alg. 3).")
    p.add_argument("reports", metavar="REPORTS", help="reports file (lopub-reports Parquet)")
    p.add_argument("--attrs", required=True, help="comma-separated attribute names, e.g. age,sex")
    p.add_argument("--method", default=method, choices=METHODS, help=f"estimator (default {method})")
    p.add_argument("--support", choices=("moment", "lasso"), default=None,
                   help="hybrid only: where the support comes from (default moment)")
    p.add_argument("--postprocess", default=post, choices=POSTPROCESS, help=f"default {post}")
    p.add_argument("--tol", type=float, default=tol,
                   help=f"largest cell change to stop EM (default {tol:g})")
    p.add_argument("--max-iter", type=int, default=None, help="maximum EM evaluations / solver iterations")
    p.add_argument("--stop-rule", choices=STOP_RULES, default=stop)
    p.add_argument("--memory-budget-mb", type=memory_mb, default=None,
                   help=f"memory budget in MiB (default {budget // 2**20})")
    add_scale_options(p, budget=False)
    p.add_argument("--json", action="store_true", help="print the table and metadata as JSON")
    add_verbosity(p, quiet_help="no progress on stderr")
    p.set_defaults(func=cmd_estimate)
    return p


def cmd_estimate(a: argparse.Namespace) -> None:
    """Run the estimate subcommand; errors propagate as ValueError/BudgetError for main()."""
    attrs = split_list(a.attrs)
    if not attrs:
        raise ValueError(f"--attrs ({a.attrs!r}) must name at least one attribute")
    check_work_memory(a, a.reports, attrs)
    reports = reports_for(a, a.reports, load_bloom_reports)
    opts = {}
    if a.support is not None and a.method not in HYBRID:
        raise ValueError(f"--support ({a.support}) applies to --method hybrid only, not {a.method!r}")
    if a.support is not None:
        opts["support"] = a.support
    opts.update(scale_options(a, a.reports))
    shown = progress(a)
    m = estimate(reports, attrs, a.method, postprocess=a.postprocess, tol=a.tol, max_iter=a.max_iter,
                 stop_rule=a.stop_rule, progress=None if shown is None else shown.em, **opts)
    if shown is not None:
        shown.close()
    if a.json:
        out = m.to_dict()
        out["meta"].pop("loglik_trace", None)
        emit(out, True, "")
        return
    meta = m.meta
    ll = "n/a" if meta.get("loglik") is None else f"{meta['loglik']:.2f}"
    print(f"method={meta['method']} n={m.n} iterations={meta['iterations']} "
          f"converged={meta['converged']} seconds={meta['seconds']:.3f} loglik={ll} "
          f"postprocess={meta['postprocess']}")
    print(m.to_frame().to_string(index=False))


REGISTER = {"estimate": register}
