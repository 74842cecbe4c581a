"""`lopub serve-plan`, `lopub serve`, the Python device client and `lopub serve-export` end to end."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

pytest.importorskip("uvicorn")

from lopub import Attribute, Domain  # noqa: E402
from lopub.cli import main  # noqa: E402
from lopub.collect import MarginalPlan, MarginalReports  # noqa: E402
from lopub.serve.client import DeviceClient, _request, post_batch, wire_reports  # noqa: E402
from lopub.serve.protocol import Collection  # noqa: E402
from pipelines.harness.serve_live import get, running  # noqa: E402

DOMAIN = Domain([Attribute("smoker", ["yes", "no"]), Attribute("age", ["<30", "30-60", ">60"]),
                 Attribute("region", ["north", "south", "east", "west"])])


def test_serve_plan_serve_report_export_fit(tmp_path, capsys):
    DOMAIN.to_json(tmp_path / "domain.json")
    assert main(["serve-plan", "--domain", str(tmp_path / "domain.json"), "--n", "20000",
                 "--epsilon", "2", "--protocol", "marginals", "--out", str(tmp_path / "plan.json")]) == 0
    assert "marginals ->" in capsys.readouterr().out
    plan = MarginalPlan.from_json(tmp_path / "plan.json")
    (tmp_path / "relay.key").write_text("k" * 32)
    store = tmp_path / "plan.reports.sqlite"
    with running({"survey": tmp_path / "plan.json"}, store, "--relay-key-file",
                 str(tmp_path / "relay.key"), "--secret-file", str(tmp_path / "s")) as (base, proc):
        device = DeviceClient(base, "survey")
        assert "epsilon = 2 for the whole record" in device.privacy
        for _ in range(5):
            assert device.submit({"smoker": "yes", "age": ">60", "region": "east"}) == {"stored": 1}
        assert get(f"{base}/api/c/survey/count")["reports"] == 5
        c = Collection("survey", plan)
        n = 3000
        rng = np.random.default_rng(2)
        codes = np.column_stack([rng.integers(0, s, n) for s in DOMAIN.sizes])
        from lopub.serve import tokens  # a relay forwards devices' tokens; here we mint them

        secret = (tmp_path / "s").read_text().strip().encode()
        subsets = rng.integers(0, plan.n_subsets, n)
        toks = [tokens.issue(secret, "survey", int(s), plan=c.params_id) for s in subsets]
        items = [{"token": t, "subset": int(s), "report": w}
                 for t, s, w in zip(toks, subsets, wire_reports(c, codes, subsets, rng=rng))]
        out = post_batch(base, "survey", items, "k" * 32)
        assert out == {"stored": n, "refused": []}
        assert get(f"{base}/api/c/survey/count")["reports"] == n + 5
    assert main(["serve-export", f"survey={tmp_path / 'plan.json'}", str(tmp_path / "x.npz"),
                 "--json"]) == 0  # default store: beside plan.json
    assert json.loads(capsys.readouterr().out)["n"] == n + 5
    assert MarginalReports.load(tmp_path / "x.npz", plan=plan).n == n + 5
    assert main(["fit", str(tmp_path / "x.npz"), "--out", str(tmp_path / "m.json"), "--quiet"]) == 0


def test_serve_refuses_bad_collection_arguments(tmp_path, capsys):
    assert main(["serve", "nofile"]) == 2
    assert "must be NAME=FILE" in capsys.readouterr().err
    (tmp_path / "d.json").write_text(DOMAIN.to_json())
    assert main(["serve", f"x={tmp_path / 'd.json'}"]) == 2
    assert "expected 'lopub-marginal-plan' or 'lopub-spec'" in capsys.readouterr().err


def test_two_workers_share_the_store_and_refuse_replays(tmp_path):
    plan = MarginalPlan(DOMAIN, (("smoker", "age"), ("region",)), 1.0)
    plan.to_json(tmp_path / "plan.json")
    with running({"s": tmp_path / "plan.json"}, tmp_path / "r.sqlite", "--workers", "2",
                 "--rate", "1000") as (base, _):
        device = DeviceClient(base, "s")
        enrolments = [_request(f"{base}/api/c/s/enrol", {}) for _ in range(20)]
        answers = {"smoker": "no", "age": "<30", "region": "west"}
        bodies = [device.make_report(e, answers) for e in enrolments]
        with ThreadPoolExecutor(8) as pool:  # every body twice, concurrently, to both workers
            results = list(pool.map(lambda b: _try(_request, f"{base}/api/c/s/report", b), bodies * 2))
        assert results.count("stored") == 20 and results.count("replay") == 20
        assert get(f"{base}/api/c/s/count")["reports"] == 20


def _try(request, url, body):
    try:
        return "stored" if request(url, body) == {"stored": 1} else "?"
    except ValueError as exc:
        return "replay" if "HTTP 409" in str(exc) else str(exc)


@pytest.mark.parametrize("protocol, fmt", [("bloom", "lopub-spec"), ("one-attribute", "lopub-marginal-plan")])
def test_serve_plan_writes_what_serve_reads(tmp_path, protocol, fmt, capsys):
    DOMAIN.to_json(tmp_path / "domain.json")
    out = tmp_path / "c.json"
    assert main(["serve-plan", "--domain", str(tmp_path / "domain.json"), "--n", "5000", "--epsilon", "3",
                 "--protocol", protocol, "--out", str(out)]) == 0
    assert json.loads(out.read_text())["format"] == fmt
    c = Collection.load("c", out)
    assert c.epsilon == pytest.approx(3.0) and c.kind == ("bloom" if protocol == "bloom" else "marginal")


def test_logs_hold_no_token_report_or_answer(tmp_path):
    plan = MarginalPlan(DOMAIN, (("smoker", "age", "region"),), 1.0, oracles=("oue",))
    plan.to_json(tmp_path / "plan.json")
    with running({"s": tmp_path / "plan.json"}, tmp_path / "r.sqlite", "--access-log",
                 "--verbose") as (base, proc):
        device = DeviceClient(base, "s")
        enrolment = _request(f"{base}/api/c/s/enrol", {})
        body = device.make_report(enrolment, {"smoker": "no", "age": "<30", "region": "west"})
        assert _request(f"{base}/api/c/s/report", body) == {"stored": 1}
        _try(_request, f"{base}/api/c/s/report", {**body, "report": "zz"})  # an error path too
    log = proc.stdout.read()
    assert "POST /api/c/s/report" in log  # the access log is on ...
    for secret in (enrolment["token"], enrolment["token"].split(".")[1], body["report"], "west"):
        assert secret not in log  # ... and holds no token, report or answer
