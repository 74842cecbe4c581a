"""--jobs, --memory-budget-mb and --scheduler on lopub fit / estimate."""
import json

import numpy as np
import pytest

from lopub.cli import main
from lopub.client import encode
from lopub.datasets import embedded_model
from lopub.estimate.parallel import can_fork
from lopub.reports.spec import CollectionSpec


@pytest.fixture(scope="module")
def reports_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("par")
    bn = embedded_model()
    encode(bn.sample(2000, rng=0), CollectionSpec.from_domain(bn.domain, f=0.3), rng=1).save(d / "r.parquet")
    return d / "r.parquet"


def _model(path):
    return json.loads(path.read_text())


@pytest.mark.skipif(not can_fork(), reason="needs the fork start method")
@pytest.mark.parametrize("method", ["em", "moment"])
def test_fit_with_two_jobs_writes_the_same_model(reports_file, tmp_path, method):
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"m{jobs}.json"
        assert main(["fit", str(reports_file), "--method", method, "--jobs", jobs,
                     "--memory-budget-mb", "256", "--out", str(out), "--quiet"]) == 0
        outs.append(_model(out))
    a, b = (_no_seconds(m) for m in outs)
    assert [c["attrs"] for c in a["cliques"]] == [c["attrs"] for c in b["cliques"]]
    for x, y in zip(a["cliques"], b["cliques"]):
        assert np.array_equal(np.asarray(x["p"]), np.asarray(y["p"]))  # bit-identical tables
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _no_seconds(doc):
    """The document without wall-clock timings (they differ between any two runs)."""
    if isinstance(doc, dict):
        return {k: _no_seconds(v) for k, v in doc.items()
                if "seconds" not in k and k not in ("created", "checksum")}  # checksum covers timings
    if isinstance(doc, list):
        return [_no_seconds(v) for v in doc]
    return doc


def test_estimate_accepts_jobs(reports_file, capsys):
    assert main(["estimate", str(reports_file), "--attrs", "age_group,sex", "--method", "moment",
                 "--jobs", "2", "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert np.isclose(np.sum(out["p"]), 1.0)


@pytest.mark.parametrize("argv, match", [
    (["--jobs", "0"], r"--jobs \(0\)"),
    (["--memory-budget-mb", "-1"], r"--memory-budget-mb \(-1.0\)"),
    (["--scheduler", "local", "--method", "hybrid"], r"--scheduler \(local\) applies to --method moment or em"),
])
def test_bad_scale_options_are_named(reports_file, tmp_path, capsys, argv, match):
    code = main(["fit", str(reports_file), "--out", str(tmp_path / "m.json"), "--quiet"] + argv)
    assert code != 0
    assert pytest.importorskip("re").search(match, capsys.readouterr().err)
