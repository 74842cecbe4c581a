"""Many two-way tables of one dataset at once: the counts of every pair of attributes are the
blocks of one matrix product of the records' one-hot codes, summed over chunks of users.

``Dataset.project`` counts one pair in a pass over the records; over all pairs of a wide
dataset (300 binary attributes: 44,850 pairs) those passes are what ``lopub evaluate`` and
a report against the true data spend their time on (a strided column each, 10^6 records:
about 0.1 s a pair).  The product reads the records once per chunk and BLAS does the rest.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from lopub.data.dataset import Dataset
from lopub.data.marginal import Marginal

#: the product is used while the one-hot width K (categories of the attributes involved)
#: is at most this (K x K float64 counts: 128 MiB at 4096) ...
MAX_WIDTH = 4096
#: ... and K^2 is at most this many times the number of pairs (10^6 records, one run: 300
#: binary attributes, K^2 = 8 P, product 61x faster; 40 of 4 categories, K^2 = 33 P, 1.7x;
#: Adult's 14, K^2 = 225 P, 15x slower)
PAIRS_PER_CELL = 30
#: float32 one-hot rows per chunk: sums of 0/1 stay exact below 2^24 rows; this bounds memory
CHUNK_CELLS = 2**24


class PairCounts:
    """A dataset's projections, with every pair among ``attrs`` counted at once.

    ``project(attrs)`` of two of them is the block of the pair count matrix, divided by n: the
    same table as ``data.project(attrs)``, bit for bit (the counts are exact integers); any
    other projection is the dataset's own.
    """

    def __init__(self, data: Dataset, attrs: Sequence[str]):
        self.data, self.domain, self.n = data, data.domain, data.n
        self.attrs = list(dict.fromkeys(attrs))
        sizes = [data.domain.size(a) for a in self.attrs]
        self._offset = dict(zip(self.attrs, np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()))
        self.counts = _pair_counts(data.codes[:, list(data.domain.indices(self.attrs))], sizes)

    def project(self, attrs: Sequence[str]) -> Marginal:
        attrs = list(attrs)
        if len(attrs) != 2 or attrs[0] == attrs[1] or not all(a in self._offset for a in attrs):
            return self.data.project(attrs)
        sub = self.domain.project(attrs)
        (i, ka), (j, kb) = ((self._offset[a], self.domain.size(a)) for a in attrs)
        return Marginal(sub, self.counts[i:i + ka, j:j + kb] / self.n, self.n, {"method": "exact"})

    marginal = project


def pair_source(data: object, pairs: Iterable[Sequence[str]]) -> object:
    """``data`` as a :class:`PairCounts` over the attributes of ``pairs`` when it is a
    :class:`Dataset` and one product costs less than a pass per pair; else ``data`` itself."""
    pairs = [tuple(p) for p in pairs if len(p) == 2]
    if not isinstance(data, Dataset) or not pairs:
        return data
    attrs = list(dict.fromkeys(a for p in pairs for a in p))
    width = sum(data.domain.size(a) for a in attrs)
    if width > MAX_WIDTH or width * width > PAIRS_PER_CELL * len(pairs):
        return data
    return PairCounts(data, attrs)


def _pair_counts(codes: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """The (K, K) co-occurrence counts of the one-hot codes (K = sum of ``sizes``), in chunks
    of users (no loop over records: one product per chunk)."""
    n, width = codes.shape[0], int(sum(sizes))
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
    out = np.zeros((width, width))
    step = max(1, min(n, CHUNK_CELLS // max(width, 1), 2**24))
    for start in range(0, n, step):  # loop over chunks of users
        block = codes[start:start + step]
        hot = np.zeros((block.shape[0], width), dtype=np.float32)
        rows = np.arange(block.shape[0])[:, None]
        hot[rows, offsets + block.astype(np.intp)] = 1.0
        out += hot.T @ hot
    return out
