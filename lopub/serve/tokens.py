"""Single-use enrolment tokens signed by the server's secret (HMAC-SHA256).

A token is ``base64url(body) "." base64url(mac)`` with ``body`` the compact
JSON ``{"c": collection, "p": plan id, "s": subset or null, "n": nonce, "x": expiry}``
(the collection's plan or spec id, a 128-bit random nonce in hex, the expiry in Unix
seconds) and ``mac`` the first 16 bytes of HMAC-SHA256(secret, body).  The token carries
the subset the server assigned (marginal plans), so a device cannot pick the subset it
reports, and the plan it was issued under, so a report randomized for one plan (its
epsilon, its subsets) is refused by a service that now serves another under the same name.  It carries no identity.  Single use is enforced by the store: a
token's nonce is recorded in the same transaction as its report.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
import time
from typing import Any

import numpy as np

MAC_BYTES = 16
MAX_TOKEN_CHARS = 512


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def create_key_file(path: str | os.PathLike, option: str) -> None:
    """Create ``path`` with a random key of 64 hex digits, mode 0600, unless it exists (another
    worker may create it at the same moment); ``ValueError`` naming ``option`` if it cannot be."""
    if os.path.lexists(path):
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another worker created it first
        return
    except OSError as exc:
        raise ValueError(f"{option} ({path}) does not exist and cannot be created: {exc.strerror}") from None
    with os.fdopen(fd, "w") as fh:
        fh.write(secrets.token_hex(32) + "\n")


def load_secret(path: str | os.PathLike, *, create: bool = True) -> bytes:
    """The server secret from ``path`` (created with 32 random bytes, mode 0600, if absent).

    Raises ``ValueError`` naming ``--secret-file`` and the path when it cannot be created or
    read, or holds fewer than 32 characters.
    """
    if create:
        create_key_file(path, "--secret-file")
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--secret-file ({path}) cannot be read: "
                         f"{getattr(exc, 'strerror', None) or exc}") from None
    if len(text) < 32:
        raise ValueError(f"--secret-file ({path}) holds {len(text)} characters; at least 32 expected")
    return text.encode("ascii")


def issue(secret: bytes, collection: str, subset: int | None, ttl: float = 86400.0, *,
          plan: str) -> str:
    """A fresh signed token for ``collection`` served under the plan or spec id ``plan``
    (and the assigned ``subset``)."""
    body = json.dumps({"c": collection, "p": plan, "s": subset, "n": secrets.token_hex(16),
                       "x": int(time.time() + ttl)}, separators=(",", ":")).encode("utf-8")
    return _b64(body) + "." + _b64(hmac.digest(secret, body, hashlib.sha256)[:MAC_BYTES])


class Expired(str):
    """The refusal of an expired token, with its ``nonce``: the service answers "already used" for
    an expired token whose report was stored (a device resending a report whose answer it lost)."""

    nonce: bytes

    def __new__(cls, message: str, nonce: bytes) -> "Expired":
        out = super().__new__(cls, message)
        out.nonce = nonce
        return out


def _check_one(secret: bytes, token: Any, collection: str, plan: str, now: float
               ) -> tuple[bytes, int] | str:
    """``(nonce, subset)`` of a valid token, else the reason it is refused."""
    if type(token) is not str or not 0 < len(token) <= MAX_TOKEN_CHARS or token.count(".") != 1:
        return "token is missing or malformed"
    body_text, mac_text = token.split(".")
    try:
        body, mac = _unb64(body_text), _unb64(mac_text)
    except (binascii.Error, ValueError):
        return "token is not base64url"
    if not hmac.compare_digest(mac, hmac.digest(secret, body, hashlib.sha256)[:MAC_BYTES]):
        return "token signature does not verify (not issued by this service)"
    claims = json.loads(body)
    if claims["c"] != collection:
        return f"token was issued for collection {claims['c']!r}, not {collection!r}"
    if claims.get("p") != plan:
        return (f"token was issued under plan {claims.get('p')!r} of collection {collection!r}, "
                f"which is now served under plan {plan!r}: a report randomized for another plan "
                "(its epsilon, its subsets) cannot be stored; fetch the description and enrol again")
    if claims["x"] < now:
        return Expired("token has expired; enrol again", bytes.fromhex(claims["n"]))
    return bytes.fromhex(claims["n"]), (-1 if claims["s"] is None else int(claims["s"]))


def verify_many(secret: bytes, tokens: list, collection: str, plan: str
                ) -> tuple[list[bytes | None], np.ndarray, dict[int, str]]:
    """Check many tokens of ``collection`` served under plan or spec id ``plan``: nonces
    (``None`` where refused), subsets (``-1`` none) and errors by index."""
    now = time.time()
    checked = [_check_one(secret, t, collection, plan, now) for t in tokens]  # one HMAC per token (C)
    errors = {i: c for i, c in enumerate(checked) if isinstance(c, str)}
    nonces = [None if isinstance(c, str) else c[0] for c in checked]
    subsets = np.array([-2 if isinstance(c, str) else c[1] for c in checked], dtype=np.int64)
    return nonces, subsets, errors
