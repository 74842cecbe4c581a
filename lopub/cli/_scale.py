"""``--jobs``, ``--memory-budget-mb`` and ``--scheduler``: shared by ``fit`` and ``estimate``."""
from __future__ import annotations

import argparse
import os
import warnings
from typing import Any, Callable

from lopub.cli._common import MAX_MIB


def add_scale_options(p: argparse.ArgumentParser, *, budget: bool = True) -> None:
    """Add the scaling options to a subcommand (``budget``: also ``--memory-budget-mb``)."""
    p.add_argument("--jobs", type=int, default=None,
                   help="worker processes for the joints (default: every core; with --scheduler local, "
                        "the local Dask cluster's workers); results do not depend on it")
    if budget:
        p.add_argument("--memory-budget-mb", type=float, default=None,
                       help="memory budget in MiB for reports, per-attribute arrays and the "
                            "workers' working memory (default 2048)")
    p.add_argument("--scheduler", default=None, metavar="local|ADDRESS",
                   help="--method moment or em: compute the sums over users on a Dask cluster ('local' "
                        "starts one on this machine; ADDRESS e.g. tcp://host:8786); the workers read "
                        "the parts of a REPORTS dataset folder themselves (put it on shared storage), "
                        "a single reports file is sent to them by this process; needs lopub[dask]")


def scale_options(a: argparse.Namespace, path: str) -> dict[str, Any]:
    """Estimator options from the parsed scaling options (ValueError naming a bad one)."""
    opts: dict[str, Any] = {}
    if a.jobs is not None:
        if a.jobs < 1:
            raise ValueError(f"--jobs ({a.jobs}) must be an integer >= 1")
        opts["jobs"] = a.jobs
    if getattr(a, "memory_budget_mb", None) is not None:
        if not 0 < a.memory_budget_mb <= MAX_MIB:
            raise ValueError(f"--memory-budget-mb ({a.memory_budget_mb}) must be a finite number of MiB > 0 "
                             f"and at most {MAX_MIB:.0f} (2^63 bytes)")
        opts["memory_budget"] = int(a.memory_budget_mb * 2**20)
    limit = getattr(a, "max_memory_mb", None)
    if limit is not None:  # the estimator plans within the smaller of the two
        opts["memory_budget"] = min(opts.get("memory_budget", 2**62), int(limit * 2**20))
    if a.scheduler is not None:
        if a.method not in ("moment", "em"):
            raise ValueError(f"--scheduler ({a.scheduler}) applies to --method moment or em, "
                             f"not {a.method!r}")
        if a.jobs is not None and a.scheduler != "local":
            warnings.warn(f"--jobs ({a.jobs}) is ignored with --scheduler {a.scheduler}: the sums over "
                          f"users run on that cluster's workers (start more of them for more)",
                          stacklevel=2)
        opts["scheduler"] = a.scheduler
        opts["reports_path"] = str(path)
    return opts


def check_work_memory(a: argparse.Namespace, path: str, attrs: list[str] | None = None) -> None:
    """With ``--max-memory-mb``: refuse Bloom reports whose estimation would exceed it, before
    loading them.

    Counted: the packed reports, each estimated attribute's unpacked bits and
    likelihoods (``n (m_j + 8 k_j)`` bytes) and, per worker, the E-step of the
    largest pair (``8 (12 cells + 3 chunk span)``, as the estimators plan it).
    """
    import math

    limit = getattr(a, "max_memory_mb", None)
    if limit is None or not os.path.exists(path) or _zipped(path):
        return
    from lopub.limits import format_bytes
    from lopub.reports.dataset import ReportsDataset

    ds = ReportsDataset.open(path)
    spec, n, dom = ds.spec, ds.n, ds.spec.domain
    names = list(dom.attrs) if attrs is None else [x for x in attrs if x in dom.attrs]
    idx = [dom.index(x) for x in names]
    per_attr = sum(n * (spec.m[j] + 8 * dom.sizes[j]) for j in idx)
    top = sorted((dom.sizes[j] for j in idx), reverse=True)[:2] or [1]
    cells = math.prod(top)
    jobs = min(a.jobs or os.cpu_count() or 1, max(1, len(idx) * (len(idx) - 1) // 2))
    pair = 8 * (12 * cells + 3 * min(n, 8192) * (cells // max(top) + max(top)))
    need = n * spec.packed_bytes + per_attr + jobs * pair
    if need > limit * 2**20:
        raise ValueError(f"estimating from {path!r} ({n} reports, {len(idx)} attributes) needs about "
                         f"{format_bytes(need)} (reports, per-attribute arrays, {jobs} worker(s)), more "
                         f"than --max-memory-mb ({limit:g} MiB); raise --max-memory-mb, or use fewer "
                         f"reports or attributes (--jobs 1 uses one worker)")


def _zipped(path: str) -> bool:
    if os.path.isdir(path):
        return False
    with open(path, "rb") as fh:
        return fh.read(2) == b"PK"


def reports_for(a: argparse.Namespace, path: str, load: Callable[[str], Any]) -> Any:
    """The reports to estimate from: left on disk for a Dask run on a dataset folder, else ``load(path)``.

    With ``--scheduler`` the workers read the folder's parts themselves, so this
    process keeps only the spec and N (:class:`~lopub.reports.dataset.OnDiskReports`).
    """
    if getattr(a, "scheduler", None) is None or not os.path.isdir(path):
        return load(path)
    from lopub.reports.dataset import ReportsDataset

    ds = ReportsDataset.open(path)
    if ds.n == 0:
        raise ValueError(f"reports folder {path!r} holds no reports (n = 0); nothing to estimate from")
    return ds.on_disk()
