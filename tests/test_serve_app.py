"""The ingestion service through Starlette's test client: tokens, validation, replay, limits."""
from __future__ import annotations

import re

import numpy as np
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
PLAN = MarginalPlan(DOMAIN, (("sex", "age"), ("city",), ("age", "city")), 1.0,
                    oracles=("grr", "oue", "olh"))
SPEC = CollectionSpec.from_domain(DOMAIN, epsilon=2.0)
RELAY = "relay-key-0123456789"


@pytest.fixture()
def app(tmp_path):
    store = SQLiteStore(tmp_path / "r.sqlite")
    cfg = ServeConfig({"m": Collection("m", PLAN), "b": Collection("b", SPEC)}, store,
                      b"s" * 64, relay_key=RELAY, rate=1000.0, burst=1000.0)
    with TestClient(build_app(cfg)) as client:
        yield client, store


def _valid(subset: int, token: str) -> dict:
    report = {"grr": 3, "oue": "a5" + "0", "olh": [5, 7, 1]}[PLAN.oracles[subset]]
    if PLAN.oracles[subset] == "oue":
        report = "a5f0"  # 12 bits packed into 2 bytes, last 4 bits zero
    return {"token": token, "subset": subset, "report": report}


def _enrol(client, name="m"):
    r = client.post(f"/api/c/{name}/enrol")
    assert r.status_code == 201
    return r.json()


def test_describe_is_public_and_complete(app):
    client, _ = app
    d = client.get("/api/c/m").json()
    assert d["kind"] == "marginal" and d["plan"]["plan_id"] == PLAN.plan_id
    assert [o["oracle"] for o in d["subset_oracles"]] == ["grr", "oue", "olh"]
    assert d["questions"]["age"] == ["young", "mid", "old"] and "epsilon" in d["privacy"]
    assert client.get("/api/c/b").json()["spec"]["f"] == SPEC.f
    assert client.get("/api/c/nope").status_code == 404


@pytest.mark.parametrize("subset", [0, 1, 2])
def test_one_report_per_token_and_replay_refused(app, subset):
    client, store = app
    for _ in range(40):  # enrol until the service assigns this subset
        e = _enrol(client)
        if e["subset"] == subset:
            break
    r = client.post("/api/c/m/report", json=_valid(subset, e["token"]))
    assert r.status_code == 201, r.text
    again = client.post("/api/c/m/report", json=_valid(subset, e["token"]))
    assert again.status_code == 409 and "already used" in again.json()["error"]
    assert store.count("m") == 1
    assert client.get("/api/c/m/count").json()["reports"] == 1


@pytest.mark.parametrize("bad, message", [
    ({"token": None, "report": 2}, "token is missing"),
    ({"token": "abc.def", "report": 2}, "signature does not verify"),
    ({"report": 99}, "report \\(99\\) must be an integer code in \\[0, 5\\]"),
    ({"report": True}, "must be an integer code"),
    ({"report": "3"}, "must be an integer code"),
    ({"subset": 1, "report": 2}, "subset \\(1\\) must be the subset assigned by the token \\(0\\)"),
])
def test_malformed_reports_refused_and_nothing_stored(app, bad, message):
    client, store = app
    while (e := _enrol(client))["subset"] != 0:
        pass
    body = {k: v for k, v in {"token": e["token"], "subset": 0, **bad}.items() if v is not None}
    r = client.post("/api/c/m/report", json=body)
    assert r.status_code in (400, 422), r.text
    assert re.search(message, r.json()["error"])
    assert store.count("m") == 0


def test_oue_padding_and_olh_ranges_checked(app):
    client, store = app
    c = Collection("m", PLAN)
    payloads, errors = c.validate(
        [{"subset": 1, "report": "a5ff"}, {"subset": 1, "report": "a5f"}, {"subset": 2, "report": [0, 1, 1]},
         {"subset": 2, "report": [1, 1, PLAN.oracle(2).g]}, {"subset": 2, "report": [1, 2, 0]},
         {"subset": 1, "report": "a5f0"}], np.array([1, 1, 2, 2, 2, 1]))
    assert sorted(errors) == [0, 1, 2, 3]
    assert "hex of 2 bytes of 12 packed bits" in errors[0]
    assert payloads[4] == np.array([1, 2, 0], "<i8").tobytes() and payloads[5] == bytes([0xA5, 0xF0])


def test_token_of_another_collection_refused(app):
    client, _ = app
    e = _enrol(client, "b")
    r = client.post("/api/c/m/report", json={"token": e["token"], "subset": 0, "report": 1})
    assert r.status_code == 422 and "issued for collection 'b'" in r.json()["error"]


def test_bloom_report_checked(app):
    client, store = app
    e = _enrol(client, "b")
    assert e["subset"] is None
    width = SPEC.packed_bytes
    bad = client.post("/api/c/b/report", json={"token": e["token"], "report": "00" * (width - 1)})
    assert bad.status_code == 422 and f"hex of {width} bytes" in bad.json()["error"]
    cap = Collection("b", SPEC).max_ones(0)
    assert SPEC.total_bits // 2 < cap < SPEC.total_bits
    heavy = client.post("/api/c/b/report", json={"token": e["token"], "report": "ff" * width})
    assert heavy.status_code == 422 and f"with at most {cap} ones" in heavy.json()["error"]
    ok = client.post("/api/c/b/report", json={"token": e["token"], "report": "0f" * width})
    assert ok.status_code == 201 and store.count("b") == 1


def test_too_many_ones_refused_honest_reports_pass():
    """An all-ones unary report would support every value at once (a manipulation); honest
    reports exceed the cap with probability below 1e-9."""
    plan = MarginalPlan(DOMAIN, (("city", "age"),), 2.0, oracles=("oue",))
    c = Collection("m", plan)
    cap = c.max_ones(0)
    assert 2 < cap < 36
    honest = plan.oracle(0).perturb(np.random.default_rng(0).integers(0, 36, 20000), rng=1)
    items = [{"subset": 0, "report": np.packbits(r).tobytes().hex()} for r in honest]
    items.append({"subset": 0, "report": np.packbits(np.ones(36, bool)).tobytes().hex()})
    payloads, errors = c.validate(items, np.zeros(len(items), dtype=np.int64))
    assert list(errors) == [20000] and f"at most {cap} ones" in errors[20000]


def test_body_limit_and_rate_limit(tmp_path):
    store = SQLiteStore(tmp_path / "r.sqlite")
    cfg = ServeConfig({"m": Collection("m", PLAN)}, store, b"s" * 64, max_body=200, rate=1.0, burst=3.0)
    with TestClient(build_app(cfg)) as client:
        big = client.post("/api/c/m/report", content=b"{" + b" " * 300 + b"}",
                          headers={"content-type": "application/json"})
        assert big.status_code == 413 and "at most 200 bytes" in big.json()["error"]
        codes = [client.post("/api/c/m/enrol").status_code for _ in range(6)]
        assert codes[:2] == [201, 201] and 429 in codes
    assert store.count("m") == 0


def test_batch_needs_relay_key_and_reports_per_item(app):
    client, store = app
    assert client.post("/api/c/m/batch", json={"reports": []}).status_code == 401
    enrols = [_enrol(client) for _ in range(30)]
    items = [_valid(e["subset"], e["token"]) for e in enrols]
    items[3] = {**items[3], "report": None}
    items.append(dict(items[5]))  # the same token twice in one batch
    r = client.post("/api/c/m/batch", json={"reports": items}, headers={"authorization": f"Bearer {RELAY}"})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["stored"] == 29 and [x["index"] for x in out["refused"]] == [3, 30]
    assert "already used" in out["refused"][1]["error"]
    assert store.count("m") == 29
    again = client.post("/api/c/m/batch", json={"reports": items[:10]},
                        headers={"authorization": f"Bearer {RELAY}"}).json()
    assert again["stored"] == 0 and len(again["refused"]) == 10 and store.count("m") == 29


def test_no_true_value_or_token_in_store(app, tmp_path):
    client, store = app
    e = _enrol(client)
    client.post("/api/c/m/report", json=_valid(e["subset"], e["token"]))
    raw = (tmp_path / "r.sqlite").read_bytes() + (tmp_path / "r.sqlite-wal").read_bytes()
    assert e["token"].encode() not in raw and e["token"].split(".")[1].encode() not in raw


def test_page_and_scripts_served(app):
    client, _ = app
    from pathlib import Path

    js = Path(__file__).resolve().parents[1] / "clients" / "js"
    for name in ("lopub.js", "blake2b.js"):
        r = client.get(f"/js/{name}")
        assert r.status_code == 200 and r.content == (js / name).read_bytes()
    assert client.get("/js/secret.txt").status_code == 404
    page = client.get("/c/m")
    assert page.status_code == 200 and 'data-collection="m"' in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert client.get("/c/nope").status_code == 404


def test_bad_hex_in_a_batch_refuses_only_those_reports():
    c = Collection("m", PLAN)
    items = [{"subset": 1, "report": r} for r in ("a5 0", "zzzz", "a5f0", "A5F0", "a5f\u0660")]
    payloads, errors = c.validate(items, np.ones(5, dtype=np.int64))
    assert sorted(errors) == [0, 1, 4]
    assert payloads[2] == payloads[3] == bytes([0xA5, 0xF0])


def test_keyed_assignment_and_expired_tokens(tmp_path):
    from lopub.collect import assign_user
    from lopub.serve import tokens

    keyed = MarginalPlan(DOMAIN, PLAN.subsets, 1.0, oracles=PLAN.oracles, key="assign-key")
    cfg = ServeConfig({"k": Collection("k", keyed), "m": Collection("m", PLAN)},
                      SQLiteStore(tmp_path / "r.sqlite"), b"s" * 64, rate=1000.0, burst=1000.0)
    with TestClient(build_app(cfg)) as client:
        for uid in ("alice", "bob", "carol", "dave"):
            e = client.post("/api/c/k/enrol", json={"user_id": uid}).json()
            assert e["subset"] == assign_user(keyed, uid)
        r = client.post("/api/c/m/enrol", json={"user_id": "alice"})
        assert r.status_code == 422 and "the plan has no key" in r.json()["error"]
        old = tokens.issue(b"s" * 64, "m", 0, ttl=-1.0, plan=PLAN.plan_id)
        r = client.post("/api/c/m/report", json={"token": old, "subset": 0, "report": 1})
        assert r.status_code == 422 and "token has expired" in r.json()["error"]


def test_store_failure_is_503_and_the_token_stays_unused(tmp_path):
    class Failing(SQLiteStore):
        fail = True

        def write(self, submissions):
            if self.fail:
                raise OSError("disk full")
            return super().write(submissions)

    store = Failing(tmp_path / "r.sqlite")
    cfg = ServeConfig({"m": Collection("m", PLAN)}, store, b"s" * 64, rate=1000.0, burst=1000.0)
    with TestClient(build_app(cfg)) as client:
        e = _enrol(client)
        r = client.post("/api/c/m/report", json=_valid(e["subset"], e["token"]))
        assert r.status_code == 503 and "nothing was stored, retry" in r.json()["error"]
        store.fail = False
        assert client.post("/api/c/m/report", json=_valid(e["subset"], e["token"])).status_code == 201
    assert store.count("m") == 1
