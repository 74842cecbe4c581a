"""Defects a new-user tour found: report with dropped ID columns, unmeasured pairs in the verdict,
advice naming options the interface lacks, ``synthesize --out`` with an unsupported suffix."""
import warnings

import numpy as np
import pandas as pd
import pytest

from lopub.errors import DomainError
from lopub.pipeline.synthesizer import Synthesizer


def _with_ids(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.choice(["x", "y", "z"], n)
    b = np.where(rng.random(n) < 0.8, a, rng.choice(["x", "y", "z"], n))
    return pd.DataFrame({"user_id": [f"u{i:05d}" for i in range(n)], "a": a, "b": b,
                         "c": rng.choice(["p", "q"], n)})


@pytest.fixture(scope="module")
def fitted_with_ids():
    df = _with_ids()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = Synthesizer(epsilon=8, rng=0).fit(df)
    return syn, df


def test_report_real_leaves_out_columns_fit_dropped(fitted_with_ids, tmp_path):
    syn, df = fitted_with_ids
    assert "user_id" not in syn.domain_
    out = tmp_path / "r.html"
    syn.report(out, real=df, seed=1)  # raised DomainError: column 'user_id' is not in the model's domain
    page = out.read_text(encoding="utf-8")
    assert "left out of every comparison: user_id" in page
    assert 'id="scores"' in page  # the real-data sections are there


def test_report_real_bad_value_in_a_model_column_still_errors(fitted_with_ids, tmp_path):
    syn, df = fitted_with_ids
    bad = df.copy()
    bad.loc[0, "a"] = "never-seen"
    with pytest.raises(DomainError, match=r"real: .*'a'.*never-seen"):
        syn.report(tmp_path / "r.html", real=bad, seed=1)
    assert not (tmp_path / "r.html").exists()


# 2. pairs the collection never measured ----------------------------------------------------------
def _dependent_frame(n=3000, seed=1):
    """x and y nearly equal (like education / education-num), z depends on y, w independent."""
    rng = np.random.default_rng(seed)
    x = rng.choice(["a", "b", "c"], n)
    y = np.where(rng.random(n) < 0.95, x, rng.choice(["a", "b", "c"], n))
    z = np.where(rng.random(n) < 0.7, np.where(y == "a", "p", "q"), rng.choice(["p", "q"], n))
    return pd.DataFrame({"x": x, "y": y, "z": z, "w": rng.choice(["u", "v"], n)})


def _dataset(df):
    from lopub.data.dataset import Dataset
    from lopub.data.domain import Domain

    return Dataset.from_pandas(df, Domain.from_categories({c: sorted(df[c].unique()) for c in df}))


def test_assess_names_unmeasured_pairs_as_a_caveat():
    from lopub.model.checks import assess
    from lopub.model.verdict import CAVEATS
    from lopub.pipeline.steps import fit

    df = _dependent_frame()
    data = _dataset(df)
    model = fit(estimator=data, warn=False).model
    ones = [data.project([a]) for a in data.domain.attrs]
    v = assess(model, ones, n=len(df), unmeasured=[("x", "y"), ("x", "z"), ("y", "z")])
    assert v.level == CAVEATS  # a caveat, not "not usable"
    f = next(f for f in v.findings if f.check == "unmeasured-pairs")
    assert f.severity == "caveat" and f.figures["unmeasured"] == 3 and f.figures["pairs_total"] == 6
    assert f.message.startswith("3 of 6 attribute pairs were never measured by the collection")
    assert "(x, y)" in f.message and "only through the model's structure" in f.message
    assert "independence where no clique links them" in f.message


@pytest.fixture(scope="module")
def one_attribute_fit():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        syn = Synthesizer(epsilon=8, protocol="one-attribute", rng=0).fit(_dependent_frame())
    return syn, caught


def test_one_attribute_protocol_says_no_pair_was_measured(one_attribute_fit):
    from lopub.model.verdict import CAVEATS, ReleaseQualityWarning

    syn, caught = one_attribute_fit
    assert syn.fit_report_.fit.pairs_measured == 0 and syn.fit_report_.fit.pairs_total == 6
    assert syn.verdict_.level == CAVEATS
    assert any("6 of 6 attribute pairs were never measured" in r for r in syn.verdict_.reasons)
    assert any(issubclass(w.category, ReleaseQualityWarning) and "never measured" in str(w.message)
               for w in caught)


def test_partial_plan_verdict_names_the_unmeasured_pairs_and_scopes_the_ok():
    from lopub.model.checks import assess
    from lopub.model.verdict_inputs import unmeasured_pairs
    from lopub.model.verdict import CAVEATS

    class Plan:  # a marginal-sampling source that measured (x, y), (y, z) and the one-ways
        sets = ({"x", "y"}, {"y", "z"}, {"w"})

        def covers(self, attrs):
            return any(set(attrs) <= s for s in self.sets)

    assert unmeasured_pairs(Plan(), ["x", "y", "z", "w"]) == [("x", "z"), ("x", "w"), ("y", "w"), ("z", "w")]
    from lopub.pipeline.steps import fit

    data = _dataset(_dependent_frame(20_000))
    model = fit(estimator=data, warn=False).model
    sets = [[a] for a in data.domain.attrs] + [["x", "y"], ["y", "z"]]
    v = assess(model, [data.project(s) for s in sets], n=data.n,
               unmeasured=unmeasured_pairs(Plan(), list(data.domain.attrs)))
    assert v.level == CAVEATS
    assert any(r.startswith("4 of 6 attribute pairs were never measured") for r in v.reasons)
    ok = next(f for f in v.findings if f.check == "independence")
    assert "keeps all 2 significant dependencies" in ok.message
    assert "only the 2 of 6 attribute pairs with a measured table could be checked" in ok.message


def test_cli_fit_says_pairs_measured_not_computed(tmp_path, capsys):
    from lopub.cli import main

    _dependent_frame().to_csv(tmp_path / "d.csv", index=False)
    assert main(["schema", str(tmp_path / "d.csv"), "--out", str(tmp_path / "dom.json")]) == 0
    assert main(["collect", str(tmp_path / "d.csv"), "--domain", str(tmp_path / "dom.json"), "--epsilon", "8",
                 "--protocol", "one-attribute", "--seed", "3", "--out", str(tmp_path / "r.npz")]) == 0
    capsys.readouterr()
    assert main(["fit", str(tmp_path / "r.npz"), "--out", str(tmp_path / "m.json"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "pairs measured: 0/6 (6 derived from one-way tables as independent)" in out
    assert "pairs computed" not in out
    assert "verdict: usable with caveats" in out and "6 of 6 attribute pairs were never measured" in out


# 3. advice the user can act on --------------------------------------------------------------------
@pytest.fixture(scope="module")
def collected_reports(tmp_path_factory):
    from lopub.cli import main

    d = tmp_path_factory.mktemp("reports")
    _dependent_frame().to_csv(d / "d.csv", index=False)
    assert main(["schema", str(d / "d.csv"), "--out", str(d / "dom.json")]) == 0
    assert main(["collect", str(d / "d.csv"), "--domain", str(d / "dom.json"), "--epsilon", "8",
                 "--seed", "3", "--out", str(d / "r.npz")]) == 0
    return d / "r.npz"


def test_cli_fit_max_iter_is_a_real_option(collected_reports, tmp_path, capsys):
    import json

    from lopub.cli import main

    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    assert "--max-iter" in capsys.readouterr().out
    assert main(["fit", str(collected_reports), "--out", str(tmp_path / "m.json"), "--quiet", "--json",
                 "--max-iter", "1"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["model_fit"]["iterations"] <= 1 and rep["model_fit"]["converged"] is False
    advice = [w for w in rep["warnings"] if "did not converge" in w]
    assert advice and "lopub fit --max-iter N" in advice[0] and "fit_options['max_iter']" not in advice[0]


@pytest.mark.parametrize("argv, match", [
    (["--max-iter", "0"], r"--max-iter \(0\) must be an integer >= 1"),
    (["--max-iter", "5", "--release", "cliques"], r"--max-iter \(5\) applies to --release pgm"),
])
def test_cli_fit_bad_max_iter_refused_before_any_work(collected_reports, tmp_path, capsys, argv, match):
    import re

    from lopub.cli import main

    assert main(["fit", str(collected_reports), "--out", str(tmp_path / "m.json"), *argv]) == 2
    assert re.search(match, capsys.readouterr().err)
    assert not (tmp_path / "m.json").exists()


def test_synthesizer_identifier_advice_names_what_it_accepts():
    import inspect

    with pytest.warns(UserWarning, match="'user_id': identifier-like") as caught:
        Synthesizer(epsilon=8, rng=0).fit(_with_ids(600))
    text = next(str(w.message) for w in caught if "user_id" in str(w.message))
    assert "Synthesizer: pass that domain as domain=" in text and "infer_domain(df, identifiers='keep')" in text
    assert "domain" in inspect.signature(Synthesizer).parameters  # what the advice points to exists


# 4. synthesize --out with a suffix that is no release format --------------------------------------
@pytest.mark.parametrize("name", ["x.json", "x.txt", "x"])
def test_synthesize_refuses_unknown_out_suffix_before_any_work(fitted_with_ids, tmp_path, capsys, name):
    from lopub.cli import main

    syn, _ = fitted_with_ids
    syn.save(tmp_path / "m.json")
    capsys.readouterr()
    out = tmp_path / name
    assert main(["synthesize", str(tmp_path / "m.json"), "--n", "20", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    suffix = out.suffix or "(none)"
    assert f"--out ('{out}') has the suffix '{suffix}'" in err
    assert "expected one of ['.csv', '.parquet', '.pq']" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]  # no file, no stage left
    # a missing model is not even read first: the suffix is refused before any work
    assert main(["synthesize", str(tmp_path / "missing.json"), "--out", str(out)]) == 2
    assert "--out" in capsys.readouterr().err
