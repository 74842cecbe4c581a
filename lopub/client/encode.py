"""Encode records into randomized Bloom reports (vectorized, chunked)."""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from lopub._util import check_int, resolve_rng
from lopub.data.dataset import Dataset
from lopub.limits import check_memory
from lopub.reports.bloom import Reports
from lopub.reports.spec import CollectionSpec
from lopub.client.bloom import bloom_encode_packed
from lopub.client.randomize import flip_packed

DEFAULT_CHUNK = 32768


def encode(
    data: Dataset,
    spec: CollectionSpec,
    *,
    rng: np.random.Generator | int | None = None,
    chunk_size: int = DEFAULT_CHUNK,
    progress=None,
) -> Reports:
    """Simulate the clients: randomized Bloom reports of every record.

    Parameters
    ----------
    data : Dataset
        Records coded against ``spec.domain``.
    spec : CollectionSpec
    rng : Generator, int or None
        ``None`` draws OS entropy; pass a seed only for simulation and tests.
    chunk_size : int
        Records per chunk; memory is O(chunk_size * sum_j m_j) plus the packed output.
    progress : callable(done, total) or None

    References
    ----------
    Ren et al., IEEE TIFS 2018, Sec. IV-A, Eq. 5.
    """
    if not isinstance(data, Dataset):
        raise TypeError(f"data must be a Dataset, got {type(data).__name__}")
    if not isinstance(spec, CollectionSpec):
        raise TypeError(f"spec must be a CollectionSpec, got {type(spec).__name__}")
    if data.domain != spec.domain:
        raise ValueError("data.domain differs from spec.domain; encode against the spec's domain")
    chunk_size = check_int("chunk_size", chunk_size, 1)
    rng = resolve_rng(rng)
    n = data.n
    chunk = min(n, chunk_size)
    check_memory(n * spec.packed_bytes + chunk * (spec.total_bits + 4.0 * spec.packed_bytes), "m",
                 list(spec.m), f"{n} reports of {spec.total_bits} bits (sum of m_j)")
    packed = np.empty((n, spec.packed_bytes), dtype=np.uint8)
    for start in range(0, n, chunk_size):  # over chunks of users, vectorized within
        stop = min(n, start + chunk_size)
        clean = bloom_encode_packed(data.codes[start:stop], spec)
        packed[start:stop] = flip_packed(clean, spec.f, spec.total_bits, rng=rng)
        if progress is not None:
            progress(stop, n)
    return Reports(spec, packed)


class Client:
    """A single user's device: holds the public spec and randomizes one record.

    Without ``rng`` (a device) every random word comes from :func:`os.urandom`, a cryptographic
    source, through the device protocol of :mod:`lopub.client.device` (what ``DeviceClient`` and
    ``lopub.js`` run; no NumPy generator, whose stream is not cryptographic, is made); an ``rng``
    (tests, simulation) randomizes with :func:`encode`.
    """

    def __init__(self, spec: CollectionSpec, *, rng: np.random.Generator | int | None = None):
        if not isinstance(spec, CollectionSpec):
            raise TypeError(f"spec must be a CollectionSpec, got {type(spec).__name__}")
        self.spec = spec
        self._rng = None if rng is None else resolve_rng(rng)

    def report(self, record: Mapping[str, object]) -> bytes:
        """Randomized report (packed bits) of one record given as {attribute: label}."""
        df = pd.DataFrame({k: [v] for k, v in dict(record).items()})
        data = Dataset.from_pandas(df, self.spec.domain)
        if self._rng is not None:
            return encode(data, self.spec, rng=self._rng).packed[0].tobytes()
        from lopub.client.device import WordSource, bloom_report

        dom = self.spec.domain
        labels = {a: dom.labels(a)[int(c)] for a, c in zip(dom.attrs, np.asarray(data.codes)[0])}
        return bytes.fromhex(bloom_report(self.spec, labels, WordSource(None)))  # words from os.urandom
