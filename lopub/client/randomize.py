"""Bit flipping of Bloom filters (LoPub Eq. 5), exact and fast.

Each bit is kept with probability 1 - f, else replaced by a fair coin: it is
reported as 1 with probability 1 - f/2 when the true bit is 1 and f/2 when it
is 0, independently across bits and users.  Equivalently the report is
``bit XOR flip`` with ``flip ~ Bernoulli(f/2)`` i.i.d., which is how it is
computed here: on packed 64-bit words, 64 bits at a time.

Exactness: a Bernoulli(p) bit is the event U < p for a uniform U whose binary
digits are fair random bits; comparing digit by digit with the exact binary
expansion of the float ``p`` gives probability exactly ``p`` (no rounding of
``p`` to a grid), consuming on average two random bits per output bit.

References
----------
Ren et al., IEEE TIFS 2018, Eq. 5; privacy Eq. 8.
"""
from __future__ import annotations

from typing import Any

import numpy as np

import math
import numbers

from lopub._util import check_open_unit, resolve_rng

_FULL_PASSES = 12  # digits processed on every word before compacting undecided words
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


def _binary_digits(p: float) -> list[int]:
    """Exact binary digits of float p in (0, 1), most significant first (p = sum d_i 2^-(i+1))."""
    num, den = float(p).as_integer_ratio()
    k = den.bit_length() - 1  # den == 2**k
    return [(num >> (k - 1 - i)) & 1 for i in range(k)]


#: ``Generator.random`` draws ``j 2^-53`` for a uniform integer ``j < 2^53`` (every bit generator).
UNIFORM_GRID = 2.0 ** 53


def uniform_threshold(p: float) -> float:
    """The largest multiple of ``2^-53`` that is ``<= p``, for ``p`` in ``[0, 1]``.

    ``rng.random(n) < uniform_threshold(p)`` is then true with probability exactly
    the threshold, never more than ``p``: ``rng.random() < p`` itself realizes
    ``ceil(p 2^53) / 2^53``, up to ``2^-53`` above a ``p < 1/2`` that is not on the
    grid (a kept value more likely than stated).  ``p 2^53`` and its floor are exact
    in float64, and the result is ``p`` itself for ``p >= 1/2``.
    """
    return math.floor(float(p) * UNIFORM_GRID) / UNIFORM_GRID


def check_probability(name: str, value: float) -> float:
    """Check a probability: a real number in the closed interval [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} ({value!r}) must be a real number")
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} ({value}) must be a probability in [0, 1]")
    return value


def bernoulli_words(p: float, size: int, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
    """``size`` uint64 words whose bits are i.i.d. Bernoulli(p), exactly.

    Digit-by-digit comparison of a random uniform with p (most significant
    digit first); after a few digits almost every bit is decided, so the
    remaining digits are drawn only for the few words still undecided.
    ``p = 0`` gives all-zero words and ``p = 1`` all-one words (no draw).
    """
    p = check_probability("p", p)
    gen = resolve_rng(rng)
    if p == 0.0 or p == 1.0:
        return np.full(size, _ONES if p == 1.0 else 0, dtype=np.uint64)
    result = np.zeros(size, dtype=np.uint64)
    undecided = np.full(size, _ONES, dtype=np.uint64)
    return _compare(result, undecided, _binary_digits(p), None, None, gen)


def _compare(result: np.ndarray, undecided: np.ndarray, digits: list, other: list | None,
             select: np.ndarray | None, gen: np.random.Generator) -> np.ndarray:
    """Decide the ``undecided`` bits of ``result`` by comparing uniforms with p digit by digit.

    Bit ``j`` compares with ``digits`` (the binary expansion of its p), or,
    where ``select`` (packed words) has a 0 bit, with ``other``.  A tied bit
    stays tied while its uniform's digit equals p's; a digit below p's
    decides 1, above decides 0.
    """
    size = result.size
    other = digits if other is None else other
    unselect = None if select is None else ~select
    where = None  # indices of the words still processed (None = all)
    for i in range(max(len(digits), len(other))):
        n_live = size if where is None else where.size
        if n_live == 0:
            break
        # 64 random bits per word from any bit generator (``bit_generator.random_raw``
        # gives only 32 bits per word for MT19937: the top half would be constant)
        u = gen.integers(0, 1 << 64, size=n_live, dtype=np.uint64)
        und = undecided if where is None else undecided[where]
        d1, d0 = (digits[i] if i < len(digits) else 0), (other[i] if i < len(other) else 0)
        t: Any
        if d1 == d0:  # the digit of p, as a word of 64 equal bits
            t = _ONES if d1 else np.uint64(0)
        else:
            t = select if d1 else unselect
            t = t if where is None else t[where]
        if d1 or d0:  # u-digit 0 < 1: decided true
            hit = np.invert(u)
            hit &= und
            hit &= t
            if where is None:
                result |= hit
            else:
                result[where] |= hit
        u ^= t
        np.invert(u, out=u)
        und &= u  # still tied where the digits are equal
        if where is None:
            undecided = und
        else:
            undecided[where] = und
        if i + 1 == _FULL_PASSES or (where is not None and i % 8 == 0):
            where = np.flatnonzero(undecided) if where is None else where[und != 0]
    return result  # still-tied bits mean U == p on every digit, i.e. U >= p: 0


def flip_packed(packed: np.ndarray, f: float, total_bits: int, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
    """Randomize packed bit rows (uint8, (n, B), ``numpy.packbits`` order) per Eq. 5.

    Padding bits past ``total_bits`` stay zero.
    """
    f = check_open_unit("f", f)
    n, width = packed.shape
    words = (width + 7) // 8
    mask = bernoulli_words(f / 2.0, n * words, rng=rng).view(np.uint8).reshape(n, 8 * words)[:, :width]
    out = packed ^ mask
    rem = total_bits % 8
    if rem:
        out[:, -1] &= np.uint8((0xFF << (8 - rem)) & 0xFF)
    return out


def flip_bits(bits: np.ndarray, f: float, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
    """Randomize a bool bit array (..., m) per Eq. 5; returns bool of the same shape.

    ``rng=None`` draws OS entropy (what a deployed client must do).
    """
    bits = np.asarray(bits, dtype=bool)
    flat = bits.reshape(-1, bits.shape[-1]) if bits.ndim else bits.reshape(1, 1)
    m = flat.shape[1]
    noisy = flip_packed(np.packbits(flat, axis=1), f, m, rng=rng)
    return np.unpackbits(noisy, axis=1, count=m).astype(bool).reshape(bits.shape)


def bernoulli_fill(p: float, out: np.ndarray, *, rng: np.random.Generator) -> np.ndarray:
    """Fill the C-contiguous bool array ``out`` with i.i.d. Bernoulli(p) bits, exactly
    (:func:`bernoulli_words`, unpacked); returns ``out``."""
    if out.dtype != bool or not out.flags.c_contiguous:
        raise ValueError("out must be a C-contiguous bool array")
    size = out.size
    if size:
        words = bernoulli_words(p, -(-size // 64), rng=rng)
        out.reshape(-1)[:] = np.unpackbits(words.view(np.uint8), count=size,
                                           bitorder="little").view(bool)
    return out


def bernoulli_select(select: np.ndarray, p_true: float, p_false: float,
                     rng: np.random.Generator, out: np.ndarray) -> np.ndarray:
    """Independent bits: ``out[i]`` is 1 w.p. ``p_true`` where ``select[i]``, else ``p_false``.

    Exact, as :func:`bernoulli_words`: one stream of packed uniforms, each
    bit compared digit by digit with the expansion of its own p (chosen by
    the packed ``select``), then unpacked into ``out``.  Work arrays are a
    few bits per cell, so callers pass blocks of about a million cells.

    ``out`` must be a C-contiguous bool array of the shape of ``select``;
    it is filled and returned.
    """
    select = np.ascontiguousarray(select, dtype=bool)
    if out.shape != select.shape or out.dtype != bool or not out.flags.c_contiguous:
        raise ValueError("out must be a C-contiguous bool array shaped like select")
    p_true, p_false = check_probability("p_true", p_true), check_probability("p_false", p_false)
    size = select.size
    if size == 0:
        return out
    n_words = -(-size // 64)
    packed = np.zeros(8 * n_words, dtype=np.uint8)
    packed[:-(-size // 8)] = np.packbits(select.reshape(-1), bitorder="little")
    sel = packed.view(np.uint64)
    result = np.zeros(n_words, dtype=np.uint64)
    undecided = np.full(n_words, _ONES, dtype=np.uint64)
    for p, mask in ((p_true, sel), (p_false, ~sel)):  # p = 0 or 1: decided without a draw
        if p in (0.0, 1.0):
            undecided &= ~mask
            if p == 1.0:
                result |= mask
    digits = [_binary_digits(p) if 0.0 < p < 1.0 else [] for p in (p_true, p_false)]
    _compare(result, undecided, digits[0], digits[1], sel, resolve_rng(rng))
    bits = np.unpackbits(result.view(np.uint8), count=size, bitorder="little")
    out.reshape(-1)[:] = bits.view(bool)
    return out
