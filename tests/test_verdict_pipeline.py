"""The release verdict where users see it: lopub fit (stdout, stderr, --json), Synthesizer
(ReleaseQualityWarning, verdict_), the HTML report (first section) and the demo's summary."""
import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from lopub.cli import main
from lopub.datasets import embedded
from lopub.model.graphical import Model
from lopub.model.verdict import GOOD, LEVELS, NOT_USABLE, ReleaseQualityWarning
from lopub.pipeline.synthesizer import Synthesizer
from lopub.publish.report import build_report


@pytest.fixture(scope="module")
def good():
    """Embedded data, 20,000 users, epsilon 8 (the planner's protocol): a good release."""
    df = embedded(20_000, rng=0).to_pandas()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        syn = Synthesizer(epsilon=8, rng=0).fit(df)
    return syn, df, [w for w in caught if issubclass(w.category, ReleaseQualityWarning)]


@pytest.fixture(scope="module")
def hopeless():
    """2,000 users at epsilon 0.3, one attribute per user: every column drowns in noise."""
    df = embedded(2_000, rng=1).to_pandas()
    with pytest.warns(ReleaseQualityWarning, match="not usable") as caught:
        syn = Synthesizer(epsilon=0.3, protocol="one-attribute", rng=1).fit(df)
    return syn, df, caught


def test_good_release_is_good_and_silent(good):
    syn, _, caught = good
    assert syn.verdict_.level == GOOD and not caught
    assert syn.fit_report_.fit.verdict["level"] == GOOD
    assert not syn.verdict_.warnings and syn.verdict_.reasons  # a good verdict says why
    assert any("within their noise" in r for r in syn.verdict_.reasons)


def test_hopeless_release_warns_in_python(hopeless, tmp_path):
    syn, _, caught = hopeless
    assert syn.verdict_.level == NOT_USABLE
    text = str(caught[0].message)
    assert "noise swamps the data" in text and "2,000 users at epsilon 0.3" in text
    assert any("noise swamps" in w for w in syn.fit_report_.warnings)
    assert syn.fit_report_.to_dict()["fit"]["verdict"]["level"] == NOT_USABLE
    syn.save(tmp_path / "s.json")
    assert Synthesizer.load(tmp_path / "s.json").verdict_ == syn.verdict_



def test_synthesizer_warns_the_verdict_once(hopeless):
    _, _, caught = hopeless
    assert len([w for w in caught if issubclass(w.category, ReleaseQualityWarning)]) == 1


def test_python_fit_warns_the_verdict_as_lopub_fit_prints_it():
    """``lopub.fit`` (the Python face of ``lopub fit``) warns a verdict that is not good, with the
    reasons the CLI prints; silent on a good release and with ``warn=False`` (the CLI's own call)."""
    from lopub.collect import collect
    from lopub.pipeline.steps import fit

    hopeless_reports, _ = collect(embedded(2_000, rng=1), 0.3, protocol="one-attribute", rng=1)
    with pytest.warns(ReleaseQualityWarning, match="not usable") as caught:
        result = fit(hopeless_reports)
    assert len([w for w in caught if issubclass(w.category, ReleaseQualityWarning)]) == 1
    assert "noise swamps the data" in str(caught[0].message)
    assert result.report.verdict["level"] == NOT_USABLE
    with warnings.catch_warnings(record=True) as quiet:
        warnings.simplefilter("always")
        fit(hopeless_reports, warn=False)
    assert not [w for w in quiet if issubclass(w.category, ReleaseQualityWarning)]
    good_reports, _ = collect(embedded(20_000, rng=0), 8, rng=0)
    with warnings.catch_warnings(record=True) as quiet:
        warnings.simplefilter("always")
        assert fit(good_reports).report.verdict["level"] == GOOD
    assert not [w for w in quiet if issubclass(w.category, ReleaseQualityWarning)]


def _section_order(page: str) -> list[str]:
    return [part.split('"', 1)[0] for part in page.split('<section id="')[1:]]


def test_report_puts_the_verdict_first(good, hopeless):
    syn, df, _ = hopeless
    page = build_report(syn.model_, syn.sample(seed=0))
    assert _section_order(page)[:2] == ["verdict", "summary"]
    top = page[page.index('<section id="verdict"'):page.index("</section>")]
    assert "Verdict: not usable" in top and "noise swamps the data" in top
    assert "No warnings." not in page
    with_real = build_report(syn.model_, syn.sample(seed=0), df)
    top = with_real[with_real.index('<section id="verdict"'):with_real.index("</section>")]
    assert "Measured on the true data" in top and "uniform distribution" in top
    gsyn, gdf, _ = good
    page = build_report(gsyn.model_, gsyn.sample(seed=0), gdf)
    top = page[page.index('<section id="verdict"'):page.index("</section>")]
    assert "Verdict: good" in top and "the release beats both baselines" in top


def test_report_without_stored_verdict(good):
    syn = good[0]
    model = Model.from_dict(syn.model_.to_dict())
    del model.meta["fit"]["verdict"]
    page = build_report(model)
    assert "Verdict: unknown" in page and _section_order(page)[0] == "verdict"


def test_real_data_finding_uses_the_true_data(good):
    from lopub.data.dataset import Dataset
    from lopub.publish.report.verdict_block import real_data_finding, real_utility

    syn, df, _ = good
    real = Dataset.from_pandas(df, syn.domain_)
    u = real_utility(syn.model_, real)
    # the baselines are the true data's: independence of its own one-way marginals is exact on them
    one = real_utility(real, real)
    assert one["release"] == pytest.approx(0.0, abs=1e-12)
    assert one["independence"] == pytest.approx(u["independence"], rel=1e-12)
    assert u["release"] < u["independence"] < u["uniform"]
    assert real_data_finding(syn.model_, real).severity == "ok"
    uniform = Dataset(np.random.default_rng(0).integers(0, [len(syn.domain_.labels(a)) for a in syn.domain_.attrs],
                                                        size=(20_000, len(syn.domain_))), syn.domain_)
    assert real_data_finding(uniform, real).severity == "fatal"


def test_cli_fit_hopeless_warns_on_stderr_and_json(tmp_path, capsys):
    embedded(2_000, rng=2).to_pandas().to_csv(tmp_path / "d.csv", index=False)
    assert main(["schema", str(tmp_path / "d.csv"), "--out", str(tmp_path / "dom.json")]) == 0
    assert main(["collect", str(tmp_path / "d.csv"), "--domain", str(tmp_path / "dom.json"), "--epsilon",
                 "0.3", "--protocol", "one-attribute", "--seed", "3", "--out", str(tmp_path / "r.npz")]) == 0
    capsys.readouterr()
    assert main(["fit", str(tmp_path / "r.npz"), "--out", str(tmp_path / "m.json"), "--quiet"]) == 0
    cap = capsys.readouterr()
    assert "lopub fit: warning: release verdict: not usable" in cap.err
    assert "noise swamps the data" in cap.err
    assert "verdict: not usable" in cap.out
    assert main(["fit", str(tmp_path / "r.npz"), "--out", str(tmp_path / "m.json"), "--quiet", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["verdict"]["level"] == NOT_USABLE
    assert any(f["check"] == "hopeless" and f["severity"] == "fatal" for f in rep["verdict"]["findings"])
    assert rep["model_fit"]["initial_loss"] >= rep["model_fit"]["loss"]


def test_cli_constant_column_repro(tmp_path, capsys):
    """Issue 23's minimal repro: a (x 80 %, y 20 %), b, constant c; collect --epsilon 8; fit.

    Whatever the fit does, the verdict must agree with it: a model whose
    ``a`` is uniform is "not usable" and says why; otherwise the release
    is not condemned.  The constant column is a note, never a reason.
    """
    rng = np.random.default_rng(0)
    n = 5000
    pd.DataFrame({"a": rng.choice(["x", "y"], n, p=[0.8, 0.2]), "b": rng.choice(["p", "q", "r"], n),
                  "c": ["k"] * n}).to_csv(tmp_path / "c.csv", index=False)
    assert main(["schema", str(tmp_path / "c.csv"), "--out", str(tmp_path / "dom.json")]) == 0
    assert main(["collect", str(tmp_path / "c.csv"), "--domain", str(tmp_path / "dom.json"), "--epsilon", "8",
                 "--seed", "1", "--out", str(tmp_path / "r.npz")]) == 0
    capsys.readouterr()
    written = [p for p in tmp_path.iterdir() if p.name.startswith("r.")]  # named for what it holds
    assert len(written) == 1
    assert main(["fit", str(written[0]), "--out", str(tmp_path / "m.json"), "--quiet", "--json"]) == 0
    cap = capsys.readouterr()
    verdict = json.loads(cap.out)["verdict"]
    model = Model.load(tmp_path / "m.json")
    share = float(model.project(["a"]).values[model.domain.labels("a").index("x")])
    if abs(share - 0.5) < 0.05:  # the fit lost a's 80/20 split
        assert verdict["level"] == NOT_USABLE and "release verdict: not usable" in cap.err
        assert any("distribution of a is uniform" in r for r in verdict["reasons"])
    else:
        assert abs(share - 0.8) < 0.05 and verdict["level"] != NOT_USABLE
    if "c" in model.domain.attrs:
        assert any(f["severity"] == "info" and "c" in f["figures"].get("columns", [])
                   for f in verdict["findings"])
        assert not any("c have one category" in r for r in verdict["reasons"])


def test_demo_summary_states_the_verdict(tmp_path):
    from argparse import Namespace

    from lopub.pipeline.demo import run_demo

    summary = run_demo(Namespace(out=str(tmp_path / "demo"), n=20_000, seed=0, epsilon=8.0, f=None, quiet=True))
    assert summary["verdict"] in LEVELS and summary["verdict_reasons"]
    assert summary["verdict"] == GOOD
    assert json.loads((tmp_path / "demo" / "summary.json").read_text())["verdict"] == GOOD
    # the demo's plan leaves some of its 78 pairs unmeasured: fewer than half, so a note (not a caveat),
    # and the "ok" of the independence check says how many pairs it could check
    scoped = [re.search(r"only the (\d+) of 78 attribute pairs with a measured table", r) for r in summary["verdict_reasons"]]
    assert [m for m in scoped if m] and all(39 < int(m.group(1)) < 78 for m in scoped if m)
