"""Exact Bernoulli sampling of the unary encoders: thresholds, ties, chunking, memory."""
import tracemalloc
from fractions import Fraction

import numpy as np
import pytest

from lopub.oracles.base import UE_CHUNK_CELLS, bernoulli_select, bernoulli_threshold
from lopub.oracles.longitudinal import LOSUE, LOUE, LSUE
from lopub.oracles.oneshot import OUE, perturb_unary


@pytest.mark.parametrize("p", [0.0, 1e-300, 2.0**-60, 1 / 3, 0.5, 0.7310585786300049,
                               1 - 2.0**-53, 1.0])
def test_threshold_is_floor_of_p_times_2_64(p):
    hi, lo = bernoulli_threshold(p)
    assert 0 <= hi <= 255 and 0 <= lo <= 2**56
    # P(bit) = hi / 256 + lo / 2^64 must be floor(p 2^64) / 2^64 (p = 1: exactly 1)
    prob = Fraction(hi, 256) + Fraction(lo, 2**64)
    expected = Fraction(int(Fraction(p) * 2**64), 2**64) if p < 1 else Fraction(1)
    assert prob == expected
    assert abs(prob - Fraction(p)) < Fraction(1, 2**64)


def test_threshold_rejects_bad_probability():
    with pytest.raises(ValueError, match=r"probability \(1.5\)"):
        bernoulli_threshold(1.5)


def _sd_ok(bits, p, cells):
    return abs(bits.mean() - p) < 5 * np.sqrt(p * (1 - p) / cells) + 1e-12


@pytest.mark.parametrize(("p1", "p0"), [(0.75, 0.25), (0.1, 0.9), (0.5, 1 / 256 + 1e-9),
                                        (1.0, 0.0), (0.3, 0.3)])
def test_select_frequencies(p1, p0):
    rng = np.random.default_rng(0)
    sel = rng.random((400, 1000)) < 0.5
    out = np.empty(sel.shape, dtype=bool)
    bernoulli_select(sel, p1, p0, rng, out)
    assert _sd_ok(out[sel], p1, sel.sum()) and _sd_ok(out[~sel], p0, (~sel).sum())


def test_tie_path_decides_with_low_bits():
    # threshold byte 128 with a low part of 1/2: cells whose byte is 128 must be
    # 1 about half the time (P = 128/256 + (1/256)(1/2))
    p = 0.5 + 0.5 / 256
    assert bernoulli_threshold(p) == (128, 2**55)
    rng = np.random.default_rng(1)
    sel = np.ones(2_000_000, dtype=bool)
    out = np.empty_like(sel)
    bernoulli_select(sel, p, 0.0, rng, out)
    assert _sd_ok(out, p, out.size)
    # white-box: the first random words are the per-cell bytes, so the same seed
    # shows which cells went through the tie path
    rng2 = np.random.default_rng(1)
    byte = rng2.integers(0, 1 << 64, size=sel.size // 8, dtype=np.uint64).view(np.uint8)
    np.testing.assert_array_equal(out[byte < 128], True)
    np.testing.assert_array_equal(out[byte > 128], False)
    assert 0.45 < out[byte == 128].mean() < 0.55


def test_select_checks_out():
    with pytest.raises(ValueError, match="C-contiguous bool"):
        bernoulli_select(np.zeros((3, 4), bool), 0.5, 0.5, np.random.default_rng(0),
                         np.empty((4, 3), bool))


@pytest.mark.parametrize("k", [3, 7, UE_CHUNK_CELLS + 5])
def test_perturb_unary_across_chunks(k):
    # n not a multiple of the users per chunk; k above the chunk size (1 user per block)
    n = max(3, 3 * (UE_CHUNK_CELLS // k) + 1) if k < 100 else 3
    rng = np.random.default_rng(2)
    values = rng.integers(0, k, n)
    bits = perturb_unary(values, k, 0.8, 0.1, rng)
    own = np.zeros((n, k), dtype=bool)
    own[np.arange(n), values] = True
    assert _sd_ok(bits[own], 0.8, n) and _sd_ok(bits[~own], 0.1, own.size - n)


@pytest.mark.parametrize("cls", [LSUE, LOSUE, LOUE])
def test_instant_accepts_int_and_strided_permanent(cls):
    proto = cls(2.0, 1.0, 6)
    rng = np.random.default_rng(3)
    perm = (rng.random((40_000, 12)) < 0.5)[:, ::2]  # not contiguous
    rep = proto.instant(perm.astype(np.int64), rng=rng)
    assert rep.dtype == bool and rep.shape == perm.shape
    assert _sd_ok(rep[perm], proto.p2, perm.sum()) and _sd_ok(rep[~perm], proto.q2, (~perm).sum())
    np.testing.assert_array_equal(proto.instant(perm, rng=5), proto.instant(perm, rng=5))


def test_two_rounds_give_ps_qs():
    proto = LOSUE(1.0, 0.6, 10)
    values = np.arange(10).repeat(30_000)
    rep = proto.perturb(values, rng=4)
    own = np.zeros(rep.shape, dtype=bool)
    own[np.arange(values.size), values] = True
    assert _sd_ok(rep[own], proto.p, own.sum()) and _sd_ok(rep[~own], proto.q, (~own).sum())


@pytest.mark.parametrize("make", [lambda: LOSUE(1.0, 0.6, 100), lambda: OUE(1.0, 100)],
                         ids=["l-osue", "oue"])
def test_unary_clients_need_no_float_matrix(make):
    # the bool (n, k) output is 20 MB; the old code also held an (n, k) float64 (160 MB)
    proto = make()
    n = 200_000
    values = np.random.default_rng(5).integers(0, 100, n)
    proto.perturb(values[:10], rng=0)
    tracemalloc.start()
    try:
        out = proto.perturb(values, rng=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - out.nbytes < 16 * UE_CHUNK_CELLS, peak
    if hasattr(proto, "instant"):
        tracemalloc.start()
        try:
            again = proto.instant(out, rng=0)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak - again.nbytes < 16 * UE_CHUNK_CELLS, peak
