"""lopub.Synthesizer: fit / fit_reports / sample / query / save-load / parameters / errors."""
import warnings

import numpy as np
import pandas as pd
import pytest

import lopub
from lopub.collect import collect
from lopub.datasets import embedded
from lopub.model.verdict import ReleaseQualityWarning
from lopub.pipeline.synthesizer import NotFittedError, Synthesizer, SynthesizerReport

SMALL = ["sex", "race", "education", "income"]


@pytest.fixture(scope="module")
def frame():
    return embedded(4000).to_pandas()


@pytest.fixture(scope="module")
def fitted(frame):
    return Synthesizer(epsilon=4, rng=0).fit(frame)


def test_exported_lazily():
    assert lopub.Synthesizer is Synthesizer


def test_fit_sample_same_columns_and_labels(fitted, frame):
    out = fitted.sample(500, seed=3)
    assert isinstance(out, pd.DataFrame) and len(out) == 500
    assert list(out.columns) == list(frame.columns)
    for c in frame.columns:
        assert set(out[c].astype(str)) <= set(frame[c].astype(str)), c
        assert list(out[c].cat.categories) == list(frame[c].cat.categories), c  # declared order kept
    assert len(fitted.sample(seed=1)) == len(frame)  # default: as many as reports


def test_inferred_domain_plain_columns():
    df = embedded(1500, rng=3).to_pandas()[SMALL].astype(str)  # no categorical dtype: sorted labels
    s = Synthesizer(epsilon=8, protocol="one-attribute", rng=0).fit(df)
    assert s.domain_.attrs == tuple(SMALL)
    assert list(s.domain_["race"].categories) == sorted(df["race"].unique())
    assert set(s.sample(200, seed=0)["income"].astype(str)) <= set(df["income"])


def test_fit_report(fitted, frame):
    rep = fitted.fit_report_
    assert isinstance(rep, SynthesizerReport)
    assert rep.epsilon == 4.0 and rep.collection.simulated and rep.collection.n == len(frame)
    assert rep.collection.protocol in ("marginals", "one-attribute", "bloom")
    assert rep.collection.protocol == rep.collection.recommended
    assert rep.graph_size["cliques"] == len(rep.fit.cliques) >= 1
    assert set(rep.seconds) >= {"domain", "collect", "fit", "total"}
    assert rep.to_dict()["collection"]["epsilon_per_record"] == 4.0
    assert fitted.domain_.attrs == tuple(frame.columns)


def test_query_and_graph(fitted):
    m = fitted.query(["sex", "income"], where={"race": "White"})
    assert m.attrs == ("sex", "income") and np.isclose(m.values.sum(), 1.0)
    g = fitted.graph()
    assert set(g.graph.nodes) == set(fitted.domain_.attrs)


def test_same_seed_same_sample_and_save_load(fitted, tmp_path):
    a = fitted.sample(300, seed=7)
    pd.testing.assert_frame_equal(a, fitted.sample(300, seed=7))
    path = tmp_path / "syn.json.gz"
    fitted.save(path)
    back = Synthesizer.load(path)
    pd.testing.assert_frame_equal(a, back.sample(300, seed=7))
    assert back.get_params() == {**fitted.get_params(), "domain": None}
    assert back.fit_report_.collection == fitted.fit_report_.collection
    assert back.fit_report_.fit.cliques == fitted.fit_report_.fit.cliques
    assert lopub.model.graphical.Model.load(path).meta["synthesizer"]["format"] == "lopub-synthesizer"


def test_load_reads_a_plain_fit_model_and_says_how_without_collection(fitted, tmp_path):
    # issue 26: a model written by `lopub fit` (no meta['synthesizer']) loads as a fitted synthesizer
    path = tmp_path / "m.json"
    fitted.model_.meta.pop("synthesizer")
    try:
        fitted.model_.save(path)
    finally:
        fitted.model_.meta["synthesizer"] = fitted._meta()
    back = Synthesizer.load(path)
    assert back.epsilon == fitted.fit_report_.collection.epsilon_per_record
    assert back.fit_report_.collection.simulated is False
    assert back.fit_report_.fit.cliques == fitted.fit_report_.fit.cliques
    # the same records; a plain model does not know the input's ordered categoricals (embedded's)
    same = fitted.sample(200, seed=5).apply(
        lambda c: c.cat.as_unordered() if isinstance(c.dtype, pd.CategoricalDtype) else c)
    pd.testing.assert_frame_equal(back.sample(200, seed=5), same)
    # without collection parameters (exact marginals): refused, with the way to sample it
    model = lopub.model.graphical.Model.load(path)
    model.meta["fit"]["collection"] = None
    model.save(path)
    with pytest.raises(ValueError, match=r"without collection parameters.*synthesize\(Model.load"):
        Synthesizer.load(path)
    model.meta.pop("fit")
    model.save(path)
    with pytest.raises(ValueError, match=r"without a synthesizer.*lopub synthesize"):
        Synthesizer.load(path)


def test_params_and_repr():
    s = Synthesizer(epsilon=2.5, protocol="marginals", bins=5)
    p = s.get_params()
    assert p["epsilon"] == 2.5 and p["protocol"] == "marginals" and p["bins"] == 5
    assert p["method"] == lopub.pipeline.options.FitOptions().method  # fit's default, from one place
    assert p["clique_budget"] is None  # fit's default for the release (lopub.pipeline.steps.default_clique_budget)
    assert repr(s).startswith("Synthesizer(epsilon=2.5, protocol='marginals'")
    assert "bins=5" in repr(s)
    assert s.set_params(epsilon=1.0, structure="tree") is s
    assert s.epsilon == 1.0 and s.structure == "tree"
    assert Synthesizer(**s.get_params()).get_params() == s.get_params()


@pytest.mark.parametrize("bad, match", [
    (dict(epsilon=0), r"epsilon \(0.0\) must be a finite number > 0"),
    (dict(epsilon=float("inf")), r"epsilon \(inf\)"),
    (dict(epsilon=1, protocol="rappor"), r"protocol \('rappor'\) must be one of"),
    (dict(epsilon=1, release="x"), r"release \('x'\)"),
    (dict(epsilon=1, bins=1), r"bins \(1\)"),
])
def test_bad_parameters_named(bad, match):
    with pytest.raises(ValueError, match=match):
        Synthesizer(**bad)


def test_bad_parameter_types_and_set_params():
    with pytest.raises(TypeError, match=r"epsilon \('4'\) must be a real number"):
        Synthesizer(epsilon="4")
    s = Synthesizer(epsilon=1)
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['eps'\]"):
        s.set_params(eps=2)
    with pytest.raises(ValueError, match=r"epsilon \(-1.0\)"):
        s.set_params(epsilon=-1)
    assert s.epsilon == 1  # unchanged after a refused set_params


def test_use_before_fit():
    s = Synthesizer(epsilon=1)
    for call in (lambda: s.sample(5), lambda: s.query(["sex"]), s.graph, lambda: s.save("x.json")):
        with pytest.raises(NotFittedError, match="not fitted yet"):
            call()


def test_fit_bad_data():
    with pytest.raises(TypeError, match=r"data \(list\) must be a pandas DataFrame"):
        Synthesizer(epsilon=1).fit([[1, 2]])


@pytest.mark.parametrize("protocol", ["marginals", "one-attribute", "bloom"])
def test_fit_reports(protocol):
    ds = embedded(3000, rng=5).select(SMALL)
    reports, _ = collect(ds, 8.0, protocol=protocol, rng=2)
    s = Synthesizer(epsilon=1).fit_reports(reports)
    rep = s.fit_report_.collection
    assert rep.protocol == protocol and not rep.simulated and rep.n == 3000
    assert rep.epsilon_per_record == pytest.approx(8.0)
    out = s.sample(50, seed=0)
    assert list(out.columns) == SMALL


def test_fit_reports_checks(frame):
    with pytest.raises(TypeError, match=r"reports \(DataFrame\) must be Bloom Reports"):
        Synthesizer(epsilon=1).fit_reports(frame)
    ds = embedded(2000, rng=5).select(SMALL)
    reports, _ = collect(ds, 4.0, protocol="marginals", rng=2)
    other = embedded(10).domain  # all 13 attributes
    with pytest.raises(ValueError, match="differs from the reports' domain"):
        Synthesizer(epsilon=1, domain=other).fit_reports(reports)


def test_high_epsilon_warning_in_report():
    ds = embedded(2000, rng=5).select(SMALL)
    with pytest.warns(UserWarning, match=r"^epsilon 20 per record is a weak guarantee"):
        s = Synthesizer(epsilon=20, protocol="marginals", rng=1).fit(ds)  # as the guide's budget page says
    assert s.fit_report_.collection.warning and "weak guarantee" in s.fit_report_.warnings[0]
    reports, _ = collect(ds, 20.0, protocol="marginals", rng=2)
    with pytest.warns(UserWarning, match="epsilon 20 per record is a weak guarantee"):
        Synthesizer(epsilon=1).fit_reports(reports)  # the reports' own budget


def test_no_epsilon_warning_at_a_deployed_budget():
    ds = embedded(2000, rng=5).select(SMALL)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", ReleaseQualityWarning)
        Synthesizer(epsilon=8, protocol="marginals", rng=1).fit(ds)


def test_report_html(fitted, tmp_path, frame):
    path = tmp_path / "r.html"
    fitted.report(path, real=frame, n=1000, seed=0)
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and "data:image/png;base64," in text
