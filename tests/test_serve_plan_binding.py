"""Tokens are bound to the plan they were issued under.

A collection can be served again under the same name with another plan (a new store, the
same secret file beside the plan files): a report a device randomized for the old plan
(another epsilon, other subsets) must then be refused with a message naming both plans,
never stored as if it were made under the new one, and never answered with HTTP 500 when
the old subset index is beyond the new plan's subsets.
"""
from __future__ import annotations

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")
from starlette.testclient import TestClient  # noqa: E402

from lopub import Attribute, CollectionSpec, Domain  # noqa: E402
from lopub.collect import MarginalPlan  # noqa: E402
from lopub.serve.app import ServeConfig, build_app  # noqa: E402
from lopub.serve.protocol import Collection  # noqa: E402
from lopub.serve.backends import SQLiteStore  # noqa: E402

DOMAIN = Domain([Attribute("sex", ["F", "M"]), Attribute("age", ["young", "mid", "old"]),
                 Attribute("city", [f"c{i}" for i in range(12)])])
# plan A: three subsets at epsilon 4; plan B: two one-way GRR subsets at epsilon 1
PLAN_A = MarginalPlan(DOMAIN, (("sex",), ("age",), ("city",)), 4.0, oracles=("grr", "grr", "grr"))
PLAN_B = MarginalPlan(DOMAIN, (("sex",), ("age",)), 1.0, oracles=("grr", "grr"))
SECRET = b"s" * 64
RELAY = "relay-key-0123456789"


def _client(tmp_path, plan, store_name):
    store = SQLiteStore(tmp_path / store_name)
    cfg = ServeConfig({"m": Collection("m", plan)}, store, SECRET, relay_key=RELAY,
                      rate=1e6, burst=1e6)
    return TestClient(build_app(cfg)), store


def _enrolled(client, subset):
    """Enrolments until one assigns ``subset`` (the service draws subsets uniformly)."""
    for _ in range(500):
        e = client.post("/api/c/m/enrol").json()
        if e["subset"] == subset:
            return e
    raise AssertionError(f"no enrolment assigned subset {subset} in 500 draws")


def test_enrolment_and_description_name_the_plan(tmp_path):
    client, _ = _client(tmp_path, PLAN_A, "a.sqlite")
    spec = CollectionSpec.from_domain(DOMAIN, epsilon=2.0)
    cfg = ServeConfig({"b": Collection("b", spec)}, SQLiteStore(tmp_path / "b.sqlite"), SECRET)
    with client, TestClient(build_app(cfg)) as bloom:
        assert client.get("/api/c/m").json()["plan_id"] == PLAN_A.plan_id
        assert client.post("/api/c/m/enrol").json()["plan_id"] == PLAN_A.plan_id
        spec_id = Collection("b", spec).params_id
        assert bloom.get("/api/c/b").json()["plan_id"] == spec_id
        assert bloom.post("/api/c/b/enrol").json()["plan_id"] == spec_id


@pytest.mark.parametrize("subset, report", [(0, 1),    # same shape under B: was stored as B's
                                            (2, 11)])  # no subset 2 under B: was HTTP 500
def test_report_made_under_another_plan_is_refused_naming_both(tmp_path, subset, report):
    a, _ = _client(tmp_path, PLAN_A, "a.sqlite")
    with a:
        e = _enrolled(a, subset)
    b, store_b = _client(tmp_path, PLAN_B, "b.sqlite")  # the collection served again, new plan
    with b:
        r = b.post("/api/c/m/report", json={"token": e["token"], "subset": subset, "report": report})
        assert r.status_code == 422, r.text
        msg = r.json()["error"]
        assert f"issued under plan {PLAN_A.plan_id!r}" in msg
        assert f"now served under plan {PLAN_B.plan_id!r}" in msg and "enrol again" in msg
        assert b.get("/api/c/m/count").json()["reports"] == 0
        out = b.post("/api/c/m/batch", json={"reports": [{"token": e["token"], "subset": subset,
                                                          "report": report}]},
                     headers={"authorization": f"Bearer {RELAY}"}).json()
        assert out["stored"] == 0 and "issued under plan" in out["refused"][0]["error"]
        fresh = _enrolled(b, 0)  # a token of the plan served is taken
        r = b.post("/api/c/m/report", json={"token": fresh["token"], "subset": 0, "report": 1})
        assert r.status_code == 201
    assert store_b.count("m") == 1


@pytest.fixture()
def device(monkeypatch):
    """A DeviceClient that read plan A, over a fake service now enrolling under plan B."""
    from lopub.serve import client as mod

    calls = []

    def fake(url, body=None, headers=None, timeout=30.0, retries=0):
        calls.append(url)
        if url.endswith("/enrol"):
            return {"token": "t", "subset": 0, "plan_id": PLAN_B.plan_id}
        if url.endswith("/report"):
            return {"stored": 1}
        return Collection("m", PLAN_A).describe()

    monkeypatch.setattr(mod, "_request", fake)
    return mod.DeviceClient("http://x", "m"), calls


def test_device_client_refuses_an_enrolment_under_another_plan(device):
    dc, calls = device
    answers = {"sex": "F", "age": "old", "city": "c3"}
    with pytest.raises(ValueError, match=(rf"enrolment plan_id \('{PLAN_B.plan_id}'\) must be the plan "
                                          rf"this client read \('{PLAN_A.plan_id}'\)")):
        dc.submit(answers)
    assert not any(u.endswith("/report") for u in calls)  # nothing randomized or sent
    same = dc.make_report({"token": "t", "subset": 1, "plan_id": PLAN_A.plan_id}, answers)
    assert same["subset"] == 1 and 0 <= same["report"] < 3
