"""Shared machinery of the frequency oracles: checks, the unbiased estimator, variances.

Every oracle in :mod:`lopub.oracles` reduces, on the server, to *support
counts*: ``N_v`` is the number of reports that support value ``v``.  A report
of a user holding ``v`` supports ``v`` with probability ``p``, a report of a
user holding any other value supports ``v`` with probability ``q``.  The
estimator and its variance then only depend on ``(p, q)``; for the
longitudinal protocols ``(p, q)`` are the two-round probabilities ``(Ps, Qs)``.

References
----------
Arcolezi, Couchot, Al Bouna, Xiao, "Improving the utility of locally
differentially private protocols for longitudinal and multidimensional
frequency estimates", Digital Communications and Networks 2022, Sec. 2
(estimator and exact variance) and Eq. 9, 11.
"""
from __future__ import annotations

import decimal
import itertools
import numbers
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable, ClassVar

import numpy as np

from lopub._util import check_int, check_positive
from lopub.oracles.measure import MeasureMixin

#: Largest domain for which unary encodings enumerate all 2^k outputs.
MAX_ENUM_K = 12


def check_epsilon(name: str, value: float) -> float:
    """Check a privacy budget: a finite real number > 0."""
    return check_positive(name, value)


#: Smallest probability an oracle uses: the smallest normal float64 (full relative
#: precision).  A smaller true probability (``e^-eps`` for ``eps > 708``) is
#: rounded up to it, which only adds noise.
MIN_PROBABILITY = float(np.finfo(float).tiny)


def logistic_tail(eps: float) -> float:
    """``1 / (e^eps + 1) = e^-eps / (1 + e^-eps)``, finite for any ``eps`` and at
    least :data:`MIN_PROBABILITY` (rounded up where it would underflow)."""
    tail = float(np.exp(-eps))
    return max(tail / (1.0 + tail), MIN_PROBABILITY)


def ratio_within(ratio: Fraction, eps: float) -> bool:
    """Whether the exact positive rational ``ratio`` is ``<= e^eps``.

    Compared as ``ln(numerator) - ln(denominator) <= eps`` to 60 significant
    digits (:mod:`decimal`, correctly rounded logarithms; no overflow for any
    float ``eps``): the answer can be wrong only for a ratio within about
    ``1e-55`` of ``e^eps``, which a ratio of float probabilities (a dyadic
    rational near a transcendental number) does not come near.
    """
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        return ctx.ln(ratio.numerator) - ctx.ln(ratio.denominator) <= Decimal(float(eps))


def ue_ratio(p: float, q: float) -> Fraction:
    """The exact privacy ratio ``p (1 - q) / ((1 - p) q)`` of a unary encoding whose
    own bit is 1 with the float probability ``p`` and every other bit with ``q``
    (``0 < q < p < 1``): the largest ``P(y | x) / P(y | x')`` over reports ``y``
    (bit ``x`` set, bit ``x'`` clear); the smallest is its reciprocal."""
    p_, q_ = Fraction(p), Fraction(q)
    return p_ * (1 - q_) / ((1 - p_) * q_)


def noisier_until(q: float, within: Callable[[float], bool]) -> float:
    """``q`` raised by ulps (toward ``1/2``, more noise) until ``within(q)``.

    For the probability ``q < 1/2`` of a noise bit: a float ``q`` rounded from
    its formula can leave the exact ratio a few ulps above ``e^eps``; each step
    lowers it, and ``q = 1/2`` (no information) always satisfies the bound.
    """
    while not within(q):
        q = float(np.nextafter(q, 1.0))
    return q


def complement_down(x: float) -> float:
    """The largest float64 ``r <= 1 - x``, for ``x`` in ``[0, 1]``.

    The samplers draw with the float ``r`` exactly, so the probability of the
    other outcome they realize, ``1 - r``, is at least ``x``: where ``1 - x``
    is not representable (``x`` below ``2^-53``) the mechanism rounds toward
    more noise and its privacy ratio stays within the bound.  ``1 - r`` is
    exact for ``r >= 1/2`` (Sterbenz), so the test below is exact.
    """
    r = 1.0 - float(x)
    if 1.0 - r < x:
        r = float(np.nextafter(r, 0.0))
    return r


def check_domain_size(name: str, value: int) -> int:
    """Check a domain size: an integer >= 2."""
    return check_int(name, value, 2)


def check_values(values: Any, k: int, name: str = "values") -> np.ndarray:
    """Return ``values`` as a 1-D int64 array of codes in ``[0, k)``.

    Raises
    ------
    TypeError
        If ``values`` is not an array of integers.
    ValueError
        If it is not one-dimensional or a code is out of range.
    """
    arr = np.asarray(values)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} (dtype {arr.dtype}) must be an array of integer codes")
    if arr.ndim != 1:
        raise ValueError(f"{name} (shape {arr.shape}) must be one-dimensional")
    if arr.size and (arr.min() < 0 or arr.max() >= k):
        bad = arr[(arr < 0) | (arr >= k)][0]
        raise ValueError(f"{name} contains {bad}; codes must be in [0, {k - 1}]")
    return arr.astype(np.int64, copy=False)


def check_counts(counts: Any, k: int, n: int) -> tuple[np.ndarray, int]:
    """Check support counts (length ``k``) and the number of reports ``n >= 1``."""
    counts = np.asarray(counts, dtype=float)
    if counts.shape != (k,):
        raise ValueError(f"counts (shape {counts.shape}) must have shape ({k},)")
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"n ({n!r}) must be an integer")
    if n < 1:
        raise ValueError(f"n ({n}) must be an integer >= 1 (no reports to estimate from)")
    return counts, int(n)


def check_frequencies(f: Any, k: int, scalar: bool = True) -> np.ndarray:
    """Check the frequencies at which a variance is evaluated: shape ``(k,)`` (or one
    frequency for every value, where ``scalar``)."""
    arr = np.asarray(f, dtype=float)
    if arr.shape != (k,) and not (scalar and arr.ndim == 0):
        raise ValueError(f"f (shape {arr.shape}) must be the frequencies of the {k} values: an "
                         f"array of shape ({k},)" + (" or one frequency" if scalar else ""))
    return arr


def unbiased_frequencies(counts: np.ndarray, n: int, p: float, q: float) -> np.ndarray:
    """Unbiased frequency estimate ``(N_v - n q) / (n (p - q))``.

    References
    ----------
    ALLOMFREE paper, Sec. 2 (one-shot) and Eq. 9 (two rounds, with Ps, Qs).
    """
    return (np.asarray(counts, dtype=float) - n * q) / (n * (p - q))


def support_variance(n: int, p: float, q: float, f: Any = None) -> Any:
    """Variance of one estimated frequency from ``n`` reports.

    ``f=None`` gives the approximate Var* ``q (1 - q) / (n (p - q)^2)``; a
    frequency (scalar or array) gives the exact fixed-dataset variance
    ``q (1 - q) / (n (p - q)^2) + f (1 - p - q) / (n (p - q))``.

    References
    ----------
    ALLOMFREE paper, Sec. 2 (exact variance) and Eq. 11.
    """
    n = check_int("n", n, 1)
    base = q * (1 - q) / (n * (p - q) ** 2)
    if f is None:
        return float(base)
    f = np.asarray(f, dtype=float)
    out = base + f * (1 - p - q) / (n * (p - q))
    return float(out) if out.ndim == 0 else out


def ldp_level(matrix: np.ndarray) -> float:
    """Exact LDP level ``max_y max_{x,x'} ln(Q[x, y] / Q[x', y])`` of a channel.

    ``matrix[x, y] = P(output y | input x)``.  Columns that are zero for every
    input are ignored; a column that is zero for some inputs only gives ``inf``.
    """
    q = np.asarray(matrix, dtype=float)
    hi, lo = q.max(axis=0), q.min(axis=0)
    used = hi > 0
    if np.any(lo[used] <= 0):
        return float("inf")
    return float(np.max(np.log(hi[used]) - np.log(lo[used])))  # no overflow of hi / lo


#: Cells (users x values) per block of the unary encoders.  Every work array
#: of a block holds at most one byte per cell (1 MiB), so the memory a unary
#: client needs beyond its ``(n, k)`` bool output is a few MiB, whatever ``n`` and ``k``.
UE_CHUNK_CELLS = 1 << 20

def ue_output_matrix(k: int, p: float, q: float, p0: float | None = None,
                     q0: float | None = None) -> np.ndarray:
    """Enumerated channel of a unary encoding: ``k x 2^k`` matrix.

    Output column ``j`` is the bit vector with bit ``v = (j >> v) & 1``.  Bit
    ``x`` of input ``x`` is 1 with probability ``p``, every other bit with
    probability ``q``, independently; ``p0``, ``q0`` (default ``1 - p``,
    ``1 - q``) are the probabilities of a 0 bit, when known more accurately.
    """
    if k > MAX_ENUM_K:
        raise ValueError(f"k ({k}) must be <= {MAX_ENUM_K} to enumerate all 2^k outputs")
    bits = np.array(list(itertools.product([0, 1], repeat=k)), dtype=float)[:, ::-1]
    out = np.empty((k, 2**k))
    for x in range(k):  # k <= 12 rows: a tiny loop over inputs, not users
        prob_one, prob_zero = np.full(k, q), np.full(k, 1 - q if q0 is None else q0)
        prob_one[x], prob_zero[x] = p, (1 - p if p0 is None else p0)
        out[x] = np.prod(np.where(bits == 1, prob_one, prob_zero), axis=1)
    return out


def ue_bits_from_index(k: int) -> np.ndarray:
    """Bit vectors (``2^k x k``) matching the columns of :func:`ue_output_matrix`."""
    j = np.arange(2**k)[:, None]
    return ((j >> np.arange(k)[None, :]) & 1).astype(bool)


class SupportOracle(MeasureMixin):
    """Base of oracles whose server side is support counting with ``(p, q)``.

    Subclasses are frozen dataclasses that set ``p``, ``q``, ``k`` and
    implement ``perturb``, ``aggregate`` and ``transition_matrix``; with
    this base they satisfy :class:`~lopub.oracles.protocol.FrequencyOracle`
    (``estimator = "support"``: the unbiased support-count estimator).
    """

    name: ClassVar[str] = "support"
    estimator: str = "support"
    privacy: str = "ldp"
    variance_note: str = ("exact fixed-dataset variance q(1-q)/(n(p-q)^2) + f(1-p-q)/(n(p-q)) "
                          "at the post-processed estimate")
    k: int
    p: float
    q: float
    if TYPE_CHECKING:  # implemented by every subclass
        def aggregate(self, reports: Any) -> Any: ...

    def _check_representable(self) -> None:
        """Refuse parameters whose estimator cannot be computed in float64.

        ``p - q`` must be at least ``1e-9 p`` (so that the float difference
        has a relative error below about ``1e-7``) and Var* finite; at a tiny
        budget ``p`` and ``q`` round to (nearly) the same float and the
        estimator would divide by 0 or by rounding noise.
        """
        gap = self.p - self.q
        if not (gap >= 1e-9 * self.p and np.isfinite(support_variance(1, self.p, self.q))):
            budget = ", ".join(f"{key} ({getattr(self, key)!r})"
                               for key in ("epsilon", "eps_inf", "eps_1")
                               if key in getattr(self, "__dataclass_fields__", {}))
            raise ValueError(
                f"{budget} too small for {self.name} with k ({self.k}): the support "
                f"probabilities p ({self.p!r}) and q ({self.q!r}) are too close "
                f"in float64, so the estimate and its variance are not finite; "
                f"use a larger budget")

    def estimate_from_counts(self, counts: Any, n: int) -> np.ndarray:
        """Unbiased frequencies from support counts of ``n`` reports."""
        counts, n = check_counts(counts, self.k, n)
        return unbiased_frequencies(counts, n, self.p, self.q)

    def estimate(self, reports: Any) -> np.ndarray:
        """Unbiased (raw, unclipped) frequency estimate from reports.

        Use :func:`lopub.estimate.postprocess.postprocess` to make it a
        distribution.
        """
        return self.estimate_from_counts(self.aggregate(reports), self.n_reports(reports))

    def variance(self, n: int, f: Any = None) -> Any:
        """Var* (``f=None``) or exact fixed-dataset variance of one estimate (``f``: the
        ``k`` frequencies, or one frequency)."""
        f = None if f is None else check_frequencies(f, self.k)
        return support_variance(n, self.p, self.q, f)

    def params(self) -> dict:
        """Public parameters (JSON-serializable) that the server needs.

        ``{"protocol": name, <constructor arguments>, "name": name}``: a public format that
        devices' memo keys and states hash, so it does not change.  ``GRR(**params)`` fails on
        ``protocol`` and ``name``; :func:`lopub.oracles.from_params` rebuilds the object.
        """
        out = {"protocol": self.name}
        fields = getattr(self, "__dataclass_fields__", {})
        for key in fields:
            field = fields[key]
            if field.init:
                value = getattr(self, key)
                out[key] = value.tolist() if isinstance(value, np.ndarray) else value
        return out

    def n_reports(self, reports: Any) -> int:
        """Number of users behind ``reports`` (rows)."""
        return int(np.asarray(reports).shape[0])
