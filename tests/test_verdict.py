"""lopub.model.checks / verdict: each check of a release without true data, on hand-built models.

Measurements are the true tables plus Gaussian noise of a stated per-cell
variance; a correct model then passes every check with probability at
least 1 - ALPHA (1e-3) per check, whatever the seed, and a broken one fails
by far more than the noise (statistics of thousands of degrees of freedom
of noise where the threshold is a few dozen).
"""
import itertools

import networkx as nx
import numpy as np
import pytest

from lopub.data.domain import Domain
from lopub.data.marginal import Marginal
from lopub.dependency.junction import junction_tree
from lopub.estimate.measurement import Measurement
from lopub.model.checks import ALPHA, MIN_GROUP_USERS, assess
from lopub.model.graphical import Model
from lopub.model.verdict import CAVEATS, GOOD, NOT_USABLE, Finding, Verdict, verdict_of

SD = 0.005  # per-cell noise of the "good" measurements
DOM = Domain.from_categories({"x": ["0", "1", "2"], "y": ["0", "1", "2"], "z": ["p", "q"], "w": ["u", "v"]})


def _truth() -> np.ndarray:
    """x and y nearly equal (like education / education_num), z depends on y, w independent."""
    xy = np.full((3, 3), 0.02) + np.diag([0.3, 0.2, 0.34])
    xy /= xy.sum()
    z_given_y = np.array([[0.9, 0.1], [0.5, 0.5], [0.2, 0.8]])
    w = np.array([0.7, 0.3])
    return np.einsum("xy,yz,w->xyzw", xy, z_given_y, w)


def _table(p: np.ndarray, attrs) -> np.ndarray:
    keep = [DOM.attrs.index(a) for a in attrs]
    drop = tuple(i for i in range(p.ndim) if i not in keep)
    t = p.sum(axis=drop)
    order = sorted(keep)
    return np.transpose(t, [order.index(i) for i in keep])


def _measure(p, attrs, rng, sd=SD, n=10_000):
    t = _table(p, attrs)
    noisy = t + rng.normal(0.0, sd, t.shape)
    return Measurement(DOM.project(list(attrs)), np.clip(noisy, 0, None) / np.clip(noisy, 0, None).sum(), n,
                       {}, variance=sd ** 2, provenance={"protocol": "test"}, raw=noisy)


def _measurements(p, rng, sd=SD):
    sets = [[a] for a in DOM.attrs] + [list(s) for s in itertools.combinations(DOM.attrs, 2)]
    return [_measure(p, s, rng, sd) for s in sets]


def _model(p, edges) -> Model:
    g = nx.Graph()
    g.add_nodes_from(DOM.attrs)
    g.add_edges_from(edges)
    jt = junction_tree(g, DOM)
    tables = [Marginal(DOM.project(list(c)), _table(p, c), 10_000) for c in jt.cliques]
    return Model.from_marginals(DOM, jt, tables, n=10_000)


def _checks(v: Verdict, severity: str) -> set[str]:
    return {f.check for f in v.findings if f.severity == severity}


FULL = [("x", "y"), ("y", "z")]


def test_a_correct_model_is_good(rng=np.random.default_rng(0)):
    p = _truth()
    v = assess(_model(p, FULL), _measurements(p, rng), n=10_000)
    assert v.level == GOOD, v.reasons
    assert {"fit", "uniform", "independence"} <= _checks(v, "ok")
    assert all("fits its measurements within their noise" not in r for r in v.warnings)
    assert any("within their noise" in r for r in v.reasons)  # a good verdict says why


def test_uniform_model_is_not_usable():
    p = _truth()
    uniform = np.full(p.shape, 1.0 / p.size)
    v = assess(_model(uniform, FULL), _measurements(p, np.random.default_rng(1)))
    assert v.level == NOT_USABLE
    assert {"fit", "uniform"} <= _checks(v, "fatal")
    lost = next(f for f in v.findings if f.check == "uniform")
    assert set(lost.figures["columns"]) == {"x", "y", "z", "w"}
    fit = next(f for f in v.findings if f.check == "fit")
    assert fit.figures["chi2"] > 100 * fit.figures["dof"]


def test_exact_measurement_broken_is_fatal():
    dom = Domain.from_categories({"a": ["x", "y"], "c": ["k"]})
    jt = junction_tree(nx.empty_graph(["a", "c"]), dom)
    model = Model.from_marginals(dom, jt, [Marginal(dom.project(["a"]), np.array([0.5, 0.5]), 100),
                                           Marginal(dom.project(["c"]), np.array([1.0]), 100)])
    exact = Measurement(dom.project(["a"]), np.array([0.8, 0.2]), 100, {}, variance=0.0)
    v = assess(model, [exact, Measurement(dom.project(["c"]), np.array([1.0]), 100, {}, variance=0.0)])
    assert v.level == NOT_USABLE and "fit" in _checks(v, "fatal")
    assert "exact" in v.reasons[0]
    # the one-category column is a note, never a reason
    assert any(f.check == "no-information" and f.severity == "info" and "c" in f.figures["columns"]
               for f in v.findings)


def test_independent_model_of_dependent_measurements_has_caveats():
    p = _truth()
    v = assess(_model(p, []), _measurements(p, np.random.default_rng(2)))
    assert v.level == CAVEATS
    assert "independence" in _checks(v, "caveat")
    lost = next(f for f in v.findings if f.check == "lost-dependency" and f.severity == "caveat")
    assert ["x", "y"] in lost.figures["pairs"]  # the near-copy pair, as Adult's education vs education_num


def test_dependency_no_edge_kept_is_named():
    p = _truth()
    v = assess(_model(p, [("y", "z")]), _measurements(p, np.random.default_rng(3)))
    assert v.level == CAVEATS
    lost = next(f for f in v.findings if f.check == "lost-dependency" and f.severity == "caveat")
    # x has no edge: its pairs with y (a near copy) and with z (through y) are lost, strongest first
    assert lost.figures["pairs"][0] == ["x", "y"] and all("x" in s for s in lost.figures["pairs"])
    assert lost.figures["cramers_v"][0] > 0.5 and lost.figures["model_cramers_v"][0] < 0.05
    # with the edge kept, nothing is lost
    assert "lost-dependency" not in _checks(assess(_model(p, FULL), _measurements(p, np.random.default_rng(3))),
                                            "caveat")


def test_columns_lost_in_noise_and_hopeless_setting():
    p = _truth()
    noisy = _measurements(p, np.random.default_rng(4), sd=0.5)  # noise far above every signal
    v = assess(_model(p, FULL), noisy, n=2000, epsilon=0.3)
    assert v.level == NOT_USABLE
    hopeless = next(f for f in v.findings if f.check == "hopeless")
    assert hopeless.severity == "fatal" and "2,000 users at epsilon 0.3" in hopeless.message
    # one noisy column among precise ones: a caveat naming it, not a fatal verdict
    ms = _measurements(p, np.random.default_rng(5))
    ms[DOM.attrs.index("w")] = _measure(p, ["w"], np.random.default_rng(6), sd=0.5)
    v = assess(_model(p, FULL), ms)
    f = next(f for f in v.findings if f.check == "no-information" and f.severity == "caveat")
    assert f.figures["columns"] == ["w"] and v.level == CAVEATS


def test_precisely_uniform_column_is_a_note():
    dom = Domain.from_categories({"a": ["x", "y"]})
    jt = junction_tree(nx.empty_graph(["a"]), dom)
    model = Model.from_marginals(dom, jt, [Marginal(dom.project(["a"]), np.array([0.5, 0.5]), 10**6)])
    m = Measurement(dom.project(["a"]), np.array([0.5, 0.5]), 10**6, {}, variance=1e-6)
    v = assess(model, [m])
    assert v.level == GOOD
    assert any(f.check == "no-information" and f.severity == "info" for f in v.findings)


def test_small_groups():
    p = _truth()
    ms = _measurements(p, np.random.default_rng(7))
    small = [Measurement(m.domain, m.values, MIN_GROUP_USERS - 1, {}, variance=m.variance) for m in ms[4:6]]
    big = [Measurement(m.domain, m.values, 5000, {}, variance=m.variance) for m in ms[6:]]
    v = assess(_model(p, FULL), ms, groups=small + big)
    f = next(f for f in v.findings if f.check == "small-groups")
    assert f.severity == "caveat" and len(f.figures["sets"]) == 2 and v.level == CAVEATS
    ok = assess(_model(p, FULL), ms, groups=big)
    assert next(f for f in ok.findings if f.check == "small-groups").severity == "ok"


def test_convergence():
    p = _truth()
    ms = _measurements(p, np.random.default_rng(8))
    uniform = _model(np.full(p.shape, 1.0 / p.size), FULL)
    still = assess(uniform, ms, fit={"loss": 1000.0, "initial_loss": 1000.4, "iterations": 10, "converged": True})
    assert next(f for f in still.findings if f.check == "convergence").severity == "fatal"
    early = assess(_model(p, FULL), ms, fit={"loss": 10.0, "initial_loss": 900.0, "iterations": 5000,
                                             "converged": False})
    # within the noise already: a note; off the measurements: a caveat
    assert "convergence" in _checks(early, "info") and early.level == GOOD
    off = assess(_model(np.full(p.shape, 1.0 / p.size), FULL), ms,
                 fit={"loss": 10.0, "initial_loss": 900.0, "iterations": 5000, "converged": False, "stop": "tol",
                      "gap": 40.0})
    conv = next(f for f in off.findings if f.check == "convergence")
    assert conv.severity == "caveat" and "stopped on tol, certified gap 40 nats" in conv.message
    fine = assess(_model(p, FULL), ms, fit={"loss": 10.0, "initial_loss": 900.0, "iterations": 50,
                                            "converged": True})
    assert not [f for f in fine.findings if f.check == "convergence"] and fine.level == GOOD
    # a model's own "moved" field wins over the loss trace
    moved = assess(uniform, ms, fit={"moved": False, "loss": 5.0, "initial_loss": 900.0, "iterations": 3})
    assert "convergence" in _checks(moved, "fatal")


def test_not_measured_tables_are_ignored():
    p = _truth()
    ms = _measurements(p, np.random.default_rng(9))
    fake = Measurement(DOM.project(["x", "w"]), np.full((3, 2), 1 / 6), 10, {}, variance=1.0,
                       provenance={"protocol": "not measured"})
    assert assess(_model(p, FULL), ms + [fake]).level == GOOD


def test_verdict_levels_and_round_trip():
    ok = Finding("fit", "ok", "fine")
    cav = Finding("small-groups", "caveat", "few users")
    fat = Finding("uniform", "fatal", "uniform model")
    assert Verdict.of([ok]).level == GOOD and Verdict.of([ok]).reasons == ["fine"]
    assert Verdict.of([ok, cav]).level == CAVEATS and Verdict.of([ok, cav]).reasons == ["few users"]
    v = Verdict.of([ok, cav, fat, Finding("no-information", "info", "constant")])
    assert v.level == NOT_USABLE and v.reasons == ["uniform model", "few users"]
    assert v.summary().startswith("verdict: not usable -- uniform model (+1 more)")
    assert Verdict.from_dict(v.to_dict()) == v
    assert Verdict.from_dict({"level": "great"}) is None and Verdict.from_dict(None) is None
    assert Verdict.of([]).with_findings([fat]).level == NOT_USABLE
    with pytest.raises(ValueError, match="severity"):
        Finding("fit", "bad", "x")


def test_verdict_of_model_meta():
    p = _truth()
    model = _model(p, FULL)
    assert verdict_of(model) is None
    model.meta["fit"] = {"verdict": Verdict.of([Finding("fit", "caveat", "x")]).to_dict()}
    assert verdict_of(model).level == CAVEATS


def test_false_alarm_rate_is_below_alpha_scale():
    """20 correct releases, fresh noise each: none flagged (P(any) <= 20 * 6 checks * ALPHA ~ 0.1 at worst,
    in practice far less since the statistics are conservative with exact variances)."""
    p = _truth()
    model = _model(p, FULL)
    flagged = sum(assess(model, _measurements(p, np.random.default_rng(100 + s))).level != GOOD for s in range(20))
    assert ALPHA <= 1e-3 and flagged <= 1
