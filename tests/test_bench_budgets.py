"""pipelines/bench_budgets.py --quick: output structure and finite figures."""
import json
import math
import sys
from pathlib import Path

import pytest

# pipelines/ is not an installed package: import it from the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pipelines import bench_budgets  # noqa: E402


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
    assert r["base"]["bloom-best-h"]["h"] in bench_budgets.BLOOM_HS


def test_quick_ratio_and_best_are_consistent(quick):
    r = quick["rows"][0]
    scored = {k: v["tvd_model"] for k, v in r["base"].items()}
    assert r["best_baseline_tvd"] == min(scored.values())
    ratio = r["planned"]["tvd_model"] / min(scored.values())
    assert r["ratio_planned_to_best_baseline"] == pytest.approx(ratio)
    # the recommended protocol's explicit figure is the planned release itself
    assert r["own"][r["recommended"]]["tvd_model"] == r["planned"]["tvd_model"]


def test_quick_verdicts_count_the_cells(quick):
    v = quick["verdicts"]
    assert v["planned_le_every_ldp_baseline"]["cells"] == 1
    assert v["planner_pick_best_own"]["cells"] == 1
    assert v["ge_10pct_better_at_1M_eps_4_16"]["cells"] == 0  # no 1M cell in --quick


def test_zcdp_rho_inverts_the_conversion():
    for eps in (0.5, 4.0, 64.0):
        rho = bench_budgets.zcdp_rho(eps)
        assert rho + 2 * math.sqrt(rho * math.log(1 / bench_budgets.DELTA)) == pytest.approx(eps)


def _row(seed, planned, pairs, eps=4.0):
    base = {"one-attribute": {"tvd_model": 0.5}, "pairs": {"tvd_model": pairs},
            "bloom-best-h": {"skipped": True}}
    return {"dataset": "toy", "n": 1000, "epsilon": eps, "seed": seed, "bloom_skipped": True,
            "recommended": "marginals", "best_own": "marginals", "predicted": {"marginals": 0.1},
            "planned": {"tvd_model": planned, "tvd_synthetic": planned},
            "own": {"marginals": {"tvd_model": planned}, "one-attribute": {"tvd_model": 0.5},
                    "bloom": {"skipped": True}},
            "base": base, "best_baseline": "pairs", "best_baseline_tvd": pairs,
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
