"""lopub fit / synthesize / query / graph / evaluate / demo."""
import json

import pandas as pd
import pytest

from lopub.cli import main
from lopub.client import encode
from lopub.datasets import embedded_model
from lopub.spec import CollectionSpec


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("pipe")
    bn = embedded_model()
    data = bn.sample(3000, rng=0)
    data.to_pandas().to_csv(d / "real.csv", index=False)
    bn.domain.to_json(d / "domain.json")
    encode(data, CollectionSpec.from_domain(bn.domain, f=0.2), rng=1).save(d / "reports.parquet")
    assert main(["fit", str(d / "reports.parquet"), "--phi", "0.4", "--method", "moment",
                 "--out", str(d / "model.json"), "--quiet", "--plot", str(d / "fit.png")]) == 0
    return d


def test_fit_writes_model_and_pictures(files):
    assert (files / "model.json").exists() and (files / "fit.png").exists()
    assert (files / "fit_mi.png").exists()


def test_synthesize_and_evaluate(files, capsys):
    out = files / "syn.csv"
    assert main(["synthesize", str(files / "model.json"), "--seed", "3", "--out", str(out)]) == 0
    syn = pd.read_csv(out)
    assert len(syn) == 3000 and list(syn.columns) == list(embedded_model().domain.attrs)
    assert main(["synthesize", str(files / "model.json"), "--seed", "3", "--n", "50",
                 "--out", str(files / "syn.parquet")]) == 0
    assert len(pd.read_parquet(files / "syn.parquet")) == 50
    capsys.readouterr()
    assert main(["evaluate", "--real", str(files / "real.csv"), "--synthetic", str(out),
                 "--domain", str(files / "domain.json"), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["k"] == 2 and res["subsets"] == 78 and 0 < res["mean"] < 0.2
    assert set(res["per_attribute"]) == set(embedded_model().domain.attrs)
    assert main(["evaluate", "--real", str(files / "real.csv"), "--synthetic", str(out),
                 "--domain", str(files / "domain.json"), "--k", "3", "--subsets", "10"]) == 0
    assert "over 10 3-way marginals" in capsys.readouterr().out


def test_query(files, capsys):
    assert main(["query", str(files / "model.json"), "--attrs", "sex,income", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["attrs"] == ["sex", "income"] and res["categories"]["sex"] == ["Female", "Male"]
    assert sum(res["p"]) == pytest.approx(1)
    assert main(["query", str(files / "model.json"), "--attrs", "income",
                 "--where", "sex=Male"]) == 0
    assert "<=50K" in capsys.readouterr().out
    assert main(["query", str(files / "model.json"), "--attrs", "sex,nope"]) == 2
    assert "unknown attribute 'nope'" in capsys.readouterr().err
    assert main(["query", str(files / "model.json"), "--attrs", "sex", "--where", "income"]) == 2
    assert "must look like attribute=label" in capsys.readouterr().err


def test_graph_from_model_and_reports(files, capsys):
    png = files / "g.png"
    assert main(["graph", str(files / "model.json"), "--plot", str(png), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert png.exists() and (files / "g_mi.png").exists()
    assert len(res["graph"]["decisions"]) == 78 and res["junction_tree"]["cliques"]
    assert main(["graph", str(files / "reports.parquet"), "--method", "moment", "--quiet",
                 "--out-json", str(files / "g.json")]) == 0
    again = json.loads((files / "g.json").read_text())
    assert again["graph"]["edges"] == res["graph"]["edges"]
    assert main(["graph", str(files / "missing.json")]) == 2


def test_demo_runs_whole_pipeline(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--n", "1500", "--f", "0.3", "--quiet"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    for name in ("model.json", "synthetic.csv", "graph.png", "graph_mi.png", "reports.parquet"):
        assert (tmp_path / name).exists()
    assert summary["tvd_2way_synthetic"] < summary["tvd_2way_independent"]
    assert set(summary["seconds"]) >= {"encode", "fit", "synthesize"}
    assert capsys.readouterr().out == ""


def test_fit_options_budget_and_model_phi(files, capsys):
    assert main(["fit", str(files / "reports.parquet"), "--method", "moment", "--quiet",
                 "--clique-budget", "2000", "--out", str(files / "small.json")]) == 0
    out = capsys.readouterr().out
    assert "over budget: dropped edge" in out and "budget 2000" in out
    assert main(["fit", str(files / "reports.parquet"), "--method", "moment", "--quiet", "--json",
                 "--model-phi", "0.3", "--out", str(files / "dense.json")]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["model_phi"] == 0.3 and rep["graph"]["model_edges"] >= rep["edges"]
    assert main(["fit", str(files / "reports.parquet"), "--phi", "1.5", "--quiet",
                 "--out", str(files / "bad.json")]) == 2
    assert "phi (1.5) must be in (0, 1]" in capsys.readouterr().err
