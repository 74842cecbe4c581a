"""File fuzzing and ``kill -9`` fault injection of every ``lopub`` subcommand (issue 25).

* :func:`fuzz`: hypothesis strategies generate FILES (CSV tables, domains, models, plans and
  reports of every kind: valid, damaged by truncation or byte flips, re-encoded, or JSON nested
  100,000 deep) and a subcommand reading them; each case runs in-process through
  :func:`lopub.cli.main` under a 10 s alarm.  Outcomes: ``clear`` (exit 2, one line, no
  traceback), ``correct`` (exit 0 and the output is valid: loads back; for a damaged file, the
  file's content was unchanged by the damage), and the failures ``traceback``, ``hang``,
  ``silent`` (exit 0 on damaged content) and ``changed-input`` (an input's bytes changed).
* :func:`kill`: each writer runs as a subprocess killed (SIGKILL) after a random delay; then
  the output must be absent or complete (it loads), the inputs unchanged, and a re-run must
  succeed and leave no temporary, staging or lock file behind.
"""
from __future__ import annotations

import collections
import contextlib
import hashlib
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

LIMIT_S = 10
TEMP = re.compile(r"^\..*\.(tmp|stage|lock|new)$")


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def digest(paths) -> dict:
    out = {}
    for p in map(Path, paths):
        for q in ([p] if p.is_file() else sorted(p.rglob("*")) if p.is_dir() else []):
            if q.is_file():
                out[str(q)] = hashlib.sha256(q.read_bytes()).hexdigest()
    return out


def run_main(argv: list[str]) -> tuple[object, str]:
    """(exit status or 'traceback'/'hang', stderr) of ``lopub argv`` in this process."""
    from lopub.cli import main

    err = io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(LIMIT_S)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
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
    return code, err.getvalue()


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


# what each kind of input is read by ------------------------------------------------------------
def _readers(fx: dict, w: Path) -> dict[str, list[list[str]]]:
    """Per input kind, command lines with ``{X}`` where the generated file goes."""
    csv, dom, model = fx["d.csv"], fx["dom.json"], fx["m.json"]
    return {
        "csv": [["schema", "{X}", "--out", f"{w}/o.json"],
                ["encode", "{X}", "--domain", dom, "--f", "0.3", "--seed", "1", "--out", f"{w}/o.parquet"],
                ["collect", "{X}", "--domain", dom, "--protocol", "grr", "--epsilon", "2", "--seed", "1",
                 "--out", f"{w}/o.npz"],
                ["evaluate", "--real", "{X}", "--synthetic", csv, "--domain", dom],
                ["report", model, "--synthetic", "{X}", "--out", f"{w}/o.html"]],
        "domain": [["plan", "--domain", "{X}", "--n", "1000", "--epsilon", "1"],
                   ["encode", csv, "--domain", "{X}", "--f", "0.3", "--seed", "1", "--out", f"{w}/o.parquet"],
                   ["collect", csv, "--domain", "{X}", "--protocol", "auto", "--epsilon", "2", "--seed", "1",
                    "--out", f"{w}/o.npz"],
                   ["evaluate", "--real", csv, "--synthetic", csv, "--domain", "{X}"]],
        "model": [["synthesize", "{X}", "--n", "20", "--seed", "1", "--out", f"{w}/o.csv"],
                  ["query", "{X}", "--attrs", "a,b"],
                  ["graph", "{X}", "--out-json", f"{w}/o.json"],
                  ["export", "{X}", "--format", "uai", "--out", f"{w}/o.uai"],
                  ["report", "{X}", "--out", f"{w}/o.html"]],
        "bloom": [["estimate", "{X}", "--attrs", "a,b"], ["fit", "{X}", "--out", f"{w}/o.json", "--jobs", "1"],
                  ["estimate-freq", "{X}"], ["inspect-reports", "{X}"], ["graph", "{X}", "--jobs", "1"],
                  ["merge-reports", f"{w}/merged", "{X}"]],
        "ms": [["fit", "{X}", "--out", f"{w}/o.json"], ["estimate-freq", "{X}"], ["estimate", "{X}", "--attrs", "a"]],
        "oracle": [["estimate-freq", "{X}"], ["fit", "{X}", "--out", f"{w}/o.json"]],
    }


def _content(kind: str, path: str):
    """The file's content as lopub reads it (for comparing a damaged file with the original)."""
    from lopub.cli.oracle_files import load_reports
    from lopub.collect.reports import MarginalReports
    from lopub.data.domain import Domain
    from lopub.model.graphical import Model
    from lopub.reports.bloom import Reports

    try:
        if kind == "domain":
            return json.dumps(Domain.from_json(path).to_dict(), sort_keys=True)
        if kind == "model":
            return json.dumps(Model.load(path).to_dict(), sort_keys=True)
        if kind == "bloom":
            return Reports.load(path).packed.tobytes()
        if kind == "ms":
            r = MarginalReports.load(path)
            return r.subset.tobytes() + b"".join(g.tobytes() for g in r.groups)
        if kind == "oracle":
            meta, arrays = load_reports(path)
            return json.dumps(meta, sort_keys=True).encode() + b"".join(arrays[k].tobytes() for k in sorted(arrays))
        if kind == "csv":
            return pd.read_csv(path, dtype=str, keep_default_na=False).to_csv()
    except Exception:  # noqa: BLE001 - unreadable content: not the original
        return None
    return None


# strategies --------------------------------------------------------------------------------------
def strategies(fx: dict):
    """A hypothesis strategy of ``(kind, file bytes, how)`` cases."""
    from hypothesis import strategies as st

    originals = {"csv": fx["d.csv"], "domain": fx["dom.json"], "model": fx["m.json"], "bloom": fx["r.parquet"],
                 "ms": fx["ms.npz"], "oracle": fx["o.npz"]}
    data = {k: Path(v).read_bytes() for k, v in originals.items()}
    label = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
    deep = st.integers(1, 100_000).map(lambda d: ("[" * d + "]" * d).encode())

    @st.composite
    def damaged(draw):
        kind = draw(st.sampled_from(sorted(data)))
        raw = bytearray(data[kind])
        how = draw(st.sampled_from(["flip", "truncate", "zero", "append", "deep", "swap"]))
        if how == "flip":
            for _ in range(draw(st.integers(1, 4))):
                pos = draw(st.integers(0, len(raw) - 1))
                raw[pos] ^= draw(st.integers(1, 255))
        elif how == "truncate":
            raw = raw[:draw(st.integers(0, len(raw) - 1))]
        elif how == "zero":
            start = draw(st.integers(0, len(raw) - 1))
            raw[start:start + draw(st.integers(1, 64))] = b"\0" * len(raw[start:start + 64])
        elif how == "append":
            raw += draw(st.binary(min_size=1, max_size=64))
        elif how == "deep":
            raw = bytearray(draw(deep))
        else:  # another kind's file in place of this one: "swap:<its kind>"
            other = draw(st.sampled_from(sorted(data)))
            raw, how = bytearray(data[other]), f"swap:{other}"
        return kind, bytes(raw), how

    @st.composite
    def csv_table(draw):
        cols = draw(st.lists(label, min_size=1, max_size=5))
        rows = draw(st.lists(st.lists(label, min_size=len(cols), max_size=len(cols)), max_size=30))
        frame = pd.DataFrame(rows, columns=range(len(cols)))
        text = ",".join(json.dumps(c) for c in cols) + "\n" + frame.to_csv(index=False, header=False)
        return "csv", text.encode("utf-8", "surrogatepass"), "generated"

    @st.composite
    def json_doc(draw):
        kind = draw(st.sampled_from(["domain", "model"]))
        doc = json.loads(data[kind])
        leaf = st.none() | st.booleans() | st.integers() | st.floats() | label
        value = draw(st.recursive(leaf, lambda k: st.lists(k, max_size=3)
                                  | st.dictionaries(label, k, max_size=3), max_leaves=8))
        keys = list(doc) if isinstance(doc, dict) else []
        if keys:
            doc[draw(st.sampled_from(keys))] = value
        return kind, json.dumps(doc).encode(), "edited"

    return st.one_of(damaged(), csv_table(), json_doc())


# fuzzing -----------------------------------------------------------------------------------------
def run_case(fx: dict, work: Path, kind: str, raw: bytes, how: str, argv_index: int) -> tuple[str, str]:
    """Outcome and message of one generated case."""
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
    code, err = run_main(argv + ["--quiet"])
    if digest(inputs) != before:
        return "changed-input", " ".join(argv)
    if code in ("traceback", "hang"):
        return code, f"{' '.join(argv)}: {err.strip()[-300:]}"
    if code == 2:
        lines = err.strip().splitlines()
        return ("clear", lines[-1]) if len(lines) == 1 and "Traceback" not in err else ("vague", err[-300:])
    if code == 0:
        if how in ("generated", "edited") or kind == "csv":
            # a CSV carries no checksum: a damaged one that still parses is data as given (the
            # command's output was checked to load by the command itself)
            return "correct", ""
        real = how.split(":")[1] if how.startswith("swap:") else kind  # a valid file of that kind
        if argv[0] not in {c[0] for c in _readers(fx, work)[real]}:  # read as what it is not
            return "silent", " ".join(argv)
        same = _content(real, str(target))
        return ("correct", "") if same is not None and same == _content(real, fx_original(fx, real)) \
            else ("silent", " ".join(argv))
    return "other-exit", f"{code}: {err[-200:]}"


def fx_original(fx: dict, kind: str) -> str:
    return {"csv": fx["d.csv"], "domain": fx["dom.json"], "model": fx["m.json"], "bloom": fx["r.parquet"],
            "ms": fx["ms.npz"], "oracle": fx["o.npz"]}[kind]


def fuzz(work: Path, cases: int, *, seed: int = 0) -> tuple[collections.Counter, list]:
    """Run ``cases`` generated file cases; (outcome counts, failures)."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    fx = make_fixtures(work / "fx")
    case_dir = work / "case"
    case_dir.mkdir(exist_ok=True)
    counts: collections.Counter = collections.Counter()
    failures: list = []

    @settings(max_examples=cases, deadline=None, database=None, derandomize=seed == 0,
              suppress_health_check=list(HealthCheck))
    @given(case=strategies(fx), which=st.integers(0, 5))
    def one(case, which):
        kind, raw, how = case
        outcome, msg = run_case(fx, case_dir, kind, raw, how, which)
        counts[outcome] += 1
        if outcome not in ("clear", "correct"):
            failures.append((outcome, kind, how, msg))

    one()
    return counts, failures


# kill -9 -----------------------------------------------------------------------------------------
def writers(fx: dict, w: Path) -> dict[str, tuple[list[str], str, object]]:
    """Writer name -> (argv, output path, check(output) raising when incomplete)."""
    from lopub.cli.oracle_files import load_reports
    from lopub.collect.reports import MarginalReports
    from lopub.data.domain import Domain
    from lopub.model.graphical import Model
    from lopub.reports.bloom import Reports
    from lopub.reports.dataset import ReportsDataset

    def folder(p):
        ds = ReportsDataset.open(p)
        ds.verify()
        assert ds.n > 0

    def html(p):
        assert Path(p).read_text().rstrip().endswith("</html>")

    csv, dom, model = fx["d.csv"], fx["dom.json"], fx["m.json"]
    return {
        "schema": (["schema", csv, "--out", f"{w}/dom.json"], f"{w}/dom.json", Domain.from_json),
        "encode": (["encode", csv, "--domain", dom, "--f", "0.3", "--out", f"{w}/r.parquet"], f"{w}/r.parquet",
                   Reports.load),
        "encode-folder": (["encode", csv, "--domain", dom, "--f", "0.3", "--out", f"{w}/ds"], f"{w}/ds", folder),
        "encode-append": (["encode", csv, "--domain", dom, "--f", "0.3", "--append", "--out", f"{w}/app"],
                          f"{w}/app", folder),
        "collect": (["collect", csv, "--domain", dom, "--protocol", "marginals", "--epsilon", "2",
                     "--out", f"{w}/ms.npz"], f"{w}/ms.npz", MarginalReports.load),
        "collect-oracle": (["collect", csv, "--domain", dom, "--protocol", "olh", "--epsilon", "2",
                            "--out", f"{w}/o.npz"], f"{w}/o.npz", load_reports),
        "fit": (["fit", fx["r.parquet"], "--out", f"{w}/m.json"], f"{w}/m.json", Model.load),
        "synthesize": (["synthesize", model, "--n", "20000", "--out", f"{w}/s.csv"], f"{w}/s.csv",
                       lambda p: len(pd.read_csv(p)) == 20000 or (_ for _ in ()).throw(AssertionError("rows"))),
        "graph": (["graph", model, "--out-json", f"{w}/g.json"], f"{w}/g.json", lambda p: json.loads(Path(p).read_text())),
        "report": (["report", model, "--out", f"{w}/r.html"], f"{w}/r.html", html),
        "export": (["export", model, "--format", "uai", "--out", f"{w}/m.uai"], f"{w}/m.uai",
                   lambda p: Path(p).read_text().startswith("MARKOV") or (_ for _ in ()).throw(AssertionError("uai"))),
        "merge-reports": (["merge-reports", f"{w}/merged", fx["r.parquet"], fx["dset"]], f"{w}/merged", folder),
    }


def _leftovers(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*") if TEMP.match(p.name))


def kill_one(name: str, spec, fx: dict, w: Path, delay: float) -> tuple[str, str]:
    """Kill writer ``name`` after ``delay`` s; outcome ``ok`` or the failure."""
    argv, out, check = spec
    if name == "encode-append" and not Path(out).exists():  # a dataset to append to
        subprocess.run([sys.executable, "-m", "lopub"] + argv + ["--quiet"], check=True,
                       env={**os.environ, "OMP_NUM_THREADS": "1"})
    inputs = [v for v in fx.values()]
    before = digest(inputs)
    proc = subprocess.Popen([sys.executable, "-m", "lopub"] + argv + ["--quiet"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "OMP_NUM_THREADS": "1"})
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if digest(inputs) != before:
        return "changed-input", name
    if Path(out).exists():
        try:
            check(out)
        except Exception as exc:  # noqa: BLE001
            return "half-written", f"{name}: {type(exc).__name__}: {exc}"[:300]
    rerun = subprocess.run([sys.executable, "-m", "lopub"] + argv + ["--quiet"],
                           capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if rerun.returncode != 0 and "already" not in rerun.stderr and "existing" not in rerun.stderr:
        return "rerun-failed", f"{name}: {rerun.stderr.strip()[-200:]}"
    left = _leftovers(w)
    if left:
        return "leftover", f"{name}: {left}"
    return "ok", ""


def kill(work: Path, per_writer: int, *, seed: int = 0, only: list[str] | None = None) -> tuple[dict, list]:
    """``per_writer`` kills at random moments of each writer; (counts per writer, failures)."""
    fx = make_fixtures(work / "fx")
    rng = random.Random(seed)
    counts: dict = {}
    failures: list = []
    for name in (only or list(writers(fx, work / "x"))):
        w = work / f"k-{name}"
        w.mkdir(exist_ok=True)
        spec = writers(fx, w)[name]
        t0 = time.perf_counter()  # one full run: the window in which to kill
        subprocess.run([sys.executable, "-m", "lopub"] + spec[0] + ["--quiet"], check=True)
        full = time.perf_counter() - t0
        c = counts.setdefault(name, collections.Counter())
        for _ in range(per_writer):
            out = Path(spec[1])
            if name != "encode-append":
                shutil.rmtree(out) if out.is_dir() else out.unlink(missing_ok=True)
            outcome, msg = kill_one(name, spec, fx, w, rng.uniform(0.0, full * 1.1))
            c[outcome] += 1
            if outcome != "ok":
                failures.append((outcome, msg))
    return counts, failures
