"""The shared runner of the reproduction pipelines: resumable log, seeds, splits, privacy."""

import sys
from pathlib import Path

# pipelines/ is not an installed package: import it from the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import math  # noqa: E402

import numpy as np
import pandas as pd
import pytest

from pipelines.repro import runner


def test_log_appends_and_resumes(tmp_path):
    path = tmp_path / "log.csv"
    log = runner.ResultLog(path, ["dataset", "f", "method"])
    assert not log.done(dataset="a", f=0.1, method="em")
    log.append({"dataset": "a", "f": 0.1, "method": "em", "avd": 0.25})
    log.append({"dataset": "a", "f": 0.3, "method": "em", "avd": 0.5})
    again = runner.ResultLog(path, ["dataset", "f", "method"])
    assert again.done(dataset="a", f=0.1, method="em")
    assert again.done(dataset="a", f=0.3, method="em")
    assert not again.done(dataset="a", f=0.5, method="em")
    assert list(again.frame().avd) == [0.25, 0.5]


def test_log_drops_a_torn_last_line(tmp_path):
    path = tmp_path / "log.csv"
    log = runner.ResultLog(path, ["k"])
    log.append({"k": 1, "v": 2.0})
    with open(path, "a") as fh:
        fh.write("2")  # an interrupted write
    again = runner.ResultLog(path, ["k"])
    assert again.done(k=1) and not again.done(k=2)
    again.append({"k": 2, "v": 3.0})
    assert list(pd.read_csv(path).k) == [1, 2]


def test_log_widens_for_new_columns_and_fresh_discards(tmp_path):
    path = tmp_path / "log.csv"
    log = runner.ResultLog(path, ["k"])
    log.append({"k": 1, "v": 2.0})
    log.append({"k": 2, "v": 3.0, "w": 1.0})
    df = pd.read_csv(path)
    assert list(df.columns) == ["k", "v", "w"] and np.isnan(df.w[0]) and df.w[1] == 1.0
    assert runner.ResultLog(path, ["k"]).done(k=2)
    assert not runner.ResultLog(path, ["k"], fresh=True).done(k=1)


def test_seed_for_is_stable_and_distinct():
    assert runner.seed_for(0, "a", 0.5) == runner.seed_for(0, "a", 0.5)
    assert runner.seed_for(0, "a", 0.5) != runner.seed_for(1, "a", 0.5)
    assert runner.seed_for(0, "a", 0.5) != runner.seed_for(0, "a", 0.3)
    assert 0 <= runner.seed_for(0, "x") < 2**63


def test_train_test_split_is_disjoint_and_seeded():
    tr, te = runner.train_test("embedded", rows=500)
    tr2, _ = runner.train_test("embedded", rows=500)
    assert tr.n == te.n == 500
    np.testing.assert_array_equal(tr.codes, tr2.codes)


def test_paper_sampling_share():
    ds = runner.load_data("embedded", rows=1000)
    assert runner.paper_sample(ds, "embedded", "paper", 0).n == 500
    assert runner.paper_sample(ds, "embedded", "full", 0) is ds
    with pytest.raises(ValueError, match="sampling"):
        runner.paper_sample(ds, "embedded", "half", 0)


def test_privacy_rows_follow_eq8():
    (row,) = runner.privacy_rows(["embedded"], [0.5])
    per_attr = 2 * 4 * math.log((2 - 0.5) / 0.5)
    assert row["eps_per_attribute"] == pytest.approx(per_attr)
    assert row["eps_per_record"] == pytest.approx(row["d"] * per_attr)
    assert "f=0.5" in runner.privacy_caption(["embedded"], [0.5])


def test_unknown_method_is_named():
    with pytest.raises(ValueError, match="method"):
        runner.make_estimator(None, "nope")


def test_privacy_record_accumulates_over_runs(tmp_path):
    # A resumed run on one f must not drop the privacy rows of earlier runs.
    runner.write_privacy(tmp_path, ["embedded"], [0.1, 0.5])
    runner.write_privacy(tmp_path, ["embedded"], [0.9, 0.5])
    df = pd.read_csv(tmp_path / "privacy.csv")
    assert list(df.f) == [0.1, 0.5, 0.9]
    assert (df.dataset == "embedded").all()


def test_log_drop_removes_only_matching_rows(tmp_path):
    log = runner.ResultLog(tmp_path / "log.csv", ["method", "f"])
    for m in ("em", "moment"):
        for f in (0.1, 0.5):
            log.append({"method": m, "f": f, "avd": 1.0})
    assert log.drop(method=["moment"], f=[0.5]) == 1
    assert log.done(method="moment", f=0.1) and not log.done(method="moment", f=0.5)
    again = runner.ResultLog(tmp_path / "log.csv", ["method", "f"])
    assert sorted(map(tuple, again.frame()[["method", "f"]].values.tolist())) == [
        ("em", 0.1), ("em", 0.5), ("moment", 0.1)]
