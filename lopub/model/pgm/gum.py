"""Records that also follow the fitted region tables (GUM-style record updating).

A release sampled from the junction tree carries the tree's cliques but not
the measured sets that lie in no clique (the relaxed regions of
:mod:`lopub.model.pgm.relaxed`).  :func:`refine_codes` updates the sampled
records toward every region table: for each region, each record of a surplus cell
is, with probability ``alpha * excess / count``, replaced by copies of records from cells in
deficit (whole records, so their other attributes stay jointly plausible;
when a deficit cell holds no record, only the region's attributes are set).
``alpha`` decays over rounds; all steps are vectorized over records.

Conditional draws (evidence ``E = {attr: code}`` clamped in the tree) use
:func:`condition_regions`: a region ``R`` that holds every attribute of ``E``
becomes the table ``P_R(R minus E | E)`` over its free attributes -- exactly what
:meth:`lopub.model.graphical.Model.query` answers for a subset of ``R`` given ``E``
-- and the other regions are left out, because the model answers their sets
given ``E`` from the tree (it holds no joint of ``R`` and ``E``), which the tree's
conditional draws follow exactly.  The updating moves whole records (all of
them carry ``E``) or sets free attributes only, so a clamped attribute never changes.

References
----------
Zhang, Xiao, Yang, Wang, Chen, Wang, Shen, "PrivSyn: differentially private
data synthesis", USENIX Security 2021, Sec. 5 (Gradually Update Method).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from lopub.data.domain import Domain

ROUNDS = 8


def refine_codes(codes: np.ndarray, domain: Domain, regions: Sequence[dict], *,
                 rng: np.random.Generator, rounds: int = ROUNDS) -> np.ndarray:
    """``codes`` (n x d integer records) moved toward the region tables (``{"attrs", "p"}``)."""
    x = np.array(codes, copy=True)
    n = x.shape[0]
    if n == 0 or not regions:
        return x
    specs = []
    for r in regions:
        idx = [domain.index(a) for a in r["attrs"]]
        sizes = [domain.size(a) for a in r["attrs"]]
        specs.append((idx, sizes, np.asarray(r["p"], dtype=float).reshape(-1)))
    for k in range(rounds):
        alpha = 1.0 / (1.0 + k)
        for idx, sizes, p in specs:
            _step(x, idx, sizes, p * n, alpha, rng)
    return x


def _step(x: np.ndarray, idx: list[int], sizes: list[int], target: np.ndarray, alpha: float,
          rng: np.random.Generator) -> None:
    cell = np.ravel_multi_index(tuple(x[:, i] for i in idx), sizes)
    count = np.bincount(cell, minlength=target.size)
    excess = alpha * np.maximum(count - target, 0.0)
    deficit = np.maximum(target - count, 0.0)
    if excess.sum() < 1.0 or deficit.sum() <= 0:
        return
    # each record of a surplus cell leaves with probability excess / count (no sort of the records)
    pick = np.flatnonzero(rng.random(x.shape[0]) < (excess / np.maximum(count, 1))[cell])
    if pick.size == 0:
        return
    dest = rng.choice(target.size, size=pick.size, p=deficit / deficit.sum())
    small = np.int16 if target.size < 2**15 else np.int64   # radix sort for small cell counts
    ranked = np.argsort(cell.astype(small), kind="stable")
    start = np.concatenate([[0], np.cumsum(count)[:-1]])
    have = count[dest] > 0
    src = ranked[start[dest[have]] + rng.integers(0, count[dest[have]])]
    x[pick[have]] = x[src]
    vals = np.unravel_index(dest[~have], sizes)
    for j, i in enumerate(idx):
        x[pick[~have], i] = vals[j]


def condition_regions(regions: Sequence[dict], domain: Domain, evidence: Mapping[str, int]) -> list[dict]:
    """The region tables to update a draw conditioned on ``evidence`` (``{attr: code}``) toward.

    A region holding every evidence attribute: ``{"attrs": free, "p": P_R(free | evidence)}``
    with ``free`` its other attributes (none: left out; a region that gives the evidence
    probability zero: left out, as it defines no conditional).  Any other region: left out
    (see the module docstring).
    """
    out = []
    for r in regions:
        attrs = list(r["attrs"])
        if not set(evidence) <= set(attrs) or len(attrs) == len(evidence):
            continue
        t = np.asarray(r["p"], dtype=float).reshape([domain.size(a) for a in attrs])
        t = t[tuple(evidence[a] if a in evidence else slice(None) for a in attrs)]
        mass = float(t.sum())
        if not mass > 0:
            continue
        out.append({"attrs": [a for a in attrs if a not in evidence], "p": (t / mass).ravel()})
    return out
