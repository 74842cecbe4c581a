"""Defects a new user's tour of `lopub serve` found: a collection exported or served with
another plan than its reports were made under, stores that cannot be written, the default
store of `serve-export`, the export's suffix, the device client's answer checks."""
from __future__ import annotations

import os
import re
import secrets
import sqlite3

import numpy as np
import pytest

from lopub import Attribute, CollectionSpec, Domain
from lopub.cli import main
from lopub.collect import MarginalPlan
from lopub.serve.client import wire_reports
from lopub.serve.config import build_config
from lopub.serve.export import export
from lopub.serve.protocol import Collection
from lopub.serve.backends import SQLiteStore, open_store
from lopub.serve.storage import PlanMismatchError
from serve_reply import Reply

DOMAIN = Domain([Attribute("smoker", ["yes", "no"]), Attribute("age", ["<30", "30-60", ">60"]),
                 Attribute("region", ["north", "south", "east", "west"])])
PLAN2 = MarginalPlan(DOMAIN, (("smoker", "age"), ("age", "region")), 2.0)
PLAN4 = MarginalPlan(DOMAIN, (("smoker", "age"), ("age", "region")), 4.0)
SPEC = CollectionSpec.from_domain(DOMAIN, epsilon=4.0)


def _fill(store, c, n=200, seed=1):
    """Store ``n`` simulated devices' reports of ``c`` as the service does (validated)."""
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, s, n) for s in DOMAIN.sizes])
    subsets = rng.integers(0, c.n_subsets, n) if c.kind == "marginal" else np.zeros(n, int)
    wire = wire_reports(c, codes, subsets, rng=rng)
    payloads, errors = c.validate([{"subset": int(s), "report": w} for s, w in zip(subsets, wire)],
                                  subsets)
    assert errors == {}
    store.write([(c.name, [secrets.token_bytes(16) for _ in range(n)], subsets.tolist(), payloads)])


def _options(tmp_path, items, **extra):
    return {"collections": items, "store": extra.get("store"), "secret_file": str(tmp_path / "secret"),
            "relay_key_file": None, "max_body": 65536, "rate": 20.0}


@pytest.fixture
def files(tmp_path):
    PLAN2.to_json(tmp_path / "plan.json")
    PLAN4.to_json(tmp_path / "plan4.json")
    SPEC.to_json(tmp_path / "spec.json")
    return tmp_path


# 1. another plan for an existing collection ------------------------------------------------

def _served(files, item="survey=plan.json"):
    """A store that `lopub serve` opened for ``item`` and stored reports in."""
    name, fname = item.split("=")
    cfg = build_config(_options(files, [f"{name}={files / fname}"], store=str(files / "store.sqlite")))
    for c in cfg.collections.values():
        _fill(cfg.store, c)
    cfg.store.close()
    return str(files / "store.sqlite")


def test_store_records_the_plan_id_with_the_first_report(files):
    store = SQLiteStore(files / "s.sqlite")
    c = Collection("survey", PLAN2)
    store.expect("survey", c.kind, c.params_id)
    assert store.recorded("survey") is None  # serving alone records nothing
    _fill(store, c)
    assert store.recorded("survey") == ("marginal", PLAN2.plan_id)
    b = Collection("census", SPEC)
    store.expect("census", b.kind, b.params_id)
    _fill(store, b)
    assert store.recorded("census") == ("bloom", b.params_id)
    assert b.params_id == Collection("census", CollectionSpec.from_json(files / "spec.json")).params_id


def test_export_refuses_another_plan_naming_collection_ids_and_store(files, capsys):
    where = _served(files)
    store = open_store(where, readonly=True)
    with pytest.raises(PlanMismatchError, match=rf"collection 'survey' in store '{where}' was collected "
                       rf"under plan_id '{PLAN2.plan_id}'.*plan_id '{PLAN4.plan_id}'"):
        export(store, Collection("survey", PLAN4), files / "r4.npz")
    store.close()
    rc = main(["serve-export", f"survey={files / 'plan4.json'}", "--store", where, str(files / "r4.npz")])
    assert rc == 2 and not (files / "r4.npz").exists()
    assert PLAN4.plan_id in capsys.readouterr().err
    assert main(["serve-export", f"survey={files / 'plan.json'}", "--store", where,
                 str(files / "r2.npz")]) == 0


def test_serve_refuses_another_plan_or_spec_for_a_stored_collection(files):
    where = _served(files, "census=spec.json")
    other = CollectionSpec.from_domain(DOMAIN, epsilon=2.0)
    other.to_json(files / "spec2.json")
    with pytest.raises(ValueError, match=r"collection 'census' in store .* spec id .* spec id"):
        build_config(_options(files, [f"census={files / 'spec2.json'}"], store=where))
    build_config(_options(files, [f"census={files / 'spec.json'}"], store=where)).store.close()


def _legacy_store(path, c):
    """A store as lopub wrote it before plan records: no ``collections`` table."""
    store = SQLiteStore(path)
    _fill(store, c)
    store.close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE collections")
    db.commit()
    db.close()


def test_store_from_before_plan_records_is_read_and_recorded_at_serve_start(files):
    where = str(files / "old.sqlite")
    _legacy_store(where, Collection("survey", PLAN2))
    with pytest.warns(UserWarning, match="cannot check"):  # export: readable, says it cannot check
        assert export(open_store(where, readonly=True), Collection("survey", PLAN2),
                      files / "a.npz")["n"] == 200
    with pytest.warns(UserWarning, match=f"recording plan_id '{PLAN2.plan_id}'"):
        build_config(_options(files, [f"survey={files / 'plan.json'}"], store=where)).store.close()
    with pytest.raises(PlanMismatchError):
        export(open_store(where, readonly=True), Collection("survey", PLAN4), files / "b.npz")


# 2. a store lopub serve cannot write -----------------------------------------------------------

def test_serve_refuses_a_store_in_a_missing_folder_naming_store(files):
    where = str(files / "nodir" / "x.sqlite")
    with pytest.raises(ValueError, match=r"--store \(.*nodir/x\.sqlite\) must be a store lopub serve can "
                       r"write.*'.*nodir', does not exist"):
        build_config(_options(files, [f"survey={files / 'plan.json'}"], store=where))
    assert not (files / "nodir").exists()


def test_serve_refuses_a_read_only_store_at_start(files, monkeypatch):
    where = str(files / "ro.sqlite")
    SQLiteStore(where).close()
    connect = sqlite3.connect

    def read_only(path, *args, **kwargs):  # as on a read-only file system (root ignores chmod)
        return connect(f"file:{path}?mode=ro", *args, uri=True, **kwargs)

    monkeypatch.setattr("lopub.serve.backends.sqlite3.connect", read_only)
    with pytest.raises(ValueError, match=r"--store \(.*ro\.sqlite\) must be a store lopub serve can "
                       r"write.*readonly"):
        build_config(_options(files, [f"survey={files / 'plan.json'}"], store=where))


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes read-only files")
def test_serve_refuses_a_store_without_write_permission(files):
    where = files / "ro.sqlite"
    SQLiteStore(where).close()
    os.chmod(where, 0o444)
    with pytest.raises(ValueError, match=r"--store .*ro\.sqlite"):
        build_config(_options(files, [f"survey={files / 'plan.json'}"], store=str(where)))


# 3. the default store of serve-export ------------------------------------------------------------

def test_default_store_is_the_same_rule_at_serve_and_export(files, capsys):
    opts = build_config(_options(files, [f"survey={files / 'plan.json'}"]))  # no --store
    assert opts.store.where == str(files / "plan.reports.sqlite")
    _fill(opts.store, opts.collections["survey"])
    opts.store.close()
    assert main(["serve-export", f"survey={files / 'plan.json'}", str(files / "r.npz")]) == 0
    with pytest.raises(ValueError, match=r"--store is needed to serve several collections "
                       r"\(\['census', 'survey'\]\).*serve-export"):
        build_config(_options(files, [f"census={files / 'spec.json'}", f"survey={files / 'plan.json'}"]))


def test_export_never_creates_a_store_and_names_the_store_searched(files, capsys):
    assert main(["serve-export", f"one={files / 'plan4.json'}", str(files / "one.npz")]) == 2
    err = capsys.readouterr().err
    assert "no store at" in err and "plan4.reports.sqlite" in err and "--store" in err
    assert not (files / "plan4.reports.sqlite").exists() and not (files / "one.npz").exists()
    where = _served(files, "census=spec.json")  # a store holding another collection only
    assert main(["serve-export", f"one={files / 'plan4.json'}", "--store", where, str(files / "one.npz")]) == 2
    err = capsys.readouterr().err
    assert f"no stored reports in store '{where}'" in err and "['census']" in err and "--store" in err
    assert main(["serve-export", f"one={files / 'plan4.json'}", "--store", str(files / "none.sqlite"),
                 str(files / "one.npz")]) == 2
    assert not (files / "none.sqlite").exists()


# 4. the output suffix ----------------------------------------------------------------------------

@pytest.mark.parametrize("item, out, expected", [
    ("census=spec.json", "c.npz", r"\.parquet file or a dataset folder.*not \.npz"),
    ("survey=plan.json", "rz.parquet", r"\.npz file.*not \.parquet"),
    ("survey=plan.json", "folder/", r"\.npz file.*not \(a folder\)"),
])
def test_export_refuses_an_output_of_the_wrong_kind_before_any_work(files, capsys, item, out, expected):
    name, fname = item.split("=")
    rc = main(["serve-export", f"{name}={files / fname}", "--store", str(files / "absent.sqlite"),
               str(files / out)])
    assert rc == 2 and not (files / out).exists()
    assert re.search(rf"OUT \(.*{out.rstrip('/')}/?\) must be a {expected}",
                                   capsys.readouterr().err)


# 5. the device client checks answers before enrolling ----------------------------------------

@pytest.fixture(params=["plan", "spec"])
def device(request, monkeypatch):
    """A DeviceClient over a fake service recording the requests made."""
    from lopub.serve import client as mod

    c = Collection("survey", PLAN2 if request.param == "plan" else SPEC)
    calls = []

    def fake(url, body=None, headers=None, timeout=30.0, retries=0):
        calls.append(url)
        if url.endswith("/enrol"):
            return {"token": "t", "subset": 0 if c.kind == "marginal" else None}
        if url.endswith("/report"):
            return {"stored": 1}
        return c.describe()

    monkeypatch.setattr(mod, "_request", fake)
    dc = mod.DeviceClient("http://x", "survey")
    calls.clear()
    return dc, calls


@pytest.mark.parametrize("answers, message", [
    ({"smoker": "maybe", "age": "<30", "region": "east"},
     r"answer for 'smoker' \('maybe'\) must be one of \['yes', 'no'\]"),
    ({"smoker": "no", "age": "<30", "region": "middle"},  # outside subset 0 (smoker, age)
     r"answer for 'region' \('middle'\) must be one of \['north', 'south', 'east', 'west'\]"),
    ({"smoker": "no", "age": "<30"}, r"answers is missing \['region'\]"),
    ({"smoker": "no", "age": "<30", "region": "east", "regoin": "east"}, r"\['regoin'\].*not questions"),
])
def test_device_client_checks_every_answer_before_enrolling(device, answers, message):
    dc, calls = device
    with pytest.raises(ValueError, match=message):
        dc.submit(answers)
    assert calls == []  # no token spent
    with pytest.raises(TypeError, match=r"answers \(list\) must be a mapping"):
        dc.submit([("smoker", "no")])
    assert dc.submit({"smoker": "no", "age": "<30", "region": "east"}) == {"stored": 1}
    assert [u.rsplit("/", 1)[1] for u in calls] == ["enrol", "report"]


# 6. retries after 429 / 503 ------------------------------------------------------------------

def _http(monkeypatch, statuses, retry_after="0"):
    """urlopen answering the ``statuses`` in turn (then 200); returns the sleeps made."""
    import email.message
    import io
    import urllib.error

    from lopub.serve import client as mod

    queue, sleeps = list(statuses), []

    def urlopen(req, timeout=None):
        if queue:
            headers = email.message.Message()
            if retry_after is not None:
                headers["Retry-After"] = retry_after
            raise urllib.error.HTTPError(req.full_url, queue.pop(0), "busy", headers, io.BytesIO(b"{}"))
        return Reply(b'{"stored": 1}')

    monkeypatch.setattr(mod.urllib.request, "urlopen", urlopen)
    monkeypatch.setattr(mod.time, "sleep", sleeps.append)
    return sleeps


def test_request_retries_429_and_503_honouring_retry_after(monkeypatch):
    from lopub.serve.client import _request, post_batch

    sleeps = _http(monkeypatch, [429, 503], retry_after="2")
    assert _request("http://x/r", {}, retries=3) == {"stored": 1} and sleeps == [2.0, 2.0]
    sleeps = _http(monkeypatch, [503, 503, 503, 503], retry_after=None)  # no header: 1, 2, 4 s
    with pytest.raises(ValueError, match=r"HTTP 503 \(after 4 attempts\)"):
        post_batch("http://x", "s", [], "k" * 16)
    assert sleeps == [1.0, 2.0, 4.0]
    sleeps = _http(monkeypatch, [429], retry_after="3600")  # longer than MAX_WAIT: give up at once
    with pytest.raises(ValueError, match="HTTP 429"):
        _request("http://x/r", {}, retries=3)
    assert sleeps == []
    sleeps = _http(monkeypatch, [422])  # not a transient error: no retry
    with pytest.raises(ValueError, match="HTTP 422"):
        _request("http://x/r", {}, retries=3)
    assert sleeps == []


def test_service_sends_retry_after_with_429(tmp_path):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from lopub.serve.app import ServeConfig, build_app

    cfg = ServeConfig({"m": Collection("m", PLAN2)}, SQLiteStore(tmp_path / "s.sqlite"), b"s" * 64,
                      rate=0.5, burst=1.0)
    with TestClient(build_app(cfg)) as http:
        assert http.post("/api/c/m/enrol", json={}).status_code == 201
        refused = http.post("/api/c/m/enrol", json={})
        assert refused.status_code == 429 and refused.headers["retry-after"] == "2"


def test_store_messages_never_show_a_database_password():
    from lopub.serve.backends import shown

    assert shown("postgresql://u:p%40ss@db:5432/lopub?password=x") == "postgresql://u:***@db:5432/lopub"
    assert shown("postgres://db/lopub") == "postgres://db/lopub" and shown("a/b.sqlite") == "a/b.sqlite"
