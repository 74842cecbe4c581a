"""``DeviceClient.make_report`` randomizes with the device protocol of :mod:`lopub.client.device`
(the JS client's algorithm), every random word from the OS: the shared vectors' words give the
vectors' reports, no NumPy generator is made, and the reports follow the oracles' exact
probabilities (tolerances: a few binomial standard deviations)."""
from __future__ import annotations

import importlib
import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from lopub.client import device
from lopub.serve.protocol import Collection

JS = Path(__file__).resolve().parents[1] / "clients" / "js"
sys.path.insert(0, str(JS / "test"))
make_vectors = importlib.import_module("make_vectors")  # clients/js/test/make_vectors.py

VECTORS = json.loads((JS / "test" / "vectors.json").read_text(encoding="utf-8"))
PLAN, SPEC = make_vectors.plan_and_spec()


def _client(monkeypatch, params):
    """A DeviceClient that read ``params`` from a fake service (no network)."""
    from lopub.serve import client as mod

    monkeypatch.setattr(mod, "_request", lambda url, body=None, headers=None, timeout=30.0, retries=0:
                        Collection("v", params).describe())
    return mod.DeviceClient("http://x", "v")


def _os_words(monkeypatch, words):
    """``lopub.client.device``'s ``os.urandom`` hands out ``words`` (little-endian 32-bit) in order."""
    it, used = iter(words), []

    def urandom(n):
        assert n == 4, n  # one word at a time, as WordSource(None) asks
        used.append(next(it))
        return int(used[-1]).to_bytes(4, "little")
    monkeypatch.setattr(device, "os", types.SimpleNamespace(urandom=urandom))
    return used


def _answers(**given):
    out = {a: PLAN.domain.labels(a)[0] for a in PLAN.domain.attrs}
    out.update(given)
    return out


def test_os_words_give_the_shared_vectors_reports(monkeypatch):
    marginal, bloom = _client(monkeypatch, PLAN), _client(monkeypatch, SPEC)
    for v in VECTORS["marginal"]:
        used = _os_words(monkeypatch, v["words"])
        body = marginal.make_report({"token": "t", "subset": v["subset"], "plan_id": PLAN.plan_id}, v["answers"])
        assert body == {"token": "t", "subset": v["subset"], "report": v["report"]}
        assert used == v["words"]  # every word the reference drew, from the OS, and no other
    for v in VECTORS["bloom"]:
        used = _os_words(monkeypatch, v["words"])
        assert bloom.make_report({"token": "t"}, v["answers"]) == {"token": "t", "report": v["report"]}
        assert used == v["words"]


def test_no_numpy_generator_is_made(monkeypatch):
    marginal, bloom = _client(monkeypatch, PLAN), _client(monkeypatch, SPEC)

    def refuse(*args, **kwargs):
        raise AssertionError("a NumPy Generator was made on the device client's path")
    for name in ("default_rng", "Generator", "PCG64", "SeedSequence", "RandomState"):
        monkeypatch.setattr(np.random, name, refuse)
    for i in range(PLAN.n_subsets):
        body = marginal.make_report({"token": "t", "subset": i}, _answers())
        assert body["subset"] == i
    assert len(bytes.fromhex(bloom.make_report({"token": "t"}, _answers())["report"])) == -(-SPEC.total_bits // 8)


def _z(count, n, p):
    """Standard score of a binomial ``count`` of ``n`` at probability ``p``."""
    return (np.asarray(count) - n * np.asarray(p)) / np.sqrt(n * np.asarray(p) * (1 - np.asarray(p)))


N = 3000


def test_grr_reports_follow_the_exact_probabilities(monkeypatch):
    dc = _client(monkeypatch, PLAN)
    prm = device.oracle_params(PLAN, 0)  # GRR over (sex, age): k = 6
    ans = _answers(sex="Male", age="30-60")
    v = device.joint_value(PLAN, 0, ans)
    got = np.bincount([dc.make_report({"token": "t", "subset": 0}, ans)["report"] for _ in range(N)],
                      minlength=prm["k"])
    want = np.full(prm["k"], (1 - prm["p"]) / (prm["k"] - 1))
    want[v] = prm["p"]
    assert got.size == prm["k"] and np.max(np.abs(_z(got, N, want))) < 5


def test_oue_bit_rates_are_p_and_q(monkeypatch):
    dc = _client(monkeypatch, PLAN)
    prm = device.oracle_params(PLAN, 1)  # OUE over city: k = 40
    ans = _answers(city="city-7")
    v = device.joint_value(PLAN, 1, ans)
    hexes = [dc.make_report({"token": "t", "subset": 1}, ans)["report"] for _ in range(N)]
    raw = np.frombuffer(bytes.fromhex("".join(hexes)), dtype=np.uint8).reshape(N, -1)
    ones = np.unpackbits(raw, axis=1, count=prm["k"]).sum(axis=0)
    want = np.where(np.arange(prm["k"]) == v, prm["p"], prm["q"])
    assert np.max(np.abs(_z(ones, N, want))) < 5.5  # 40 bits: 5.5 sd, as tests/test_serve_device.py
    assert not np.unpackbits(raw, axis=1)[:, prm["k"]:].any()  # padding bits zero


def test_olh_reports_hit_the_hashed_value_at_p(monkeypatch):
    dc = _client(monkeypatch, PLAN)
    prm = device.oracle_params(PLAN, 2)  # OLH over (age, city): k = 120
    ans = _answers(age=">60", city="city-31")
    v = device.joint_value(PLAN, 2, ans)
    rows = np.array([dc.make_report({"token": "t", "subset": 2}, ans)["report"] for _ in range(N)], dtype=np.int64)
    a, b, y = rows.T
    assert a.min() >= 1 and a.max() < device.HASH_PRIME and b.min() >= 0 and b.max() < device.HASH_PRIME
    assert y.min() >= 0 and y.max() < prm["g"]
    hit = int(np.sum(y == ((a * v + b) % device.HASH_PRIME) % prm["g"]))
    assert abs(_z(hit, N, prm["p"])) < 5


def test_bloom_bits_flip_at_f_over_2(monkeypatch):
    dc = _client(monkeypatch, SPEC)
    ans = {a: SPEC.domain.labels(a)[1] for a in SPEC.domain.attrs}
    hexes = [dc.make_report({"token": "t"}, ans)["report"] for _ in range(N)]
    raw = np.frombuffer(bytes.fromhex("".join(hexes)), dtype=np.uint8).reshape(N, -1)
    ones = np.unpackbits(raw, axis=1, count=SPEC.total_bits).sum(axis=0)
    clean = np.concatenate([SPEC.bloom[j][1] for j in range(len(SPEC.domain))])
    assert np.max(np.abs(_z(ones, N, np.where(clean, 1 - SPEC.f / 2, SPEC.f / 2)))) < 5.5


@pytest.mark.parametrize("subset", [-1, 5, "1", None, True, 1.0])
def test_an_enrolment_naming_no_subset_of_the_plan_is_refused(monkeypatch, subset):
    dc = _client(monkeypatch, PLAN)
    with pytest.raises(ValueError, match=rf"enrolment subset \({subset!r}\) must be an integer in \[0, 4\]"):
        dc.make_report({"token": "t", "subset": subset}, _answers())


def test_privacy_statement_is_the_clients_own_not_the_services_text(monkeypatch):
    """The statement a device shows is made from the epsilon its randomizers are derived from (the
    plan's, or the spec's f and h), not taken from the service's description, which the collector
    words: a description claiming epsilon 0.1 for a plan at 1.5 does not make the device say 0.1."""
    from lopub.collect import privacy_statement
    from lopub.serve import client as mod

    for params in (PLAN, SPEC):
        desc = Collection("v", params).describe()
        honest = desc["privacy"]
        desc["privacy"] = privacy_statement(0.1)[0]
        monkeypatch.setattr(mod, "_request", lambda url, body=None, headers=None, timeout=30.0, retries=0:
                            desc)
        dc = mod.DeviceClient("http://x", "v")
        assert dc.privacy == honest and f"epsilon = {Collection('v', params).epsilon:g} " in dc.privacy


def test_the_bloom_client_on_a_device_draws_os_words_and_no_numpy_generator(monkeypatch):
    """``lopub.client.Client(spec).report`` (README: "a real client randomizes one record at a time")
    without an ``rng``: every random word from os.urandom through the device protocol (the shared
    vectors' words give their reports), no NumPy generator made (was default_rng(), a PCG64 stream
    seeded once from OS entropy: not a cryptographic source)."""
    from lopub.client import Client

    def refuse(*args, **kwargs):
        raise AssertionError("a NumPy Generator was made on the device client's path")
    for name in ("default_rng", "PCG64", "SeedSequence", "RandomState"):
        monkeypatch.setattr(np.random, name, refuse)
    client = Client(SPEC)
    for v in VECTORS["bloom"]:
        used = _os_words(monkeypatch, v["words"])
        assert client.report(v["answers"]).hex() == v["report"]
        assert used == v["words"]
