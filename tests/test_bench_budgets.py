"""pipelines/bench_budgets.py --quick: output structure and finite figures."""
import json
import math
import sys
from pathlib import Path

import pytest

# pipelines/ is not an installed package: import it from the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pipelines import bench_budgets  # noqa: E402
from pipelines.harness import methods as hm  # noqa: E402


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "budgets.json"
    assert bench_budgets.main(["--quick", "--out", str(out)]) == 0
    return json.loads(out.read_text())


def test_quick_rows_have_every_release_with_finite_tvd(quick):
    rows = quick["rows"]
    assert len(rows) == 1
    r = rows[0]
    assert (r["dataset"], r["epsilon"], r["seed"]) == ("embedded", 4.0, 0)
    assert r["recommended"] in bench_budgets.OWN
    assert set(r["predicted"]) == set(bench_budgets.OWN)
    assert set(r["own"]) == set(bench_budgets.OWN)
    assert set(r["base"]) == set(bench_budgets.BASELINES)
    figures = [r["planned"]["tvd_model"], r["planned"]["tvd_synthetic"], r["central"]["tvd_model"],
               r["independence_true"], r["ratio_planned_to_best_baseline"], r["ratio_planned_to_best_own"],
               *r["predicted"].values(), *(v["tvd_model"] for v in r["own"].values()),
               *(v["tvd_model"] for v in r["base"].values())]
    assert all(_finite(x) for x in figures), figures
    assert all(0 <= x <= 1 for x in figures[:4])
    assert r["base"]["bloom-best-h"]["h"] in hm.BLOOM_HS


def test_quick_ratio_and_best_are_consistent(quick):
    r = quick["rows"][0]
    scored = {k: v["tvd_model"] for k, v in r["base"].items()}
    issue = {k: scored[k] for k in bench_budgets.ISSUE_BASELINES}
    assert r["best_baseline_tvd"] == min(issue.values())
    assert r["best_baseline"] in bench_budgets.ISSUE_BASELINES
    assert r["ratio_planned_to_best_baseline"] == pytest.approx(r["planned"]["tvd_model"] / min(issue.values()))
    assert r["best_baseline_tvd_incl_fitted_pairs"] == min(scored.values())
    assert r["ratio_planned_to_best_baseline_incl_fitted_pairs"] == pytest.approx(
        r["planned"]["tvd_model"] / min(scored.values()))
    # the Bloom baseline is the best of every (h, estimator) it ran
    bloom = r["base"]["bloom-best-h"]
    assert bloom["tvd_model"] == min(bloom["per_h"].values())
    assert set(bloom["per_h"]) == {f"{h}/{m}" for h in hm.BLOOM_HS
                                   for m in hm.BLOOM_METHODS}
    # the recommended protocol's explicit figure is the planned release itself
    assert r["own"][r["recommended"]]["tvd_model"] == r["planned"]["tvd_model"]


def test_quick_verdicts_count_the_cells(quick):
    v = quick["verdicts"]
    assert v["planned_le_every_ldp_baseline"]["cells"] == 1
    assert v["planner_pick_best_own"]["cells"] == 1
    assert v["ge_10pct_better_at_1M_eps_4_16"]["cells"] == 0  # no 1M cell in --quick


def test_zcdp_rho_inverts_the_conversion():
    for eps in (0.5, 4.0, 64.0):
        rho = hm.zcdp_rho(eps)
        assert rho + 2 * math.sqrt(rho * math.log(1 / hm.DELTA)) == pytest.approx(eps)


def _row(seed, planned, pairs, eps=4.0, fitted=1.0):
    base = {"one-attribute": {"tvd_model": 0.5}, "pairs-naive": {"tvd_model": pairs},
            "pairs": {"tvd_model": fitted}, "bloom-best-h": {"skipped": True}}
    return {"dataset": "toy", "n": 1000, "epsilon": eps, "seed": seed, "bloom_skipped": True,
            "recommended": "marginals", "best_own": "marginals", "predicted": {"marginals": 0.1},
            "planned": {"tvd_model": planned, "tvd_synthetic": planned},
            "own": {"marginals": {"tvd_model": planned}, "one-attribute": {"tvd_model": 0.5},
                    "bloom": {"skipped": True}},
            "base": base, "best_baseline": "pairs-naive", "best_baseline_tvd": pairs,
            "plan_params": {"bloom_h": 1, "marginals": None}, "central": {"tvd_model": 0.01},
            "ratio_planned_to_best_baseline": planned / pairs}


def test_seed_means_paired_difference_and_its_standard_error():
    rows = [_row(0, 0.11, 0.10), _row(1, 0.09, 0.10), _row(2, 0.13, 0.10)]
    m = bench_budgets.seed_means(rows)[0]
    assert m["diff_mean"] == pytest.approx(0.01, abs=1e-5)
    assert m["diff_se"] == pytest.approx(0.02 / math.sqrt(3), abs=1e-5)  # sd of (0.01, -0.01, 0.03) = 0.02
    v = bench_budgets.verdicts(rows, [])
    assert v["planned_le_every_ldp_baseline_seed_mean"]["pass"] == 0  # the strict target: a miss
    assert v["planned_vs_best_baseline_beyond_noise"]["misses"] == []  # 0.01 < 2 SE = 0.023
    clear = [_row(s, 0.12 + 0.001 * s, 0.10) for s in range(3)]  # 0.021 +- 0.0006: beyond noise
    assert len(bench_budgets.verdicts(clear, [])["planned_vs_best_baseline_beyond_noise"]["misses"]) == 1
    assert bench_budgets.verdicts(clear, [])["planner_pick_best_measured_own_without_bloom"]["pass"] == 3


def test_verdicts_against_the_issues_baselines_and_with_fitted_pairs():
    # fitted pairs (lopub's own all-pairs protocol) beat planned; the issue's baselines do not
    rows = [_row(s, 0.10, 0.20, fitted=0.09) for s in range(3)]
    v = bench_budgets.verdicts(rows, [])
    assert v["baselines"] == list(bench_budgets.ISSUE_BASELINES)
    assert v["planned_le_every_ldp_baseline"]["pass"] == 3
    assert v["seed_means"][0]["best_baseline"] == "pairs-naive"
    strict = v["incl_fitted_pairs"]
    assert strict["planned_le_every_ldp_baseline"]["pass"] == 0
    assert strict["seed_means"][0]["best_baseline"] == "pairs"
    assert strict["seed_means"][0]["ratio"] == pytest.approx(0.10 / 0.09, abs=1e-3)


def test_ten_percent_target_counts_only_1m_cells_at_eps_4_to_16():
    rows = [dict(_row(s, 0.08, 0.10, eps=e), n=bench_budgets.LARGE_N) for s in range(2) for e in (2.0, 4.0, 16.0)]
    big = bench_budgets.verdicts(rows, [])["ge_10pct_better_at_1M_eps_4_16"]
    assert big["cells"] == 4 and big["pass"] == 4
    assert big["seed_mean_ratios"] == {"4": 0.8, "16": 0.8}


def test_attach_naive_fills_matching_rows_and_refuses_another_run():
    rows = [_row(0, 0.10, 0.2), _row(1, 0.11, 0.2)]
    for r in rows:
        del r["base"]["pairs-naive"]
    naive = [{"dataset": "toy", "epsilon": 4, "seed": 0, "planned": 0.10, "pairs_naive_consistency": 0.3}]
    assert bench_budgets.attach_naive(rows, naive) == 1
    assert rows[0]["base"]["pairs-naive"]["tvd_model"] == 0.3
    assert "pairs-naive" not in rows[1]["base"]
    other = [{"dataset": "toy", "epsilon": 4.0, "seed": 1, "planned": 0.12, "pairs_naive_consistency": 0.3}]
    with pytest.raises(ValueError, match="differs"):
        bench_budgets.attach_naive(rows, other)


def test_pick_seed_means_compares_the_pick_with_the_best_mean():
    rows = [_row(s, 0.10, 0.2) for s in range(3)]
    for r in rows:
        r["own"]["one-attribute"] = {"tvd_model": 0.10}  # a tie
    res = bench_budgets.pick_seed_means(rows)
    assert res["cells"] == 1 and res["pass"] == 1  # ties go to the pick (min keeps OWN order)
    rows[1]["own"]["one-attribute"] = {"tvd_model": 0.05}
    res = bench_budgets.pick_seed_means(rows)
    assert res["pass"] == 0 and res["misses"][0]["best_own"] == "one-attribute"


def test_report_takes_a_rerun_cell_from_the_named_file(tmp_path):
    old = [_row(s, 0.10, 0.2) for s in range(2)] + [_row(0, 0.30, 0.2, eps=8.0)]
    new = [_row(s, 0.05, 0.2, eps=8.0) for s in range(2)]
    paths = []
    for name, rows in (("old.json", old), ("new.json", new)):
        (tmp_path / name).write_text(json.dumps({"rows": rows, "timings": []}))
        paths.append(str(tmp_path / name))
    out = tmp_path / "merged.json"
    assert bench_budgets.main(["--report", *paths, "--only", f"toy:8={paths[1]}", "--save", str(out)]) == 0
    merged = json.loads(out.read_text())
    assert sorted((r["epsilon"], r["planned"]["tvd_model"]) for r in merged["rows"]) == [
        (4.0, 0.10), (4.0, 0.10), (8.0, 0.05), (8.0, 0.05)]
    assert merged["verdicts"]["planned_le_every_ldp_baseline"]["cells"] == 4
    with pytest.raises(SystemExit):
        bench_budgets.main(["--report", *paths, "--only", "toy:8=elsewhere.json"])


def test_report_keeps_only_the_cells_asked_for(tmp_path):
    rows = [_row(0, 0.10, 0.2), _row(0, 0.05, 0.2, eps=8.0)]
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"rows": rows, "timings": []}))
    out = tmp_path / "merged.json"
    assert bench_budgets.main(["--report", str(path), "--epsilons", "8", "--save", str(out)]) == 0
    assert [r["epsilon"] for r in json.loads(out.read_text())["rows"]] == [8.0]
