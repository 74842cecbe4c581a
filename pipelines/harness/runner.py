"""The grid: datasets x methods x epsilon x seeds -> tidy rows, one per release.

A row holds ``dataset, n, d, epsilon, seed, method, role, tvd, seconds,
status, extra`` (``status`` ok / timeout / error / skipped; ``extra`` the
method's other outputs as JSON).  Each call can run in a forked child under
a time limit; a method that timed out on a dataset is skipped on that
dataset's later cells (recorded as skipped, never silently dropped).
"""
from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.harness import datasets as ds_mod
from pipelines.harness.methods import METHODS, ROLES, set_source, truth

COLUMNS = ("dataset", "n", "d", "epsilon", "seed", "method", "role", "tvd", "seconds", "status", "extra")


@dataclass
class Grid:
    """What to run.

    Parameters
    ----------
    datasets : mapping name -> n (None: as shipped / the source's default)
    methods : names in :data:`pipelines.harness.methods.METHODS`
    epsilons, seeds : the per-record budgets and the mechanism seeds
    timeout : seconds per call (None: no limit, run in this process)
    data_seed : seed of generated data (None: the cell's seed, a new sample per seed)
    """

    datasets: Mapping[str, int | None]
    methods: Sequence[str]
    epsilons: Sequence[float]
    seeds: Sequence[int]
    timeout: float | None = None
    data_seed: int | None = 0
    skip: Callable[[str, object, str], str | None] = field(default=lambda name, data, method: None)

    def __post_init__(self) -> None:
        bad = [m for m in self.methods if m not in METHODS]
        if bad:
            raise ValueError(f"methods {bad} must be among {sorted(METHODS)}")
        bad = [d for d in self.datasets if d not in ds_mod.SOURCES]
        if bad:
            raise ValueError(f"datasets {bad} must be among {sorted(ds_mod.SOURCES)}")


def _child(fn, args, conn) -> None:
    os.setpgrp()  # its own process group: a timeout ends the workers it started too
    try:
        conn.send(("ok", fn(*args)))
    except BaseException as exc:  # noqa: BLE001  (any failure is the cell's error, sent to the parent)
        conn.send(("error", f"{type(exc).__name__}: {exc}"[:500]))
    finally:
        conn.close()


def call(fn, args: tuple, timeout: float | None) -> tuple[str, object]:
    """``("ok", fn(*args))``, ``("error", message)`` or ``("timeout", None)``."""
    if timeout is None:
        try:
            return "ok", fn(*args)
        except Exception as exc:  # noqa: BLE001  (one failing release must not end the grid)
            return "error", f"{type(exc).__name__}: {exc}"[:500]
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(fn, args, send))  # not daemonic: lopub may start workers
    proc.start()
    send.close()
    try:
        if not recv.poll(timeout):
            with contextlib.suppress(ProcessLookupError):  # (it may have ended just now)
                os.killpg(proc.pid, signal.SIGKILL)
            return "timeout", None
        try:
            return recv.recv()
        except EOFError:
            return "error", f"the child process died (exit code {proc.exitcode})"
    finally:
        proc.join(5)
        recv.close()


def _row(name, data, eps, seed, method, status, out, seconds) -> dict:
    out = dict(out or {}) if status == "ok" else {"message": out} if out else {}
    tvd = out.pop("tvd", float("nan"))
    return {"dataset": name, "n": data.n, "d": len(data.domain), "epsilon": float(eps), "seed": int(seed),
            "method": method, "role": ROLES[method], "tvd": float(tvd), "seconds": round(seconds, 3),
            "status": status, "extra": json.dumps(out, default=str)}


def run(grid: Grid, *, done: Sequence[dict] = (), save: Callable[[list[dict]], None] | None = None,
        log: Callable[[str], None] = print) -> list[dict]:
    """Run every cell of ``grid`` not already in ``done``; returns all rows (``done`` first)."""
    rows = list(done)
    have = {(r["dataset"], float(r["epsilon"]), int(r["seed"]), r["method"]) for r in rows}
    for name, n in grid.datasets.items():
        dead = {r["method"] for r in rows if r["dataset"] == name and r["status"] == "timeout"}
        cache: dict[int, object] = {}
        for seed in grid.seeds:
            dseed = seed if grid.data_seed is None else grid.data_seed
            for eps in grid.epsilons:
                for method in grid.methods:
                    if (name, float(eps), int(seed), method) in have:
                        continue
                    if dseed not in cache:
                        cache.clear()
                        cache[dseed] = ds_mod.load(name, n, dseed)
                    data = cache[dseed]
                    why = "timed out on an earlier cell" if method in dead else grid.skip(name, data, method)
                    if why:
                        row = _row(name, data, eps, seed, method, "skipped", why, 0.0)
                    else:
                        truth(data).fill()  # the true pair tables once, inherited by the forked calls
                        set_source(name, n, dseed)  # the cell's source, for a public sample of it
                        t0 = time.perf_counter()
                        status, out = call(METHODS[method], (data, eps, seed), grid.timeout)
                        row = _row(name, data, eps, seed, method, status, out, time.perf_counter() - t0)
                        if status == "timeout":
                            dead.add(method)
                    rows.append(row)
                    log(f"{name} eps={eps:g} seed={seed} {method}: {row['status']} tvd={row['tvd']:.4f} "
                        f"({row['seconds']:.1f} s)")
                    if save is not None:
                        save(rows)
    return rows


def save_rows(rows: list[dict], path: str | os.PathLike) -> None:
    """Write the tidy rows as CSV at ``path`` (``.csv``) and beside it as Parquet."""
    import pandas as pd

    from lopub.io import atomic_write_text

    path = Path(path)
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    atomic_write_text(path, df.to_csv(index=False))
    df.to_parquet(path.with_suffix(".parquet"), index=False)


def load_rows(path: str | os.PathLike) -> list[dict]:
    """Rows saved by :func:`save_rows` (empty when the file does not exist)."""
    import pandas as pd

    path = Path(path)
    if not path.exists():
        return []
    df = pd.read_csv(path, keep_default_na=False, na_values={"tvd": ["", "nan", "NaN"]})
    return df.to_dict("records")
