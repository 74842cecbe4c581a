"""The device protocol, step by step from a stream of random 32-bit words.

This is the reference that the JavaScript client (``clients/js/lopub.js``)
implements bit for bit: given the same public plan or spec, the same answer
and the same random words, both produce the same report.  Deployed, the
words come from the OS (:func:`os.urandom` here, ``crypto.getRandomValues``
in a browser); the shared test vectors fix them.

Draws (all from one :class:`WordSource`):

* ``randint(n)`` (``1 <= n <= 2^32``): one word ``w``, rejected while
  ``w >= 2^32 - (2^32 mod n)``, then ``w mod n`` (exactly uniform).
* ``bernoulli(p)``: exact, as :mod:`lopub.client.randomize`: the bits of
  fresh words (most significant first) are the binary digits of a uniform
  ``U``, compared with the exact binary expansion of the float ``p``; the
  first differing digit decides ``U < p``.  Each call starts a fresh word.

Reports (the wire format of :mod:`lopub.serve.protocol`):

* GRR: ``keep = bernoulli(p)``; the value if kept, else
  ``(v + 1 + randint(k - 1)) mod k``.
* OUE: for ``j = 0 .. k-1`` one ``bernoulli`` at ``p`` (``j = v``) or ``q``;
  sent as the hex of ``numpy.packbits`` of the ``k`` bits.
* OLH: ``a = 1 + randint(P - 1)``, ``b = randint(P)``,
  ``h = ((a v + b) mod P) mod g``, then GRR over ``g`` values: ``[a, b, y]``.
* Bloom (LoPub): the record's concatenated Bloom filters (keyed BLAKE2b
  positions of :func:`lopub.spec.bloom_positions`), every bit XOR
  ``bernoulli(f / 2)`` in order; hex of the packed bits.
* Subset of a marginal plan: ``randint(g)``, or with ``plan.key`` the keyed
  BLAKE2b of the user id (:func:`lopub.collect.assign_user`).

The probabilities ``p``, ``q``, ``g`` are the oracle objects' own
(:meth:`MarginalPlan.oracle`), published by the service, so neither side
recomputes them.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Sequence

import numpy as np

HASH_PRIME = (1 << 31) - 1


class WordSource:
    """Random 32-bit words: from a list (test vectors) or the OS (``words=None``)."""

    def __init__(self, words: Iterable[int] | None = None) -> None:
        self._it = iter(words) if words is not None else None
        self.used = 0

    def word(self) -> int:
        """The next word in ``[0, 2^32)``."""
        self.used += 1
        if self._it is None:
            return int.from_bytes(os.urandom(4), "little")
        try:
            return int(next(self._it)) & 0xFFFFFFFF
        except StopIteration:
            raise ValueError(f"words: the test vector ran out of random words after {self.used - 1}") from None


def binary_digits(p: float) -> list[int]:
    """Exact binary digits of a float ``p`` in ``(0, 1)``, most significant first."""
    out = []
    x = float(p)
    while x > 0.0:  # doubling and subtracting 1 are exact in binary floating point
        x *= 2.0
        d = 1 if x >= 1.0 else 0
        x -= d
        out.append(d)
    return out


def bernoulli(p: float, src: WordSource) -> bool:
    """``True`` with probability exactly ``p`` (digit-by-digit comparison)."""
    if p <= 0.0:
        return False
    if p >= 1.0:
        return True
    digits = binary_digits(p)
    i = 0
    while i < len(digits):
        w = src.word()
        for bit in range(31, -1, -1):
            if i >= len(digits):
                return False  # U equals p on every digit: U >= p
            u = (w >> bit) & 1
            if u != digits[i]:
                return u < digits[i]
            i += 1
    return False


def randint(n: int, src: WordSource) -> int:
    """Uniform integer in ``[0, n)`` for ``1 <= n <= 2^32`` (rejection sampling)."""
    limit = (1 << 32) - ((1 << 32) % n)
    while True:
        w = src.word()
        if w < limit:
            return w % n


def grr(v: int, k: int, p: float, src: WordSource) -> int:
    """Generalized randomized response of code ``v`` over ``k`` values."""
    if bernoulli(p, src):
        return v
    return (v + 1 + randint(k - 1, src)) % k


def unary_bits(v: int, k: int, p: float, q: float, src: WordSource) -> np.ndarray:
    """OUE bits: own bit at ``p``, every other at ``q``, drawn in bit order."""
    return np.array([bernoulli(p if j == v else q, src) for j in range(k)], dtype=bool)


def olh(v: int, g: int, p: float, src: WordSource) -> list[int]:
    """OLH report ``[a, b, y]``."""
    a = 1 + randint(HASH_PRIME - 1, src)
    b = randint(HASH_PRIME, src)
    h = ((a * v + b) % HASH_PRIME) % g
    return [a, b, grr(h, g, p, src)]


def oracle_params(plan: Any, i: int) -> dict[str, Any]:
    """The public parameters of subset ``i``'s oracle: name, k, p, q (and g for OLH)."""
    o = plan.oracle(i)
    out = {"oracle": plan.oracles[i], "k": int(o.k), "p": float(o.p), "q": float(o.q)}
    if plan.oracles[i] == "olh":
        out["g"] = int(o.g)
    return out


def joint_value(plan: Any, i: int, answers: dict[str, str]) -> int:
    """Flat index of the answers (labels) in subset ``i``'s joint domain."""
    codes = [plan.domain.labels(a).index(str(answers[a])) for a in plan.subsets[i]]
    sizes = [len(plan.domain.labels(a)) for a in plan.subsets[i]]
    return int(np.ravel_multi_index(tuple(codes), sizes))


def marginal_report(plan: Any, i: int, answers: dict[str, str], src: WordSource) -> Any:
    """The wire report of subset ``i`` for a person's answers (labels by attribute)."""
    prm = oracle_params(plan, i)
    v = joint_value(plan, i, answers)
    if prm["oracle"] == "grr":
        return grr(v, prm["k"], prm["p"], src)
    if prm["oracle"] == "oue":
        return np.packbits(unary_bits(v, prm["k"], prm["p"], prm["q"], src)).tobytes().hex()
    return olh(v, prm["g"], prm["p"], src)


def bloom_report(spec: Any, answers: dict[str, str], src: WordSource) -> str:
    """Hex of the packed randomized Bloom report of a record (LoPub Eq. 5)."""
    bits = np.zeros(spec.total_bits, dtype=bool)
    for j, (attr, lo) in enumerate(zip(spec.domain.attrs, spec.offsets)):  # d attributes
        code = spec.domain.labels(attr).index(str(answers[attr]))
        bits[lo + np.flatnonzero(spec.bloom[j][code])] = True
    flips = np.array([bernoulli(spec.f / 2.0, src) for _ in range(spec.total_bits)], dtype=bool)
    return np.packbits(bits ^ flips).tobytes().hex()


def random_words(n: int) -> list[int]:
    """``n`` words from the OS (to build test vectors)."""
    return np.frombuffer(os.urandom(4 * n), dtype="<u4").tolist()


def vector(make: Callable[[WordSource], Any], words: Sequence[int]) -> dict[str, Any]:
    """One test vector: the report made from ``words`` and how many words it used."""
    src = WordSource(words)
    out = make(src)
    return {"words": list(words[:src.used]), "report": out}
