"""Bad inputs and faults through every ``lopub`` subcommand (issues 15 and 25), one tool.

* The hand-written cases (default): hundreds of valid command lines with one argument made bad (a
  bad number, a missing, empty, damaged or wrong-kind file, an impossible combination); each
  expects an error.  Outcomes: ``clear`` (exit 2, one line without traceback naming the parameter,
  its value or the file), ``vague`` (exit 2, several lines or naming none), ``traceback``,
  ``silent`` (exit 0), ``changed-output`` (an existing output changed), ``leftover-temp`` (a
  temporary, staging or lock file remained).  In-process through :func:`lopub.cli.main`, 12 also as
  processes (``--subprocess N``).  A case is a dict: ``argv`` (without ``lopub``), ``names`` (one of
  which a clear message contains) and optionally ``sentinel`` (an existing output that must survive).
* ``--fuzz N`` (:func:`fuzz`): generated FILES (:func:`tests.harden.strategies.file_cases`: CSV,
  domain, model, reports of every kind; valid, edited, damaged, nested 100,000 deep, swapped) read
  by a subcommand, and generated command lines of privacy, demo, compare-protocols, serve-plan and
  serve-export (:func:`~tests.harden.strategies.arg_cases`), under a 10 s alarm.  Outcomes:
  ``clear``, ``correct`` (exit 0 and the result valid: a damaged file read as the original; the
  privacy figures satisfying Eq. (10); outputs that load), and the failures ``traceback``, ``hang``,
  ``vague``, ``silent`` (exit 0, wrong or unusable) and ``changed-input``.
* ``--kill N`` (:func:`kill`): a fork server: lopub is imported once, each run is a forked child
  calling ``main(argv)``, SIGKILLed (with its process group) after a random delay; then the output
  must be absent or complete (it loads), the inputs unchanged, a re-run must succeed, and no
  temporary, staging or lock file may remain.

Usage: ``python -m pipelines.bad_inputs [--subprocess N] [--fuzz N] [--kill N]``
"""
from __future__ import annotations

import argparse
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
import subprocess
import sys
import tempfile
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


# fixtures and the hand-written cases ------------------------------------------------------
def valid_fixtures(work: Path) -> dict[str, str]:
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



#: bad values of a number that must be finite and > 0
BAD_POS = ["0", "-1", "nan", "inf", "-inf", "abc", "", "1e400"]
#: bad values of a probability in (0, 1)
BAD_UNIT = ["0", "1", "-0.1", "1.5", "nan", "inf", "abc", ""]
#: bad values of an integer >= 1
BAD_COUNT = ["0", "-1", "abc", "1.5", "", "nan"]
HUGE = "100000000000000"


def make_fixtures(work: Path) -> dict[str, str]:
    """Valid inputs (those of :func:`valid_fixtures`, a numeric CSV, a prior) and damaged variants."""
    fx = valid_fixtures(work)
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
    cases += _server(fx, work) + _oracles(fx, work) + _release(fx, work) + sacred_cases(fx, work)
    return cases


BAD_PHI = ["0", "-1", "1.5", "nan", "inf", "abc", ""]


def _server(fx, work) -> list[dict]:
    w, out = str(work), str(work / "out")
    c: list[dict] = []
    est = ["estimate", fx["r.parquet"], "--attrs", "a,b"]
    c += _cases(est, "", bad_files(work, ("reports",)), positional=1)
    c += _cases(est, "--attrs", ["", ",", "nosuch", "a,a", "a,nosuch"])
    c += _cases(est, "--method", ["nosuch", ""])
    c += _cases(est, "--tol", ["0", "-1", "nan", "abc", "inf"])
    c += _cases(est, "--max-iter", ["0", "-1", "abc"])
    c += _cases(est, "--memory-budget-mb", ["0", "-1", "nan", "abc", "inf", "1.7e302"])
    c += _cases(est, "--support", ["moment"])  # only for hybrid
    fit = ["fit", fx["r.parquet"], "--out", f"{out}.model.json"]
    c += _cases(fit, "", bad_files(work, ("reports",)), positional=1, sentinel=f"{out}.model.json")
    c += _cases(fit, "--phi", BAD_PHI, sentinel=f"{out}.model.json")
    c += _cases(fit, "--model-phi", BAD_PHI, sentinel=f"{out}.model.json")
    c += _cases(fit, "--clique-budget", ["0", "-1", "abc"], sentinel=f"{out}.model.json")
    c += _cases(fit, "--tol", ["0", "-1", "nan", "abc"], sentinel=f"{out}.model.json")
    c += _cases(fit, "--memory-budget-mb", ["0", "nan", "1.7e302"], sentinel=f"{out}.model.json")
    c += _cases(fit, "--max-memory-mb", ["0", "nan", "1.7e302"], sentinel=f"{out}.model.json")
    c += _cases(fit, "--plot", [f"{w}/no/such/g.png", f"{w}/outdir"], sentinel=f"{out}.model.json")
    c += _cases(fit, "--out", [f"{w}/outdir", f"{w}/no/such/m.json"])
    syn = ["synthesize", fx["m.json"], "--n", "10", "--out", f"{out}.csv"]
    c += _cases(syn, "", bad_files(work, ("model",)), positional=1, sentinel=f"{out}.csv")
    c += _cases(syn, "--n", BAD_COUNT + [HUGE], sentinel=f"{out}.csv")
    c += _cases(syn, "--seed", ["-1", "abc"], sentinel=f"{out}.csv")
    c += _cases(syn, "--out", [f"{w}/outdir", f"{w}/no/such/s.csv"])
    qry = ["query", fx["m.json"], "--attrs", "a"]
    c += _cases(qry, "", bad_files(work, ("model",)), positional=1)
    c += _cases(qry, "--attrs", ["", ",", "nosuch", "a,a"])
    c += _cases(qry, "--where", ["b", "=u", "b=nosuch", "nosuch=u", "a=x"])
    c.append({"argv": qry + ["--where", "b=u", "--where", "b=v"], "names": ["--where", "'b'"]})
    gr = ["graph", fx["m.json"]]
    c += _cases(gr, "", bad_files(work, ("model",)), positional=1)
    c += _cases(gr, "--phi", BAD_PHI)
    c += _cases(["graph", fx["r.parquet"]], "--clique-budget", ["0", "-1", "abc"])
    c += _cases(gr, "--out-json", [f"{w}/outdir", f"{w}/no/such/g.json"])
    c += _cases(gr, "--plot", [f"{w}/no/such/g.png"])
    ev = ["evaluate", "--real", fx["d.csv"], "--synthetic", fx["d.csv"], "--domain", fx["dom.json"]]
    c += _cases(ev, "--real", bad_files(work, ("csv",)))
    c += _cases(ev, "--synthetic", bad_files(work, ("csv",))[:6])
    c += _cases(ev, "--domain", bad_files(work, ("domain",)))
    c += _cases(ev, "--k", ["0", "-1", "abc", "10"])
    c += _cases(ev, "--subsets", ["0", "-1", "abc"])
    return c


def _oracles(fx, work) -> list[dict]:
    w, out = str(work), str(work / "out")
    c: list[dict] = []
    col = ["collect", fx["d.csv"], "--domain", fx["dom.json"], "--protocol", "grr", "--epsilon", "1",
           "--out", f"{out}.npz", "--seed", "1"]
    s = f"{out}.npz"
    c += _cases(col, "", bad_files(work, ("csv",)), positional=1, sentinel=s)
    c += _cases(col, "--domain", bad_files(work, ("domain",))[:6], sentinel=s)
    c += _cases(col, "--epsilon", BAD_POS, sentinel=s)
    c += _cases(col, "--protocol", ["nosuch", ""], sentinel=s)
    lg = [x if x != "grr" else "l-grr" for x in col] + ["--eps-1", "0.5"]
    c += _cases(lg, "--eps-1", ["0", "-1", "nan", "1", "2", "abc"], sentinel=s)
    smp = col + ["--solution", "smp"]
    c += _cases(smp, "--r", ["0", "-1", "4", "abc"], sentinel=s)
    lip = [x if x != "grr" else "rr-lip" for x in col] + ["--prior", fx["prior.json"]]
    c += _cases(lip, "--prior", [f"{w}/nosuch.json", f"{w}/bad/junk.bin", f"{w}/bad/list.json",
                                f"{w}/bad/prior_sizes.json", f"{w}/bad/prior_neg.json"], sentinel=s)
    c += _cases(col, "--out", [f"{w}/outdir/", f"{w}/no/such/o.npz"])
    c += _cases(["estimate-freq", fx["o.npz"]], "", [f for f in bad_files(work, ("npz", "reports"))
                                                    if not f.endswith("/o.npz")], positional=1)
    cmp = ["compare-protocols", "--n", "300", "--runs", "1", "--epsilons", "1", "--protocols",
           "spl-grr,allomfree"]
    c += _cases(cmp, "--epsilons", BAD_POS + ["1,abc", ","])
    c += _cases(cmp, "--runs", BAD_COUNT + [HUGE])  # HUGE: a comparison that would never end
    c += _cases(cmp, "--eps1-ratio", BAD_UNIT)
    c += _cases(cmp, "--n", BAD_COUNT + [HUGE])
    c += _cases(cmp, "--protocols", ["nosuch", "", "spl-nosuch"])
    c += _cases(cmp, "--dataset", [f"{w}/nosuch.csv"])
    c.append({"argv": cmp + ["--dataset", fx["d.csv"]], "names": ["--domain"]})
    pl = ["plan", "--domain", fx["dom.json"], "--n", "1000", "--epsilon", "1"]
    c += _cases(pl, "--domain", bad_files(work, ("domain",))[:7])
    c += _cases(pl, "--n", BAD_COUNT)
    c += _cases(pl, "--epsilon", BAD_POS)
    sp = ["serve-plan", "--domain", fx["dom.json"], "--n", "1000", "--epsilon", "1", "--out", f"{w}/sp.json"]
    c += _cases(sp, "--domain", bad_files(work, ("domain",))[:4])
    c += _cases(sp, "--n", BAD_COUNT[:3])
    c += _cases(sp, "--epsilon", BAD_POS[:3])
    for command in ("serve", "serve-export"):  # a bad collection is refused before anything runs
        argv = [command, "x=" + fx["dom.json"]] + ([f"{w}/exp.npz"] if command == "serve-export" else [])
        c += _cases(argv, "", ["nofile", f"x={w}/nosuch.json", "x=" + fx["dom.json"]], positional=1)
    return c


def _release(fx, work) -> list[dict]:
    w, out = str(work), str(work / "out")
    c: list[dict] = []
    rep = ["report", fx["m.json"], "--out", f"{out}.html"]
    c += _cases(rep, "", bad_files(work, ("model",)), positional=1, sentinel=f"{out}.html")
    c += _cases(rep, "--synthetic", bad_files(work, ("csv",))[:9], sentinel=f"{out}.html")
    c += _cases(rep, "--real", bad_files(work, ("csv",))[:6], sentinel=f"{out}.html")
    c += _cases(rep, "--out", [f"{w}/outdir", f"{w}/no/such/r.html"])
    ex = ["export", fx["m.json"], "--format", "uai", "--out", f"{out}.uai"]
    c += _cases(ex, "", bad_files(work, ("model",)), positional=1, sentinel=f"{out}.uai")
    c += _cases(ex, "--format", ["nosuch", ""], sentinel=f"{out}.uai")
    c += _cases(ex, "--out", [f"{w}/outdir", f"{w}/no/such/m.uai"])
    mr = ["merge-reports", f"{w}/merged", fx["r.parquet"], fx["r.parquet"]]
    c += _cases(mr, "", bad_files(work, ("reports",))[:8], positional=2)
    c += _cases(mr, "", [f"{w}/outdir", fx["d.csv"]], positional=1)
    demo = ["demo", "--n", "500", "--out", f"{w}/demo-out"]
    c += _cases(demo, "--n", BAD_COUNT + [HUGE])
    c += _cases(demo, "--f", BAD_UNIT)
    c += _cases(demo, "--seed", ["-1", "abc"])
    c += _cases(demo, "--out", [fx["d.csv"]])
    return c


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


def _names_something(msg: str, case: dict) -> bool:
    """The message names the parameter, the bad value or the file."""
    low = msg.lower()
    tokens = [t for t in case.get("names", []) if t]
    return any(t.lower() in low for t in tokens)


def run_in_process(argv: list[str]) -> tuple[object, str, str | None]:
    """(exit status, stderr, traceback text or None) of ``lopub argv`` in this process (10 s alarm)."""
    code, err, _ = run_main(argv)
    return (None, err, err) if code in ("traceback", "hang") else (code, err, None)


def classify(case: dict, code, err: str, tb: str | None, work: Path) -> str:
    """The outcome of one case (see the module docstring)."""
    out = case.get("sentinel")
    leftovers = [p for p in work.rglob(".*") if TEMP.match(p.name)]
    for p in leftovers:
        if p.is_dir():
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


def run_all(cases: list[dict], work: Path) -> tuple[collections.Counter, dict, list]:
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
    return counts, per_cmd, bad


def run_subprocesses(cases: list[dict], work: Path, k: int) -> collections.Counter:
    """Re-run every ``len/k``-th case as a real ``python -m lopub`` process."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    counts = collections.Counter()
    step = max(1, len(cases) // max(k, 1))
    for case in cases[::step][:k]:
        _prepare(case)
        r = subprocess.run([sys.executable, "-m", "lopub"] + case["argv"], capture_output=True,
                           text=True, env=env, cwd=work, timeout=300, check=False)
        counts[classify(case, r.returncode, r.stderr, None, work)] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--subprocess", type=int, default=12, help="cases re-run as subprocesses")
    p.add_argument("--fuzz", type=int, default=0, help="generated file and command-line cases")
    p.add_argument("--kill", type=int, default=0, help="kill -9 moments per writer")
    a = p.parse_args(argv)
    if a.fuzz or a.kill:
        return run_faults(a.fuzz, a.kill)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with contextlib.redirect_stdout(io.StringIO()):
            fx = make_fixtures(work)
        cases = build_cases(fx, work)
        counts, per_cmd, bad = run_all(cases, work)
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

    fx = valid_fixtures(work / "fx")
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


def _quiet_main(argv: list[str]) -> int:
    """``lopub argv --quiet`` with no output (the child of :func:`fork_run`); its exit status."""
    os.dup2(os.open(os.devnull, os.O_RDWR), 1), os.dup2(1, 2)
    from lopub.cli import main
    try:
        return main([str(x) for x in argv] + ["--quiet"])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1


def fork_run(argv: list[str], delay: float | None = None, limit: float = 120.0) -> int | None:
    """Run ``lopub argv`` in a forked child of this process (lopub imported once; its own process
    group: :func:`pipelines.harness.runner.call`); with ``delay``, SIGKILL the child's process group
    after ``delay`` s.  The exit status (None: killed; 70: any other failure)."""
    from pipelines.harness.runner import call

    status, code = call(_quiet_main, (argv,), limit if delay is None else delay)
    return None if status == "timeout" else code if status == "ok" else 70


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
    fx = valid_fixtures(work / "fx")
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


if __name__ == "__main__":
    sys.exit(main())
