"""Defects a walk through the user guide (README, docs/guide/, docs/COLLECTION.md) found, each
pinned where the page and lopub disagreed and lopub was the one to change."""
from __future__ import annotations

import json
import os
import stat

import pytest

from lopub import Attribute, Domain
from lopub.cli import main
from lopub.collect import MarginalPlan
from lopub.serve.config import build_config, read_relay_key

DOMAIN = Domain([Attribute("smoker", ["yes", "no"]), Attribute("age", ["<30", "30-60", ">60"]),
                 Attribute("region", ["north", "south", "east", "west"])])


# docs/guide/budget.md: "Above 10 the guarantee is weak ... and lopub warns" -- also with --f ---

def test_demo_with_f_states_and_warns_about_its_budget(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--n", "400", "--f", "0.5"]) == 0
    cap = capsys.readouterr()
    assert "lopub demo: warning: epsilon 114.256 per record is a weak guarantee" in cap.err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["privacy"].startswith("Privacy: each user's report is epsilon-LDP with epsilon = 114.256")
    # README: progress and remarks go to stderr; stdout is the summary (JSON) and the verdict line
    assert "encoding 400 records" in cap.err and "fitting:" in cap.err
    text, _, verdict = cap.out.rpartition("\nverdict: ")
    assert json.loads(text) == summary and verdict


def test_demo_quiet_keeps_the_budget_warning(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path / "d"), "--n", "300", "--epsilon", "20", "--quiet"]) == 0
    cap = capsys.readouterr()
    assert "lopub demo: warning: epsilon 20 per record is a weak guarantee" in cap.err
    assert cap.out == ""


# docs/COLLECTION.md: `lopub serve survey=plan.json --relay-key-file relay.key` on a fresh machine -

def _options(tmp_path, relay):
    MarginalPlan(DOMAIN, (("smoker", "age"),), 2.0).to_json(tmp_path / "plan.json")
    return {"collections": [f"survey={tmp_path / 'plan.json'}"], "store": str(tmp_path / "s.sqlite"),
            "secret_file": str(tmp_path / "secret"), "relay_key_file": relay, "max_body": 65536,
            "rate": 20.0}


def test_missing_relay_key_file_is_created_like_the_secret(tmp_path):
    relay = tmp_path / "relay.key"
    cfg = build_config(_options(tmp_path, str(relay)))  # raised FileNotFoundError: [Errno 2] 'relay.key'
    try:
        key = relay.read_text().strip()
        assert cfg.relay_key == key and len(key) == 64
        assert stat.S_IMODE(os.stat(relay).st_mode) == 0o600
    finally:
        cfg.store.close()
    assert read_relay_key(str(relay)) == key  # an existing key is read, never replaced


def test_unusable_relay_key_file_is_named(tmp_path):
    with pytest.raises(ValueError, match=r"--relay-key-file \(.*nowhere/relay.key\) does not exist and "
                                         r"cannot be created"):
        read_relay_key(str(tmp_path / "nowhere" / "relay.key"))
    with pytest.raises(ValueError, match=r"--relay-key-file \(.*\) cannot be read"):
        read_relay_key(str(tmp_path))  # a folder


def test_missing_collection_file_is_named(tmp_path, capsys):
    MarginalPlan(DOMAIN, (("smoker", "age"),), 2.0).to_json(tmp_path / "plan.json")
    code = main(["serve-export", "census=" + str(tmp_path / "spec.json"), str(tmp_path / "c.parquet"),
                 "--store", str(tmp_path / "s.sqlite")])
    err = capsys.readouterr().err
    assert code == 2
    assert "collection 'census': no plan or spec file" in err and "lopub serve-plan" in err
    assert "Errno" not in err


# the quick start's `lopub fit` printed "NOT converged" beside a verdict that called it harmless ----

def test_harmless_unconverged_fit_says_so():
    from lopub.publish.report.notes import not_converged

    mf = {"stop": "tol", "gap": 4.16, "converged": False}
    note = {"findings": [{"check": "convergence", "severity": "info", "message": "..."}]}
    caveat = {"findings": [{"check": "convergence", "severity": "caveat", "message": "..."}]}
    assert not_converged(mf, note) == ("not converged (the loss stopped falling, certified gap 4.16 nats "
                                       "above the bound; harmless: it already fits its measurements "
                                       "within their noise)")
    assert not_converged(mf, caveat).startswith("NOT converged (the loss stopped falling")
    assert not_converged(mf).startswith("NOT converged")
    assert not_converged({"stop": "max_iter", "gap": None}, caveat).endswith("lopub fit --max-iter)")


# `lopub schema` on Adult: "rows: 32561 ... total cells: 4877107200", "'?' (1836 rows)" ------------

def test_schema_table_counts_have_thousands_separators(tmp_path, capsys):
    path = tmp_path / "data.csv"
    rows = [f"{'?' if i % 2 == 0 else 'a' + str(i % 5)},{i % 7},{i % 11}" for i in range(3000)]
    path.write_text("x,y,z\n" + "\n".join(rows) + "\n")
    assert main(["schema", str(path), "--out", str(tmp_path / "d.json")]) == 0
    out = capsys.readouterr().out
    assert "rows: 3,000;" in out
    assert "'?' (1,500 rows)" in out
    from lopub.data.schema_report import _count

    assert _count(4877107200) == "4,877,107,200" and _count(5 ** 200) == "6.2e139"
