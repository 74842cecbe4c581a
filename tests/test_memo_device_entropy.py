"""A deployed longitudinal client (``lopub.oracles.memo.DeviceClient.report`` without ``rng``, as
``AllomfreeDevice`` runs it) draws its instant round from ``os.urandom`` through the device protocol
of :mod:`lopub.client.device`, never from a NumPy generator; its reports follow the round's exact
probabilities (tolerance: 5 binomial standard deviations)."""
from __future__ import annotations

import types

import numpy as np
import pytest

from lopub.client import device
from lopub.oracles.longitudinal import LGRR, LOSUE, LSUE
from lopub.oracles.memo import DeviceClient, os_instant

SECRET = bytes(range(32))


def _no_numpy_generator(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("a NumPy generator was made on the device path")
    monkeypatch.setattr(np.random, "default_rng", refuse)


@pytest.mark.parametrize("protocol", [LGRR(4.0, 2.0, 5), LOSUE(4.0, 2.0, 5), LSUE(4.0, 2.0, 5)],
                         ids=["L-GRR", "L-OSUE", "L-SUE"])
def test_the_device_instant_round_takes_os_words_and_no_numpy_generator(monkeypatch, protocol):
    client = DeviceClient(protocol, SECRET, attribute="a")
    perm = client.permanent_response(3)  # memoized: keyed hash, no random words
    words = [0x0123_4567, 0x89AB_CDEF, 0xDEAD_BEEF, 0x0BAD_F00D] * 64
    it, used = iter(words), []

    def urandom(n):
        assert n == 4, n
        used.append(next(it))
        return int(used[-1]).to_bytes(4, "little")
    monkeypatch.setattr(device, "os", types.SimpleNamespace(urandom=urandom))
    _no_numpy_generator(monkeypatch)
    got = client.report(3)
    want = os_instant(protocol, perm, device.WordSource(words))  # the same words, given directly
    assert np.array_equal(np.asarray(got), np.asarray(want))
    assert 0 < len(used) <= len(words)


def test_lgrr_device_reports_follow_p2():
    protocol = LGRR(4.0, 2.0, 5)
    client = DeviceClient(protocol, SECRET, attribute="a")
    perm = int(client.permanent_response(1))
    n = 4000
    got = np.array([client.report(1) for _ in range(n)])
    for code in range(protocol.k):
        p = protocol.p2 if code == perm else (1 - protocol.p2) / (protocol.k - 1)
        assert abs(np.mean(got == code) - p) <= 5 * np.sqrt(p * (1 - p) / n)


def test_ue_device_reports_follow_p2_and_q2():
    protocol = LOSUE(4.0, 2.0, 4)
    client = DeviceClient(protocol, SECRET, attribute="b")
    perm = np.asarray(client.permanent_response(2), dtype=bool)
    n = 3000
    got = np.array([client.report(2) for _ in range(n)])
    assert got.shape == (n, protocol.k) and got.dtype == bool
    for j in range(protocol.k):
        p = protocol.p2 if perm[j] else protocol.q2
        assert abs(got[:, j].mean() - p) <= 5 * np.sqrt(p * (1 - p) / n)


def test_a_seeded_report_is_the_simulation_path():
    protocol = LGRR(4.0, 2.0, 5)
    client = DeviceClient(protocol, SECRET, attribute="a")
    perm = np.asarray([client.permanent_response(0)])
    assert client.report(0, rng=7) == protocol.instant(perm, rng=np.random.default_rng(7))[0]
