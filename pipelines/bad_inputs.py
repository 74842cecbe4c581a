"""Run hundreds of generated bad inputs through every ``lopub`` subcommand and count the outcomes.

Each case is a valid command line with one argument made bad (a bad number, a missing, empty,
damaged or wrong-kind file, an impossible combination); each expects an error.  Outcomes:
``clear`` (exit 2, one line without traceback naming the parameter, its value or the file),
``vague`` (exit 2, several lines or naming none), ``traceback``, ``silent`` (exit 0),
``changed-output`` (an existing output changed), ``leftover-temp`` (a temporary, staging or lock
file remained).  Cases run in-process through :func:`lopub.cli.main`, a few also as processes.
A case is a dict: ``argv`` (without ``lopub``), ``names`` (one of which a clear message
contains) and optionally ``sentinel`` (an existing output that must survive).
``--fuzz N`` (generated files and command lines) and ``--kill N`` (SIGKILL at N random moments
of every writer) are in :mod:`pipelines.fault_harness`.

Usage: ``python -m pipelines.bad_inputs [--list] [--subprocess N] [--fuzz N] [--kill N]``
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: bad values of a number that must be finite and > 0
BAD_POS = ["0", "-1", "nan", "inf", "-inf", "abc", "", "1e400"]
#: bad values of a probability in (0, 1)
BAD_UNIT = ["0", "1", "-0.1", "1.5", "nan", "inf", "abc", ""]
#: bad values of an integer >= 1
BAD_COUNT = ["0", "-1", "abc", "1.5", "", "nan"]
HUGE = "100000000000000"


def make_fixtures(work: Path) -> dict[str, str]:
    """Valid inputs (those of :func:`pipelines.fault_harness.make_fixtures`, a numeric CSV, a prior)
    and damaged variants."""
    from pipelines.fault_harness import make_fixtures as valid_files

    fx = valid_files(work)
    rng = np.random.default_rng(0)
    fx.update({k: str(work / k) for k in ("prior.json", "num.csv")})
    Path(fx["num.csv"]).write_text("a,num\n" + "".join(f"{i % 3},{v:.4f}\n" for i, v in
                                                        enumerate(rng.normal(size=300))))
    Path(fx["prior.json"]).write_text(json.dumps({"a": [0.3, 0.3, 0.4], "b": [0.5, 0.5],
                                                  "c": [0.6, 0.4]}))
    _damaged(work, fx)
    (work / "outdir").mkdir()
    return fx


def _damaged(work: Path, fx: dict[str, str]) -> None:
    """Bad files: ``bad/<kind>.<ext>`` for each kind of damage."""
    bad = work / "bad"
    bad.mkdir()
    (bad / "folder").mkdir()
    (bad / "empty").write_bytes(b"")
    (bad / "junk.bin").write_bytes(bytes(np.random.default_rng(1).integers(0, 256, 500,
                                                                           dtype=np.uint8)))
    (bad / "text.txt").write_text("this is not the file you are looking for\n")
    (bad / "latin1.csv").write_bytes("a,b,c\n\xe4,u,p\n".encode("latin-1"))
    (bad / "long.csv").write_text("a,b,c\nx,u,p,extra\n")
    (bad / "dup.csv").write_text("a,a,c\nx,u,p\n")
    (bad / "header.csv").write_text("a,b,c\n")
    (bad / "unknown.csv").write_text("a,b,c\nw,u,p\n")
    (bad / "missingcol.csv").write_text("a,b\nx,u\n")
    for key in ("r.parquet", "m.json", "o.npz", "dom.json"):
        data = Path(fx[key]).read_bytes()
        (bad / f"half.{key}").write_bytes(data[: len(data) // 2])
        flipped = bytearray(data)
        flipped[len(data) // 3] ^= 0x10
        (bad / f"flip.{key}").write_bytes(bytes(flipped))
    dom = json.loads(Path(fx["dom.json"]).read_text())
    dom["attributes"][0]["categories"] = ["x", "x", "z"] if "categories" in dom["attributes"][0] else 1
    (bad / "dupcat.dom.json").write_text(json.dumps(dom))
    (bad / "list.json").write_text("[1, 2, 3]\n")
    (bad / "prior_sizes.json").write_text(json.dumps({"a": [0.5, 0.5], "b": [0.5, 0.5], "c": [1, 0]}))
    (bad / "prior_neg.json").write_text(json.dumps({"a": [-0.1, 0.6, 0.5], "b": [0.5, 0.5],
                                                    "c": [0.5, 0.5]}))


def bad_files(work: Path, kinds: tuple[str, ...]) -> list[str]:
    """Paths that must be refused where a file of one of ``kinds`` is expected."""
    b = work / "bad"
    common = [str(work / "nosuch.file"), str(b / "folder"), str(b / "empty"), str(b / "junk.bin"),
              str(b / "text.txt")]
    extra = {"csv": ["latin1.csv", "long.csv", "dup.csv", "header.csv", "unknown.csv", "missingcol.csv"],
             "domain": ["half.dom.json", "flip.dom.json", "dupcat.dom.json", "list.json"],
             "reports": ["half.r.parquet", "flip.r.parquet", "o.npz"],
             "model": ["half.m.json", "flip.m.json", "list.json"],
             "npz": ["half.o.npz", "flip.o.npz"]}
    out = list(common)
    for k in kinds:
        out += [str(b / f) if f != "o.npz" else str(work / f) for f in extra[k]]
    return out


def _swap(base: list[str], option: str, value: str) -> list[str]:
    """``base`` with ``option``'s value replaced by ``value`` (appended when absent)."""
    argv = list(base)
    if option in argv:
        argv[argv.index(option) + 1] = value
    else:
        argv += [option, value]
    return argv


def _cases(base: list[str], option: str, values: list[str], *, sentinel: str | None = None,
           positional: int | None = None) -> list[dict]:
    out = []
    for v in values:
        if positional is not None:
            argv = list(base)
            argv[positional] = v
            names = [v, Path(v).name] if v else ["file"]
        else:
            argv = _swap(base, option, v)
            names = [option, option.lstrip("-"), option.lstrip("-").replace("-", "_"), v,
                     Path(v).name if "/" in v else ""]
            names += [t for t in re.split(r"[,=]", v) if len(t) > 1]  # 'nosuch' of a,nosuch
        if v and v.replace(".", "").isalpha():  # 'abc', 'nan', 'inf' spelled back
            names.append(v)
        out.append({"argv": argv + ["--quiet"], "names": names, "sentinel": sentinel})
    return out


def build_cases(fx: dict[str, str], work: Path) -> list[dict]:
    """Every generated bad command line."""
    w, out = str(work), str(work / "out")
    cases: list[dict] = []
    schema = ["schema", fx["num.csv"], "--out", f"{out}.dom.json"]
    not_bad_for_schema = ("unknown.csv", "missingcol.csv")  # any CSV has a schema
    cases += _cases(schema, "", [f for f in bad_files(work, ("csv",)) if not f.endswith(not_bad_for_schema)],
                    positional=1, sentinel=f"{out}.dom.json")
    cases += _cases(schema, "--bins", BAD_COUNT + [HUGE], sentinel=f"{out}.dom.json")
    cases += _cases(schema, "--max-categories", ["-1", "abc", "1.5", "nan"], sentinel=f"{out}.dom.json")
    cases += _cases(schema, "--edges", ["num", "num=", "num=1,0", "num=a,b", "nosuch=0,1",
                                        "num=0,0.5", "num=nan,1", "a=5,6"], sentinel=f"{out}.dom.json")
    cases += _cases(schema, "--columns", ["nosuch", ",", "a,nosuch"], sentinel=f"{out}.dom.json")
    cases += _cases(schema, "--out", [f"{w}/outdir", f"{w}/no/such/d.json"])

    enc = ["encode", fx["d.csv"], "--domain", fx["dom.json"], "--f", "0.3", "--out",
           f"{out}.parquet", "--seed", "1"]
    cases += _cases(enc, "", bad_files(work, ("csv",)), positional=1, sentinel=f"{out}.parquet")
    cases += _cases(enc, "--domain", bad_files(work, ("domain",)), sentinel=f"{out}.parquet")
    cases += _cases(enc, "--f", BAD_UNIT, sentinel=f"{out}.parquet")
    cases += _cases(enc, "--m", BAD_COUNT + ["1000000000000", "2"], sentinel=f"{out}.parquet")
    cases += _cases(enc, "--h", BAD_COUNT + ["1000"], sentinel=f"{out}.parquet")
    cases += _cases(enc, "--seed", ["-1", "abc", "1.5"], sentinel=f"{out}.parquet")
    cases += _cases(enc, "--out", [f"{w}/no/such/r.parquet"])
    eps = [x for x in enc if x not in ("--f", "0.3")]
    cases += _cases(eps, "--epsilon", BAD_POS + ["1e-17"], sentinel=f"{out}.parquet")
    cases += _cases(eps + ["--epsilon", "1"], "--fp-rate", BAD_UNIT, sentinel=f"{out}.parquet")

    priv = ["privacy", "--f", "0.3"]
    cases += _cases(priv, "--f", BAD_UNIT)
    cases += _cases(["privacy", "--epsilon", "1"], "--epsilon", BAD_POS + ["1e-17", "1e308"])
    cases += _cases(priv, "--h", BAD_COUNT)
    cases += _cases(priv, "--d", BAD_COUNT)
    cases.append({"argv": ["privacy", "--f", "0.3", "--epsilon", "1"], "names": ["--f", "--epsilon"]})
    cases.append({"argv": ["privacy"], "names": ["--f", "--epsilon"]})

    # (an oracle .npz is no bad input here: inspect-reports reads every file collect writes, issue 23)
    inspectable = [f for f in bad_files(work, ("reports",)) if Path(f).name != "o.npz"]
    cases += _cases(["inspect-reports", fx["r.parquet"]], "", inspectable, positional=1)
    cases += more_cases(fx, work, _cases, bad_files) + sacred_cases(fx, work)
    return cases


BAD_PHI = ["0", "-1", "1.5", "nan", "inf", "abc", ""]


def _server(fx, work, cases, bad_files) -> list[dict]:
    w, out = str(work), str(work / "out")
    c: list[dict] = []
    est = ["estimate", fx["r.parquet"], "--attrs", "a,b"]
    c += cases(est, "", bad_files(work, ("reports",)), positional=1)
    c += cases(est, "--attrs", ["", ",", "nosuch", "a,a", "a,nosuch"])
    c += cases(est, "--method", ["nosuch", ""])
    c += cases(est, "--tol", ["0", "-1", "nan", "abc", "inf"])
    c += cases(est, "--max-iter", ["0", "-1", "abc"])
    c += cases(est, "--memory-budget-mb", ["0", "-1", "nan", "abc", "inf", "1.7e302"])
    c += cases(est, "--support", ["moment"])  # only for hybrid
    fit = ["fit", fx["r.parquet"], "--out", f"{out}.model.json"]
    c += cases(fit, "", bad_files(work, ("reports",)), positional=1, sentinel=f"{out}.model.json")
    c += cases(fit, "--phi", BAD_PHI, sentinel=f"{out}.model.json")
    c += cases(fit, "--model-phi", BAD_PHI, sentinel=f"{out}.model.json")
    c += cases(fit, "--clique-budget", ["0", "-1", "abc"], sentinel=f"{out}.model.json")
    c += cases(fit, "--tol", ["0", "-1", "nan", "abc"], sentinel=f"{out}.model.json")
    c += cases(fit, "--memory-budget-mb", ["0", "nan", "1.7e302"], sentinel=f"{out}.model.json")
    c += cases(fit, "--max-memory-mb", ["0", "nan", "1.7e302"], sentinel=f"{out}.model.json")
    c += cases(fit, "--plot", [f"{w}/no/such/g.png", f"{w}/outdir"], sentinel=f"{out}.model.json")
    c += cases(fit, "--out", [f"{w}/outdir", f"{w}/no/such/m.json"])
    syn = ["synthesize", fx["m.json"], "--n", "10", "--out", f"{out}.csv"]
    c += cases(syn, "", bad_files(work, ("model",)), positional=1, sentinel=f"{out}.csv")
    c += cases(syn, "--n", BAD_COUNT + [HUGE], sentinel=f"{out}.csv")
    c += cases(syn, "--seed", ["-1", "abc"], sentinel=f"{out}.csv")
    c += cases(syn, "--out", [f"{w}/outdir", f"{w}/no/such/s.csv"])
    qry = ["query", fx["m.json"], "--attrs", "a"]
    c += cases(qry, "", bad_files(work, ("model",)), positional=1)
    c += cases(qry, "--attrs", ["", ",", "nosuch", "a,a"])
    c += cases(qry, "--where", ["b", "=u", "b=nosuch", "nosuch=u", "a=x"])
    c.append({"argv": qry + ["--where", "b=u", "--where", "b=v"], "names": ["--where", "'b'"]})
    gr = ["graph", fx["m.json"]]
    c += cases(gr, "", bad_files(work, ("model",)), positional=1)
    c += cases(gr, "--phi", BAD_PHI)
    c += cases(["graph", fx["r.parquet"]], "--clique-budget", ["0", "-1", "abc"])
    c += cases(gr, "--out-json", [f"{w}/outdir", f"{w}/no/such/g.json"])
    c += cases(gr, "--plot", [f"{w}/no/such/g.png"])
    ev = ["evaluate", "--real", fx["d.csv"], "--synthetic", fx["d.csv"], "--domain", fx["dom.json"]]
    c += cases(ev, "--real", bad_files(work, ("csv",)))
    c += cases(ev, "--synthetic", bad_files(work, ("csv",))[:6])
    c += cases(ev, "--domain", bad_files(work, ("domain",)))
    c += cases(ev, "--k", ["0", "-1", "abc", "10"])
    c += cases(ev, "--subsets", ["0", "-1", "abc"])
    return c


def _oracles(fx, work, cases, bad_files) -> list[dict]:
    w, out = str(work), str(work / "out")
    c: list[dict] = []
    col = ["collect", fx["d.csv"], "--domain", fx["dom.json"], "--protocol", "grr", "--epsilon", "1",
           "--out", f"{out}.npz", "--seed", "1"]
    s = f"{out}.npz"
    c += cases(col, "", bad_files(work, ("csv",)), positional=1, sentinel=s)
    c += cases(col, "--domain", bad_files(work, ("domain",))[:6], sentinel=s)
    c += cases(col, "--epsilon", BAD_POS, sentinel=s)
    c += cases(col, "--protocol", ["nosuch", ""], sentinel=s)
    lg = [x if x != "grr" else "l-grr" for x in col] + ["--eps-1", "0.5"]
    c += cases(lg, "--eps-1", ["0", "-1", "nan", "1", "2", "abc"], sentinel=s)
    smp = col + ["--solution", "smp"]
    c += cases(smp, "--r", ["0", "-1", "4", "abc"], sentinel=s)
    lip = [x if x != "grr" else "rr-lip" for x in col] + ["--prior", fx["prior.json"]]
    c += cases(lip, "--prior", [f"{w}/nosuch.json", f"{w}/bad/junk.bin", f"{w}/bad/list.json",
                                f"{w}/bad/prior_sizes.json", f"{w}/bad/prior_neg.json"], sentinel=s)
    c += cases(col, "--out", [f"{w}/outdir/", f"{w}/no/such/o.npz"])
    c += cases(["estimate-freq", fx["o.npz"]], "", [f for f in bad_files(work, ("npz", "reports"))
                                                    if not f.endswith("/o.npz")], positional=1)
    cmp = ["compare-protocols", "--n", "300", "--runs", "1", "--epsilons", "1", "--protocols",
           "spl-grr,allomfree"]
    c += cases(cmp, "--epsilons", BAD_POS + ["1,abc", ","])
    c += cases(cmp, "--runs", BAD_COUNT + [HUGE])  # HUGE: a comparison that would never end
    c += cases(cmp, "--eps1-ratio", BAD_UNIT)
    c += cases(cmp, "--n", BAD_COUNT + [HUGE])
    c += cases(cmp, "--protocols", ["nosuch", "", "spl-nosuch"])
    c += cases(cmp, "--dataset", [f"{w}/nosuch.csv"])
    c.append({"argv": cmp + ["--dataset", fx["d.csv"]], "names": ["--domain"]})
    pl = ["plan", "--domain", fx["dom.json"], "--n", "1000", "--epsilon", "1"]
    c += cases(pl, "--domain", bad_files(work, ("domain",))[:7])
    c += cases(pl, "--n", BAD_COUNT)
    c += cases(pl, "--epsilon", BAD_POS)
    sp = ["serve-plan", "--domain", fx["dom.json"], "--n", "1000", "--epsilon", "1", "--out", f"{w}/sp.json"]
    c += cases(sp, "--domain", bad_files(work, ("domain",))[:4])
    c += cases(sp, "--n", BAD_COUNT[:3])
    c += cases(sp, "--epsilon", BAD_POS[:3])
    for command in ("serve", "serve-export"):  # a bad collection is refused before anything runs
        argv = [command, "x=" + fx["dom.json"]] + ([f"{w}/exp.npz"] if command == "serve-export" else [])
        c += cases(argv, "", ["nofile", f"x={w}/nosuch.json", "x=" + fx["dom.json"]], positional=1)
    return c


def _release(fx, work, cases, bad_files) -> list[dict]:
    w, out = str(work), str(work / "out")
    c: list[dict] = []
    rep = ["report", fx["m.json"], "--out", f"{out}.html"]
    c += cases(rep, "", bad_files(work, ("model",)), positional=1, sentinel=f"{out}.html")
    c += cases(rep, "--synthetic", bad_files(work, ("csv",))[:9], sentinel=f"{out}.html")
    c += cases(rep, "--real", bad_files(work, ("csv",))[:6], sentinel=f"{out}.html")
    c += cases(rep, "--out", [f"{w}/outdir", f"{w}/no/such/r.html"])
    ex = ["export", fx["m.json"], "--format", "uai", "--out", f"{out}.uai"]
    c += cases(ex, "", bad_files(work, ("model",)), positional=1, sentinel=f"{out}.uai")
    c += cases(ex, "--format", ["nosuch", ""], sentinel=f"{out}.uai")
    c += cases(ex, "--out", [f"{w}/outdir", f"{w}/no/such/m.uai"])
    mr = ["merge-reports", f"{w}/merged", fx["r.parquet"], fx["r.parquet"]]
    c += cases(mr, "", bad_files(work, ("reports",))[:8], positional=2)
    c += cases(mr, "", [f"{w}/outdir", fx["d.csv"]], positional=1)
    demo = ["demo", "--n", "500", "--out", f"{w}/demo-out"]
    c += cases(demo, "--n", BAD_COUNT + [HUGE])
    c += cases(demo, "--f", BAD_UNIT)
    c += cases(demo, "--seed", ["-1", "abc"])
    c += cases(demo, "--out", [fx["d.csv"]])
    return c


def more_cases(fx: dict, work: Path, cases, bad_files) -> list[dict]:
    """The server (estimate ... evaluate), oracle (collect ... plan) and release cases."""
    return (_server(fx, work, cases, bad_files) + _oracles(fx, work, cases, bad_files)
            + _release(fx, work, cases, bad_files))


def sacred_cases(fx: dict, work: Path) -> list[dict]:
    """Issue 25: an output that is an input, special files as outputs, nested JSON, options that
    do not apply, a file of another kind."""
    w = str(work)
    deep = work / "bad" / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    os.mkfifo(work / "bad" / "fifo")
    os.symlink("self-link", work / "bad" / "self-link")
    c = [{"argv": argv + ["--quiet"], "names": names} for argv, names in [
        (["schema", fx["d.csv"], "--out", fx["d.csv"]], ["--out"]),
        (["encode", fx["d.csv"], "--domain", fx["dom.json"], "--f", "0.3", "--out", fx["dom.json"]], ["--out"]),
        (["fit", fx["r.parquet"], "--out", fx["r.parquet"]], ["--out"]),
        (["synthesize", fx["m.json"], "--n", "5", "--out", fx["m.json"]], ["--out"]),
        (["graph", fx["m.json"], "--out-json", fx["m.json"]], ["--out-json"]),
        (["report", fx["m.json"], "--real", fx["d.csv"], "--out", fx["d.csv"]], ["--out"]),
        (["export", fx["m.json"], "--format", "uai", "--out", fx["m.json"]], ["--out"]),
        (["synthesize", fx["m.json"], "--n", "5", "--out", "/dev/full"], ["--out"]),
        (["synthesize", fx["m.json"], "--n", "5", "--out", f"{w}/bad/fifo"], ["--out"]),
        (["synthesize", fx["m.json"], "--n", "5", "--out", f"{w}/bad/self-link"], ["--out"]),
        (["export", fx["m.json"], "--format", "uai", "--kind", "junction", "--out", f"{w}/x.uai"], ["--kind"]),
        (["estimate-freq", fx["o.npz"], "--lip-method", "bayes"], ["--lip-method"]),
        (["fit", fx["o.npz"], "--out", f"{w}/x.json"], ["o.npz"]),
        (["fit", fx["r.parquet"], "--out", f"{w}/x.json", "--max-memory-mb", "0.01"], ["--max-memory-mb"]),
        (["merge-reports", f"{w}/twice", fx["r.parquet"], fx["r.parquet"]], ["r.parquet"]),
        (["privacy", "--f", "1e-400"], ["--f"]),
    ]]
    for argv in (["plan", "--domain", "{d}", "--n", "100", "--epsilon", "1"],
                 ["synthesize", "{d}", "--n", "5", "--out", f"{w}/x.csv"], ["query", "{d}", "--attrs", "a"],
                 ["export", "{d}", "--format", "uai", "--out", f"{w}/x.uai"], ["report", "{d}", "--out", f"{w}/x.html"],
                 ["collect", fx["d.csv"], "--domain", "{d}", "--protocol", "grr", "--epsilon", "1", "--out", f"{w}/x.npz"],
                 ["encode", fx["d.csv"], "--domain", "{d}", "--f", "0.3", "--out", f"{w}/x.parquet"],
                 ["evaluate", "--real", fx["d.csv"], "--synthetic", fx["d.csv"], "--domain", "{d}"]):
        c.append({"argv": [x.format(d=deep) for x in argv] + ["--quiet"], "names": ["deep.json"]})
    return c


SENTINEL = b"existing output, must survive a failed command\n"


def _temporaries(folder: Path) -> list[Path]:
    from pipelines.fault_harness import TEMP
    return [p for p in folder.rglob(".*") if TEMP.match(p.name)]


def _names_something(msg: str, case: dict) -> bool:
    """The message names the parameter, the bad value or the file."""
    low = msg.lower()
    tokens = [t for t in case.get("names", []) if t]
    return any(t.lower() in low for t in tokens)


def run_in_process(argv: list[str]) -> tuple[object, str, str | None]:
    """(exit status, stderr, traceback text or None) of ``lopub argv`` in this process (10 s alarm)."""
    from pipelines.fault_harness import run_main

    code, err, _ = run_main(argv)
    return (None, err, err) if code in ("traceback", "hang") else (code, err, None)


def classify(case: dict, code, err: str, tb: str | None, work: Path) -> str:
    """The outcome of one case (see the module docstring)."""
    out = case.get("sentinel")
    leftovers = _temporaries(work)
    for p in leftovers:
        if p.is_dir():
            import shutil
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
    if tb is not None or "Traceback (most recent call last)" in err:
        return "traceback"
    if code == 0:
        return "silent"
    if out is not None and Path(out).exists() and Path(out).read_bytes() != SENTINEL:
        return "changed-output"
    if leftovers:
        return "leftover-temp"
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if ": error: " in ln]
    if code == 2 and len(errors) == 1 and _names_something(errors[0], case):
        return "clear"
    return "vague"


def _prepare(case: dict) -> None:
    if case.get("sentinel"):
        Path(case["sentinel"]).write_bytes(SENTINEL)


def run_all(cases: list[dict], work: Path, verbose: bool) -> tuple[collections.Counter, dict, list]:
    counts, per_cmd, bad = collections.Counter(), collections.defaultdict(collections.Counter), []
    for case in cases:
        _prepare(case)
        code, err, tb = run_in_process(case["argv"])
        outcome = classify(case, code, err, tb, work)
        counts[outcome] += 1
        per_cmd[case["argv"][0]][outcome] += 1
        if outcome != "clear":
            last = (tb or err).strip().splitlines()
            bad.append((outcome, " ".join(case["argv"]), last[-1] if last else ""))
        if verbose:
            print(f"{outcome:15s} {' '.join(case['argv'])[:150]}", file=sys.__stdout__)
    return counts, per_cmd, bad


def run_subprocesses(cases: list[dict], work: Path, k: int) -> collections.Counter:
    """Re-run every ``len/k``-th case as a real ``python -m lopub`` process."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    counts = collections.Counter()
    step = max(1, len(cases) // max(k, 1))
    for case in cases[::step][:k]:
        _prepare(case)
        r = subprocess.run([sys.executable, "-m", "lopub"] + case["argv"], capture_output=True,
                           text=True, env=env, cwd=work, timeout=300)
        counts[classify(case, r.returncode, r.stderr, None, work)] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--list", action="store_true", help="print every case and its outcome")
    p.add_argument("--subprocess", type=int, default=12, help="cases re-run as subprocesses")
    p.add_argument("--fuzz", type=int, default=0, help="generated file cases (pipelines.fault_harness)")
    p.add_argument("--kill", type=int, default=0, help="kill -9 moments per writer")
    a = p.parse_args(argv)
    if a.fuzz or a.kill:
        return run_faults(a.fuzz, a.kill)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with contextlib.redirect_stdout(io.StringIO()):
            fx = make_fixtures(work)
        cases = build_cases(fx, work)
        counts, per_cmd, bad = run_all(cases, work, a.list)
        sub = run_subprocesses(cases, work, a.subprocess)
    total = sum(counts.values())
    print(f"{total} bad inputs across {len(per_cmd)} subcommands")
    for outcome in ("clear", "vague", "traceback", "silent", "changed-output", "leftover-temp"):
        print(f"  {outcome:15s} {counts[outcome]:4d}  ({100 * counts[outcome] / total:.1f} %)")
    print("per subcommand: " + ", ".join(
        f"{c} {sum(v.values())}" + ("" if v["clear"] == sum(v.values()) else
                                    f" ({sum(v.values()) - v['clear']} not clear)")
        for c, v in sorted(per_cmd.items())))
    print(f"subprocess re-runs: {sum(sub.values())}, outcomes {dict(sub)}")
    for outcome, cmd, last in bad:
        print(f"  [{outcome}] lopub {cmd[:140]}\n      -> {last[:200]}")
    return 0


def run_faults(fuzz_cases: int, kills: int) -> int:
    """The file-fuzzing and kill -9 runs; their table (the rows of docs/BENCHMARKS.md)."""
    from pipelines.fault_harness import fuzz, kill

    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()) as _:
        t0 = time.perf_counter()
        fz = fuzz(Path(tmp) / "fuzz", fuzz_cases) if fuzz_cases else (collections.Counter(), [])
        t1 = time.perf_counter()
        kl = kill(Path(tmp) / "kill", kills) if kills else ({}, [])
        t2 = time.perf_counter()
    if fuzz_cases:
        total = collections.Counter()
        for name, c in sorted(fz[0].items()):
            total.update(c)
            print(f"fuzz {name}: {dict(c)}")
        print(f"fuzz: {sum(total.values())} generated cases over {len(fz[0])} subcommands in {t1 - t0:.0f} s: "
              f"{dict(total)}")
        for f in fz[1][:30]:
            print(f"  {f}")
    if kills:
        print("| writer | runs | absent | complete (killed) | ended before the kill | anything else | full run [s] |")
        for name, c in kl[0].items():
            other = sum(v for k, v in c.items() if k not in ("absent", "complete", "finished", "seconds"))
            print(f"| {name} | {kills} | {c['absent']} | {c['complete']} | {c['finished']} | {other} | {c['seconds']} |")
        print(f"kill -9: {len(kl[0]) * kills} runs in {t2 - t1:.0f} s")
        for f in kl[1][:30]:
            print(f"  {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
