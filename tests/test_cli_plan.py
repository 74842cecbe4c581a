"""``lopub plan`` and ``lopub collect --protocol auto|marginals|one-attribute|bloom``."""
import json

import numpy as np
import pytest

from lopub import Dataset, Domain
from lopub.cli import main
from lopub.collect import MarginalReports
from lopub.reports.bloom import Reports


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = Domain.from_categories({"a": ["x", "y"], "b": ["u", "v", "w"], "c": ["0", "1"]})
    rng = np.random.default_rng(2)
    a = rng.integers(0, 2, 4000)
    codes = np.column_stack([a, (a + rng.integers(0, 2, 4000)) % 3, rng.integers(0, 2, 4000)])
    tmp = tmp_path_factory.mktemp("plan")
    d.to_json(tmp / "d.json")
    Dataset(codes, d).to_pandas().to_csv(tmp / "data.csv", index=False)
    return tmp


def test_plan_json_recommends_one_of_its_options(files, capsys):
    assert main(["plan", "--domain", str(files / "d.json"), "--n", "4000", "--epsilon", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    names = [o["protocol"] for o in out["options"]]
    assert set(names) == {"bloom", "one-attribute", "marginals"}
    assert out["recommended"] == min(out["options"], key=lambda o: o["predicted_tvd"])["protocol"]


@pytest.mark.parametrize("eps", ["0", "-1", "nan", "inf"])
def test_plan_refuses_bad_epsilon(files, capsys, eps):
    assert main(["plan", "--domain", str(files / "d.json"), "--n", "4000", "--epsilon", eps]) == 2
    assert f"--epsilon ({eps})" in capsys.readouterr().err


def test_plan_warns_above_epsilon_10(files, capsys):
    assert main(["plan", "--domain", str(files / "d.json"), "--n", "4000", "--epsilon", "30"]) == 0
    assert "weak guarantee" in capsys.readouterr().out


@pytest.mark.parametrize("protocol", ["auto", "marginals", "one-attribute"])
def test_collect_planned_protocols_write_marginal_reports(files, protocol, capsys):
    out = files / f"{protocol}.npz"
    assert main(["collect", str(files / "data.csv"), "--domain", str(files / "d.json"), "--epsilon", "2",
                 "--protocol", protocol, "--seed", "3", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["epsilon_per_record"] == 2.0 and summary["n"] == 4000
    if summary["protocol"] == "bloom":
        assert Reports.load(out).n == 4000
    else:
        reports = MarginalReports.load(out)
        assert reports.n == 4000 and reports.plan.epsilon == 2.0



def test_collect_gives_the_plans_checks(files, capsys):
    """The plan-time checks that `lopub plan` prints: with --verbose as notes on stderr, in --json as "checks"."""
    assert main(["plan", "--domain", str(files / "d.json"), "--n", "4000", "--epsilon", "2", "--json"]) == 0
    checks = json.loads(capsys.readouterr().out)["checks"]
    assert checks and any(c.startswith("one-attribute: ") for c in checks)
    args = ["collect", str(files / "data.csv"), "--domain", str(files / "d.json"), "--epsilon", "2",
            "--protocol", "one-attribute", "--seed", "3"]
    assert main(args + ["--out", str(files / "v.npz"), "--verbose"]) == 0
    err = capsys.readouterr().err
    assert all(f"plan check: {c}" in err for c in checks)
    assert main(args + ["--out", str(files / "q.npz")]) == 0
    assert "plan check:" not in capsys.readouterr().err
    assert main(args + ["--out", str(files / "j.npz"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checks"] == checks

def test_collect_bloom_uses_the_planned_spec(files, capsys):
    out = files / "bloom.parquet"
    assert main(["collect", str(files / "data.csv"), "--domain", str(files / "d.json"), "--epsilon", "40",
                 "--protocol", "bloom", "--seed", "3", "--out", str(out)]) == 0
    spec = Reports.load(out).spec
    assert spec.epsilon == pytest.approx(40.0)
    assert "weak guarantee" in capsys.readouterr().err


def test_encode_with_epsilon_alone_takes_h_and_m_from_the_planner(files, capsys):
    from lopub.collect import plan
    from lopub.collect.planner import bloom_m

    out = files / "planned.parquet"
    assert main(["encode", str(files / "data.csv"), "--domain", str(files / "d.json"), "--epsilon", "20",
                 "--seed", "1", "--out", str(out), "--quiet"]) == 0
    spec = Reports.load(out).spec
    want = plan(spec.domain, 4000, 20.0).option("bloom").params
    assert list(spec.h) == [want["h"]] * len(spec.domain)
    assert list(spec.m) == list(want["m"]) == list(bloom_m(spec.domain, want["h"]))
    assert spec.epsilon == pytest.approx(20.0)
    assert "weak guarantee" in capsys.readouterr().err


def test_encode_with_explicit_h_keeps_it(files):
    out = files / "explicit.parquet"
    assert main(["encode", str(files / "data.csv"), "--domain", str(files / "d.json"), "--epsilon", "20",
                 "--h", "2", "--seed", "1", "--out", str(out), "--quiet"]) == 0
    assert set(Reports.load(out).spec.h) == {2}


def test_fit_accepts_marginal_sampling_reports(files, capsys):
    import json as _json

    from lopub.model.graphical import Model

    reports, model = files / "fit_marginals.npz", files / "fit_marginals.json"
    assert main(["collect", str(files / "data.csv"), "--domain", str(files / "d.json"), "--epsilon", "8",
                 "--protocol", "marginals", "--seed", "5", "--out", str(reports), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["fit", str(reports), "--out", str(model), "--json", "--quiet"]) == 0
    rep = _json.loads(capsys.readouterr().out)
    assert rep["method"] == "marginal-sampling" and rep["release"] == "pgm"
    assert rep["collection"]["protocol"] == "marginals" and rep["collection"]["epsilon_per_record"] == 8.0
    fitted = Model.load(model)
    assert fitted.n == 4000 and set(fitted.domain.attrs) == {"a", "b", "c"}
    # the data's a-b dependence is strong (b = a + noise mod 3): the planned pairs find it
    assert frozenset(("a", "b")) in {frozenset(e) for e in fitted.graph.edges}
