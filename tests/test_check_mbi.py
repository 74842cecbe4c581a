"""pipelines/check_mbi.py and lopub.publish.interchange: interchange file, the common objective, the mbi half.

The mbi half runs in its own environment (``/work/mbi-venv``, PyPI ``mbi``);
those tests are skipped, with the reason, when it is absent (so CI never
needs mbi) and marked slow (JAX compiles for ~5 s per run).  They check
mbi's fit against optima known independently: exact consistent marginals
(the optimum reproduces them) and a brute-force fit of the full joint of a
3-attribute domain by scipy.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize

from lopub.publish import interchange as ix
from pipelines import check_mbi as cm

ATTRS, SIZES = ["a", "b", "c"], [2, 3, 2]
SCOPES = [("a",), ("b",), ("c",), ("a", "b"), ("c", "b")]
MBI_PYTHON = Path(cm.DEFAULT_MBI_PYTHON)
needs_mbi = pytest.mark.skipif(not MBI_PYTHON.exists(),
                               reason=f"no mbi environment at {MBI_PYTHON} (python3 -m venv "
                                      f"/work/mbi-venv && /work/mbi-venv/bin/pip install mbi)")


def _joint(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.ones(12)).reshape(SIZES)


def _measurements(p: np.ndarray, noise: float, seed: int) -> list[tuple]:
    """Each scope of ``p`` plus N(0, noise^2) per cell; sigmas differ between measurements."""
    rng = np.random.default_rng(seed)
    out = []
    for i, s in enumerate(SCOPES):
        y = ix.project_table(p, ATTRS, s)
        out.append((s, y + rng.normal(0.0, noise, y.shape), 0.01 * (1 + i % 3)))
    return out


def _write(tmp_path: Path, cliques, ms) -> dict:
    ix.write_interchange(tmp_path / "case", ATTRS, SIZES, cliques, ms, {"test": True})
    return ix.read_interchange(tmp_path / "case")


# lopub-independent pieces -----------------------------------------------------
def test_interchange_round_trip(tmp_path):
    ms = _measurements(_joint(0), 0.01, 1)
    inter = _write(tmp_path, [("a", "b"), ("b", "c")], ms)
    assert inter["attributes"] == ATTRS and inter["sizes"] == SIZES
    assert inter["cliques"] == [("a", "b"), ("b", "c")] and inter["info"] == {"test": True}
    assert len(inter["measurements"]) == len(ms)
    for got, (s, y, sigma) in zip(inter["measurements"], ms):
        assert got["attrs"] == s and got["sigma"] == sigma
        np.testing.assert_array_equal(got["y"], y.ravel())  # C order, exact float64
    doc = json.loads((tmp_path / "case.json").read_text())
    assert doc["format"] == ix.FORMAT and doc["units"] == "probability"



def test_a_failed_write_keeps_the_earlier_files_and_leaves_no_temporary_one(tmp_path, monkeypatch):
    ms = _measurements(_joint(0), 0.01, 1)
    _write(tmp_path, [("a", "b"), ("b", "c")], ms)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(ix.json, "dumps", broken)  # the JSON half fails
    with pytest.raises(OSError, match="disk full"):
        ix.write_interchange(tmp_path / "case", ATTRS, SIZES, [("a", "b"), ("b", "c")], ms[:1], {})
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # the pair as it was, no temporary file
    monkeypatch.setattr(ix.np, "savez", broken)  # the arrays fail half-way
    with pytest.raises(OSError, match="disk full"):
        ix.write_interchange(tmp_path / "case", ATTRS, SIZES, [("a", "b"), ("b", "c")], ms[:1], {})
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before

@pytest.mark.parametrize("bad, match", [
    ((("a", "z"), np.zeros(6), 0.1), r"measurements\[0\] \(\['a', 'z'\]\) must name"),
    ((("a", "b"), np.zeros(5), 0.1), r"y has 5 entries .*expected 6"),
    ((("a",), np.array([0.5, np.nan]), 0.1), r"expected 2 finite values"),
    ((("a",), np.zeros(2), 0.0), r"sigma \(0.0\) must be a finite number > 0"),
    ((("a", "c"), np.zeros(4), 0.1), r"\['a', 'c'\] lies in no model clique"),
])
def test_writer_refuses_bad_measurements(tmp_path, bad, match):
    with pytest.raises(ValueError, match=match):
        ix.write_interchange(tmp_path / "x", ATTRS, SIZES, [("a", "b"), ("b", "c")], [bad])


def test_reader_refuses_other_formats(tmp_path):
    ix.write_interchange(tmp_path / "x", ATTRS, SIZES, [("a", "b", "c")], [(("a",), [0.5, 0.5], 0.1)])
    doc = json.loads((tmp_path / "x.json").read_text())
    (tmp_path / "x.json").write_text(json.dumps({**doc, "version": 99}))
    with pytest.raises(ValueError, match="expected 'lopub-mbi-interchange' v1"):
        ix.read_interchange(tmp_path / "x")


def test_export_measurements_writes_a_release_s_measurements(tmp_path):
    from lopub.data.domain import Domain
    from lopub.estimate.measurement import Measurement

    dom = Domain.from_categories({"a": ["0", "1"], "b": ["0", "1", "2"], "c": ["0", "1"]})
    p = _joint(5)
    ms = [Measurement(dom.project(list(s)), ix.project_table(p, ATTRS, s), 1000, {}, variance=(0.01 * (i + 1)) ** 2)
          for i, s in enumerate(SCOPES)]
    ix.export_measurements(tmp_path / "rel", dom, [("a", "b"), ("b", "c")], ms, {"run": 1})
    inter = ix.read_interchange(tmp_path / "rel")
    assert inter["attributes"] == ATTRS and inter["sizes"] == SIZES and inter["info"] == {"run": 1}
    for got, m, s in zip(inter["measurements"], ms, SCOPES):
        assert got["attrs"] == s and got["sigma"] == pytest.approx(np.sqrt(m.sigma2), rel=1e-15)
        np.testing.assert_array_equal(got["y"], m.estimate.ravel())
    exact = [ix.project_table(p, ATTRS, c).ravel() for c in inter["cliques"]]
    assert ix.objective(inter, exact) == pytest.approx(0.0, abs=1e-24)
    with pytest.raises(ValueError, match=r"measurements\[0\] over \['a', 'c'\] lies in no model clique"):
        ix.export_measurements(tmp_path / "bad", dom, [("a", "b"), ("b", "c")], [_pair(dom, p, ("a", "c"))])


def _pair(dom, p, s):
    from lopub.estimate.measurement import Measurement

    return Measurement(dom.project(list(s)), ix.project_table(p, ATTRS, s), 1000, {}, variance=1e-4)


def test_interchange_module_imports_no_other_lopub_module():
    """mbi's environment reads the file with this module and has none of lopub's dependencies."""
    import subprocess

    code = ("import sys; import lopub.publish.interchange; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('lopub', 'pandas', 'scipy')))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert eval(out) == ["lopub", "lopub._version", "lopub.publish", "lopub.publish.interchange"]


def test_reader_checks_a_file_as_the_writer_does(tmp_path):
    """A file from another program: a tampered table or a missing array is refused, naming the file."""
    ix.write_interchange(tmp_path / "x", ATTRS, SIZES, [("a", "b"), ("b", "c")], _measurements(_joint(0), 0.01, 1))
    arrays = dict(np.load(tmp_path / "x.npz"))
    np.savez(tmp_path / "x.npz", **(arrays | {"y3": np.zeros(5)}))
    with pytest.raises(ValueError, match=r"x\.json / \.npz: measurements\[3\] over \['a', 'b'\]: y has 5 entries"):
        ix.read_interchange(tmp_path / "x")
    np.savez(tmp_path / "x.npz", **{k: v for k, v in arrays.items() if k != "y0"})
    with pytest.raises(ValueError, match=r"x\.npz lacks the arrays \['y0'\]"):
        ix.read_interchange(tmp_path / "x")


def test_result_round_trip(tmp_path):
    tables = [np.arange(6.0), np.arange(4.0) / 10]
    ix.write_result(tmp_path / "r", tables, {"seconds": 1.5})
    got, meta = ix.read_result(tmp_path / "r")
    assert meta["seconds"] == 1.5 and meta["format"] == ix.RESULT_FORMAT
    for g, t in zip(got, tables):
        np.testing.assert_array_equal(g, t)


def test_objective_by_hand(tmp_path):
    p = _joint(2)
    cliques = [("a", "b"), ("b", "c")]
    exact = [(s, ix.project_table(p, ATTRS, s), 0.02) for s in SCOPES]
    tables = [ix.project_table(p, ATTRS, c).ravel() for c in cliques]
    assert ix.objective(_write(tmp_path, cliques, exact), tables) == pytest.approx(0.0, abs=1e-24)
    d = 0.003  # one cell of the transposed (c, b) measurement off by d
    y = exact[4][1].copy()
    y[1, 2] += d
    inter = _write(tmp_path, cliques, exact[:4] + [(("c", "b"), y, 0.02)])
    assert ix.objective(inter, tables) == pytest.approx(d ** 2 / (2 * 0.02 ** 2), rel=1e-9)


def test_home_clique_is_the_smallest_and_refuses_uncovered():
    size_of = dict(zip(ATTRS, SIZES))
    assert ix.home_clique(("b",), [("a", "b", "c"), ("b", "c")], size_of) == 1
    with pytest.raises(ValueError, match=r"\['a', 'c'\] lies in no model clique"):
        ix.home_clique(("a", "c"), [("a", "b"), ("b", "c")], size_of)


def test_compare_flags_a_loss_gap(tmp_path):
    p = _joint(3)
    cliques = [("a", "b", "c")]
    inter = _write(tmp_path, cliques, _measurements(p, 0.02, 4))
    best = [p.ravel()]
    worse = [(0.9 * p + 0.1 / 12).ravel()]
    meta = {"seconds": 2.0, "iterations": 1, "converged": True}
    same = cm.compare(inter, best, meta, best, {**meta, "seconds": 4.0})
    assert same["ok"] and same["relative_difference"] == 0.0 and same["time_ratio"] == 0.5
    gap = cm.compare(inter, worse, meta, best, meta)
    expected = (ix.objective(inter, worse) - ix.objective(inter, best)) / ix.objective(inter, best)
    assert gap["relative_difference"] == pytest.approx(expected) and (gap["ok"] == (abs(expected) <= 0.01))
    assert gap["max_abs_marginal_difference"] == pytest.approx(np.abs(worse[0] - best[0]).max())
    a = ix.objective(inter, best)
    trace = [[50, 0.1, 3 * a], [100, 0.2, 1.02 * a], [150, 0.3, 1.005 * a], [200, 0.4, a]]
    hit = cm.compare(inter, best, meta, best, {**meta, "trace": trace})["mbi_to_lopub_loss"]
    assert hit["steps"] == 150 and hit["seconds_warm"] == 0.3


def test_a_missing_half_exits_2_before_any_work(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "lopub.model.pgm", None)  # import lopub.model.pgm raises ImportError
    assert cm.main(["--quick", "--attrs", "no-such-attribute"]) == 2
    assert "lopub.model.pgm.fit_mrf is not importable" in capsys.readouterr().err
    with pytest.raises(cm.HalfUnavailable, match=r"--mbi-python \(/nonexistent/python\) does not exist"):
        cm.check_mbi_python("/nonexistent/python")


def test_help_and_quick_options(capsys):
    with pytest.raises(SystemExit) as done:
        cm.main(["--help"])
    assert done.value.code == 0 and "--mbi-python" in capsys.readouterr().out
    a = cm.parse_args(["--quick"])
    assert a.synthetic_noise > 0 and a.attrs == cm.QUICK_ATTRS and a.model_phi is not None


# the mbi half (separate environment) ------------------------------------------
def _brute_force(inter: dict) -> tuple[np.ndarray, float]:
    """Minimise the objective over the full joint (12 cells) on the simplex with scipy."""
    eye = np.eye(12).reshape([12] + SIZES)
    A = [np.stack([ix.project_table(e, ATTRS, m["attrs"]).ravel() for e in eye], axis=1)
         for m in inter["measurements"]]
    w = [1.0 / m["sigma"] ** 2 for m in inter["measurements"]]
    ys = [m["y"] for m in inter["measurements"]]

    def f(x):
        r = [a @ x - y for a, y in zip(A, ys)]
        return (sum(wi * (ri @ ri) for wi, ri in zip(w, r)) / 2,
                sum(wi * (a.T @ ri) for wi, a, ri in zip(w, A, r)))

    res = minimize(f, np.full(12, 1 / 12), jac=True, method="SLSQP", bounds=[(0, 1)] * 12,
                   constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1, "jac": lambda x: np.ones(12)}],
                   options={"ftol": 1e-15, "maxiter": 1000})
    assert res.success, res.message
    return res.x.reshape(SIZES), float(res.fun)


@pytest.mark.slow
@needs_mbi
def test_mbi_reproduces_consistent_marginals(tmp_path):
    p = _joint(5)
    cliques = [("a", "b"), ("b", "c")]
    inter = _write(tmp_path, cliques, _measurements(p, 1e-7, 6))
    tables, meta = cm.run_mbi(tmp_path / "case", str(MBI_PYTHON), 5000, 1e-12, warm=False)
    assert meta["format"] == ix.RESULT_FORMAT and meta["iterations"] > 0
    for t, c in zip(tables, cliques):  # both cliques are measured: the optimum is the truth
        np.testing.assert_allclose(t, ix.project_table(p, ATTRS, c).ravel(), atol=1e-5)
    assert ix.objective(inter, tables) == pytest.approx(meta["loss_mbi_own"], rel=1e-9)


@pytest.mark.slow
@needs_mbi
@pytest.mark.parametrize("cliques", [[("a", "b"), ("b", "c")], [("a", "b", "c")]])
def test_mbi_matches_a_brute_force_fit_of_the_joint(tmp_path, cliques):
    inter = _write(tmp_path, cliques, _measurements(_joint(7), 0.05, 8))  # inconsistent measurements
    joint, best = _brute_force(inter)
    tables, meta = cm.run_mbi(tmp_path / "case", str(MBI_PYTHON), 5000, 1e-12, warm=False)
    loss = ix.objective(inter, tables)
    assert loss == pytest.approx(meta["loss_mbi_own"], rel=1e-9)  # mbi's loss is lopub's L, factor 1
    assert best > 1.0 and loss == pytest.approx(best, rel=1e-5)
    ref = ix.measured(inter, [ix.project_table(joint, ATTRS, c).ravel() for c in cliques])
    for got, want in zip(ix.measured(inter, tables), ref):  # measured scopes: unique at the optimum
        np.testing.assert_allclose(got, want, atol=1e-4)
