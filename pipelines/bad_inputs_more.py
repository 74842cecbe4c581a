"""Bad command lines of the server, oracle and release subcommands (:mod:`pipelines.bad_inputs`)."""
from __future__ import annotations

from pathlib import Path

from pipelines.bad_inputs_cases import BAD_COUNT, BAD_POS, BAD_UNIT, HUGE

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
