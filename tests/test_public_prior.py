"""``--public FILE`` / ``--dependence X`` of ``lopub plan``, ``serve-plan`` and ``collect``: the planner predicts
from public knowledge of the data instead of uniform tables and a pair dependence of 0.1 (issue 24 item 4:
"or a public prior the user gives").  Before, the command line had no way to give it (argparse refused)."""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from cli_run import run

N, EPS = 200_000, 1.0


def _independent(path, n, seed):
    rng = np.random.default_rng(seed)
    pd.DataFrame({f"q{i}": rng.choice(["yes", "no"], n) for i in range(8)}).to_csv(path, index=False)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Eight independent yes/no answers: the records to collect, a public sample of the same population,
    their domain and a model of the public sample (an earlier release)."""
    from lopub.cli import main

    d = tmp_path_factory.mktemp("public")
    _independent(d / "d.csv", 4000, 0)
    _independent(d / "pub.csv", 2000, 1)
    for argv in (["schema", d / "d.csv", "--out", d / "dom.json"],
                 ["collect", d / "pub.csv", "--domain", d / "dom.json", "--epsilon", "8", "--seed", "0",
                  "--protocol", "marginals", "--out", d / "pub.npz"],
                 ["fit", d / "pub.npz", "--out", d / "pub-model.json"]):
        assert main([str(x) for x in argv]) == 0
    return d


def _plan(capsys, files, *extra):
    code, out, err = run(capsys, "plan", "--domain", files / "dom.json", "--n", N, "--epsilon", EPS, "--json",
                         *extra)
    assert code == 0, err
    report = json.loads(out)
    return report, {o["protocol"]: o["predicted_tvd"] for o in report["options"]}


def test_public_records_replace_the_uniform_guess(files, capsys):
    """At the default guess (dependence 0.1) one attribute per user is predicted at 0.1 and pairs are
    measured; public records of independent answers predict it near its noise and recommend it."""
    default, pred0 = _plan(capsys, files)
    assert pred0["one-attribute"] == pytest.approx(0.1, abs=0.005) and default["recommended"] == "marginals"
    public, pred = _plan(capsys, files, "--public", files / "pub.csv")
    assert public["recommended"] == "one-attribute"
    assert pred["one-attribute"] < 0.03  # the pairs' true dependence is 0; noise of 25,000 users per answer
    assert any("given prior's tables" in n for n in public["checks"])


def test_a_model_of_an_earlier_release_is_a_prior_too(files, capsys):
    """The model's tables are the prior: the same predictions as ``plan(..., prior=Model.load(file))``."""
    from lopub.collect import plan
    from lopub.data.domain import Domain
    from lopub.model.graphical import Model

    _, pred = _plan(capsys, files, "--public", files / "pub-model.json")
    api = plan(Domain.from_json(files / "dom.json"), N, EPS, prior=Model.load(files / "pub-model.json"))
    assert pred == pytest.approx({o.protocol: o.predicted_tvd for o in api.options}, rel=1e-12)
    assert pred["one-attribute"] < 0.03  # the model (independent answers) against the default guess's 0.1


def test_dependence_is_the_scalar_guess(files, capsys):
    _, low = _plan(capsys, files, "--dependence", "0.005")
    _, high = _plan(capsys, files, "--dependence", "0.3")
    assert low["one-attribute"] < 0.02 < 0.25 < high["one-attribute"]


@pytest.mark.parametrize("extra, message", [
    (["--dependence", "1.5"], r"--dependence \(1.5\) must be a mean TVD from independence in \[0, 1\)"),
    (["--dependence", "nan"], r"--dependence \(nan\)"),
    (["--public", "{d}/pub.csv", "--dependence", "0.1"], "give one of them"),
    (["--public", "{d}/nowhere.csv"], r"--public \('.*nowhere.csv'\): no such file"),
])
def test_bad_knowledge_is_refused_naming_the_option(files, capsys, extra, message):
    code, _, err = run(capsys, "plan", "--domain", files / "dom.json", "--n", N, "--epsilon", EPS,
                       *[x.format(d=files) for x in extra])
    assert code == 2 and re.search(message, err), err


def test_public_records_of_another_schema_are_refused(files, tmp_path, capsys):
    pd.read_csv(files / "pub.csv").drop(columns=["q3"]).to_csv(tmp_path / "short.csv", index=False)
    code, _, err = run(capsys, "plan", "--domain", files / "dom.json", "--n", N, "--epsilon", EPS,
                       "--public", tmp_path / "short.csv")
    assert code == 2 and "--public" in err and "q3" in err, err
    other = pd.read_csv(files / "pub.csv").replace({"yes": "oui"})
    other.to_csv(tmp_path / "other.csv", index=False)
    code, _, err = run(capsys, "plan", "--domain", files / "dom.json", "--n", N, "--epsilon", EPS,
                       "--public", tmp_path / "other.csv")
    assert code == 2 and "--public" in err and "oui" in err, err


def test_serve_plan_and_collect_plan_with_it(files, tmp_path, capsys):
    """serve-plan writes the one-attribute plan the public data call for; collect --protocol auto collects
    with it (no screen); a frequency oracle says the option is ignored."""
    code, _, err = run(capsys, "serve-plan", "--domain", files / "dom.json", "--n", N, "--epsilon", EPS,
                       "--public", files / "pub.csv", "--out", tmp_path / "plan.json")
    assert code == 0, err
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert all(len(s) == 1 for s in plan["subsets"]) and len(plan["subsets"]) == 8
    code, out, err = run(capsys, "collect", files / "d.csv", "--domain", files / "dom.json", "--epsilon", EPS,
                         "--public", files / "pub.csv", "--seed", "1", "--json", "--out", tmp_path / "r.npz")
    assert code == 0, err
    assert json.loads(out)["protocol"] == "one-attribute"
    code, _, err = run(capsys, "collect", files / "d.csv", "--domain", files / "dom.json", "--epsilon", EPS,
                       "--protocol", "grr", "--public", files / "pub.csv", "--seed", "1", "--out", tmp_path / "g.npz")
    assert code == 0 and "--public is ignored with --protocol grr" in err, err
