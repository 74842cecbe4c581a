"""Client-side Bloom encoding of records (LoPub Sec. IV-A).

Each value's Bloom filter is fixed by the public spec (see
:func:`lopub.reports.spec.bloom_positions`), so encoding a record is a table lookup
``spec.bloom[j][code]`` per attribute, vectorized over records.
"""
from __future__ import annotations

import numpy as np

from lopub.reports.spec import CollectionSpec


def bloom_encode(codes: np.ndarray, spec: CollectionSpec) -> np.ndarray:
    """Concatenated Bloom filters of records: bool array (n, sum_j m_j).

    Parameters
    ----------
    codes : ndarray (n, d)
        Integer codes against ``spec.domain``.
    """
    codes = np.asarray(codes)
    out = np.empty((codes.shape[0], spec.total_bits), dtype=bool)
    for j, (lo, hi) in enumerate(zip(spec.offsets, spec.offsets[1:])):  # over attributes
        out[:, lo:hi] = spec.bloom[j][codes[:, j]]
    return out


def bloom_encode_packed(codes: np.ndarray, spec: CollectionSpec) -> np.ndarray:
    """Packed concatenated Bloom filters (uint8, (n, spec.packed_bytes)).

    When every m_j is a multiple of 8 the per-value filters are looked up
    already packed (byte-aligned attributes); otherwise bits are packed after
    the lookup.
    """
    codes = np.asarray(codes)
    if any(mj % 8 for mj in spec.m):
        return np.packbits(bloom_encode(codes, spec), axis=1)
    out = np.empty((codes.shape[0], spec.packed_bytes), dtype=np.uint8)
    for j, (lo, hi) in enumerate(zip(spec.offsets, spec.offsets[1:])):  # over attributes
        out[:, lo // 8: hi // 8] = spec.bloom_packed[j][codes[:, j]]
    return out
