"""Shared runner of the LoPub reproduction experiments (Ren et al., IEEE TIFS 2018, Sec. VI).

The common command line (:func:`base_parser`, :func:`start`, :func:`finish`), a
resumable CSV log (:class:`ResultLog`: one row per finished configuration,
flushed at once; a rerun skips what is logged), progress lines, the datasets,
splits and the paper's sampling, per-configuration seeds (:func:`seed_for`,
independent of run order), the privacy record (Eq. 8) and atomic figure writes.
"""
from __future__ import annotations

import argparse
import csv
import functools
import hashlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

# Imported here so that no timed estimator call pays for loading scikit-learn (~2 s; the
# paper's Lasso imports it lazily and its first call would otherwise look 100x slower).
import sklearn.linear_model  # noqa: E402,F401

from lopub.data.dataset import Dataset  # noqa: E402
from lopub.io import atomic_path, atomic_write_text  # noqa: E402
from lopub.reports.spec import CollectionSpec  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
FS = (0.1, 0.3, 0.5, 0.7, 0.9)
QUICK_FS = (0.5,)
#: Seed of the documented 50/50 train/test split of retail (and of the embedded set).
SPLIT_SEED = 20180101


@dataclass(frozen=True)
class DataConfig:
    """Per-dataset settings taken from the paper (Sec. VI)."""

    name: str
    phi: float            # correlation identification threshold
    ks: tuple[int, ...]   # k of the k-way marginals in the AVD experiment
    sample: float         # the paper's sampling for the estimation experiments
    phis: tuple[float, ...]  # phi values of the pruning tables


DATA = {
    "adult": DataConfig("adult", 0.4, (2, 3), 0.10, (0.1, 0.2, 0.3, 0.4, 0.5)),
    "retail": DataConfig("retail", 0.25, (3, 5), 0.50, (0.1, 0.2, 0.3)),
    # a known Bayesian network (13 attributes); used by the tests and --quick smoke runs
    "embedded": DataConfig("embedded", 0.4, (2, 3), 0.50, (0.1, 0.3, 0.5)),
}


# --------------------------------------------------------------------- CLI
def base_parser(name: str, description: str, *, methods: Sequence[str] = (),
                datasets: Sequence[str] = ("adult", "retail")) -> argparse.ArgumentParser:
    """Command line shared by every experiment; output in ``results/<name>``; ``--methods`` when
    ``methods`` (the default estimators) is not empty."""
    p = argparse.ArgumentParser(prog=f"python -m pipelines.repro.{name}", description=description,
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="few subsets, one repetition, f = 0.5 only (a few minutes)")
    p.add_argument("--out", type=Path, default=RESULTS / name, help="output folder")
    p.add_argument("--seed", type=int, default=0, help="base seed; every configuration derives its own")
    p.add_argument("--datasets", nargs="+", default=list(datasets), choices=sorted(DATA))
    p.add_argument("--fs", nargs="+", type=float, default=None,
                   help=f"flip probabilities f (default {list(FS)}; --quick: {list(QUICK_FS)})")
    if methods:
        p.add_argument("--methods", nargs="+", default=list(methods), help="estimator names")
    p.add_argument("--rows", type=int, default=None,
                   help="use a seeded random sample of this many records (tests / smoke runs)")
    p.add_argument("--fresh", action="store_true", help="discard the existing log and start over")
    p.add_argument("--redo", action="store_true",
                   help="recompute the rows of this run's datasets, f and methods that are already "
                        "in the log (e.g. after an estimator changed); other rows are kept")
    p.add_argument("--no-plot", action="store_true", help="only write the CSV log")
    return p


def start(p: argparse.ArgumentParser, argv: Sequence[str] | None, log_name: str | None = None,
          key: Sequence[str] = ()) -> tuple[argparse.Namespace, ResultLog | None]:
    """Parse ``argv``, record the command line in ``COMMANDS.txt`` and open the result log."""
    args = p.parse_args(argv)
    record_run(args.out, p.prog.rsplit(".", 1)[1], sys.argv[1:] if argv is None else argv)
    return args, None if log_name is None else ResultLog(args.out / log_name, key, fresh=args.fresh)


def finish(args: argparse.Namespace, fs: Iterable[float], log: ResultLog, plot) -> int:
    """Write the privacy record beside the log and, unless ``--no-plot``, the plots of the log."""
    write_privacy(args.out, args.datasets, fs)
    if not args.no_plot:
        plot(log.frame(), args.out)
    return 0


def blocks(args: argparse.Namespace, log: ResultLog, prog: Progress, samplings: Sequence[str],
           fs: Sequence[float], jobs) -> Iterable[tuple]:
    """Per dataset, sampling and f with configurations left in ``log`` (the others count as skipped
    steps of ``prog``): ``(name, sampling, f, records, reports, left, encode_seconds)``.

    ``jobs(name, sampling, f)`` lists the block's configurations (all key columns, in the log's
    column order); the records (:func:`paper_sample`) are drawn and encoded (seed
    ``seed_for(seed, "encode", name, sampling, f)``) only when work is left.
    """
    for name in args.datasets:
        ds = load_data(name, rows=args.rows, seed=args.seed)
        for smp in samplings:
            part = None
            for f in fs:
                left = prog.pending(log, jobs(name, smp, f))
                if not left:
                    continue
                if part is None:
                    part = paper_sample(ds, name, smp, args.seed)
                t0 = time.perf_counter()
                reports = encode(part, f, seed_for(args.seed, "encode", name, smp, f))
                yield name, smp, f, part, reports, left, time.perf_counter() - t0


def resolve_fs(args: argparse.Namespace) -> tuple[float, ...]:
    """The f values of a run: ``--fs``, else the quick or the full grid."""
    if args.fs:
        return tuple(float(f) for f in args.fs)
    return QUICK_FS if args.quick else FS


# ------------------------------------------------------------- result log
def _fmt(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.10g}"
    return str(v)


class ResultLog:
    """Append-only, resumable CSV log keyed by configuration columns.

    Parameters
    ----------
    path : path-like
        CSV file; created with a header on the first row.
    key : sequence of str
        Columns that identify a configuration (e.g. dataset, f, method, subset).
    fresh : bool
        Delete an existing file first.

    Notes
    -----
    Each :meth:`append` opens the file, writes one row, flushes and fsyncs,
    so an interrupted run keeps every finished row.  A row with new columns
    widens the file (atomically; earlier rows get empty cells).  A half-written last line
    (a crash in the middle of a write) is dropped on reload.
    """

    def __init__(self, path: str | os.PathLike, key: Sequence[str], *, fresh: bool = False) -> None:
        self.path = Path(path)
        self.key = tuple(key)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fresh and self.path.exists():
            self.path.unlink()
        self.columns: list[str] | None = None
        self._done: set[tuple[str, ...]] = set()
        if self.path.exists() and self.path.stat().st_size > 0:
            self._reload()

    def _rows(self) -> list[list[str]]:
        with open(self.path, newline="", encoding="utf-8") as fh:
            return list(csv.reader(fh))

    def _rewrite(self, rows: list[list[str]]) -> None:
        """Replace the file atomically by the header and ``rows``."""
        with atomic_path(self.path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows([self.columns] + rows)

    def _reload(self) -> None:
        rows = self._rows()
        self.columns = rows[0]
        good = [r for r in rows[1:] if len(r) == len(self.columns)]
        if len(good) != len(rows) - 1:  # drop a torn last line
            self._rewrite(good)
        pos = [self.columns.index(k) for k in self.key]
        self._done = {tuple(r[i] for i in pos) for r in good}

    def drop(self, **where: Iterable[Any]) -> int:
        """Remove the rows whose columns take one of the given values; returns how many.

        ``log.drop(method=["moment"], f=[0.5, 0.9])`` drops the moment rows at those f.
        The file is rewritten atomically.
        """
        if self.columns is None:
            return 0
        rows = self._rows()[1:]
        pos = {self.columns.index(c): {_fmt(v) for v in vals} for c, vals in where.items()}
        keep = [r for r in rows if not all(r[i] in vals for i, vals in pos.items())]
        self._rewrite(keep)
        self._reload()
        return len(rows) - len(keep)

    def done(self, **cfg: Any) -> bool:
        """True when the configuration ``cfg`` (all key columns) is already logged."""
        return tuple(_fmt(cfg[k]) for k in self.key) in self._done

    def append(self, row: dict[str, Any]) -> None:
        """Write one row now (flush + fsync); new columns widen the header."""
        if self.columns is None:
            self.columns = list(row)
            new = True
        else:
            new = False
            extra = [c for c in row if c not in self.columns]
            if extra:
                self._widen(extra)
        with open(self.path, "a", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            if new:
                w.writerow(self.columns)
            w.writerow([_fmt(row.get(c, "")) for c in self.columns])
            fh.flush()
            os.fsync(fh.fileno())
        self._done.add(tuple(_fmt(row[k]) for k in self.key))

    def _widen(self, extra: list[str]) -> None:
        """Add columns (a newer script version logs more); earlier rows get empty cells."""
        rows = self._rows()[1:]
        self.columns = self.columns + extra
        self._rewrite([r + [""] * len(extra) for r in rows])

    def frame(self) -> pd.DataFrame:
        """The log as a DataFrame (empty if nothing was written)."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return pd.DataFrame()
        return pd.read_csv(self.path)


class Progress:
    """``[i/total] message  (elapsed, eta)`` lines on stderr."""

    def __init__(self, total: int, label: str, stream=None) -> None:
        self.total, self.label, self.i = max(int(total), 1), label, 0
        self.stream = stream or sys.stderr
        self.t0 = time.perf_counter()

    def skip(self, count: int) -> None:
        """``count`` configurations already in the log."""
        for _ in range(count):
            self.step(skipped=True)

    def pending(self, log: ResultLog, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The ``jobs`` (key columns) not yet in ``log``; the others count as skipped steps."""
        left = [j for j in jobs if not log.done(**j)]
        self.skip(len(jobs) - len(left))
        return left

    def step(self, msg: str = "", *, skipped: bool = False) -> None:
        self.i += 1
        el = time.perf_counter() - self.t0
        eta = el / self.i * (self.total - self.i)
        tag = "skip (in log)" if skipped else msg
        print(f"[{self.label} {self.i}/{self.total}] {tag}  ({el:.0f}s, eta {eta:.0f}s)",
              file=self.stream, flush=True)


# ------------------------------------------------------------------- seeds
def seed_for(base: int, *parts: Any) -> int:
    """A 63-bit seed derived from ``base`` and a configuration (order independent of the run)."""
    msg = "\x00".join([str(base)] + [_fmt(p) for p in parts]).encode()
    return int.from_bytes(hashlib.blake2b(msg, digest_size=8).digest(), "little") >> 1


# -------------------------------------------------------------------- data
def load_data(name: str, *, rows: int | None = None, seed: int = 0) -> Dataset:
    """All records of a dataset (``rows``: a seeded sample of that many)."""
    from lopub.datasets import embedded, load_adult, load_retail

    if name == "adult":
        ds = load_adult(split="all")
    elif name == "retail":
        ds = load_retail()
    elif name == "embedded":
        ds = embedded(rows or 4000, rng=SPLIT_SEED)
    else:
        raise ValueError(f"dataset ({name!r}) must be one of {sorted(DATA)}")
    return _take(ds, rows, seed_for(seed, "rows", name))


def _take(ds: Dataset, rows: int | None, seed: int) -> Dataset:
    if rows is None or rows >= ds.n:
        return ds
    idx = np.sort(np.random.default_rng(seed).choice(ds.n, int(rows), replace=False))
    return ds.subset(idx)


def train_test(name: str, *, rows: int | None = None, seed: int = 0) -> tuple[Dataset, Dataset]:
    """The train and test splits.

    Adult: the official ``adult.data`` / ``adult.test`` files.  Retail (no
    official split) and the embedded set: a 50/50 split by a random
    permutation with the fixed seed :data:`SPLIT_SEED`; the test half is used
    only for the final accuracy, never for choosing anything.
    ``rows`` caps each split with a seeded sample (tests / smoke runs).
    """
    if name == "adult":
        from lopub.datasets import load_adult

        tr, te = load_adult(split="train"), load_adult(split="test")
    else:
        ds = load_data(name, rows=None if name != "embedded" else (2 * rows if rows else None))
        perm = np.random.default_rng(SPLIT_SEED).permutation(ds.n)
        half = ds.n // 2
        tr, te = ds.subset(np.sort(perm[:half])), ds.subset(np.sort(perm[half:]))
    return (_take(tr, rows, seed_for(seed, "train", name)),
            _take(te, rows, seed_for(seed, "test", name)))


def paper_sample(ds: Dataset, name: str, sampling: str, seed: int) -> Dataset:
    """``sampling="paper"``: the paper's share of records (10% Adult, 50% retail); ``"full"``: all."""
    if sampling == "full":
        return ds
    if sampling != "paper":
        raise ValueError(f"sampling ({sampling!r}) must be 'paper' or 'full'")
    n = max(1, round(DATA[name].sample * ds.n))
    idx = np.sort(np.random.default_rng(seed_for(seed, "sample", name)).choice(ds.n, n, replace=False))
    return ds.subset(idx)


def make_spec(ds: Dataset, f: float) -> CollectionSpec:
    """The paper's Bloom settings: m = 128, h = 4 (m = 32 for binary attributes)."""
    return _spec(ds.domain, float(f))


@functools.lru_cache(maxsize=64)
def _spec(domain, f: float) -> CollectionSpec:
    return CollectionSpec.from_domain(domain, f=f)


def encode(ds: Dataset, f: float, seed: int):
    """Simulated LDP reports of every record of ``ds`` at flip probability ``f`` (seeded)."""
    from lopub.client import encode as _encode

    return _encode(ds, make_spec(ds, f), rng=seed)


#: Estimators compared, by label: (``Estimator`` method, options).
#: "lasso+em" is the paper's Alg. 3 (support from Alg. 2); "hybrid" takes its
#: support from moment regression, which sees the joint.
METHODS = {
    "em": ("em", {}),
    "lasso": ("lasso", {}),
    "lasso+em": ("hybrid", {"support": "lasso"}),
    "moment": ("moment", {}),
    "hybrid": ("hybrid", {"support": "moment"}),
}


def make_estimator(reports, method: str):
    """A fresh estimator session over ``reports`` by label (see :data:`METHODS`)."""
    from lopub.estimate import Estimator

    if method not in METHODS:
        raise ValueError(f"method ({method!r}) must be one of {list(METHODS)}")
    name, opts = METHODS[method]
    return Estimator(reports, method=name, **opts)


# ----------------------------------------------------------------- privacy
def privacy_rows(datasets: Iterable[str], fs: Iterable[float]) -> list[dict[str, Any]]:
    """Epsilon per attribute (min/max over attributes) and per record for each dataset and f."""
    from lopub.datasets import adult_domain, embedded_model, retail_domain

    doms = {"adult": adult_domain, "retail": retail_domain, "embedded": lambda: embedded_model().domain}
    out = []
    for name in datasets:
        dom = doms[name]()
        for f in fs:
            spec = CollectionSpec.from_domain(dom, f=f)
            e = spec.epsilon_per_attribute
            out.append({"dataset": name, "f": f, "d": len(dom), "h": spec.h[0],
                        "eps_per_attribute": max(e), "eps_per_record": spec.epsilon,
                        "bits_per_report": spec.total_bits})
    return out


def privacy_caption(datasets: Iterable[str], fs: Iterable[float]) -> str:
    """Two short lines per dataset: epsilon per attribute | per record for each f (Eq. 8)."""
    rows = privacy_rows(datasets, fs)
    lines = []
    for name in dict.fromkeys(r["dataset"] for r in rows):
        rs = [r for r in rows if r["dataset"] == name]
        lines.append(f"privacy, {name} (d={rs[0]['d']}, h=4, Eq. 8), eps per attribute | per record:")
        lines.append("  " + "; ".join(f"f={r['f']:g}: {r['eps_per_attribute']:.1f} | {r['eps_per_record']:.0f}"
                                      for r in rs))
    return "\n".join(lines)


def write_privacy(out: Path, datasets: Iterable[str], fs: Iterable[float]) -> Path:
    """Write ``privacy.csv`` beside an experiment's plots (atomically).

    Rows of earlier runs into the same folder (other datasets or f) are kept: results
    accumulate over resumed and partial runs, and so does their privacy record.
    """
    df = pd.DataFrame(privacy_rows(datasets, fs))
    path = Path(out) / "privacy.csv"
    if path.exists():
        old = pd.read_csv(path)
        df = pd.concat([old, df], ignore_index=True).drop_duplicates(["dataset", "f"], keep="last")
        df = df.sort_values(["dataset", "f"], kind="stable").reset_index(drop=True)
    atomic_write_text(path, df.to_csv(index=False, float_format="%.6g"))
    return path


# ------------------------------------------------------------------- plots
def save_figure(fig: plt.Figure, path: str | os.PathLike, caption: str = "") -> Path:
    """Save ``fig`` as PNG atomically, with ``caption`` (e.g. the privacy record) underneath."""
    if caption:
        fig.text(0.01, 0.005, caption, fontsize=6.5, va="bottom", ha="left", family="monospace")
        fig.subplots_adjust(bottom=0.1 + 0.04 * (caption.count("\n") + 1))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=90)
    plt.close(fig)
    return path


def curves(ax, df: pd.DataFrame, by, x: str, y: str, fmt: str = "o-", label=str) -> None:
    """One line of ``y`` against ``x`` per group of ``by`` on ``ax``, labelled ``label(group)``."""
    for key, g in df.groupby(by):
        g = g.sort_values(x)
        ax.plot(g[x], g[y], fmt(key) if callable(fmt) else fmt, label=label(key))


def write_table(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write a summary table atomically as CSV."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, df.to_csv(index=False, float_format="%.6g"))
    return path


def record_run(out: str | os.PathLike, name: str, argv: Sequence[str]) -> None:
    """Append the command line of this run to ``<out>/COMMANDS.txt`` (provenance for RESULTS.md)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    line = f"{time.strftime('%Y-%m-%d %H:%M:%S')}  python -m pipelines.repro.{name} {' '.join(argv)}\n"
    with open(out / "COMMANDS.txt", "a", encoding="utf-8") as fh:
        fh.write(line)
