"""One-shot frequency oracles: GRR, SUE, OUE, OLH and BLH.

Each oracle is a small frozen object built from ``epsilon`` and the domain
size ``k``; the same object perturbs on the client and estimates on the
server.  Report formats (what :meth:`perturb` returns and :meth:`aggregate`
reads):

* GRR: int64 array ``(n,)`` of reported codes.
* SUE / OUE: bool array ``(n, k)`` of reported bits.
* OLH / BLH: int64 array ``(n, 3)`` with columns ``(a, b, y)``: the user's
  hash seed ``(a, b)`` and the GRR-perturbed hashed value ``y`` in ``[0, g)``.

The hash family of OLH/BLH (Carter-Wegman universal hashing,
``h_{a,b}(v) = ((a v + b) mod P) mod g`` with ``P = 2^31 - 1``) and its
helpers (``HASH_PRIME``, ``lh_hash``, ``lh_support_counts``,
``check_hashed_reports``, ``draw_hash_seeds``) moved to
:mod:`lopub.oracles.local_hashing`; importing them from here still works.

References
----------
Wang, Blocki, Li, Jha, "Locally differentially private protocols for
frequency estimation", USENIX Security 2017 (GRR, SUE, OUE, OLH, BLH);
ALLOMFREE paper (Arcolezi et al. 2022), Sec. 2, Table of p, q and Var*.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from lopub._util import resolve_rng
from lopub.client.randomize import bernoulli_fill, uniform_threshold
from lopub.oracles.oneshot_probabilities import grr_probabilities, oue_probabilities, sue_probabilities  # noqa: F401
from lopub.oracles.base import (
    UE_CHUNK_CELLS,
    SupportOracle,
    check_domain_size,
    check_epsilon,
    check_values,
    ue_output_matrix,
)
from lopub.oracles.local_hashing import (
    HASH_PRIME,
    check_hashed_reports,
    draw_hash_seeds,
    lh_hash,
    lh_support_counts,
)

#: Largest hash range of OLH: ``g = min(round(e^eps) + 1, 2^20)``.  Beyond
#: ``eps = ln(2^20 - 1) ~ 13.86`` a larger ``g`` would only lower Var* from
#: about ``1/(n g)``, while the hash family's collision probability stays
#: ``1/g`` to within a relative ``g / P < 5e-4`` and every hash fits int64.
OLH_MAX_G = 1 << 20
_CHUNK_USERS = 1 << 20  # users per block of OLH aggregation


def _grr_on(values: np.ndarray, size: int, p: float, rng: np.random.Generator) -> np.ndarray:
    """Keep each value w.p. ``uniform_threshold(p) <= p``, else report one of the
    ``size - 1`` others uniformly.

    The threshold (the largest multiple of ``2^-53`` not above ``p``) is what
    ``rng.random() <`` draws exactly: compared with ``p`` itself, a ``p < 1/2``
    off the grid was kept with up to ``2^-53`` more (the realized ratio above
    ``e^eps`` by about ``1e-13`` at ``k = 1000``).
    """
    keep = rng.random(values.shape[0]) < uniform_threshold(p)
    other = (values + rng.integers(1, size, size=values.shape[0])) % size
    return np.where(keep, values, other)


def _grr_matrix(k: int, p: float, q: float) -> np.ndarray:
    out = np.full((k, k), q)
    np.fill_diagonal(out, p)
    return out


@dataclass(frozen=True)
class GRR(SupportOracle):
    """Generalized randomized response (k-RR, direct encoding).

    Reports the true value w.p. ``p = e^eps / (e^eps + k - 1)``, any other
    value w.p. ``q = 1 / (e^eps + k - 1)``.

    References
    ----------
    ALLOMFREE paper, Sec. 2.1 (GRR, Var* = (e^eps + k - 2) / (n (e^eps - 1)^2)).
    """

    epsilon: float
    k: int
    p: float = field(init=False)
    q: float = field(init=False)
    name: ClassVar[str] = "grr"

    def __post_init__(self) -> None:
        eps = check_epsilon("epsilon", self.epsilon)
        k = check_domain_size("k", self.k)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "k", k)
        p, q = grr_probabilities(eps, k)
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "q", q)
        self._check_representable()

    def perturb(self, values: Any, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Perturb the codes of ``n`` users; returns int64 ``(n,)``."""
        values = check_values(values, self.k)
        return _grr_on(values, self.k, self.p, resolve_rng(rng))

    def aggregate(self, reports: Any) -> np.ndarray:
        """Support counts: how often each code was reported."""
        reports = check_values(reports, self.k, "reports")
        return np.bincount(reports, minlength=self.k).astype(float)

    def transition_matrix(self) -> np.ndarray:
        """``k x k`` channel ``P(y | x)``."""
        return _grr_matrix(self.k, self.p, self.q)


@dataclass(frozen=True)
class UnaryEncoding(SupportOracle):
    """Unary encoding with per-bit probabilities ``p`` (own bit) and ``q`` (others).

    Use :class:`SUE` or :class:`OUE` for the standard choices.

    References
    ----------
    ALLOMFREE paper, Sec. 2.2 (UE is eps-LDP iff p (1 - q) / ((1 - p) q) <= e^eps).
    """

    epsilon: float
    k: int
    p: float = field(init=False)
    q: float = field(init=False)
    name: ClassVar[str] = "ue"

    def _pq(self, eps: float) -> tuple[float, float]:
        raise NotImplementedError

    def __post_init__(self) -> None:
        eps = check_epsilon("epsilon", self.epsilon)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "k", check_domain_size("k", self.k))
        p, q = self._pq(eps)
        object.__setattr__(self, "p", float(p))
        object.__setattr__(self, "q", float(q))
        self._check_representable()

    def perturb(self, values: Any, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Perturb the codes of ``n`` users; returns bool ``(n, k)`` bits."""
        values = check_values(values, self.k)
        return perturb_unary(values, self.k, self.p, self.q, resolve_rng(rng))

    def aggregate(self, reports: Any) -> np.ndarray:
        """Support counts: number of reports with bit ``v`` set."""
        return aggregate_unary(reports, self.k)

    def transition_matrix(self) -> np.ndarray:
        """``k x 2^k`` channel over all bit vectors (k <= 12), see ``ue_output_matrix``."""
        return ue_output_matrix(self.k, self.p, self.q)


def perturb_unary(
    values: np.ndarray, k: int, p: float, q: float, rng: np.random.Generator,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Bits of ``n`` users: own bit is 1 w.p. ``p``, others w.p. ``q``.

    Chunked over users (:data:`~lopub.oracles.base.UE_CHUNK_CELLS` cells per
    block) and drawn exactly by :func:`~lopub.client.randomize.bernoulli_fill`
    (packed words): every bit at ``q``, then each user's own bit replaced by
    an independent draw at ``p``.  No ``n x k`` (nor block-sized) float array
    is allocated.  ``out`` (C-contiguous bool ``(n, k)``) receives the bits
    if given.
    """
    n = values.shape[0]
    if out is None:
        out = np.empty((n, k), dtype=bool)
    step = max(1, UE_CHUNK_CELLS // k)
    for start in range(0, n, step):  # chunks over users bound memory
        x = values[start:start + step]
        block = bernoulli_fill(q, out[start:start + step], rng=rng)  # every bit at q ...
        block[np.arange(x.shape[0]), x] = bernoulli_fill(p, np.empty(x.shape[0], bool), rng=rng)
    return out  # ... then each user's own bit redrawn at p


def check_bits(reports: Any, k: int) -> np.ndarray:
    """Check unary reports: an ``(n, k)`` array of bits (bool, or integers 0 and 1)."""
    reports = np.asarray(reports)
    if reports.ndim != 2 or reports.shape[1] != k:
        raise ValueError(f"reports (shape {reports.shape}) must have shape (n, {k})")
    if reports.dtype != bool:
        if not np.issubdtype(reports.dtype, np.integer):
            raise ValueError(f"reports (dtype {reports.dtype}) must be bits: bool or integers "
                             f"0 or 1")
        if reports.size and (reports.min() < 0 or reports.max() > 1):
            raise ValueError(f"reports hold values in [{reports.min()}, {reports.max()}]; "
                             f"each bit must be 0 or 1")
    return reports


def aggregate_unary(reports: Any, k: int) -> np.ndarray:
    """Column sums of an ``(n, k)`` 0/1 report matrix."""
    return np.count_nonzero(check_bits(reports, k), axis=0).astype(float)


@dataclass(frozen=True)
class SUE(UnaryEncoding):
    """Symmetric unary encoding (basic one-time RAPPOR).

    ``p = e^(eps/2) / (e^(eps/2) + 1)``, ``q = 1 - p``.

    References
    ----------
    ALLOMFREE paper, Sec. 2.2 (SUE, Var* = e^(eps/2) / (n (e^(eps/2) - 1)^2)).
    """

    name: ClassVar[str] = "sue"

    def _pq(self, eps: float) -> tuple[float, float]:
        return sue_probabilities(eps)


@dataclass(frozen=True)
class OUE(UnaryEncoding):
    """Optimized unary encoding: ``p = 1/2``, ``q = 1 / (e^eps + 1)``.

    References
    ----------
    ALLOMFREE paper, Sec. 2.2 (OUE, Var* = 4 e^eps / (n (e^eps - 1)^2)).
    """

    name: ClassVar[str] = "oue"

    def _pq(self, eps: float) -> tuple[float, float]:
        return oue_probabilities(eps)


@dataclass(frozen=True)
class LocalHashing(SupportOracle):
    """Local hashing: hash the value to ``[0, g)`` with a per-user hash, then GRR.

    ``g = round(e^eps) + 1``, at most :data:`OLH_MAX_G` (OLH), or ``g = 2``
    (BLH).  Support of ``v``: the
    reported ``y`` equals the user's hash of ``v``; ``p = e^eps / (e^eps + g - 1)``,
    ``q = 1/g``.  The hash family is documented in :mod:`lopub.oracles.local_hashing`.

    References
    ----------
    Wang et al. 2017, Sec. 4.4 (OLH, Var* = 4 e^eps / (n (e^eps - 1)^2));
    ALLOMFREE paper, Sec. 2.3.
    """

    epsilon: float
    k: int
    g: int = field(init=False)
    p: float = field(init=False)
    q: float = field(init=False)
    name: ClassVar[str] = "olh"

    def _g(self, eps: float) -> int:
        if eps >= np.log(OLH_MAX_G - 1):
            return OLH_MAX_G
        return max(2, int(round(np.exp(eps))) + 1)

    def __post_init__(self) -> None:
        eps = check_epsilon("epsilon", self.epsilon)
        k = check_domain_size("k", self.k)
        if k >= HASH_PRIME:
            raise ValueError(f"k ({k}) must be < {HASH_PRIME} for the hash family")
        g = self._g(eps)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "g", g)
        object.__setattr__(self, "p", grr_probabilities(eps, g)[0])
        object.__setattr__(self, "q", 1.0 / g)
        self._check_representable()

    def perturb(self, values: Any, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Perturb the codes of ``n`` users; returns int64 ``(n, 3)`` rows ``(a, b, y)``."""
        values = check_values(values, self.k)
        rng = resolve_rng(rng)
        a, b = draw_hash_seeds(values.shape[0], rng=rng)
        hashed = ((a.astype(np.uint64) * values.astype(np.uint64) + b.astype(np.uint64))
                  % np.uint64(HASH_PRIME) % np.uint64(self.g)).astype(np.int64)
        y = _grr_on(hashed, self.g, self.p, rng)
        return np.column_stack([a, b, y]).astype(np.int64)

    def check_reports(self, reports: Any) -> np.ndarray:
        """Check an ``(n, 3)`` integer report array (see :func:`check_hashed_reports`)."""
        return check_hashed_reports(reports, self.g)

    def aggregate(self, reports: Any) -> np.ndarray:
        """Support counts ``N_v = #{users: y = h_user(v)}``, vectorized and chunked."""
        reports = self.check_reports(reports)
        counts = np.zeros(self.k, dtype=np.int64)
        for start in range(0, reports.shape[0], _CHUNK_USERS):  # chunks over users
            block = reports[start:start + _CHUNK_USERS]
            counts += lh_support_counts(block[:, 0], block[:, 1], block[:, 2], self.k, self.g)
        return counts.astype(float)

    def transition_matrix(self, a: int = 1, b: int = 0) -> np.ndarray:
        """``k x g`` channel ``P(y | x)`` for the fixed hash seed ``(a, b)`` of the family
        (``a`` in ``[1, P)``, ``b`` in ``[0, P)``; others raise ``ValueError``)."""
        try:
            check_hashed_reports(np.array([[a, b, 0]], dtype=np.int64), self.g)
        except (ValueError, OverflowError) as exc:
            raise ValueError(f"hash seed (a={a}, b={b}) is not one of the family's, which "
                             f"clients draw from: {exc}") from None
        hashed = lh_hash(np.array([a]), np.array([b]), np.arange(self.k), self.g)[0]
        out = np.full((self.k, self.g), (1 - self.p) / (self.g - 1))
        out[np.arange(self.k), hashed] = self.p
        return out


@dataclass(frozen=True)
class OLH(LocalHashing):
    """Optimized local hashing, ``g = round(e^eps) + 1``; see :class:`LocalHashing`."""

    name: ClassVar[str] = "olh"


@dataclass(frozen=True)
class BLH(LocalHashing):
    """Binary local hashing, ``g = 2``; see :class:`LocalHashing`.

    References
    ----------
    Wang et al. 2017, Sec. 4.4 (BLH).
    """

    name: ClassVar[str] = "blh"

    def _g(self, eps: float) -> int:
        return 2


ONESHOT = {cls.name: cls for cls in (GRR, SUE, OUE, OLH, BLH)}


def make_oracle(name: str, epsilon: float, k: int) -> SupportOracle:
    """Build a one-shot oracle by name (``grr``, ``sue``, ``oue``, ``olh``, ``blh``)."""
    if not isinstance(name, str):
        raise TypeError(f"name ({name!r}) must be a string")
    key = name.lower()
    if key not in ONESHOT:
        raise ValueError(f"name ({name!r}) must be one of {sorted(ONESHOT)}")
    return ONESHOT[key](epsilon, k)
