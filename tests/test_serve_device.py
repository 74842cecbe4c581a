"""The device protocol: Python reference vs the shared vectors, the JS client under Node,
and statistics of JS-randomized reports against Python's (tolerances from the analytic variance)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lopub.client import device
from lopub.serve.client import wire_reports
from lopub.serve.protocol import Collection

ROOT = Path(__file__).resolve().parents[1]
JS = ROOT / "clients" / "js"
sys.path.insert(0, str(JS / "test"))
import make_vectors  # noqa: E402

VECTORS = json.loads((JS / "test" / "vectors.json").read_text(encoding="utf-8"))
PLAN, SPEC = make_vectors.plan_and_spec()
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node (Node.js >= 19) is not installed; "
                                                     ".ci/run installs it (apt-get install nodejs)")


def test_vectors_describe_the_current_plan_and_spec():
    assert VECTORS["marginal_description"] == Collection("v", PLAN).describe()
    assert VECTORS["bloom_description"] == Collection("b", SPEC).describe()


def test_python_reproduces_the_vectors():
    for v in VECTORS["marginal"]:
        src = device.WordSource(v["words"])
        assert device.marginal_report(PLAN, v["subset"], v["answers"], src) == v["report"]
        assert src.used == len(v["words"])
    for v in VECTORS["bloom"]:
        assert device.bloom_report(SPEC, v["answers"], device.WordSource(v["words"])) == v["report"]
    for v in VECTORS["bernoulli"]:
        assert device.bernoulli(v["p"], device.WordSource(v["words"])) == v["report"]


def test_bernoulli_is_exact_digit_comparison():
    # p = 0.25 = 0.01b: U < p iff U's first two digits are 00
    assert device.bernoulli(0.25, device.WordSource([0x3FFFFFFF])) is True
    assert device.bernoulli(0.25, device.WordSource([0x40000000])) is False
    # p = 1/3 = 0.0101...b (54 significant digits): a tie on 32 digits needs a second word
    src = device.WordSource([0x55555555, 0x00000000])
    assert device.bernoulli(1 / 3, src) is True and src.used == 2
    with pytest.raises(ValueError, match="ran out of random words after 1"):
        device.bernoulli(1 / 3, device.WordSource([0x55555555]))


def test_randint_rejects_the_biased_tail():
    n = 3
    limit = (1 << 32) - (1 << 32) % n
    src = device.WordSource([limit, 7])  # 2^32 - 1 is the one rejected word for n = 3
    assert device.randint(n, src) == 7 % n and src.used == 2


def test_os_entropy_bernoulli_and_grr_rates():
    n = 20000
    src = device.WordSource()
    hits = sum(device.bernoulli(0.3, src) for _ in range(n))
    assert abs(hits - 0.3 * n) < 5 * np.sqrt(n * 0.21)
    prm = device.oracle_params(PLAN, 0)
    kept = sum(device.grr(2, prm["k"], prm["p"], src) == 2 for _ in range(n))
    assert abs(kept - prm["p"] * n) < 5 * np.sqrt(n * prm["p"] * (1 - prm["p"]))


@needs_node
def test_node_test_runner_passes():
    run = subprocess.run([NODE, "--test", str(JS)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "# fail 0" in run.stdout


def _js_reports(tmp_path, desc, job):
    (tmp_path / "d.json").write_text(json.dumps(desc))
    (tmp_path / "j.json").write_text(json.dumps(job))
    run = subprocess.run([NODE, str(JS / "tools" / "simulate.mjs"), str(tmp_path / "d.json"),
                          str(tmp_path / "j.json")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


def _oracle_format(oracle, wire, k):
    if oracle == "oue":
        raw = np.frombuffer(bytes.fromhex("".join(wire)), dtype=np.uint8).reshape(len(wire), -1)
        return np.unpackbits(raw, axis=1, count=k).astype(bool)
    return np.asarray(wire, dtype=np.int64)


@needs_node
@pytest.mark.parametrize("subset", [0, 1, 2])  # GRR (k=6), OUE (k=40), OLH (k=120)
def test_js_estimates_equal_python_within_sampling_error(tmp_path, subset):
    n = 100_000
    rng = np.random.default_rng()
    oracle, k = PLAN.oracles[subset], PLAN.cells(subset)
    truth = rng.dirichlet(np.full(k, 0.5))
    values = rng.choice(k, size=n, p=truth)
    freq = np.bincount(values, minlength=k) / n
    obj = PLAN.oracle(subset)
    js = _js_reports(tmp_path, Collection("v", PLAN).describe(), {"subset": subset, "values": values.tolist()})
    est_js = obj.estimate(_oracle_format(oracle, js, k))
    codes = np.zeros((n, len(PLAN.domain)), dtype=np.int64)
    cols = PLAN.domain.indices(PLAN.subsets[subset])
    for c, v in zip(cols, np.unravel_index(values, [PLAN.domain.sizes[c] for c in cols])):
        codes[:, c] = v
    py = wire_reports(Collection("v", PLAN), codes, np.full(n, subset), rng=rng)
    est_py = obj.estimate(_oracle_format(oracle, py, k))
    sd = np.sqrt(obj.variance(n, freq))  # exact variance given the data (both sides)
    assert np.max(np.abs(est_js - freq) / sd) < 5.5, "JS estimates off the data"
    assert np.max(np.abs(est_js - est_py) / (np.sqrt(2) * sd)) < 5.5, "JS and Python estimates differ"


@needs_node
def test_js_bloom_flip_rates(tmp_path):
    n = 20_000
    answers = {a: PLAN.domain.labels(a)[1] for a in PLAN.domain.attrs}
    js = _js_reports(tmp_path, Collection("b", SPEC).describe(), {"answers": [answers] * n})
    raw = np.frombuffer(bytes.fromhex("".join(js)), dtype=np.uint8).reshape(n, -1)
    ones = np.unpackbits(raw, axis=1, count=SPEC.total_bits).mean(axis=0)
    clean = np.concatenate([SPEC.bloom[j][1] for j in range(len(SPEC.domain))])
    expected = np.where(clean, 1 - SPEC.f / 2, SPEC.f / 2)
    assert np.max(np.abs(ones - expected) / np.sqrt(expected * (1 - expected) / n)) < 5.5
