"""The universal hash family of local hashing (OLH, BLH and LH-LIP): hashes, seeds, report check.

Carter-Wegman universal hashing: ``h_{a,b}(v) = ((a v + b) mod P) mod g``
with the Mersenne prime ``P = 2^31 - 1`` (:data:`HASH_PRIME`), ``a``
uniform in ``[1, P)`` and ``b`` uniform in ``[0, P)`` drawn per user from
``rng`` (:func:`draw_hash_seeds`).  For ``v != v'`` the collision
probability is ``1/g`` up to ``O(g/P) < 1e-8``, which is the assumption of
the OLH estimator.  All products fit in uint64, so every hash of every user
and value is one vectorized NumPy expression (chunked over users).

The oracles built on it, :class:`~lopub.oracles.oneshot.LocalHashing`
(:class:`~lopub.oracles.oneshot.OLH`, :class:`~lopub.oracles.oneshot.BLH`)
and :class:`~lopub.oracles.lip_encoded.LHLIP`, live with the other one-shot
and LIP mechanisms; :mod:`lopub.oracles.oneshot` re-exports these helpers.
"""
from __future__ import annotations

from typing import Any

import numpy as np

#: Mersenne prime of the universal hash family used by OLH/BLH.
HASH_PRIME = (1 << 31) - 1


def lh_hash(a: np.ndarray, b: np.ndarray, values: np.ndarray, g: int) -> np.ndarray:
    """Universal hashes ``((a v + b) mod P) mod g`` of every pair (user, value).

    ``a``, ``b``: per-user seeds ``(c,)``; ``values``: ``(m,)`` codes < P.
    Returns a ``(c, m)`` int64 array.
    """
    a = np.asarray(a, dtype=np.uint64)[:, None]
    b = np.asarray(b, dtype=np.uint64)[:, None]
    v = np.asarray(values, dtype=np.uint64)[None, :]
    return (((a * v + b) % np.uint64(HASH_PRIME)) % np.uint64(g)).astype(np.int64)


def lh_support_counts(
    a: np.ndarray, b: np.ndarray, y: np.ndarray, k: int, g: int
) -> np.ndarray:
    """Count, for every value ``v < k``, the users with ``h_{a,b}(v) = y``.

    Vectorized over users; walks the values with the recurrence
    ``(a (v + 1) + b) mod P = ((a v + b) mod P + a) mod P`` (one addition and
    one conditional subtraction per value instead of a multiplication and a
    64-bit modulo).
    """
    a = np.asarray(a, dtype=np.int64)
    y = np.asarray(y, dtype=np.int64)
    cur = np.asarray(b, dtype=np.int64).copy()  # (a*0 + b) mod P, since b < P
    tmp = np.empty_like(cur)
    hit = np.empty(cur.shape, dtype=bool)
    counts = np.zeros(k, dtype=np.int64)
    for v in range(k):  # loop over the k values; every step is vectorized over users
        np.remainder(cur, g, out=tmp)
        np.equal(tmp, y, out=hit)
        counts[v] = np.count_nonzero(hit)
        cur += a
        np.greater_equal(cur, HASH_PRIME, out=hit)
        cur -= HASH_PRIME * hit
    return counts


def check_hashed_reports(reports: Any, g: int) -> np.ndarray:
    """Check local-hashing reports: integer rows ``(a, b, y)`` with a seed of the hash
    family (``a`` in ``[1, P)``, ``b`` in ``[0, P)``) and ``y`` in ``[0, g)``."""
    reports = np.asarray(reports)
    if reports.ndim != 2 or reports.shape[1] != 3 or not np.issubdtype(reports.dtype, np.integer):
        raise ValueError(f"reports (shape {reports.shape}, dtype {reports.dtype}) must be "
                         f"integer rows (a, b, y)")
    if reports.size:
        for col, name, lo, hi in ((0, "a", 1, HASH_PRIME), (1, "b", 0, HASH_PRIME),
                                  (2, "y", 0, g)):  # the three columns
            if reports[:, col].min() < lo or reports[:, col].max() >= hi:
                raise ValueError(f"reports column {name} holds values in [{reports[:, col].min()}, "
                                 f"{reports[:, col].max()}]; it must be in [{lo}, {hi - 1}]")
    return reports


def draw_hash_seeds(n: int, *, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per-user seeds ``a`` in ``[1, P)`` and ``b`` in ``[0, P)``."""
    return rng.integers(1, HASH_PRIME, size=n), rng.integers(0, HASH_PRIME, size=n)
