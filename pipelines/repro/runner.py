"""What the LoPub reproduction experiments share (Ren et al., IEEE TIFS 2018, Sec. VI; docs/RESULTS.md).

The command line, a resumable CSV log, the loop over the configurations left, the datasets, splits and
the paper's sampling, per-configuration seeds (independent of run order), the privacy record (Eq. 8).
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import itertools
import os
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

# Imported here so that no timed estimator call pays for loading scikit-learn (~2 s; the
# paper's Lasso imports it lazily and its first call would otherwise look 100x slower).
import sklearn.linear_model  # noqa: F401

from lopub.io import atomic_path, atomic_write_text
from lopub.progress import ConsoleProgress
from pipelines.harness import datasets
from pipelines.harness.common import bloom_reports, bloom_spec

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
FS = (0.1, 0.3, 0.5, 0.7, 0.9)
QUICK_FS = (0.5,)
#: Seed of the documented 50/50 train/test split of retail (and of the embedded set).
SPLIT_SEED = 20180101


class DataConfig(NamedTuple):  # per-dataset settings taken from the paper (Sec. VI)
    phi: float               # correlation identification threshold
    ks: tuple[int, ...]      # k of the k-way marginals in the AVD experiment
    sample: float            # the paper's sampling for the estimation experiments
    phis: tuple[float, ...]  # phi values of the pruning tables


DATA = {
    "adult": DataConfig(0.4, (2, 3), 0.10, (0.1, 0.2, 0.3, 0.4, 0.5)),
    "retail": DataConfig(0.25, (3, 5), 0.50, (0.1, 0.2, 0.3)),
    # a known Bayesian network (13 attributes); used by the tests and --quick smoke runs
    "embedded": DataConfig(0.4, (2, 3), 0.50, (0.1, 0.3, 0.5)),
}
#: Estimators compared, by label: ``Estimator`` options.  "lasso+em" is the paper's Alg. 3
#: (support from Alg. 2); "hybrid" takes its support from moment regression, which sees the joint.
METHODS = {
    "em": {"method": "em"},
    "lasso": {"method": "lasso"},
    "lasso+em": {"method": "hybrid", "support": "lasso"},
    "moment": {"method": "moment"},
    "hybrid": {"method": "hybrid", "support": "moment"},
}


def parser(name: str, doc: str, *, methods: bool = True, fs: Sequence[float] = FS,
           samplings: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The options of an experiment (``--samplings`` if it has default ``samplings``); output in ``results/<name>``."""
    p = argparse.ArgumentParser(prog=f"python -m pipelines.repro.{name}", description=doc.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a smoke run of a few minutes (f = 0.5 and a smaller grid)")
    p.add_argument("--out", type=Path, default=RESULTS / name, help="output folder")
    p.add_argument("--seed", type=int, default=0, help="base seed; every configuration derives its own")
    p.add_argument("--datasets", nargs="+", default=["adult", "retail"], choices=sorted(DATA))
    p.add_argument("--fs", nargs="+", type=float, default=list(fs), help="flip probabilities f")
    if methods:
        p.add_argument("--methods", nargs="+", default=list(METHODS), help="estimator names")
    if samplings:
        p.add_argument("--samplings", nargs="+", default=list(samplings), choices=["paper", "full"],
                       help="all records ('full') and/or the paper's share ('paper': 10%% of Adult, 50%% of retail)")
    p.add_argument("--rows", type=int, help="a seeded random sample of this many records (tests / smoke runs)")
    p.add_argument("--fresh", action="store_true", help="discard the existing log and start over")
    p.add_argument("--redo", action="store_true", help="recompute this run's configurations that are already logged")
    p.add_argument("--no-plot", action="store_true", help="only write the CSV log")
    return p


def start(p: argparse.ArgumentParser, argv: Sequence[str] | None, log: str | None = None,
          key: Sequence[str] = (), quick: dict | None = None) -> tuple[argparse.Namespace, ResultLog | None]:
    """Parse ``argv`` (with ``--quick``, options left at their default take ``quick``'s values, f = 0.5
    by default), append the command line to ``COMMANDS.txt`` and open the result log ``log``."""
    args = p.parse_args(argv)
    for option, value in {"fs": QUICK_FS, **(quick or {})}.items():
        if args.quick and getattr(args, option) == p.get_default(option):
            setattr(args, option, value)
    args.out.mkdir(parents=True, exist_ok=True)
    line = f"{time.strftime('%Y-%m-%d %H:%M:%S')}  {p.prog} {' '.join(sys.argv[1:] if argv is None else argv)}\n"
    with open(args.out / "COMMANDS.txt", "a", encoding="utf-8") as fh:
        fh.write(line)
    return args, None if log is None else ResultLog(args.out / log, key, fresh=args.fresh)


def finish(args: argparse.Namespace, log: ResultLog | None, plot) -> int:
    """Write the privacy record beside the log and, unless ``--no-plot``, ``plot(frame, out)``: of the
    log, or of the privacy record without one."""
    path = write_privacy(args.out, args.datasets, args.fs)
    if not args.no_plot:
        plot(pd.read_csv(path) if log is None else log.frame(), args.out)
    return 0


def progress(name: str, total: int):
    """A function to call after each of ``total`` steps: ``name: i/total`` and the time left on stderr."""
    bar, count = ConsoleProgress(), itertools.count(1)
    return lambda: bar(name, next(count), total)


def run(args: argparse.Namespace, log: ResultLog, name: str, jobs: list[dict], row) -> None:
    """Log ``row(job, records, reports, encode_seconds)`` for each of ``jobs`` not yet logged (``--redo``: all
    of them), in order: the records of its ``dataset`` and ``sampling`` (:func:`paper_sample`), encoded at its
    ``f`` (f = 0: no reports) with the seed ``seed_for(seed, "encode", dataset, sampling, f)``."""
    if args.redo:
        log.drop(**{column: {job[column] for job in jobs} for column in log.key})
    todo = [job for job in jobs if not log.done(**job)]
    step, data, block = progress(name, len(todo)), {}, (None, None, 0.0)
    for job in todo:
        ds, smp, f = job["dataset"], job["sampling"], job["f"]
        if (ds, smp) not in data:
            data[ds, smp] = paper_sample(load_data(ds, rows=args.rows, seed=args.seed), ds, smp, args.seed)
        if block[0] != (ds, smp, f):
            t0 = time.perf_counter()
            reports = bloom_reports(data[ds, smp], seed_for(args.seed, "encode", ds, smp, f), f=f) if f else None
            block = (ds, smp, f), reports, time.perf_counter() - t0
        log.append(row(job, data[ds, smp], *block[1:]))
        step()


def _fmt(v: Any) -> str:
    """A CSV cell, also the key of a logged configuration: floats to 10 significant digits."""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.10g}"
    return str(v)


class ResultLog:
    """Append-only CSV log keyed by configuration columns: a rerun skips the logged configurations.

    Each row is flushed and fsynced at once; a row with new columns widens the file (earlier rows get
    empty cells); a torn last line (a crash mid-write) is dropped on reload; ``fresh`` starts over.
    """

    def __init__(self, path: str | os.PathLike, key: Sequence[str], *, fresh: bool = False) -> None:
        self.path, self.key = Path(path), tuple(key)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fresh:
            self.path.unlink(missing_ok=True)
        self.columns: list[str] = []
        self.rows: list[list[str]] = []
        if self.path.exists() and self.path.stat().st_size > 0:
            with open(self.path, newline="", encoding="utf-8") as fh:
                self.columns, *rows = csv.reader(fh)
            self.rows = [r for r in rows if len(r) == len(self.columns)]
            if len(self.rows) < len(rows):
                self._rewrite()
        self._index()

    def _index(self) -> None:
        pos = [self.columns.index(k) for k in self.key] if self.columns else []
        self._done = {tuple(r[i] for i in pos) for r in self.rows}

    def _rewrite(self) -> None:
        with atomic_path(self.path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows([self.columns, *self.rows])

    def done(self, **cfg: Any) -> bool:
        """True when the configuration ``cfg`` (all key columns) is already logged."""
        return tuple(_fmt(cfg[k]) for k in self.key) in self._done

    def drop(self, **where: Iterable[Any]) -> int:
        """Remove the rows whose columns each take one of the given values (atomically); how many."""
        if not self.columns:
            return 0
        pos = {self.columns.index(c): {_fmt(v) for v in vals} for c, vals in where.items()}
        before = len(self.rows)
        self.rows = [r for r in self.rows if not all(r[i] in vals for i, vals in pos.items())]
        self._rewrite()
        self._index()
        return before - len(self.rows)

    def append(self, row: dict[str, Any]) -> None:
        """Write one row now; new columns widen the header."""
        new = not self.columns
        extra = [c for c in row if c not in self.columns]
        self.columns += extra
        if extra and not new:
            self.rows = [r + [""] * len(extra) for r in self.rows]
            self._rewrite()
        cells = [_fmt(row.get(c, "")) for c in self.columns]
        with open(self.path, "a", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows([self.columns, cells] if new else [cells])
            fh.flush()
            os.fsync(fh.fileno())
        self.rows.append(cells)
        self._done.add(tuple(_fmt(row[k]) for k in self.key))

    def frame(self) -> pd.DataFrame:
        """The log as a DataFrame (empty if nothing was written)."""
        return pd.read_csv(self.path) if self.columns else pd.DataFrame()


def seed_for(base: int, *parts: Any) -> int:
    """A 63-bit seed derived from ``base`` and a configuration (order independent of the run)."""
    msg = "\x00".join([str(base)] + [_fmt(p) for p in parts]).encode()
    return int.from_bytes(hashlib.blake2b(msg, digest_size=8).digest(), "little") >> 1


def load_data(name: str, *, rows: int | None = None, seed: int = 0):
    """All records of a dataset by the harness's loaders (``rows``: a seeded sample of that many; the
    embedded set: ``rows`` records, 4,000 by default, drawn with :data:`SPLIT_SEED`)."""
    data = datasets.load(name, (rows or 4000) if name == "embedded" else None, SPLIT_SEED)
    return _take(data, rows, seed_for(seed, "rows", name))


def _take(ds, rows: int | None, seed: int):
    """A seeded random sample of ``rows`` records in their order (all of them: ``rows`` None or too many)."""
    if rows is None or rows >= ds.n:
        return ds
    return ds.subset(np.sort(np.random.default_rng(seed).choice(ds.n, int(rows), replace=False)))


def train_test(name: str, *, rows: int | None = None, seed: int = 0):
    """The train and test splits: Adult's official files; otherwise 50/50 by a permutation seeded by
    :data:`SPLIT_SEED`.  ``rows`` caps each split with a seeded sample (tests / smoke runs)."""
    if name == "adult":
        from lopub.datasets import load_adult

        tr, te = load_adult(split="train"), load_adult(split="test")
    else:
        ds = load_data(name, rows=2 * rows if rows and name == "embedded" else None)
        perm = np.random.default_rng(SPLIT_SEED).permutation(ds.n)
        tr, te = ds.subset(np.sort(perm[:ds.n // 2])), ds.subset(np.sort(perm[ds.n // 2:]))
    return _take(tr, rows, seed_for(seed, "train", name)), _take(te, rows, seed_for(seed, "test", name))


def paper_sample(ds, name: str, sampling: str, seed: int):
    """``sampling="paper"``: the paper's share of records (10% Adult, 50% retail); ``"full"``: all."""
    if sampling not in ("paper", "full"):
        raise ValueError(f"sampling ({sampling!r}) must be 'paper' or 'full'")
    n = ds.n if sampling == "full" else max(1, round(DATA[name].sample * ds.n))
    return _take(ds, n, seed_for(seed, "sample", name))


def make_estimator(reports, method: str):
    """A fresh estimator session over ``reports`` by label (see :data:`METHODS`)."""
    from lopub.estimate import Estimator

    if method not in METHODS:
        raise ValueError(f"method ({method!r}) must be one of {list(METHODS)}")
    return Estimator(reports, **METHODS[method])


def privacy_rows(datasets: Iterable[str], fs: Iterable[float]) -> list[dict[str, Any]]:
    """Epsilon per attribute (the largest) and per record for each dataset and f (Eq. 8)."""
    from lopub.datasets import adult_domain, embedded_model, retail_domain

    domains = {"adult": adult_domain, "retail": retail_domain, "embedded": lambda: embedded_model().domain}
    out = []
    for name in datasets:
        dom = domains[name]()
        for f in fs:
            spec = bloom_spec(dom, f=f)
            out.append({"dataset": name, "f": f, "d": len(dom), "h": spec.h[0],
                        "eps_per_attribute": max(spec.epsilon_per_attribute), "eps_per_record": spec.epsilon,
                        "bits_per_report": spec.total_bits})
    return out


def privacy_caption(datasets: Iterable[str], fs: Iterable[float]) -> str:
    """Two short lines per dataset: epsilon per attribute | per record for each f (Eq. 8)."""
    lines = []
    for name, g in pd.DataFrame(privacy_rows(datasets, fs)).groupby("dataset", sort=False):
        per_f = [f"f={r.f:g}: {r.eps_per_attribute:.1f} | {r.eps_per_record:.0f}" for r in g.itertuples()]
        lines += [f"privacy, {name} (d={g.d.iloc[0]}, h=4, Eq. 8), eps per attribute | per record:",
                  "  " + "; ".join(per_f)]
    return "\n".join(lines)


def write_privacy(out: Path, datasets: Iterable[str], fs: Iterable[float]) -> Path:
    """Write ``privacy.csv`` (atomically), keeping the rows of earlier runs for other datasets or f."""
    df = pd.DataFrame(privacy_rows(datasets, fs))
    path = Path(out) / "privacy.csv"
    if path.exists():
        df = pd.concat([pd.read_csv(path), df], ignore_index=True).drop_duplicates(["dataset", "f"], keep="last")
        df = df.sort_values(["dataset", "f"], kind="stable").reset_index(drop=True)
    atomic_write_text(path, df.to_csv(index=False, float_format="%.6g"))
    return path


def save_figure(fig: plt.Figure, path: Path, caption: str = "") -> Path:
    """Save ``fig`` as PNG atomically, with ``caption`` (e.g. the privacy record) underneath."""
    if caption:
        fig.text(0.01, 0.005, caption, fontsize=6.5, va="bottom", ha="left", family="monospace")
        fig.subplots_adjust(bottom=0.1 + 0.04 * (caption.count("\n") + 1))
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=90)
    plt.close(fig)
    return path


def curves(ax, df: pd.DataFrame, by: str, x: str, y: str, fmt="o-") -> None:
    """One line of ``y`` against ``x`` per group of ``by`` on ``ax`` (``fmt``: a style or group -> style)."""
    for key, g in df.groupby(by):
        g = g.sort_values(x)
        ax.plot(g[x], g[y], fmt(key) if callable(fmt) else fmt, label=key)
