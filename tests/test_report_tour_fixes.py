"""What a new user's tour found in the report and in small error messages (each test failed before).

Wide data (60 attributes): heatmaps drawn near the page's width with distinct,
thinned tick labels; the dependency graph without a ring of 60 names and the
junction tree as a listing; never-measured pairs grey in the MI estimated from
the reports.  Tiny data (40 reports): the privacy text says shuffling gives no
meaningful amplification; node labels stay inside their nodes.
"""
from __future__ import annotations

import warnings

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection

from lopub.collect import collect
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.dependency.junction import junction_tree
from lopub.pipeline.steps import fit
from lopub.publish import plots
from lopub.publish.report import build_report, figures
from lopub.publish.report.notes import privacy_statement, shuffle_note
from test_figure_text import text_problems

WIDE = [f"a_very_long_attribute_name_number_{i:02d}" for i in range(60)]


def _one_attribute_model(d: int = 6, n: int = 3000):
    rng = np.random.default_rng(0)
    names = [f"a_very_long_attribute_name_number_{i:02d}" for i in range(d)]
    frame = pd.DataFrame({a: rng.choice(["x", "y", "z"], n) for a in names})
    real = Dataset.from_pandas(frame, Domain.from_categories({a: ["x", "y", "z"] for a in names}))
    reports, _ = collect(real, 4.0, protocol="one-attribute", rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit(reports).model, frame


def _tree(g):
    return junction_tree(g, Domain.from_categories({a: ["x", "y"] for a in g.nodes}))


def test_wide_heatmaps_fit_the_page_with_distinct_thinned_labels():
    rng = np.random.default_rng(0)
    for d in (60, 120):
        m = rng.random((d, d))
        attrs = [f"a_very_long_attribute_name_number_{i:03d}" for i in range(d)]
        fig = figures.heatmaps_figure({"release": m, "baseline": m}, attrs, label="TVD")
        assert fig.get_figwidth() <= figures.PAGE_INCHES + 0.01  # shown near its drawn size
        labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
        assert len(set(labels)) == len(labels)  # not sixty "a_very_long_a..."
        step = figures.tick_step(d)
        assert len(labels) == len(range(0, d, step))
        assert text_problems(fig) == []
    assert figures.tick_step(120) > 1 and "every 2nd one labelled" in figures.tick_note(120)
    assert figures.tick_note(13) == ""


def test_sixty_isolated_attributes_are_listed_not_drawn_on_a_ring():
    g = nx.Graph()
    g.add_nodes_from(WIDE)
    fig = plots.graph_figure(g, _tree(g))
    assert text_problems(fig) == []
    texts = [t.get_text() for t in fig.findobj(lambda o: hasattr(o, "get_text"))]
    assert not any(t == "C59" for t in texts)  # no row of 60 tree nodes
    assert any("too many to draw" in t for t in texts)


def test_graph_node_labels_stay_inside_their_nodes():
    g = nx.Graph()
    g.add_nodes_from(["sex", "age", "smoker", "income"])
    fig = plots.graph_figure(g, _tree(g))
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    r = canvas.get_renderer()
    labels = [t for t in fig.axes[0].texts if t.get_text() in g]
    assert len(labels) == 4
    for t in labels:  # the node is the label's own box ...
        box = t.get_bbox_patch()
        assert box is not None and box.get_window_extent(r).width >= t.get_window_extent(r).width
    markers = [c for c in fig.axes[0].collections if isinstance(c, PathCollection) and np.any(c.get_sizes() > 0)]
    assert not markers  # ... not a fixed-size circle under a wider name


def test_never_measured_pairs_are_grey_in_the_estimated_mi():
    from lopub.publish.report.data import unmeasured_mask

    model, frame = _one_attribute_model()
    mask = unmeasured_mask(model, list(model.domain.attrs))
    assert mask.sum() == 6 * 5 and not mask.diagonal().any()
    page = build_report(model, real=frame)
    # none of the 15 pairs measured: no all-grey panel, the text says why (test_report_mi_text.py)
    assert "the collection measured no pair of attributes (the model takes all 15 pairs as independent)" in page


def test_shuffling_forty_reports_says_it_gives_no_amplification():
    coll = {"protocol": "marginals", "epsilon_per_record": 4.0, "subsets": [["a"]], "oracles": ["grr"]}
    text = shuffle_note(coll, 40)
    assert "no meaningful amplification" in text and "also bounds" not in text
    assert any("no meaningful amplification" in p for p in privacy_statement(coll, real_shown=False, n=40))
    assert "also bounds" in shuffle_note(coll, 100_000)


# small error messages ------------------------------------------------------
def test_privacy_f_zero_says_f_must_be_positive(capsys):
    from lopub.cli import main

    assert main(["privacy", "--f", "0"]) == 2
    err = capsys.readouterr().err
    assert "f must be > 0" in err and "smallest float" not in err
    with pytest.raises(SystemExit):
        main(["privacy", "--f", "1e-400"])  # typed non-zero, read as 0: said so by argparse
    assert "below the smallest float" in capsys.readouterr().err


def test_model_query_takes_one_name():
    model, _ = _one_attribute_model(d=3, n=600)
    name = model.domain.attrs[0]
    assert model.query(name).attrs == model.query([name]).attrs == (name,)


def test_compare_protocols_too_few_records_names_attributes_and_fails(capsys):
    from lopub.cli import main

    code = main(["compare-protocols", "--n", "1", "--epsilons", "4", "--protocols", "smp-grr", "--seed", "1"])
    out, err = capsys.readouterr()
    assert code == 2 and "could not run" in err
    assert "[0, 1" not in out and ("'sex'" in out or "'age_group'" in out)


def test_compare_protocols_missing_csv_is_file_not_found(capsys, tmp_path):
    from lopub.cli import main

    assert main(["compare-protocols", "--dataset", str(tmp_path / "nosuch.csv")]) == 2
    err = capsys.readouterr().err
    assert "file not found" in err and "--domain is needed" not in err


def test_fit_stopped_on_tol_but_not_converged_reads_consistently():
    from lopub.cli.pipeline import _not_converged
    from lopub.model.pgm.fit import not_converged_note
    from lopub.publish.report.notes import not_converged

    mf = {"converged": False, "stop": "tol", "gap": 11.45, "iterations": 133}
    for text in (_not_converged(mf), not_converged(mf), not_converged_note("tol", 133, 11.45)):
        assert "stopped: tol" not in text and "loss stopped falling" in text and "11.4" in text
    assert "raise max_iter" not in not_converged_note("tol", 133, 11.45)
    assert "max_iter" in not_converged_note("max_iter", 5000, 3.0)


def test_sixty_linked_attributes_spread_without_overlapping_names():
    g = nx.relabel_nodes(nx.gnm_random_graph(60, 70, seed=0), dict(enumerate(WIDE)))
    fig = plots.graph_figure(g, _tree(g))
    assert text_problems(fig) == []
    assert any("names shortened" in t.get_text() for t in fig.axes[1].texts + [fig.axes[1].title])
