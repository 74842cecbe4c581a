"""One randomization per report on the serve path (privacy audit, session 38).

A report request can reach the service, be stored, and lose its answer (connection reset,
timeout).  A device that then enrols and randomizes again sends a second, independent
randomization of the same answers (another subset, too): two stored reports of one person,
epsilon spent twice while the page and the description say epsilon.  The device clients send
the same body again instead (same token, same randomized report); the single-use token makes
the service store it once, and a 409 on the resend means the first attempt was stored.
"""
from __future__ import annotations

import email.message
import io
import urllib.error
import urllib.parse

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")
from starlette.testclient import TestClient  # noqa: E402

from lopub import Attribute, CollectionSpec, Domain  # noqa: E402
from lopub.collect import MarginalPlan  # noqa: E402
from lopub.serve import client as mod  # noqa: E402
from lopub.serve.app import ServeConfig, build_app  # noqa: E402
from lopub.serve.protocol import Collection  # noqa: E402
from lopub.serve.backends import SQLiteStore  # noqa: E402
from serve_reply import Reply  # noqa: E402

DOMAIN = Domain([Attribute("smoker", ["yes", "no"]), Attribute("age", ["<30", "30-60", ">60"]),
                 Attribute("region", ["north", "south", "east", "west"])])
PLANS = {"plan": MarginalPlan(DOMAIN, (("smoker", "age"), ("age", "region"), ("region",)), 2.0),
         "spec": CollectionSpec.from_domain(DOMAIN, epsilon=2.0)}
ANSWERS = {"smoker": "no", "age": ">60", "region": "east"}


@pytest.fixture(params=sorted(PLANS))
def served(request, tmp_path, monkeypatch):
    """A DeviceClient over the in-process service; ``net["lose"]``: how many more report
    requests reach the service and then lose their answer (``net["down"]``: never reach it)."""
    store = SQLiteStore(tmp_path / "s.sqlite")
    cfg = ServeConfig({"m": Collection("m", PLANS[request.param])}, store, b"s" * 64, rate=1e6, burst=1e6)
    net = {"lose": 0, "down": 0, "reports": [], "refuse": False, "enrolled": 0}
    with TestClient(build_app(cfg)) as http:
        def urlopen(req, timeout=None):
            path = urllib.parse.urlsplit(req.full_url).path
            is_report = path.endswith("/report")
            if is_report and net["down"]:
                net["down"] -= 1
                raise urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
            if is_report:
                net["reports"].append(req.data)
            net["enrolled"] += path.endswith("/enrol")
            if is_report and net["refuse"]:  # received and refused: the collector has seen it
                raise urllib.error.HTTPError(req.full_url, 422, "refused", email.message.Message(),
                                             io.BytesIO(b'{"error": "refused"}'))
            r = http.request(req.get_method(), path, content=req.data,
                             headers={"content-type": "application/json"})
            if is_report and net["lose"]:
                net["lose"] -= 1
                raise TimeoutError("timed out")  # the service answered; the answer never came back
            if r.status_code >= 400:
                raise urllib.error.HTTPError(req.full_url, r.status_code, "error", email.message.Message(),
                                             io.BytesIO(r.content))
            return Reply(r.content)

        monkeypatch.setattr(mod.urllib.request, "urlopen", urlopen)
        monkeypatch.setattr(mod.time, "sleep", lambda s: None)
        yield mod.DeviceClient("http://x", "m"), store, net


def _submit_as_a_user_would(dc):
    """``submit``, and once more after an error (what a person does when told it failed)."""
    try:
        return dc.submit(ANSWERS)
    except Exception:
        return dc.submit(ANSWERS)


def test_a_lost_answer_is_resent_as_the_same_report_and_stored_once(served):
    dc, store, net = served
    net["lose"] = 1  # stored by the service, answer lost on the way back
    assert _submit_as_a_user_would(dc) == {"stored": 1}
    assert store.count("m") == 1  # was 2: a second enrolment and randomization after the error
    assert len(net["reports"]) == 2 and len(set(net["reports"])) == 1  # one randomization, sent twice
    assert dc.pending is None


def test_a_report_that_never_got_through_is_kept_and_resent_by_the_next_submit(served):
    dc, store, net = served
    net["down"] = dc.retries + 1  # every attempt of the first submit fails
    with pytest.raises(ConnectionError, match=r"/api/c/m/report: no answer after 4 attempts.*same body"):
        dc.submit(ANSWERS)
    assert dc.pending is not None and store.count("m") == 0
    assert dc.submit(ANSWERS) == {"stored": 1}
    assert store.count("m") == 1 and len(net["reports"]) == 1


def test_a_pending_report_the_service_stored_answers_stored_on_the_next_submit(served):
    dc, store, net = served
    net["lose"] = dc.retries + 1  # every attempt reaches the service; no answer comes back
    with pytest.raises(ConnectionError, match="may or may not be stored"):
        dc.submit(ANSWERS)
    assert store.count("m") == 1
    assert dc.submit(ANSWERS) == {"stored": 1}  # the resend's 409: the first attempt was stored
    assert store.count("m") == 1 and len(set(net["reports"])) == 1 and dc.pending is None


def test_an_expired_token_whose_report_was_stored_is_answered_used_not_expired(tmp_path, monkeypatch):
    """A device may resend a report whose answer it lost after its token expired (the body is kept
    until it gets an answer).  Answered "expired" (422: nothing stored), the device would take the
    report for lost and randomize anew: 409, already used, is the truth; an unused expired token is
    still refused as expired."""
    from lopub.serve import tokens

    store = SQLiteStore(tmp_path / "s.sqlite")
    cfg = ServeConfig({"m": Collection("m", PLANS["plan"])}, store, b"s" * 64, rate=1e6, burst=1e6,
                      token_ttl=60.0)
    with TestClient(build_app(cfg)) as http:
        stored, unused = (http.post("/api/c/m/enrol").json() for _ in range(2))
        body = {"token": stored["token"], "subset": stored["subset"], "report": 0}
        assert http.post("/api/c/m/report", json=body).status_code == 201
        later = tokens.time.time() + 3600.0
        monkeypatch.setattr(tokens.time, "time", lambda: later)
        again = http.post("/api/c/m/report", json=body)
        assert again.status_code == 409 and "already used" in again.json()["error"]  # was 422, expired
        fresh = http.post("/api/c/m/report", json={"token": unused["token"], "subset": unused["subset"],
                                                   "report": 0})
        assert fresh.status_code == 422 and "expired" in fresh.json()["error"]
        assert store.count("m") == 1



def test_a_refused_report_is_not_randomized_again(served):
    """A report the service refuses (422: not stored) has still reached the collector.  The next
    submit of the same answers used to enrol and randomize anew: a collector answering 422 to every
    report got one fresh randomization of the same answers per attempt.  Now it is refused on the
    device, before any enrolment; other answers are a new report."""
    dc, store, net = served
    net["refuse"] = True
    with pytest.raises(mod.ServiceError, match="HTTP 422") as first:
        dc.submit(ANSWERS)
    assert first.value.status == 422 and len(dc.refused) == 1 and dc.pending is None
    with pytest.raises(mod.ServiceError, match=r"refused a randomized report of these answers before.*"
                                               r"epsilon 2 a second time") as again:
        dc.submit(dict(ANSWERS))
    assert again.value.status == 422
    assert (net["enrolled"], len(net["reports"])) == (1, 1)  # was 2 and 2: a second randomization sent
    with pytest.raises(mod.ServiceError, match="HTTP 422"):
        dc.submit({**ANSWERS, "smoker": "yes"})
    assert (net["enrolled"], len(net["reports"])) == (2, 2) and store.count("m") == 0
    with pytest.raises(mod.ServiceError, match="refused a randomized report of these answers before"):
        dc.submit(ANSWERS)  # the first refusal is still remembered after another one
    assert (net["enrolled"], len(net["reports"])) == (2, 2)
