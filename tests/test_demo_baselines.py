"""The demo's two independence figures have names that say which one-way tables they use.

`tvd_2way_independent` was the independence release of the NOISY one-way estimates (0.61 at
epsilon 0.5) while the verdict's independence baseline (0.211) uses the TRUE one-way
marginals: two numbers under one word.  Now both are in the summary, each named for its
tables, and the HTML report labels its baseline likewise.
"""
import json

import pytest

from lopub.cli import main, read_csv
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.publish.report.verdict_block import real_utility


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    assert main(["demo", "--out", str(out), "--n", "3000", "--epsilon", "0.5", "--quiet"]) == 0
    return out, json.loads((out / "summary.json").read_text())


def test_summary_names_both_independence_baselines(demo):
    out, summary = demo
    assert "tvd_2way_independent" not in summary
    noisy = summary["tvd_2way_independence_noisy_oneway"]
    true = summary["tvd_2way_independence_true_oneway"]
    truth = Dataset.from_pandas(read_csv(str(out / "true_data.csv")), Domain.from_json(out / "domain.json"))
    assert true == round(real_utility(truth, truth)["independence"], 4)  # the verdict's baseline
    assert noisy > true  # noise in the one-way tables costs the noisy baseline at epsilon 0.5


def test_report_labels_its_baseline_by_its_one_way_tables(demo, tmp_path):
    out, _ = demo
    html = tmp_path / "r.html"
    assert main(["report", str(out / "model.json"), "--synthetic", str(out / "synthetic.csv"),
                 "--real", str(out / "true_data.csv"), "--out", str(html)]) == 0
    page = html.read_text()
    assert "Independence baseline" not in page and "TVD independence<" not in page
    assert "Independence of the model&#x27;s one-way marginals" in page
    assert "independence of the true one-way marginals" in page  # the verdict's, named as before
