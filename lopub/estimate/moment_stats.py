"""Sufficient statistics of moment regression: sums over users, one streaming pass.

With ``z_j = (s_j - c) G_j`` the projected bits of attribute j (see
:mod:`.moment`; ``c = f/2`` for the centred design, 0 for the raw one), the
moment estimate of a set A of attributes and its sandwich variance need only

* ``R_A = 1/n sum_u (x)_{j in A} [z_{u,j}, 1]`` -- the augmented raw cross
  moment: its block without the constant rows is ``P_ols``, its faces are the
  lower-order moments, and the central moments ``M_S`` used for shrinkage are
  ``R_A`` multiplied mode by mode by ``T_j = [[I, -mean_j], [0, 1]]``
  (``[z - mean, 1] = T_j [z, 1]``);
* ``Q_A = 1/n sum_u (x)_{j in A} z_{u,j}^2`` -- the second moment of the
  per-user terms, for the sandwich variance;
* per attribute, ``1/n sum_u z_{u,j} z_{u,j}^T`` (covariance trace and
  effective dimension).

All are sums over users of per-user terms, so they are computed chunk by
chunk (never an ``n x |O_j|`` matrix), chunks can be summed in any process
or on any machine, and the sums of chunks are added in chunk order, so the
result does not depend on how many workers computed them.  For every pair at
once the sums are blocks of two Gram matrices of the concatenated chunk
``[Z, 1]`` and ``Z * Z`` (bit co-occurrence counts projected on the designs).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Iterable, Sequence, cast

import numpy as np

from lopub.reports.spec import CollectionSpec
from lopub.estimate.em import khatri_rao
from lopub.estimate.moment import DESIGNS, design_matrix, kron_apply

PAIR_CHUNK = 16384  # users per chunk of the pairwise pass (results do not depend on jobs)


@dataclass(frozen=True)
class Projector:
    """What turns one chunk of report bits into projected bits of some attributes (picklable)."""

    spec: CollectionSpec
    attrs: tuple[str, ...]
    design: str = "centered"

    def __post_init__(self) -> None:
        if self.design not in DESIGNS:
            raise ValueError(f"design ({self.design!r}) must be one of {DESIGNS}")

    def matrices(self) -> list[np.ndarray]:
        """``pinv(A_j)`` of every attribute, (m_j, |O_j|) (as :func:`.moment.projected_bits`)."""
        holder = SimpleNamespace(spec=self.spec)  # design_matrix only reads .spec
        return [np.linalg.pinv(design_matrix(cast(Any, holder), a, self.design)) for a in self.attrs]

    def sizes(self) -> list[int]:
        return [self.spec.domain.size(a) for a in self.attrs]

    def project(self, bits: np.ndarray, mats: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Projected bits ``(c, |O_j|)`` of every attribute for unpacked ``bits`` (c, total_bits)."""
        shift = self.spec.f / 2.0 if self.design == "centered" else 0.0
        out = []
        for a, G in zip(self.attrs, mats):
            s = bits[:, self.spec.slice(a)].astype(np.float64)
            out.append((s - shift) @ G)
        return out


def pair_sums(bits: np.ndarray, proj: Projector, mats: Sequence[np.ndarray]) -> dict:
    """Sums over one chunk of users: ``n``, Gram of ``[Z, 1]`` and of ``Z * Z``."""
    z = np.hstack(proj.project(bits, mats) + [np.ones((len(bits), 1))])
    z2 = z[:, :-1] ** 2
    return {"n": len(bits), "gram": z.T @ z, "gram2": z2.T @ z2}


def kway_sums(bits: np.ndarray, proj: Projector, mats: Sequence[np.ndarray],
              sets: Sequence[Sequence[int]]) -> dict:
    """Sums over one chunk of ``(x)_j [z_j, 1]`` and ``(x)_j z_j^2`` for index sets of ``proj.attrs``."""
    zs = proj.project(bits, mats)
    aug = [np.hstack([z, np.ones((len(z), 1))]) for z in zs]
    out: dict[str, Any] = {"n": len(bits), "raw": [], "sq": []}
    for s in sets:
        out["raw"].append(_kron_sum([aug[i] for i in s]))
        out["sq"].append(_kron_sum([zs[i] ** 2 for i in s]))
    return out


def _kron_sum(xs: list[np.ndarray]) -> np.ndarray:
    """``sum_u (x)_j xs[j][u]`` as a table of shape ``(s_1, ..., s_k)``."""
    if len(xs) == 1:
        return xs[0].sum(axis=0)
    g = khatri_rao(xs[:-1]).T @ xs[-1]
    return g.reshape([x.shape[1] for x in xs])


def add_sums(parts: Iterable[dict]) -> dict:
    """Add chunk sums in the given order (``None`` when there are none)."""
    total: Any = None
    for p in parts:
        if total is None:
            total = {k: (list(v) if isinstance(v, list) else v) for k, v in p.items()}
            continue
        for k, v in p.items():
            total[k] = [a + b for a, b in zip(total[k], v)] if isinstance(v, list) else total[k] + v
    return total


@dataclass
class MomentStatistics:
    """Normalized sufficient statistics of moment regression for some attribute sets.

    ``one[a]`` holds ``mean``, ``second`` (E z^2 per value) and ``cov`` of
    attribute ``a``; ``sets[key]`` holds ``raw`` (``R_A``) and ``sq``
    (``Q_A``) of the sorted attribute tuple ``key``; ``pairs`` the Gram-block
    view of the attributes covered by a pairwise pass.
    """

    n: int = 0
    one: dict = field(default_factory=dict)
    sets: dict = field(default_factory=dict)
    _pair_grams: list = field(default_factory=list)  # (attrs, sizes, gram/n, gram2/n)

    @property
    def nbytes(self) -> int:
        grams = sum(g.nbytes + g2.nbytes for _, _, g, g2 in self._pair_grams)
        return grams + sum(v["raw"].nbytes + v["sq"].nbytes for v in self.sets.values())

    def add_pair_pass(self, attrs: Sequence[str], sizes: Sequence[int], total: dict) -> None:
        n = int(total["n"])
        if self.n and n != self.n:
            raise ValueError(f"a pass over {n} users does not match the earlier {self.n}")
        self.n = n
        g, g2 = total["gram"] / n, total["gram2"] / n
        self._pair_grams.append((tuple(attrs), tuple(sizes), g, g2))
        offs = np.concatenate([[0], np.cumsum(sizes)])
        for a, lo, hi in zip(attrs, offs[:-1], offs[1:]):
            if a not in self.one:
                mean = g[lo:hi, -1].copy()
                self.one[a] = {"mean": mean, "second": np.diag(g[lo:hi, lo:hi]).copy(),  # E z^2
                               "cov": g[lo:hi, lo:hi] - np.outer(mean, mean)}

    def add_sets(self, keys: Sequence[Sequence[str]], total: dict) -> None:
        n = int(total["n"])
        if self.n and n != self.n:
            raise ValueError(f"a pass over {n} users does not match the earlier {self.n}")
        self.n = n
        for key, raw, sq in zip(keys, total["raw"], total["sq"]):
            self.sets[tuple(key)] = {"raw": raw / n, "sq": sq / n}

    def has(self, key: Sequence[str]) -> bool:
        key = tuple(key)
        if len(key) == 1:
            return key[0] in self.one
        return key in self.sets or (len(key) == 2 and self._pair_block(key) is not None)

    def _pair_block(self, key: tuple[str, ...]):
        for attrs, sizes, g, g2 in self._pair_grams:
            if set(key) <= set(attrs):
                offs = np.concatenate([[0], np.cumsum(sizes)])
                (i, j) = (attrs.index(key[0]), attrs.index(key[1]))
                ra = list(range(offs[i], offs[i + 1])) + [g.shape[0] - 1]
                rb = list(range(offs[j], offs[j + 1])) + [g.shape[0] - 1]
                sq = g2[offs[i]:offs[i + 1], offs[j]:offs[j + 1]]
                return g[np.ix_(ra, rb)], sq
        return None

    def raw_sq(self, key: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(R_A, Q_A)`` of the sorted attribute tuple ``key``."""
        key = tuple(key)
        if len(key) == 1:
            o = self.one[key[0]]
            return np.append(o["mean"], 1.0), o["second"]
        if key in self.sets:
            return self.sets[key]["raw"], self.sets[key]["sq"]
        block = self._pair_block(key)
        if block is None:
            raise KeyError(f"no moment statistics for {list(key)}")
        return block

    def p_ols(self, key: Sequence[str]) -> np.ndarray:
        raw, _ = self.raw_sq(key)
        return raw[tuple(slice(0, s - 1) for s in raw.shape)]

    def variance(self, key: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``P_ols`` and the per-cell sandwich variance ``(Q - P_ols^2) / n``."""
        p = self.p_ols(key)
        return p, np.maximum(self.raw_sq(key)[1] - p**2, 0.0) / self.n

    def central(self, key: Sequence[str]) -> np.ndarray:
        """Augmented central cross moment ``(x)_j [z_j - mean_j, 1]`` of ``key``."""
        raw, _ = self.raw_sq(key)
        ts = []
        for a in key:
            m = self.one[a]["mean"]
            t = np.eye(len(m) + 1)
            t[:-1, -1] = -m
            ts.append(t)
        return kron_apply(ts, raw)

    def attribute_stats(self, attr: str) -> dict:
        """Mean, covariance trace and effective dimension (as :func:`.moment.attribute_moments`)."""
        o = self.one[attr]
        tr = float(np.trace(o["cov"]))
        tr2 = float(np.sum(o["cov"] * o["cov"]))
        return {"mean": o["mean"], "trace": tr, "dof": tr * tr / tr2 if tr2 > 0 else 1.0}


def kway_chunk(sizes_sets: Sequence[Sequence[int]], budget: int) -> int:
    """Users per chunk of a k-way pass so that its Khatri-Rao blocks take about ``budget`` bytes."""
    per_user = sum(8 * 2 * (math.prod(s) // max(s) + max(s) + 1) for s in sizes_sets) or 8
    return int(max(512, min(PAIR_CHUNK, budget // per_user)))
