"""The file kinds ``lopub`` reads and writes, for the fuzzing and kill -9 harness of issue 25
(:mod:`tests.harden.bad_inputs`): which command lines read each kind of input, how a file's
content is loaded back, and each writer with the check that its output is complete."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd


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


def fx_original(fx: dict, kind: str) -> str:
    return {"csv": fx["d.csv"], "domain": fx["dom.json"], "model": fx["m.json"], "bloom": fx["r.parquet"],
            "ms": fx["ms.npz"], "oracle": fx["o.npz"]}[kind]


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
        "serve-plan": (["serve-plan", "--domain", dom, "--n", "5000", "--epsilon", "2", "--out", f"{w}/sp.json"],
                       f"{w}/sp.json", lambda p: json.loads(Path(p).read_text())["format"]),
        "demo": (["demo", "--n", "300", "--out", f"{w}/demo"], f"{w}/demo",
                 lambda p: (Model.load(f"{p}/model.json"), json.loads(Path(p, "summary.json").read_text())["verdict"])),
    }


