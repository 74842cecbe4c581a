"""File fuzzing and ``kill -9`` fault injection of every ``lopub`` subcommand (issue 25).

* :func:`fuzz`: generated FILES (:func:`tests.harden.strategies.file_cases`: CSV, domain, model,
  reports of every kind; valid, edited, damaged, nested 100,000 deep, swapped) read by a
  subcommand, and generated command lines of privacy, demo, compare-protocols, serve-plan and
  serve-export (:func:`~tests.harden.strategies.arg_cases`); in-process through
  :func:`lopub.cli.main` under a 10 s alarm.  Outcomes: ``clear`` (exit 2, one line, no
  traceback), ``correct`` (exit 0 and the result valid: a damaged file read as the original; the
  privacy figures satisfying Eq. (10); outputs that load), and the failures ``traceback``,
  ``hang``, ``vague``, ``silent`` (exit 0, wrong or unusable) and ``changed-input``.
* :func:`kill`: a fork server: lopub is imported once, each run is a forked child calling
  ``main(argv)``, SIGKILLed (with its process group) after a random delay; then the output must
  be absent or complete (it loads), the inputs unchanged, a re-run must succeed, and no
  temporary, staging or lock file may remain.
"""
from __future__ import annotations

import collections
import contextlib
import hashlib
import io
import json
import math
import os
import random
import re
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pandas as pd

from tests.harden.filekinds import _content, _readers, fx_original, writers

LIMIT_S = 10
TEMP = re.compile(r"^\..*\.(tmp|stage|lock|new)$")


class Hang(Exception):
    """The 10 s alarm rang."""


def _alarm(signum, frame):
    raise Hang


def digest(paths) -> dict:
    out = {}
    for p in map(Path, paths):
        for q in ([p] if p.is_file() else sorted(p.rglob("*")) if p.is_dir() else []):
            if q.is_file():
                out[str(q)] = hashlib.sha256(q.read_bytes()).hexdigest()
    return out


def run_main(argv: list[str]) -> tuple[object, str, str]:
    """(exit status or 'traceback'/'hang', stderr, stdout) of ``lopub argv`` in this process."""
    from lopub.cli import main

    err, out = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(LIMIT_S)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                code = main([str(x) for x in argv])
            except SystemExit as exc:
                code = exc.code
    except Hang:
        code = "hang"
    except BaseException as exc:  # noqa: BLE001 - a traceback is the outcome being counted
        code = "traceback"
        err.write(f"{type(exc).__name__}: {exc}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return code, err.getvalue(), out.getvalue()


# fixtures --------------------------------------------------------------------------------------
def make_fixtures(work: Path) -> dict[str, str]:
    """Valid inputs of every kind: CSV, domain, Bloom reports (file, dataset), marginal-sampling
    and oracle ``.npz``, model."""
    from lopub.cli import main

    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    n = 500
    df = pd.DataFrame({"a": rng.choice(list("xyz"), n), "b": rng.choice(list("uv"), n),
                       "c": rng.choice(list("pq"), n)})
    f = {k: str(work / k) for k in ("d.csv", "dom.json", "r.parquet", "ms.npz", "o.npz", "m.json", "dset")}
    df.to_csv(f["d.csv"], index=False)
    steps = [["schema", f["d.csv"], "--out", f["dom.json"]],
             ["encode", f["d.csv"], "--domain", f["dom.json"], "--f", "0.3", "--seed", "1", "--out", f["r.parquet"]],
             ["merge-reports", f["dset"], f["r.parquet"]],
             ["collect", f["d.csv"], "--domain", f["dom.json"], "--protocol", "marginals", "--epsilon", "2",
              "--seed", "1", "--out", f["ms.npz"]],
             ["collect", f["d.csv"], "--domain", f["dom.json"], "--protocol", "oue", "--epsilon", "2",
              "--seed", "1", "--out", f["o.npz"]],
             ["fit", f["r.parquet"], "--out", f["m.json"], "--jobs", "1"]]
    for argv in steps:
        assert main(argv + ["--quiet"]) == 0, argv
    return f


# fuzzing -----------------------------------------------------------------------------------------
def _errored(code, err: str, argv) -> tuple[str, str] | None:
    """The outcome of a case that did not exit 0 (None when it did)."""
    if code in ("traceback", "hang"):
        return code, f"{' '.join(argv)}: {err.strip()[-300:]}"
    if code == 2:
        lines = err.strip().splitlines()
        return ("clear", lines[-1]) if len(lines) == 1 and "Traceback" not in err else ("vague", err[-300:])
    return None if code == 0 else ("other-exit", f"{code}: {err[-200:]}")


def run_case(fx: dict, work: Path, kind: str, raw: bytes, how: str, argv_index: int) -> tuple[str, str]:
    """Outcome and message of one generated file case."""
    for p in work.iterdir():
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    suffix = {"csv": ".csv", "domain": ".json", "model": ".json", "bloom": ".parquet", "ms": ".npz",
              "oracle": ".npz"}[kind]
    target = work / f"in{suffix}"
    target.write_bytes(raw)
    commands = _readers(fx, work)[kind]
    argv = [x.replace("{X}", str(target)) for x in commands[argv_index % len(commands)]]
    inputs = [target] + [v for v in fx.values()]
    before = digest(inputs)
    code, err, _ = run_main(argv + ["--quiet"])
    if digest(inputs) != before:
        return "changed-input", " ".join(argv)
    if bad := _errored(code, err, argv):
        return bad
    if how in ("generated", "edited") or kind == "csv" or (kind == "domain" and how[:5] != "swap:"):
        # CSVs and domains (hand-written schemas) carry no checksum: a damaged one that still
        # parses is data as given (the command's output was checked to load by the command itself)
        return "correct", ""
    real = how.split(":")[1] if how.startswith("swap:") else kind  # a valid file of that kind
    if argv[0] not in {c[0] for c in _readers(fx, work)[real]}:  # read as what it is not
        return "silent", " ".join(argv)
    same = _content(real, str(target))
    return ("correct", "") if same is not None and same == _content(real, fx_original(fx, real)) \
        else ("silent", " ".join(argv))


def _privacy_ok(out: dict) -> bool:
    """Eq. (10): epsilon per attribute = 2 h ln((1 - f/2) / (f/2)) = 2 h x, per record d times it;
    checked where well-conditioned (f < 1/2: x = ln(2 - f) - ln f; else f = 2 / (1 + e^x)), 1e-9 relative."""
    f, h, d, eps = out["f"], out["h"], out["d"], out["epsilon_per_attribute"]
    x = eps / (2 * h)
    ok = math.isclose(x, math.log(2 - f) - math.log(f), rel_tol=1e-9) if f < 0.5 else \
        math.isclose(2 / (1 + math.exp(x)), f, rel_tol=1e-9)
    return ok and math.isclose(out["epsilon_per_record"], d * eps, rel_tol=1e-12)


def check_args_result(argv: list[str], stdout: str, work: Path) -> bool:
    """Whether a generated command line that exited 0 gave a valid result."""
    name = argv[0]
    if name == "privacy":
        return _privacy_ok(json.loads(stdout))
    if name == "compare-protocols":
        rows = json.loads(stdout)
        return bool(rows) and all(r["error"] is not None or (math.isfinite(r["mse_avg"]) and r["mse_avg"] >= 0)
                                  for r in rows)
    if name == "demo":
        from lopub.model.graphical import Model
        Model.load(work / "demo" / "model.json")
        return "tvd_2way_synthetic" in json.loads((work / "demo" / "summary.json").read_text())
    if name == "serve-plan":
        return json.loads((work / "sp.json").read_text())["format"].startswith("lopub-")
    return (work / "exp.npz").exists()


def run_args_case(fx: dict, work: Path, argv: list[str], domain_text: str) -> tuple[str, str]:
    """Outcome and message of one generated command line (privacy, demo, compare-protocols, serve-*)."""
    for p in work.iterdir():
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    (work / "gen.json").write_text(domain_text)
    shutil.copy(fx["d.csv"], work / "d.csv")
    inputs = [work / "gen.json", work / "d.csv"] + list(fx.values())
    before = digest(inputs)
    code, err, out = run_main(argv + ([] if argv[0] in ("privacy", "compare-protocols") else ["--quiet"]))
    if digest(inputs) != before:
        return "changed-input", " ".join(argv)
    if bad := _errored(code, err, argv):
        return bad
    try:
        return ("correct", "") if check_args_result(argv, out, work) else ("silent", " ".join(argv))
    except Exception as exc:  # noqa: BLE001 - an unusable result accepted with exit 0
        return "silent", f"{' '.join(argv)}: {type(exc).__name__}: {exc}"[:300]


def fuzz(work: Path, cases: int, *, seed: int = 0) -> tuple[dict, list]:
    """Run ``cases`` generated cases (files and command lines); (outcome counts per subcommand, failures)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from tests.harden.strategies import arg_cases, file_cases

    fx = make_fixtures(work / "fx")
    case_dir = work / "case"
    case_dir.mkdir(exist_ok=True)
    counts: dict = collections.defaultdict(collections.Counter)
    failures: list = []
    data = {k: Path(fx_original(fx, k)).read_bytes() for k in ("csv", "domain", "model", "bloom", "ms", "oracle")}
    cases_st = st.one_of(file_cases(data), arg_cases(str(case_dir)).map(lambda t: ("args", t[0], t[1])))

    @settings(max_examples=cases, deadline=None, database=None, derandomize=seed == 0,
              suppress_health_check=list(HealthCheck))
    @given(case=cases_st, which=st.integers(0, 5))
    def one(case, which):
        kind, raw, how = case
        if kind == "args":
            command, (outcome, msg) = raw[0], run_args_case(fx, case_dir, raw, how)
        else:
            outcome, msg = run_case(fx, case_dir, kind, raw, how, which)
            command = _readers(fx, case_dir)[kind][which % len(_readers(fx, case_dir)[kind])][0]
        counts[command][outcome] += 1
        if outcome not in ("clear", "correct"):
            failures.append((outcome, kind, how if kind != "args" else "", msg))

    one()
    return counts, failures


# kill -9 -----------------------------------------------------------------------------------------
def _leftovers(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*") if TEMP.match(p.name))


def fork_run(argv: list[str], delay: float | None = None, limit: float = 120.0) -> int | None:
    """Run ``lopub argv`` in a forked child of this process (lopub imported once); with ``delay``,
    SIGKILL the child's process group after ``delay`` s.  The exit status (None: killed)."""
    pid = os.fork()
    if pid == 0:  # the child: its own process group, no output, main(argv), exit
        code = 70
        try:
            os.setpgid(0, 0)
            os.dup2(os.open(os.devnull, os.O_RDWR), 1), os.dup2(1, 2)
            from lopub.cli import main
            code = main([str(x) for x in argv] + ["--quiet"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - any failure is exit 70
            code = 70
        os._exit(code)
    end = time.monotonic() + (limit if delay is None else delay)
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.002)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)  # kill -9 of the writer (and anything it started)
    os.waitpid(pid, 0)
    return None


def _size(out: Path) -> int | None:
    from lopub.reports.dataset import ReportsDataset
    return ReportsDataset.open(out).n if out.exists() else None


def kill_one(name: str, spec, fx: dict, w: Path, delay: float) -> tuple[str, str]:
    """Kill writer ``name`` after ``delay`` s; ``absent`` or ``complete`` or the failure."""
    argv, out, check = spec
    before, n0 = digest(list(fx.values())), (_size(Path(out)) if name == "encode-append" else None)
    killed = fork_run(argv, delay) is None
    if digest(list(fx.values())) != before:
        return "changed-input", name
    outcome = "absent"
    if name == "encode-append":  # all or nothing: the old rows, or the old and the new
        if _size(Path(out)) not in (n0, n0 + len(pd.read_csv(fx["d.csv"]))):
            return "half-written", f"{name}: {n0} -> {_size(Path(out))} rows"
        outcome = "complete" if _size(Path(out)) != n0 else "absent"
    if Path(out).exists():
        try:
            check(out)
        except Exception as exc:  # noqa: BLE001
            return "half-written", f"{name}: {type(exc).__name__}: {exc}"[:300]
        outcome = outcome if name == "encode-append" else "complete"
    if killed:  # the re-run: after a kill it must succeed (or say the output exists)
        if outcome == "complete" and name != "encode-append":
            shutil.rmtree(out) if Path(out).is_dir() else Path(out).unlink()
        if fork_run(argv) != 0:
            return "rerun-failed", name
        check(out)
    left = _leftovers(w)
    return ("leftover", f"{name}: {left}") if left else (outcome if killed else "finished", "")


def kill(work: Path, per_writer: int, *, seed: int = 0, only: list[str] | None = None) -> tuple[dict, list]:
    """``per_writer`` kills at random moments of each writer; (counts per writer, failures).

    Each writer runs once in full (a forked child, lopub imported once) to measure its duration
    T; each kill then forks a child and SIGKILLs it after a delay uniform in [0, 1.1 T]."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    fx = make_fixtures(work / "fx")
    rng = random.Random(seed)
    counts: dict = {}
    failures: list = []
    for name in (only or list(writers(fx, work / "x"))):
        w = work / f"k-{name}"
        w.mkdir(exist_ok=True)
        spec = writers(fx, w)[name]
        t0 = time.perf_counter()
        if fork_run(spec[0]) != 0:
            raise RuntimeError(f"{name}: {spec[0]} fails without a kill")
        full = time.perf_counter() - t0
        c = counts.setdefault(name, collections.Counter())
        for _ in range(per_writer):
            out = Path(spec[1])
            if name != "encode-append":
                shutil.rmtree(out) if out.is_dir() else out.unlink(missing_ok=True)
            outcome, msg = kill_one(name, spec, fx, w, rng.uniform(0.0, full * 1.1))
            c[outcome] += 1
            if outcome not in ("absent", "complete", "finished"):
                failures.append((outcome, msg))
        c["seconds"] = round(full, 2)
    return counts, failures
