"""The benchmark harness of pipelines/harness: verdicts, the grid runner, datasets, the naive baseline."""
from __future__ import annotations

import itertools
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # pipelines/ is not installed

from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from pipelines.harness import datasets, methods, runner, tables


def _r(ds, eps, seed, method, tvd, role="baseline", status="ok"):
    return {"dataset": ds, "n": 100, "d": 3, "epsilon": eps, "seed": seed, "method": method, "role": role,
            "tvd": tvd, "seconds": 0.0, "status": status, "extra": "{}"}


def _cell(planned, base, ds="toy", eps=1.0, other=0.9):
    rows = [_r(ds, eps, s, "planned", p, "lopub") for s, p in enumerate(planned)]
    rows += [_r(ds, eps, s, "b", b) for s, b in enumerate(base)]
    rows += [_r(ds, eps, s, "c", other) for s in range(len(base))]  # a worse baseline, never the best
    return rows


def test_verdict_is_paired_over_seeds_with_two_standard_errors():
    # differences 0.01, -0.01, 0.03: mean 0.01, SE 0.02/sqrt(3) = 0.0115 -> within 2 SE: a tie
    v = tables.verdict(_cell([0.11, 0.09, 0.13], [0.10, 0.10, 0.10]))[0]
    assert v["best"] == "b" and v["verdict"] == "tie"
    assert v["diff"] == pytest.approx(0.01) and v["diff_se"] == pytest.approx(0.02 / math.sqrt(3))
    assert v["ratio"] == pytest.approx(0.11 / 0.10)
    # differences 0.020, 0.021, 0.022: mean 0.021, SE 0.00058 -> beyond 2 SE either way
    assert tables.verdict(_cell([0.120, 0.121, 0.122], [0.1] * 3))[0]["verdict"] == "loss"
    assert tables.verdict(_cell([0.080, 0.079, 0.078], [0.1] * 3))[0]["verdict"] == "win"


def test_one_seed_uses_the_sign_and_says_so():
    assert tables.verdict(_cell([0.05], [0.1]))[0]["verdict"] == "win (1 seed)"
    assert tables.verdict(_cell([0.15], [0.1]))[0]["verdict"] == "loss (1 seed)"


def test_failed_release_and_tally():
    rows = _cell([0.1, 0.1], [0.2, 0.2]) + _cell([0.3, 0.3], [0.2, 0.2], eps=8.0)
    rows += [_r("toy", 2.0, s, "planned", math.nan, "lopub", "timeout") for s in range(2)]
    rows += [_r("toy", 2.0, s, "b", 0.1) for s in range(2)]
    vs = tables.verdict(rows)
    assert [v["verdict"] for v in vs] == ["win", "loss", "failed"]
    assert tables.tally(vs) == {"win": 1, "tie": 0, "loss": 1, "failed": 1}
    md = tables.tally_markdown(rows)
    assert "| toy | 1 | 0 | 1 | 1 |" in md
    table = tables.markdown(rows, ["planned", "b"])
    assert "timeout" in table and "0.100±0.000" in table


def test_replace_section_rewrites_between_markers(tmp_path):
    doc = tmp_path / "B.md"
    doc.write_text("# Title\n\ntext\n")
    tables.replace_section(doc, "suite", "first")
    tables.replace_section(doc, "suite", "second")
    text = doc.read_text()
    assert text.count("<!-- suite:begin -->") == 1 and "second" in text and "first" not in text
    assert text.startswith("# Title\n\ntext\n")


def _slow(data, eps, seed):
    time.sleep(60)


def _boom(data, eps, seed):
    raise ValueError("bad cell")


def test_call_reports_timeout_and_error():
    assert runner.call(_slow, (None, 1.0, 0), 0.5) == ("timeout", None)
    status, msg = runner.call(_boom, (None, 1.0, 0), 30.0)
    assert status == "error" and "ValueError: bad cell" in msg
    assert runner.call(_boom, (None, 1.0, 0), None)[0] == "error"
    assert runner.call(lambda d, e, s: {"tvd": e}, (None, 2.0, 0), 30.0) == ("ok", {"tvd": 2.0})


@pytest.fixture
def fake(monkeypatch):
    dom = Domain.from_categories({"a": ("0", "1"), "b": ("x", "y", "z")})
    data = Dataset(np.array([[0, 1], [1, 2], [0, 0]]), dom)
    calls = []

    def method(d, eps, seed):
        calls.append((eps, seed))
        return {"tvd": eps / 100 + seed / 1000, "pick": "marginals"}
    monkeypatch.setitem(datasets.SOURCES, "fake", datasets.Source("fake", "3 records", lambda n, seed: data))
    monkeypatch.setitem(methods.METHODS, "fake-m", method)
    monkeypatch.setitem(runner.METHODS, "fake-m", method)
    monkeypatch.setitem(runner.ROLES, "fake-m", "lopub")
    return calls


def test_run_covers_the_grid_resumes_and_round_trips(fake, tmp_path):
    grid = runner.Grid({"fake": None}, ["fake-m"], (1.0, 8.0), (0, 1))
    rows = runner.run(grid, log=lambda s: None)
    assert len(rows) == 4 and len(fake) == 4
    assert {(r["epsilon"], r["seed"]) for r in rows} == {(1.0, 0), (8.0, 0), (1.0, 1), (8.0, 1)}
    assert all(r["status"] == "ok" and r["d"] == 2 and r["n"] == 3 for r in rows)
    path = tmp_path / "rows.csv"
    runner.save_rows(rows, path)
    back = runner.load_rows(path)
    assert (tmp_path / "rows.parquet").exists()
    assert [r["tvd"] for r in back] == pytest.approx([r["tvd"] for r in rows])
    grid.seeds = (0, 1, 2)
    more = runner.run(grid, done=back, log=lambda s: None)
    assert len(more) == 6 and len(fake) == 6  # only seed 2 ran


def test_skip_rule_and_bad_names(fake):
    grid = runner.Grid({"fake": None}, ["fake-m"], (1.0,), (0,), skip=lambda name, d, m: "too wide")
    rows = runner.run(grid, log=lambda s: None)
    assert rows[0]["status"] == "skipped" and fake == []
    with pytest.raises(ValueError, match="methods"):
        runner.Grid({"fake": None}, ["nope"], (1.0,), (0,))
    with pytest.raises(ValueError, match="datasets"):
        runner.Grid({"nope": None}, ["fake-m"], (1.0,), (0,))
    with pytest.raises(ValueError, match="dataset"):
        datasets.load("nope")


def test_stress_and_sklearn_shapes():
    s = datasets.load("stress", 500, 0)
    assert s.n == 500 and len(s.domain) == 24 and set(s.domain.sizes) <= {2, 3, 4, 8, 16}
    np.testing.assert_array_equal(s.codes, datasets.load("stress", 500, 0).codes)
    assert not np.array_equal(s.codes, datasets.load("stress", 500, 1).codes)  # the seed draws the records
    wine = datasets.load("wine")
    assert (wine.n, len(wine.domain)) == (178, 14)
    digits = datasets.load("digits")
    assert (digits.n, len(digits.domain)) == (1797, 64) and set(digits.domain.sizes) <= {1, 2}  # blank corners: 1


def test_network_sample_is_cached(tmp_path, monkeypatch):
    pytest.importorskip("pgmpy")
    monkeypatch.setenv("LOPUB_BENCH_CACHE", str(tmp_path))
    a = datasets.load("bn-asia", 300, 0)
    assert (a.n, len(a.domain)) == (300, 8) and set(a.domain.sizes) == {2}
    assert len(list(tmp_path.iterdir())) == 1
    b = datasets.load("bn-asia", 300, 0)
    np.testing.assert_array_equal(a.codes, b.codes)
    assert a.domain == b.domain


@pytest.mark.skipif(not os.environ.get("LOPUB_DATA_DIR"), reason="LOPUB_DATA_DIR is not set")
def test_retail_top_items():
    r = datasets.load("retail20")
    assert (r.n, len(r.domain)) == (88162, 20)
    support = r.codes.mean(axis=0)
    assert np.all(np.diff(support) <= 0)  # attributes in decreasing support


def test_naive_baseline_with_more_pairs_than_users():
    rng = np.random.default_rng(0)
    dom = Domain.from_categories({f"x{j}": ("0", "1") for j in range(8)})  # 28 pairs
    data = Dataset(rng.integers(0, 2, size=(20, 8)), dom)
    res = methods.pairs_naive(data, 2.0, 0)
    assert 0.0 <= res["tvd"] <= 1.0
    central = methods.central_tables(data, 1e6, 0)  # almost no noise: close to the truth
    assert central["tvd"] < 0.05


def test_suite_configuration_and_table_command(tmp_path):
    from pipelines import suite

    full = suite.config(False, 11, 300.0)
    assert len(full.datasets) >= 12 and set(full.datasets) <= set(datasets.SOURCES)
    assert tuple(full.epsilons) == (0.5, 1, 2, 4, 8, 16) and len(full.seeds) == 3
    assert set(suite.BASELINES) <= set(full.methods) and "planned" in full.methods
    quick = suite.config(True, 11, 300.0)
    assert set(quick.datasets) <= set(datasets.SOURCES) and len(quick.seeds) >= 2
    large = suite.config(False, 8, 300.0, large=True)  # the networks at 10^6 rows
    assert set(large.datasets) <= set(datasets.SOURCES) and set(large.datasets.values()) == {10**6}
    assert {d for d in full.datasets if d.startswith("bn-")} == set(large.datasets)
    assert tuple(large.epsilons) == tuple(full.epsilons) and len(large.seeds) == 3
    rows = [_r("toy", 1.0, s, "planned", 0.1, "lopub") for s in range(2)]
    rows += [_r("toy", 1.0, s, m, 0.2) for s in range(2) for m in suite.BASELINES]
    csv, doc = tmp_path / "rows.csv", tmp_path / "B.md"
    runner.save_rows(rows, csv)
    doc.write_text("# B\n")
    assert suite.main(["--table", str(csv), "--docs", str(doc), "--command", "python -m pipelines.suite X"]) == 0
    text = doc.read_text()
    assert "<!-- suite:begin -->" in text and "`python -m pipelines.suite X`" in text
    assert "| **all** | **1** | **0** | **0** | **0** |" in text  # 0.1 below 0.2 on both seeds: a win
    assert suite.main(["--large", "--table", str(csv), "--docs", str(doc)]) == 0  # its own section
    text = doc.read_text()
    assert text.count("<!-- suite-large:begin -->") == 1 and text.count("<!-- suite:begin -->") == 1


def test_naive_note_counts_cells_worse_beyond_two_standard_errors():
    from pipelines import suite

    def row(ds, seed, tvd, naive):
        return _r(ds, 1.0, seed, "planned", tvd, "lopub") | {"extra": f'{{"naive": {naive}}}'}
    rows = [row("steady", s, 0.101 + 0.001 * s, 0.100 + 0.001 * s) for s in range(3)]  # always 0.001 above
    rows += [row("noisy", s, t, 0.100) for s, t in enumerate([0.09, 0.12, 0.10])]  # mean above, within noise
    rows += [row("better", s, 0.05, 0.100) for s in range(3)]
    note = suite.naive_note(rows)
    assert "over 3 cells" in note and "model worse in 2" in note
    assert "paired difference over the seeds in 1 (steady at epsilon 1)" in note


def test_budget_note_flags_a_larger_epsilon_worse_beyond_two_standard_errors():
    from pipelines import suite

    rows = [_r("steady", e, s, "planned", t + 0.001 * s, "lopub")
            for e, t in ((1.0, 0.10), (2.0, 0.05), (4.0, 0.08)) for s in range(3)]  # 4 worse than 2
    rows += [_r("noisy", e, s, "planned", t, "lopub")
             for e, ts in ((1.0, (0.10, 0.12, 0.08)), (2.0, (0.11, 0.09, 0.13))) for s, t in enumerate(ts)]
    note = suite.budget_note(rows)
    assert "3 steps" in note and "worse in 2" in note
    assert "beyond 2 standard errors in 1 (steady at epsilon 4 0.0810 against 0.0510 at 2)" in note
    one_seed = [r for r in rows if r["seed"] == 0]  # no standard error: worse, but not beyond noise
    assert "worse in 2, beyond 2 standard errors in 0." in suite.budget_note(one_seed)



def test_suite_bloom_max_d_zero_skips_bloom(monkeypatch, tmp_path):
    """``--bloom-max-d 0`` means no Bloom baseline (0 is not "unset": it once fell back to the default)."""
    from types import SimpleNamespace

    from pipelines import suite

    seen = {}

    def fake_run(grid, **kw):
        small = SimpleNamespace(domain=("a",) * 3)  # a 3-attribute dataset
        seen["skip"] = grid.skip("toy", small, "bloom-best-h")
        return []

    monkeypatch.setattr(suite, "run", fake_run)
    suite.main(["--large", "--bloom-max-d", "0", "--out", str(tmp_path / "r.csv")])
    assert seen["skip"] and "above 0 attributes" in seen["skip"]
    suite.main(["--large", "--out", str(tmp_path / "r.csv")])  # the default keeps Bloom on 3 attributes
    assert seen["skip"] is None


def _filled(d, eps, seed):
    return {"tvd": 0.0, "filled": len(methods.truth(d).tables)}


def test_truth_is_projected_once_and_equals_a_direct_projection(monkeypatch, fake):
    from lopub.publish.evaluate import average_tvd

    rng = np.random.default_rng(0)
    dom = Domain.from_categories({f"x{j}": tuple("abc"[:2 + j % 2]) for j in range(5)})  # 10 pairs
    data, other = (Dataset(rng.integers(0, 2, size=(500, 5)), dom) for _ in range(2))
    direct = {p: data.project(list(p)).values for p in itertools.combinations(dom.attrs, 2)}
    direct_score = average_tvd(data, other, 2)["mean"]
    methods.truth(data).fill()
    calls = []
    real = Dataset.project
    for name in ("project", "marginal"):
        monkeypatch.setattr(Dataset, name, lambda self, attrs: calls.append(self) or real(self, attrs))
    for p, v in direct.items():
        np.testing.assert_array_equal(methods.truth(data).marginal(p).values, v)
    assert methods.score(data, other) == direct_score
    methods.pairs_naive(data, 2.0, 0)
    methods.central_tables(data, 2.0, 0)
    assert methods.per_set_tvd(data, methods.pair_reports(data, 2.0, 0)) > 0
    assert not [c for c in calls if c is data]  # every score above read the cached pairs
    assert methods.truth(other).data is other and methods.truth(other).tables == {}  # another dataset
    monkeypatch.setitem(runner.METHODS, "fake-m", _filled)  # the runner fills the pairs before it forks
    rows = runner.run(runner.Grid({"fake": None}, ["fake-m"], (1.0,), (0,), timeout=30.0), log=lambda s: None)
    assert rows[0]["status"] == "ok" and '"filled": 1' in rows[0]["extra"]  # the fake data's one pair
