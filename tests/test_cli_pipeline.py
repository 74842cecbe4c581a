"""lopub fit / synthesize / query / graph / evaluate / demo."""
import json

import numpy as np

import pandas as pd
import pytest

from lopub.cli import main
from lopub.client import encode
from lopub.datasets import embedded_model
from lopub.reports.spec import CollectionSpec


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


def test_graph_of_a_model_says_which_options_it_ignores(files, capsys):
    assert main(["graph", str(files / "model.json"), "--method", "moment", "--prune"]) == 0
    assert "--method, --prune ignored" in capsys.readouterr().err
    assert main(["graph", str(files / "model.json")]) == 0
    assert "ignored" not in capsys.readouterr().err


def test_demo_default_collects_at_a_realistic_budget_with_the_planned_protocol(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--n", "4000", "--quiet"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["epsilon_per_record"] == 8.0
    assert summary["protocol"] in summary["planner"]
    assert summary["protocol"] == min(summary["planner"], key=summary["planner"].get)
    assert "epsilon = 8" in summary["privacy"]
    assert (tmp_path / ("reports.parquet" if summary["protocol"] == "bloom" else "reports.npz")).exists()
    assert summary["tvd_2way_synthetic"] < summary["tvd_2way_independence_noisy_oneway"]


def test_demo_refuses_epsilon_and_f_together(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path / "x"), "--epsilon", "4", "--f", "0.5", "--quiet"]) == 2
    assert "--epsilon (4.0) or --f (0.5), not both" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_demo_runs_whole_pipeline(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--n", "1500", "--f", "0.3", "--quiet"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    for name in ("model.json", "synthetic.csv", "graph.png", "graph_mi.png", "reports.parquet"):
        assert (tmp_path / name).exists()
    assert summary["tvd_2way_synthetic"] < summary["tvd_2way_independence_noisy_oneway"]
    assert 0 < summary["tvd_2way_pair_estimates"] < summary["tvd_2way_independence_noisy_oneway"]
    assert (summary["release"], summary["model_fit"]["converged"]) == ("pgm", True)
    assert summary["structure"] in ("auto", "phi", "tree")
    assert set(summary["seconds"]) >= {"encode", "fit", "synthesize"}
    assert capsys.readouterr().out == ""


def test_fit_options_budget_and_model_phi(files, capsys):
    assert main(["fit", str(files / "reports.parquet"), "--method", "moment", "--quiet",
                 "--structure", "phi", "--clique-budget", "2000", "--out", str(files / "small.json")]) == 0
    out = capsys.readouterr().out
    assert "over budget: dropped edge" in out and "budget 2000" in out
    assert main(["fit", str(files / "reports.parquet"), "--method", "moment", "--quiet", "--json",
                 "--model-phi", "0.3", "--out", str(files / "dense.json")]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["model_phi"] == 0.3 and rep["graph"]["model_edges"] >= rep["edges"]
    assert main(["fit", str(files / "reports.parquet"), "--phi", "1.5", "--quiet",
                 "--out", str(files / "bad.json")]) == 2
    assert "phi (1.5) must be in (0, 1]" in capsys.readouterr().err


# --- audit fixes: dropped edges, --quiet, source detection, phi, conditions, collection -------
def test_graph_marks_edges_dropped_for_budget(files, capsys):
    argv = ["graph", str(files / "reports.parquet"), "--method", "moment", "--structure", "phi",
            "--clique-budget", "2000"]
    assert main(argv + ["--json"]) == 0
    cap = capsys.readouterr()
    res = json.loads(cap.out)
    dropped = res["dropped_for_budget"]
    assert dropped and res["clique_budget"] == 2000
    cliques = [set(c) for c in res["junction_tree"]["cliques"]]
    for a, b in dropped:
        assert [a, b] in res["graph"]["edges"]
        assert not any({a, b} <= c for c in cliques)  # really in no clique
    flagged = [[d["a"], d["b"]] for d in res["graph"]["decisions"] if d["dropped_for_budget"]]
    assert flagged == dropped
    kept = [e for e in res["graph"]["edges"] if e not in dropped]
    assert all(any(set(e) <= c for c in cliques) for e in kept)
    note = [line for line in cap.err.splitlines() if line.startswith("note:")]
    assert len(note) == 1 and "clique budget (2000 cells)" in note[0]
    assert all(f"{a} - {b}" in note[0] for a, b in dropped)
    assert main(argv + ["--quiet"]) == 0
    cap = capsys.readouterr()
    assert cap.err == ""
    marked = [line for line in cap.out.splitlines() if "[dropped for clique budget" in line]
    assert len(marked) == len(dropped)
    assert "clique budget 2000 cells" in cap.out


def test_quiet_leaves_stderr_empty_for_fit_and_graph(files, capsys):
    fit = ["fit", str(files / "reports.parquet"), "--method", "moment", "--structure", "phi",
           "--clique-budget", "2000", "--out", str(files / "q.json")]
    assert main(fit) == 0
    loud = capsys.readouterr().err
    assert "pairwise joints" in loud and "note: clique budget (2000 cells)" in loud
    assert main(fit + ["--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["graph", str(files / "reports.parquet"), "--method", "moment", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["graph", str(files / "q.json"), "--phi", "0.3", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_progress_is_plain_lines_when_stderr_is_not_a_tty(files, capsys):
    assert main(["graph", str(files / "reports.parquet"), "--method", "moment"]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err and "pairwise joints: 78/78" in err


def test_graph_source_detected_by_content(files, capsys, tmp_path):
    import gzip
    import shutil

    ref = main(["graph", str(files / "model.json"), "--json"])
    edges = json.loads(capsys.readouterr().out)["graph"]["edges"]
    assert ref == 0
    shutil.copy(files / "model.json", tmp_path / "model.lopub")
    (tmp_path / "packed.bin").write_bytes(gzip.compress((files / "model.json").read_bytes()))
    shutil.copy(files / "reports.parquet", tmp_path / "reports.json")  # a misleading name
    for name, kind in (("model.lopub", "model"), ("packed.bin", "model"), ("reports.json", "reports")):
        assert main(["graph", str(tmp_path / name), "--method", "moment", "--quiet", "--json"]) == 0, name
        res = json.loads(capsys.readouterr().out)
        assert res["source"] == kind and res["graph"]["edges"] == edges
    (tmp_path / "junk.dat").write_bytes(b"hello world")
    assert main(["graph", str(tmp_path / "junk.dat")]) == 2
    err = capsys.readouterr().err
    assert "neither a lopub model" in err and "Parquet" in err and "junk.dat" in err


def test_model_phi_errors_name_model_phi(files, capsys):
    assert main(["fit", str(files / "reports.parquet"), "--model-phi", "2", "--quiet",
                 "--out", str(files / "bad.json")]) == 2
    err = capsys.readouterr().err
    assert "model_phi (2.0) must be in (0, 1]" in err and "error: phi" not in err


def test_graph_validates_phi_and_rethresholds_a_model(files, capsys):
    model = files / "phi_model.json"  # re-thresholding is about the paper's rule
    assert main(["fit", str(files / "reports.parquet"), "--method", "moment", "--structure", "phi",
                 "--quiet", "--out", str(model)]) == 0
    capsys.readouterr()
    assert main(["graph", str(model), "--phi", "3"]) == 2
    assert "phi (3.0) must be in (0, 1]" in capsys.readouterr().err
    assert main(["graph", str(model), "--json"]) == 0
    base = json.loads(capsys.readouterr().out)
    assert main(["graph", str(model), "--phi", "0.3", "--json"]) == 0
    cap = capsys.readouterr()
    res = json.loads(cap.out)
    assert res["graph"]["phi"] == 0.3 and res["graph"]["stats"]["rethresholded_from"] == 0.4
    assert len(res["graph"]["edges"]) > len(base["graph"]["edges"])
    assert all(e in res["graph"]["edges"] for e in base["graph"]["edges"])
    assert res["junction_tree"] == base["junction_tree"]  # the model's tree, unchanged
    assert "re-thresholded at phi 0.3" in cap.err and "junction tree and cliques are the model's" in cap.err


def test_evaluate_names_the_file_with_missing_columns(files, capsys, tmp_path):
    syn = pd.read_csv(files / "real.csv").drop(columns=["income"])
    syn.to_csv(tmp_path / "partial.csv", index=False)
    assert main(["evaluate", "--real", str(files / "real.csv"), "--synthetic",
                 str(tmp_path / "partial.csv"), "--domain", str(files / "domain.json")]) == 2
    err = capsys.readouterr().err
    assert f"--synthetic {tmp_path / 'partial.csv'}" in err and "missing columns ['income']" in err
    assert main(["evaluate", "--real", str(tmp_path / "partial.csv"), "--synthetic",
                 str(files / "real.csv"), "--domain", str(files / "domain.json")]) == 2
    assert "--real " in capsys.readouterr().err


def test_conditional_query_shows_condition_and_its_mass(files, capsys):
    assert main(["query", str(files / "model.json"), "--attrs", "sex"]) == 0
    p_male = float(capsys.readouterr().out.split("Male")[1].split()[0])
    assert main(["query", str(files / "model.json"), "--attrs", "income", "--where", "sex=Male"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("P(income | sex=Male); estimated P(sex=Male) = ")
    assert float(out.splitlines()[0].split("= ")[1].split()[0]) == pytest.approx(p_male, abs=1e-6)
    assert "of 3000 records" in out.splitlines()[0]
    assert main(["query", str(files / "model.json"), "--attrs", "income", "--where", "sex=Male",
                 "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["condition"] == {"sex": "Male"}
    assert res["condition_probability"] == pytest.approx(p_male, abs=1e-6)


def test_zero_probability_condition_is_an_error(tmp_path, capsys):
    import numpy as np

    from lopub.dependency import junction_tree
    from lopub.data.domain import Domain
    from lopub.data.marginal import Marginal
    from lopub.model.graphical import Model

    dom = Domain.from_categories({"a": ["x", "y"], "b": ["u", "v", "w"]})
    import networkx as nx

    g = nx.Graph([("a", "b")])
    jt = junction_tree(g, dom)
    table = Marginal(dom, np.array([[0.3, 0.2, 0.0], [0.1, 0.4, 0.0]]), 100)
    Model.from_marginals(dom, jt, [table.project(list(c)) for c in jt.cliques], n=100).save(
        tmp_path / "m.json")
    assert main(["query", str(tmp_path / "m.json"), "--attrs", "a", "--where", "b=w"]) == 2
    err = capsys.readouterr().err
    assert "condition b=w has estimated probability 0" in err


def test_model_records_collection_parameters(files, capsys):
    from lopub.model.graphical import Model
    from lopub.reports.bloom import Reports

    spec = Reports.load(files / "reports.parquet").spec
    col = Model.load(files / "model.json").collection
    assert col["f"] == 0.2 and col["epsilon_per_record"] == pytest.approx(spec.epsilon)
    assert list(col["epsilon_per_attribute"]) == list(spec.domain.attrs)
    assert list(col["h"].values()) == list(spec.h) and list(col["m"].values()) == list(spec.m)
    assert main(["query", str(files / "model.json"), "--attrs", "sex", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["collection"] == col
    assert main(["graph", str(files / "model.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["collection"] == col
    assert main(["fit", str(files / "reports.parquet"), "--method", "moment", "--quiet",
                 "--out", str(files / "c.json")]) == 0
    assert "collection: f 0.2, epsilon per record" in capsys.readouterr().out


def captured_figure(monkeypatch):
    import lopub.publish.plots as plots

    figs = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figs.append(fig))
    return plots, figs


def red_lines(ax):
    """Line collections drawn in the 'dropped' red (#d62728)."""
    red = (0xd6 / 255, 0x27 / 255, 0x28 / 255)
    return [c for c in ax.collections if hasattr(c, "get_segments") and len(c.get_segments())
            and np.allclose(c.get_edgecolor()[0][:3], red)]


def test_graph_picture_draws_dropped_edges_dashed_red(monkeypatch):
    import warnings

    from lopub.pipeline.steps import fit

    plots, figs = captured_figure(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit(estimator=embedded_model(), phi=0.4, clique_budget=5000, structure="phi").model
    dropped = model.graph.dropped
    assert dropped
    plots.plot_graph(model.graph.graph, model.tree, "x.png", dropped_edges=dropped)
    ax1, ax2 = figs[0].axes
    red = red_lines(ax1)
    assert len(red) == 1 and len(red[0].get_segments()) == len(dropped)
    assert red[0].get_linestyle()[0][1] is not None  # dashed
    assert "dropped for clique budget" in [t.get_text() for t in ax1.get_legend().get_texts()]
    assert f"{len(dropped)} dropped for clique budget" in ax1.get_title()
    # default: edges no clique holds are the dropped ones
    plots.plot_graph(model.graph.graph, model.tree, "y.png")
    red2 = red_lines(figs[1].axes[0])
    assert len(red2) == 1 and len(red2[0].get_segments()) == len(dropped)
    # separator labels: every separator written out in full, never clipped by the axes
    labels = [t for t in ax2.texts if not t.get_clip_on()]
    assert len(labels) == len(model.tree.edges)
    for (p, c), t in zip(model.tree.edges, labels):
        assert t.get_text().replace("\n", " ").replace(", ", " ").split() == list(model.tree.separator(c))


def test_mi_heatmap_distinguishes_not_computed_from_diagonal(monkeypatch):
    from lopub.dependency import MarginalCache, pruned_dependency_graph

    plots, figs = captured_figure(monkeypatch)
    dg = pruned_dependency_graph(MarginalCache(embedded_model()), 0.4)
    assert np.isnan(dg.mi).any()
    plots.plot_mi(dg, "m.png")
    ax = figs[0].axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "not computed (pruned)" in legend and "diagonal (attribute itself)" in legend
    d = len(dg.domain)
    faces = {}
    for patch in ax.patches:
        x, y = patch.get_xy()
        i, j = round(y + 0.5), round(x + 0.5)
        if patch.get_fill():
            faces.setdefault("diag" if i == j else "other", set()).add(tuple(patch.get_facecolor()))
    assert len(faces["diag"]) == 1 and len(faces["other"]) == 1 and faces["diag"] != faces["other"]
    off = ~np.eye(d, dtype=bool)
    assert sum(1 for p in ax.patches if p.get_fill() and p.get_hatch()) == int(np.isnan(dg.mi[off]).sum())
    assert "log10(MI / tau)" in figs[0].axes[1].get_ylabel()


def test_mi_heatmap_legend_without_pruning(monkeypatch):
    from lopub.dependency import dependency_graph

    plots, figs = captured_figure(monkeypatch)
    plots.plot_mi(dependency_graph(embedded_model(), 0.4), "m.png")
    legend = [t.get_text() for t in figs[0].axes[0].get_legend().get_texts()]
    assert legend == ["edge (MI >= tau)", "diagonal (attribute itself)"]


def test_fit_no_shrink_fits_the_measurements_alone(tmp_path, capsys):
    """A noise-dominated collection (300 users, 8 columns, epsilon 0.5): the default fit says how much
    of the one-way tables it kept; --no-shrink leaves the priors out (shrinkage None in --json)."""
    from lopub.collect import MarginalPlan, collect_records

    bn = embedded_model()
    data = bn.sample(300, rng=2).select(list(bn.domain.attrs)[:8])
    plan = MarginalPlan(data.domain, [(a,) for a in data.domain.attrs], 0.5)
    collect_records(data, plan, rng=3).save(tmp_path / "r.npz")
    summaries = {}
    for flag in ([], ["--no-shrink"]):
        capsys.readouterr()
        assert main(["fit", str(tmp_path / "r.npz"), "--out", str(tmp_path / f"m{len(flag)}.json"), "--json",
                     *flag]) == 0
        summaries[bool(flag)] = json.loads(capsys.readouterr().out)["model_fit"]
    assert summaries[True]["shrinkage"] is None
    assert 0.0 <= summaries[False]["shrinkage"] < 1.0
    targets = summaries[False]["shrinkage_targets"]
    assert targets and all(t == "uniform" or t.startswith("mean table of the") for t in targets)
    assert main(["fit", str(tmp_path / "r.npz"), "--out", str(tmp_path / "m2.json")]) == 0
    assert f"shrunk towards {' or '.join(targets)}" in capsys.readouterr().out
