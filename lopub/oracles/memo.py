"""Memoization of permanent responses: per-device state and a vectorized fleet.

A longitudinal protocol is only as private as its memoization: if a client
re-randomized the permanent round at every report (say after a restart), an
observer averaging many reports would learn the true value.  Two
mechanisms make the permanent response survive restarts:

* **Keyed derivation** (as RAPPOR does).  A device secret of 16-64 bytes,
  kept in the device's key store, keys BLAKE2b over a canonical JSON of
  (protocol parameters, attribute, value, campaign, round ``"permanent"``).
  The digest, expanded in counter mode, gives the uniforms that drive the
  permanent response.  The same secret always gives the same response; the
  derivation uses only hashlib and integer arithmetic, never a NumPy
  generator stream, so it does not change with the NumPy version.
* **Persisted state**: :meth:`DeviceClient.save` writes the memo table to a
  JSON file atomically, keyed by keyed hashes of the values and sealed with a
  MAC (:mod:`lopub.oracles.memo_state`: no true value in clear, another
  secret or an edit refused); :meth:`DeviceClient.load` restores it.  A loaded
  memo entry always wins over re-derivation.

The permanent response is bound to the protocol parameters: a client
configured with other parameters starts a new memo, and the privacy losses
of the two configurations add up.

:class:`MemoFleet` simulates many users at once (vectorized, rng-driven) for
experiments; it memoizes per (user, value) in sorted arrays.

References
----------
Erlingsson, Pihur, Korolova, "RAPPOR", CCS 2014, Sec. 3 (memoization,
keyed derivation); ALLOMFREE paper, Sec. 4.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import secrets
from fractions import Fraction
from typing import Any, cast

import numpy as np

from lopub._util import check_int, resolve_rng
from lopub.client.randomize import uniform_threshold
from lopub.io import atomic_write_text
from lopub.oracles.base import check_values, ratio_within
from lopub.oracles.longitudinal import LGRR, Longitudinal, LongitudinalUE
from lopub.oracles.memo_state import (STATE_VERSION, check_key, check_mac, check_response, memo_key,
                                     read_state, state_mac)

_PERSON = b"lopub-memo-v1"


def new_secret() -> bytes:
    """A fresh 32-byte device secret from OS entropy."""
    return secrets.token_bytes(32)


def check_secret(secret: Any) -> bytes:
    """Check a device secret: ``bytes`` of length 16 to 64."""
    if not isinstance(secret, (bytes, bytearray)):
        raise TypeError(f"secret ({type(secret).__name__}) must be bytes")
    if not 16 <= len(secret) <= 64:
        raise ValueError(f"secret (length {len(secret)}) must be 16 to 64 bytes long")
    return bytes(secret)


def keyed_uniforms(secret: bytes, message: dict, count: int) -> np.ndarray:
    """``count`` uniforms in [0, 1) from BLAKE2b(key=secret) in counter mode.

    Each uniform uses the top 53 bits of a 64-bit word of the digest stream.
    """
    secret = check_secret(secret)
    body = json.dumps(message, sort_keys=True, separators=(",", ":")).encode()
    words: list[int] = []
    block = 0
    while len(words) < count:  # 8 words per 64-byte block; count is k + 1, not n
        digest = hashlib.blake2b(body + block.to_bytes(8, "big"), key=secret,
                                 digest_size=64, person=_PERSON).digest()
        words.extend(int.from_bytes(digest[i:i + 8], "big") for i in range(0, 64, 8))
        block += 1
    return (np.array(words[:count], dtype=np.uint64) >> np.uint64(11)) * 2.0**-53


@functools.lru_cache(maxsize=4096)
def lgrr_keep_threshold(p1: float, k: int, eps_inf: float) -> float:
    """The keep threshold of the memoized L-GRR round 1 (uniforms ``j / 2^53``): at most
    ``uniform_threshold(p1)``, and low enough that ``t / ((1 - t) c / 2^53) <= e^eps_inf``
    exactly, where ``c`` is the fewest grid points any offset ``floor(u (k - 1))`` gets.

    The offsets are not exactly uniform unless ``k - 1`` is a power of two: offset
    ``m`` takes the ``j`` from ``b_m`` to ``b_{m+1}``, and ``b_m``, the first ``j`` whose
    float product ``(j / 2^53)(k - 1)`` reaches ``m``, is ``ceil(m 2^53 / (k - 1))`` or
    one less (the product's half-ulp is at most one grid step ``(k - 1) / 2^53``), so
    ``c >= floor(2^53 / (k - 1)) - 1``.  With ``uniform_threshold(p1)`` alone the
    least likely other value made ``P(x | x) / P(x | x')`` up to ``~k 2^-53`` relative
    above ``e^eps_inf`` (``1e-14`` at ``k = 1000``).
    """
    grid = 1 << 53
    c = grid // (k - 1) if (k - 1) & (k - 2) == 0 else grid // (k - 1) - 1

    def within(t: float) -> bool:
        return ratio_within(Fraction(t) * grid / ((1 - Fraction(t)) * c), eps_inf)

    t = min(uniform_threshold(p1), uniform_threshold(c / (c + grid * float(np.exp(-eps_inf)))))
    while t > 0.0 and not within(t):
        t -= 2.0 ** -53
    return t


def permanent_from_uniforms(protocol: Longitudinal, value: int, u: np.ndarray) -> Any:
    """Round 1 of ``protocol`` for one value, driven by uniforms ``u`` (k + 1 of them).

    Same distribution as ``protocol.permanent``: GRR keeps ``value`` if
    ``u[0] < t1`` else reports ``(value + 1 + floor(u[1] (k - 1))) mod k``;
    unary sets bit ``v`` if ``u[v] < q1`` (``< t1`` for ``v = value``), with
    ``t1 = uniform_threshold(p1)``: the uniforms are multiples of ``2^-53``, so
    ``u < t1`` keeps with probability ``t1 <= p1`` (``u < p1`` could exceed it),
    and ``u < q1`` sets a bit with ``ceil(q1 2^53) / 2^53 >= q1`` (more noise).
    L-GRR keeps below :func:`lgrr_keep_threshold` instead, which also pays for the
    offsets ``floor(u (k - 1))`` being only nearly uniform.
    """
    k = protocol.k
    if isinstance(protocol, LGRR):
        if u[0] < lgrr_keep_threshold(protocol.p1, k, protocol.eps_inf):
            return int(value)
        return int((value + 1 + int(u[1] * (k - 1))) % k)
    keep = uniform_threshold(protocol.p1)
    bits = u[:k] < protocol.q1
    bits[value] = u[value] < keep
    return bits


def _atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Atomic, fsynced, umask-mode write of the state (:func:`lopub.io.atomic_write_text`)."""
    atomic_write_text(path, text)


def os_instant(protocol: Longitudinal, permanent: Any, src: Any = None) -> Any:
    """The instant round of one memoized response from OS random words (``src``: a
    :class:`lopub.client.device.WordSource`, default the OS): GRR keeps the code with
    ``p2``, else one of the ``k - 1`` others uniformly (as ``instant`` does); unary
    encoding keeps a 1-bit with ``p2`` and sets a 0-bit with ``q2``, bit by bit."""
    from lopub.client.device import WordSource, bernoulli, grr

    src = WordSource() if src is None else src
    if isinstance(protocol, LongitudinalUE):
        bits = np.asarray(permanent, dtype=bool).ravel()
        return np.array([bernoulli(protocol.p2 if b else protocol.q2, src) for b in bits], dtype=bool)
    if isinstance(protocol, LGRR):
        return grr(int(permanent), protocol.k, protocol.p2, src)
    raise TypeError(f"protocol ({type(protocol).__name__}) has no device instant round; "
                    "expected L-GRR or a unary longitudinal protocol")


class DeviceClient:
    """One user's longitudinal client with memoized permanent responses.

    Parameters
    ----------
    protocol : Longitudinal
        The public protocol (e.g. ``LOSUE(eps_inf, eps_1, k)``).
    secret : bytes
        Device secret (16-64 bytes) from the device key store; see
        :func:`new_secret`.  Never sent to the server.
    attribute : str
        Name of the attribute this client reports (part of the derivation).
    campaign : str
        Collection identifier (part of the derivation).

    References
    ----------
    RAPPOR, Sec. 3 (permanent randomized response, memoization);
    ALLOMFREE paper, Sec. 4.
    """

    def __init__(self, protocol: Longitudinal, secret: bytes, *, attribute: str = "",
                 campaign: str = "default") -> None:
        if not isinstance(protocol, Longitudinal):
            raise TypeError(f"protocol ({type(protocol).__name__}) must be a longitudinal protocol")
        for name, value in (("attribute", attribute), ("campaign", campaign)):
            if not isinstance(value, str):
                raise TypeError(f"{name} ({value!r}) must be a string")
        self.protocol = protocol
        self._secret = check_secret(secret)
        self.attribute = attribute
        self.campaign = campaign
        self._memo: dict[str, Any] = {}  # memo_key(secret, message(value)) -> response

    def _message(self, value: int) -> dict:
        return {"protocol": self.protocol.params(), "attribute": self.attribute,
                "campaign": self.campaign, "value": int(value), "round": "permanent"}

    def permanent_response(self, value: int) -> Any:
        """The memoized round-1 response for ``value`` (derived on first use)."""
        value = int(check_values(np.array([value]), self.protocol.k, "value")[0])
        key = memo_key(self._secret, self._message(value))
        if key not in self._memo:
            self._memo[key] = self._derive(value)
        return self._memo[key]

    def _derive(self, value: int) -> Any:
        u = keyed_uniforms(self._secret, self._message(value), self.protocol.k + 1)
        return permanent_from_uniforms(self.protocol, value, u)

    def report(self, value: int, *, rng: np.random.Generator | int | None = None) -> Any:
        """One report: fresh instant response on the memoized permanent one.

        ``rng=None`` (deployment): every random word of the instant round comes
        from :func:`os.urandom`, drawn as the device protocol of
        :mod:`lopub.client.device` draws (exact Bernoulli digits, rejection-sampled
        integers), never from a NumPy generator; with ``rng`` (simulation, tests)
        the protocol's own vectorized ``instant`` round.
        """
        perm = self.permanent_response(value)
        if rng is not None:
            return self.protocol.instant(np.asarray([perm]), rng=resolve_rng(rng))[0]
        return os_instant(self.protocol, perm)

    def state(self, extra: dict | None = None) -> dict:
        """JSON-serializable state, sealed with its MAC (:mod:`lopub.oracles.memo_state`).

        The memo maps keyed hashes of the values to the memoized randomized
        responses: neither the secret nor any true value is in it.  ``extra``
        fields are added before sealing.
        """
        memo = {key: (r.astype(int).tolist() if isinstance(r, np.ndarray) else r)
                for key, r in self._memo.items()}
        state = {"version": STATE_VERSION, "protocol": self.protocol.params(),
                 "attribute": self.attribute, "campaign": self.campaign, "memo": memo,
                 **(extra or {})}
        state["mac"] = state_mac(self._secret, state)
        return state

    def save(self, path: str | os.PathLike) -> None:
        """Write :meth:`state` as JSON, atomically (temp file + ``os.replace``)."""
        _atomic_write_text(path, json.dumps(self.state(), indent=1))

    @classmethod
    def load(cls, path: str | os.PathLike, protocol: Longitudinal, secret: bytes) -> DeviceClient:
        """Restore a client saved by :meth:`save`; the parameters must match."""
        name, state = os.fspath(path), read_state(path)
        secret = check_secret(secret)
        if state.get("version") not in (1, STATE_VERSION):
            raise ValueError(f"memo state file {name!r}: version ({state.get('version')!r:.20}) "
                             f"must be 1 or {STATE_VERSION}")
        if state["version"] == STATE_VERSION:
            check_mac(state, secret, name)
        if state.get("protocol") != protocol.params():
            raise ValueError(f"state protocol ({state.get('protocol')}) does not match "
                             f"{protocol.params()}")
        client = cls(protocol, secret, attribute=cast(str, state.get("attribute")),
                     campaign=cast(str, state.get("campaign")))
        memo = state.get("memo")
        if not isinstance(memo, dict):
            raise ValueError(f"memo state file {name!r}: 'memo' must be a JSON object")
        for key, resp in memo.items():  # over the values this device has reported
            client._restore(key, resp, state["version"], name)
        return client

    def _restore(self, key: str, resp: Any, version: int, name: str) -> None:
        """One memo entry: checked; a version 1 entry (value in clear) must equal the derivation."""
        where = f"memo state file {name!r}, entry {key!r:.40}"
        resp = check_response(self.protocol, resp, where)
        if version == STATE_VERSION:
            self._memo[check_key(key, where)] = resp
            return
        try:
            value = int(check_values(np.array([int(key)]), self.protocol.k, "value")[0])
        except (TypeError, ValueError):
            raise ValueError(f"{where}: a version 1 key must be a value code in "
                             f"[0, {self.protocol.k})") from None
        if not np.array_equal(np.asarray(resp), np.asarray(self._derive(value))):
            raise ValueError(f"memo state file {name!r} was saved under another device secret or "
                             f"was edited (entry {value} does not match); refusing it")
        self._memo[memo_key(self._secret, self._message(value))] = resp


class MemoFleet:
    """Simulated population of ``n`` users with memoized permanent responses.

    Vectorized: the memo is a sorted array of keys ``user * k + value`` and
    the matching permanent responses; each :meth:`report` draws permanent
    responses only for (user, value) pairs not seen before.

    References
    ----------
    ALLOMFREE paper, Sec. 4 (memoization per value).
    """

    def __init__(self, protocol: Longitudinal, n: int) -> None:
        if not isinstance(protocol, Longitudinal):
            raise TypeError(f"protocol ({type(protocol).__name__}) must be a longitudinal protocol")
        self.protocol = protocol
        self.n = check_int("n", n, 1)
        self._keys = np.empty(0, dtype=np.int64)
        self._perm: np.ndarray | None = None

    def permanent(self, values: Any, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Memoized permanent responses of all users for their current ``values``."""
        values = check_values(values, self.protocol.k)
        if values.shape[0] != self.n:
            raise ValueError(f"values (length {values.shape[0]}) must have length n ({self.n})")
        keys = np.arange(self.n, dtype=np.int64) * self.protocol.k + values
        missing = np.setdiff1d(keys, self._keys, assume_unique=False)
        if missing.size:
            fresh = self.protocol.permanent(missing % self.protocol.k, rng=resolve_rng(rng))
            keys_all = np.concatenate([self._keys, missing])
            perm_all = fresh if self._perm is None else np.concatenate([self._perm, fresh])
            order = np.argsort(keys_all, kind="stable")
            self._keys, self._perm = keys_all[order], perm_all[order]
        return cast(np.ndarray, self._perm)[np.searchsorted(self._keys, keys)]

    def report(self, values: Any, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """One round of reports of all users (memoized round 1, fresh round 2)."""
        rng = resolve_rng(rng)
        return self.protocol.instant(self.permanent(values, rng=rng), rng=rng)
