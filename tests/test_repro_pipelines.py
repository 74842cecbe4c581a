"""Every reproduction script runs end to end on a tiny configuration (so they cannot rot).

Tiny = the embedded census-like dataset with a few hundred records, one f,
one subset, one or two estimators.  The full runs live in results/.
"""

import sys
from pathlib import Path

# pipelines/ is not an installed package: import it from the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd
import pytest

from pipelines.repro import (exp1_estimation, exp2_correlation, exp3_pruning,
                             exp4_classification, exp5_pipeline_time, exp6_privacy)

TINY = ["--datasets", "embedded", "--rows", "600", "--fs", "0.5"]


def test_exp1_writes_rows_plots_and_resumes(tmp_path):
    args = TINY + ["--out", str(tmp_path), "--subsets", "1", "--methods", "em", "moment",
                   "--samplings", "paper", "--ks", "2"]
    assert exp1_estimation.main(args) == 0
    df = pd.read_csv(tmp_path / "estimation.csv")
    assert len(df) == 2 and set(df.method) == {"em", "moment"}
    assert ((df.avd >= 0) & (df.avd <= 1)).all()
    assert (tmp_path / "avd_time_embedded_k2.png").stat().st_size > 0
    assert (tmp_path / "privacy.csv").exists() and (tmp_path / "summary.csv").exists()
    exp1_estimation.main(args + ["--no-plot"])  # resumed: nothing recomputed
    assert len(pd.read_csv(tmp_path / "estimation.csv")) == 2


def test_exp2_correlation(tmp_path):
    assert exp2_correlation.main(TINY + ["--out", str(tmp_path), "--methods", "em"]) == 0
    df = pd.read_csv(tmp_path / "correlation.csv")
    assert len(df) == 1 and 0 <= df.accuracy[0] <= 1
    assert df.pairs[0] == 13 * 12 // 2
    assert (tmp_path / "correlation_embedded_full.png").exists()


def test_exp3_pruning(tmp_path):
    assert exp3_pruning.main(["--datasets", "embedded", "--rows", "600", "--sources", "data", "--samplings", "full",
                              "--out", str(tmp_path)]) == 0
    df = pd.read_csv(tmp_path / "pruning.csv")
    assert len(df) == 2 * len(exp3_pruning.runner.DATA["embedded"].phis)
    assert (df.pairs_with <= df.pairs_without).all()
    assert exp3_pruning.paper_value("adult", 0.1, "without") == 102
    assert (tmp_path / "pruning_embedded.png").exists()


def test_exp4_classification(tmp_path):
    args = TINY + ["--out", str(tmp_path), "--methods", "em", "--trees", "5"]
    assert exp4_classification.main(args) == 0
    df = pd.read_csv(tmp_path / "classification.csv")
    assert {"majority", "random", "real", "em", "independent"} <= set(df.release)
    assert ((df.mean_accuracy >= 0) & (df.mean_accuracy <= 1)).all()
    assert (tmp_path / "classification_embedded.png").exists()


def test_exp5_pipeline_time(tmp_path):
    assert exp5_pipeline_time.main(TINY + ["--out", str(tmp_path), "--methods", "em"]) == 0
    df = pd.read_csv(tmp_path / "pipeline_time.csv")
    assert len(df) == 1 and df.total_seconds[0] > 0
    assert (tmp_path / "pipeline_time_embedded_full.png").exists()


def test_exp6_privacy(tmp_path):
    assert exp6_privacy.main(["--datasets", "embedded", "--out", str(tmp_path)]) == 0
    df = pd.read_csv(tmp_path / "privacy.csv")
    assert df.eps_per_record.is_monotonic_decreasing
    assert (tmp_path / "privacy.png").exists()


@pytest.mark.parametrize("mod", [exp1_estimation, exp2_correlation, exp3_pruning,
                                 exp4_classification, exp5_pipeline_time, exp6_privacy])
def test_help(mod, capsys):
    with pytest.raises(SystemExit) as exc:
        mod.main(["--help"])
    assert exc.value.code == 0
    assert "--quick" in capsys.readouterr().out


def test_report_builds_from_partial_results(tmp_path):
    from pipelines.repro import report

    exp6_privacy.main(["--datasets", "embedded", "--out", str(tmp_path / "exp6_privacy"), "--no-plot"])
    exp3_pruning.main(["--datasets", "embedded", "--rows", "600", "--sources", "data", "--samplings",
                       "full", "--out", str(tmp_path / "exp3_pruning"), "--no-plot"])
    out = tmp_path / "RESULTS.md"
    assert report.main(["--results", str(tmp_path), "--out", str(out)]) == 0
    text = out.read_text()
    assert "## 3. Pruning tables" in text and "| phi |" in text
    assert "*(not run)*" in text  # experiments without results say so


@pytest.mark.parametrize("exp", [exp1_estimation, exp2_correlation, exp3_pruning,
                                 exp4_classification, exp5_pipeline_time, exp6_privacy],
                         ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_quick_mode_runs(exp, tmp_path):
    # the --quick branches themselves (grids, method and sampling choices), on a tiny sample
    assert exp.main(["--quick", "--datasets", "embedded", "--rows", "400", "--out", str(tmp_path)]) == 0
    logs = [p for p in tmp_path.glob("*.csv") if p.name != "privacy.csv"] or list(tmp_path.glob("*.csv"))
    assert logs and all(len(pd.read_csv(p)) > 0 for p in logs)
    assert (tmp_path / "COMMANDS.txt").read_text().count("--quick") == 1 or exp is exp6_privacy
