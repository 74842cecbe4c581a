"""pipelines/bench_scale.py --sections wide,dask,marginals: the wide-data builder, the merging of runs and a --quick run."""
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

# pipelines/ is not an installed package: import it from the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pipelines import bench_scale as bsm  # noqa: E402


@pytest.fixture(scope="module")
def adult():
    """UCI Adult (the benchmark's data), or a skip naming what is missing."""
    from lopub.datasets import load_adult
    from lopub.datasets._fetch import DatasetUnavailableError

    try:
        return load_adult()
    except DatasetUnavailableError as exc:
        pytest.skip(f"UCI Adult not available: {exc}")


def test_wide_dataset_is_blocks_of_adult_rows(adult):
    data = bsm.wide_dataset(500, 40, seed=3)
    assert data.codes.shape == (500, 40)
    assert data.domain.attrs[:2] == ("age_b0", "workclass_b0")
    assert data.domain.attrs[15] == "age_b1" and data.domain.attrs[-1] == "sex_b2"
    rows = {tuple(r) for r in adult.codes.tolist()}
    for block in (data.codes[:, :15], data.codes[:, 15:30]):  # whole blocks: rows of Adult
        assert all(tuple(r) in rows for r in block.tolist())
    # blocks come from different resamplings: the same user is not the same Adult row twice
    assert (data.codes[:, :15] != data.codes[:, 15:30]).any(axis=1).mean() > 0.9


def test_merge_wide_replaces_a_run_and_fits_b_over_finished_runs():
    def run(method, d, secs, timed_out=False):
        return {"method": method, "d": d, "wall_seconds": secs, "timed_out": timed_out,
                "report": {"seconds": {"total": secs / 2, "estimation": secs / 4}}}

    old = {"n": 10, "runs": [run("em", 15, 1.0), run("em", 30, 99.0)]}
    new = {"n": 10, "runs": [run("em", 30, 4.0), run("em", 60, 5.0, True)]}
    out = bsm.merge_wide(old, new)
    assert [(r["d"], r["wall_seconds"]) for r in out["runs"]] == [(15, 1.0), (30, 4.0), (60, 5.0)]
    assert out["exponent_b"]["em"]["over_d"] == [15, 30]
    assert out["exponent_b"]["em"]["b"] == pytest.approx(2.0)  # 1 s -> 4 s when d doubles
    assert out["exponent_b"]["em"]["b_fit_total"] == pytest.approx(2.0)
    # one finished d (a --quick run whose other d timed out): --table says so instead of failing
    one = bsm.merge_wide({"n": 10, "runs": []}, {"n": 10, "runs": [run("em", 15, 1.0), run("em", 30, 9.0, True)]})
    assert one["exponent_b"]["em"]["b"] is None
    assert "em: b needs two finished d (finished: [15])" in bsm.tables({"wide": {"exponent_b": one["exponent_b"]}})


def test_per_pair_timing_and_a_stopped_run(adult, tmp_path):
    path = bsm.build_bloom(tmp_path / "tiny", 400, 4, 400, seed=1)
    rec = bsm.per_pair_em(path, 3)
    assert rec["pairs_total"] == 6 and 1 <= rec["pairs_timed"] <= 3
    want = rec["one_way_seconds"] + rec["seconds_per_pair_serial"] * 6
    assert rec["pairwise_stage_serial_seconds_extrapolated"] == pytest.approx(want, abs=0.1)
    stopped = bsm.run_monitored(bsm.fit_args(path, "em", tmp_path / "m.json"), timeout=0.05)
    assert stopped["timed_out"] and stopped["report"] is None and stopped["wall_seconds"] < 30


@pytest.mark.slow  # real fits, two Dask clusters: about a minute
def test_quick_run_measures_every_section(adult, tmp_path):
    out = tmp_path / "res.json"
    bsm.main(["--quick", "--sections", "wide,dask,marginals", "--workdir", str(tmp_path / "work"), "--out", str(out)])
    res = json.loads(out.read_text())
    wide = res["wide"]
    assert {(r["method"], r["d"]) for r in wide["runs"]} == {(m, d) for m in ("moment", "em")
                                                            for d in bsm.QUICK["wide_ds"]}
    for r in wide["runs"]:
        assert r["report"]["n"] == bsm.QUICK["wide_n"] and r["wall_seconds"] > r["report"]["seconds"]["total"]
        assert r["client_peak_rss_mb"] > 0
    assert all(math.isfinite(v["b"]) for v in wide["exponent_b"].values())
    dask = res["dask"]
    runs = {r["method"]: r for r in dask["runs"]}
    moment, em = runs["moment"], runs["em"]
    assert (moment["report"]["n"], em["report"]["n"]) == (bsm.QUICK["dask_n"], bsm.QUICK["dask_em_n"])
    assert len(moment["worker_peak_rss_mb"]) == 2 and min(moment["worker_peak_rss_mb"]) > 0
    ratio = bsm.QUICK["dask_n"] / bsm.QUICK["dask_em_n"]
    assert dask["em_extrapolated_seconds"] == pytest.approx(em["wall_seconds"] * ratio, abs=0.1)
    marg = res["marginals"]
    assert marg["collection"]["n"] == bsm.QUICK["marg_n"] == marg["fit"]["report"]["n"]
    assert marg["fit"]["report"]["method"] == "marginal-sampling"
    assert np.isfinite(marg["collection"]["simulate_seconds"])
