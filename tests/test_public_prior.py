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


# the planner with a prior ------------------------------------------------------------------------------
def _records(n, seed, d=10, strong=("q0", "q1")):
    """d binary answers, independent except ``strong``, where the second copies the first 90 % of the time."""
    from lopub.data.dataset import Dataset

    rng = np.random.default_rng(seed)
    df = pd.DataFrame({f"q{i}": rng.choice(["yes", "no"], n) for i in range(d)})
    a, b = strong
    df[b] = np.where(rng.random(n) < 0.9, df[a], df[b])
    from lopub.data.schema import infer_domain

    return Dataset.from_pandas(df, infer_domain(df))


def test_a_prior_ranks_the_pairs_it_shows_dependent():
    """prior_cuts: the top-1 cut is the one dependent pair of the public records; each cut holds its top pairs
    and one-way subsets for the attributes they leave out."""
    from lopub.collect.adaptive import Profile, prior_cuts

    pub = _records(5000, 1)
    cuts = prior_cuts(pub.domain, Profile(pub.domain, pub))
    assert cuts["top-1-pairs"][0] == ("q0", "q1")
    for name, subsets in cuts.items():
        k = int(name.split("-")[1])
        pairs = [s for s in subsets if len(s) == 2]
        assert len(pairs) == k
        assert {a for s in subsets for a in s} == set(pub.domain.attrs)  # every attribute measured


def test_a_public_samples_noise_is_not_dependence():
    """The bias a Dataset prior gives an independent pair is its sampling noise, shrunk by its James-Stein
    factor: about 0 for most pairs of a 2,000-record sample, while the dependent pair keeps its bias
    (before: the raw p_ab - p_a p_b, ~0.01 TVD per independent pair, read as dependence)."""
    import itertools

    from lopub.collect.adaptive import Profile

    pub = _records(2000, 2)
    prof = Profile(pub.domain, pub)
    tvd = {p: 0.5 * float(np.abs(prof.bias(*p)).sum()) for p in itertools.combinations(pub.domain.attrs, 2)}
    strong = tvd.pop(("q0", "q1"))
    assert strong > 0.2  # 0.9 copy: the pair's TVD from independence is about 0.225
    assert np.median(list(tvd.values())) == 0.0 and max(tvd.values()) < 0.03
    raw = 0.5 * np.abs(prof.probs(("q2", "q3")) - np.outer(prof.probs(("q2",)), prof.probs(("q3",))).ravel()).sum()
    assert 0.0 < raw  # the sample shows some dependence; the prior calls it noise


def test_the_plan_from_a_prior_measures_its_dependent_pair():
    """At a budget where one pair is worth measuring, the plan from public records measures it (a cut of
    the prior's ranking); without a prior the default rule measures pairs by size alone."""
    from lopub.collect import plan

    pub = _records(5000, 3)
    report = plan(pub.domain, 200_000, 2.0, prior=pub)
    subsets = report.option("marginals").params["subsets"]
    assert ["q0", "q1"] in subsets or ["q1", "q0"] in subsets
    assert report.option("marginals").params["strategy"].startswith("top-")


def test_public_records_as_people_have_them(tmp_path, capsys):
    """A public file as shipped (UCI style): no header row, '?' for missing, a number beyond the domain's bins,
    a category the domain does not have.  Read as the domain's columns in order, '?' as missing
    (--public-na-values), the number clipped into the end bin and the row with the unknown category dropped,
    each said in a note; before, no --public option existed (and a strict read refused the file)."""
    rng = np.random.default_rng(4)
    n = 3000
    df = pd.DataFrame({"age": rng.integers(18, 80, n).astype(str),
                       "job": rng.choice(["a", "b", "?"], n), "pay": rng.choice(["lo", "hi"], n)})
    df.to_csv(tmp_path / "d.csv", index=False)
    assert run(capsys, "schema", tmp_path / "d.csv", "--na-values", "?", "--out", tmp_path / "dom.json")[0] == 0
    pub = df.iloc[:500].copy()
    pub.loc[0, "age"] = "120"  # beyond the domain's last edge
    pub.loc[1, "job"] = "c"  # not a category of the domain
    pub.to_csv(tmp_path / "pub.csv", index=False, header=False)
    code, out, err = run(capsys, "plan", "--domain", tmp_path / "dom.json", "--n", 100_000, "--epsilon", 2,
                         "--public", tmp_path / "pub.csv", "--public-na-values", "?", "--json")
    assert code == 0, err
    assert "read as a file without a header row" in err
    assert "1 value(s) of 'age' beyond its bins clipped" in err and "1 row(s) with a category of 'job'" in err
    assert any("given prior's tables" in c for c in json.loads(out)["checks"])
    code, _, err = run(capsys, "plan", "--domain", tmp_path / "dom.json", "--n", 100_000, "--epsilon", 2,
                       "--public", tmp_path / "pub.csv")  # without the token, '?' is no category of 'job'
    assert code == 0 and "row(s) with a category of 'job' the domain does not have dropped" in err


def test_collect_refuses_the_records_it_collects_as_public(files, tmp_path, capsys):
    """--public must be public knowledge: the CSV being collected is refused (the plan is published and
    would reveal it); before, the planner would have planned on the private records themselves."""
    code, _, err = run(capsys, "collect", files / "d.csv", "--domain", files / "dom.json", "--epsilon", EPS,
                       "--public", files / "d.csv", "--seed", "1", "--out", tmp_path / "r.npz")
    assert code == 2 and "is the CSV being collected" in err, err
    assert not (tmp_path / "r.npz").exists()
