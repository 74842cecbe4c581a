import itertools
import math

import numpy as np
import pytest

from lopub import CollectionSpec, Dataset, Domain
from lopub.client import Client, bernoulli_words, bloom_encode, encode, flip_bits
from lopub.client.randomize import _binary_digits

SEED = int(np.random.SeedSequence().entropy % 2**32)  # a fresh seed every run: tests hold for any seed


@pytest.fixture
def spec():
    d = Domain.from_categories({"a": [str(i) for i in range(7)], "b": ["x", "y"], "c": [f"v{i}" for i in range(30)]})
    return CollectionSpec.from_domain(d, f=0.4, m=[24, 12, 64], h=[3, 2, 4])


def test_binary_digits_exact():
    for p in (0.25, 0.1, 1 / 3, 0.4999999):
        digits = _binary_digits(p)
        assert sum(d * 2.0 ** -(i + 1) for i, d in enumerate(digits)) == p


@pytest.mark.parametrize("p", [0.05, 0.2, 0.25, 1 / 3, 0.45])
def test_bernoulli_frequency(p):
    n_words = 200_000
    w = bernoulli_words(p, n_words, rng=SEED)
    bits = np.unpackbits(w.view(np.uint8)).reshape(-1, 64)
    N = bits.shape[0]
    sd = math.sqrt(p * (1 - p) / N)
    # each of the 64 bit positions separately (Bonferroni: 64 tests at 5 SD)
    assert np.abs(bits.mean(axis=0) - p).max() < 5 * sd, f"seed {SEED}"
    # neighbouring bits independent: P(both) = p^2
    both = (bits[:, :-1] & bits[:, 1:]).mean()
    # overlapping pairs share a bit: Var = [p^2(1-p^2) + 2(p^3 - p^4)] / (63 N)
    var = (p * p * (1 - p * p) + 2 * (p ** 3 - p ** 4)) / (N * 63)
    assert abs(both - p * p) < 5 * math.sqrt(var), f"seed {SEED}"


@pytest.mark.parametrize("bitgen", [np.random.MT19937, np.random.PCG64, np.random.Philox, np.random.SFC64])
def test_bernoulli_words_any_bit_generator(bitgen):
    # MT19937's random_raw yields 32-bit words: every bit position must still be Bernoulli(p)
    p, n_words = 0.25, 100_000
    w = bernoulli_words(p, n_words, rng=np.random.Generator(bitgen(SEED)))
    bits = np.unpackbits(w.view(np.uint8)).reshape(-1, 64)
    sd = math.sqrt(p * (1 - p) / n_words)
    assert np.abs(bits.mean(axis=0) - p).max() < 5 * sd, f"seed {SEED}, {bitgen.__name__}"


def test_flip_frequencies_per_bit(spec):
    n = 40_000
    codes = np.column_stack([np.random.default_rng(SEED).integers(0, s, n) for s in spec.domain.sizes])
    data = Dataset(codes, spec.domain)
    rep = encode(data, spec, rng=SEED, chunk_size=7777)
    clean = bloom_encode(codes, spec)
    noisy = rep.bits().astype(bool)
    f = spec.f
    for true_bit, p in ((True, 1 - f / 2), (False, f / 2)):
        cnt = (clean == true_bit).sum(axis=0)
        ones = (noisy & (clean == true_bit)).sum(axis=0)
        ok = cnt > 0
        freq = ones[ok] / cnt[ok]
        sd = np.sqrt(p * (1 - p) / cnt[ok])
        z = np.abs(freq - p) / sd
        assert z.max() < 5.5, f"seed {SEED}: bit frequency {freq[z.argmax()]} vs {p}"
    assert rep.packed.shape == (n, spec.packed_bytes)
    assert not np.unpackbits(rep.packed[:, -1:], axis=1)[:, spec.total_bits % 8 or 8:].any()  # zero padding


def test_same_seed_same_reports_chunk_independent_shape(spec):
    codes = np.zeros((1000, 3), dtype=int)
    data = Dataset(codes, spec.domain)
    a = encode(data, spec, rng=5)
    b = encode(data, spec, rng=5)
    np.testing.assert_array_equal(a.packed, b.packed)
    c = encode(data, spec, rng=6)
    assert not np.array_equal(a.packed, c.packed)


def test_default_rng_is_os_entropy(spec):
    data = Dataset(np.zeros((200, 3), dtype=int), spec.domain)
    a, b = encode(data, spec), encode(data, spec)
    assert not np.array_equal(a.packed, b.packed)


def _attr_channel(H: np.ndarray, f: float) -> np.ndarray:
    """Exact transition matrix P(y | v) of one attribute over all 2^m outputs."""
    m = H.shape[1]
    ys = np.array(list(itertools.product([0, 1], repeat=m)), dtype=bool)
    match = ys[None, :, :] == H[:, None, :]
    return np.prod(np.where(match, 1 - f / 2, f / 2), axis=2)


@pytest.mark.parametrize("f", [0.1, 0.5, 0.9])
def test_exact_privacy_ratio(f):
    d = Domain.from_categories({"a": [str(i) for i in range(5)]})
    spec = CollectionSpec.from_domain(d, f=f, m=10, h=2)
    Q = _attr_channel(spec.bloom[0], f)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0)
    ratio = (Q[:, None, :] / Q[None, :, :]).max()
    bound = math.exp(spec.epsilon_per_attribute[0])
    assert ratio <= bound * (1 + 1e-12)
    # the bound is attained when two filters are disjoint (2h differing bits)
    H = spec.bloom[0]
    disjoint = any(not (H[i] & H[j]).any() and H[i].sum() == 2 and H[j].sum() == 2
                   for i in range(5) for j in range(5) if i != j)
    if disjoint:
        assert ratio == pytest.approx(bound, rel=1e-9)


def test_flip_bits_shape_and_rate():
    bits = np.zeros((3000, 37), dtype=bool)
    out = flip_bits(bits, 0.3, rng=SEED)
    assert out.shape == bits.shape and out.dtype == bool
    p, N = 0.15, bits.size
    assert abs(out.mean() - p) < 5 * math.sqrt(p * (1 - p) / N)


def test_client_single_report(spec):
    c = Client(spec, rng=1)
    r = c.report({"a": "3", "b": "y", "c": "v7"})
    assert isinstance(r, bytes) and len(r) == spec.packed_bytes
    with pytest.raises(ValueError, match="attribute 'b': unknown category"):
        c.report({"a": "3", "b": "zzz", "c": "v7"})


def test_encode_type_errors(spec):
    with pytest.raises(TypeError, match="data must be a Dataset"):
        encode(np.zeros((2, 3)), spec)
    other = Domain.from_categories({"q": ["1"]})
    with pytest.raises(ValueError, match="differs from spec.domain"):
        encode(Dataset(np.zeros((2, 1), dtype=int), other), spec)
    with pytest.raises(TypeError, match="rng"):
        encode(Dataset(np.zeros((2, 3), dtype=int), spec.domain), spec, rng="seed")
