"""Central (epsilon, delta) of shuffled local reports: amplification by shuffling.

If each of ``n`` users applies an ``eps0``-LDP randomizer (chosen
independently of the data, e.g. a random subset of a marginal plan and its
oracle) and the reports are uniformly shuffled, a recipient of the shuffled
reports sees an ``(eps, delta)``-DP output.  Feldman, McMillan and Talwar
reduce the question to two distributions over pairs of counts ("clones"):
with ``C ~ Bin(n - 1, e^-eps0)``, ``A ~ Bin(C, 1/2)``,
``alpha = e^eps0 / (e^eps0 + 1)`` and ``Delta ~ Bern(alpha)``,

    P = (A + Delta, C - A + 1 - Delta),  Q = (A + 1 - Delta, C - A + Delta),

and the shuffled output is ``(eps, delta)``-DP for every ``delta`` at least
the hockey-stick divergence ``D_{e^eps}(P || Q)`` (by symmetry equal to
``D_{e^eps}(Q || P)``).  :func:`shuffle_delta` computes that divergence:
given ``C = c`` the likelihood ratio ``P/Q`` at first count ``k`` grows with
``k``, so ``sum_k max(0, P(k) - e^eps Q(k))`` is one binomial tail per ``c``
(vectorized over ``c``); values of ``c`` outside the central ``1 - 1e-15``
of ``Bin(n - 1, e^-eps0)`` are charged their whole probability (an upper
bound).  :func:`shuffle_epsilon` finds the smallest ``eps`` with
``delta(eps) <= delta`` by bisection (``delta`` decreases in ``eps``; at
``eps0`` it is 0).  :func:`closed_form_epsilon` is the paper's Theorem 3.1.

What the guarantee covers in ``lopub serve``: the export is shuffled and
holds no token, arrival time or address, so anyone who receives only the
export (analysts, a published file) faces ``(eps, delta)``.  The service
itself sees each report arrive (address, time) and must be trusted as the
shuffler; against it the guarantee is the local ``eps0``.

References
----------
Feldman, McMillan, Talwar, "Hiding Among the Clones: A Simple and Nearly
Optimal Analysis of Privacy Amplification by Shuffling", FOCS 2021
(Theorem 3.2 and the numerical procedure of Sec. 5; closed form Theorem 3.1).
"""
from __future__ import annotations

import math

import numpy as np


_TAIL = 1e-15  # mass of Bin(n - 1, e^-eps0) left out on each side (charged to delta)


def _check(n: int, eps0: float, name: str = "n") -> tuple[int, float]:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"{name} ({n!r}) must be an integer >= 2 (users whose reports are shuffled)")
    if not (isinstance(eps0, (int, float)) and math.isfinite(eps0) and eps0 > 0):
        raise ValueError(f"eps0 ({eps0!r}) must be a finite number > 0 (the local epsilon)")
    return int(n), float(eps0)


def shuffle_delta(n: int, eps0: float, eps: float) -> float:
    """``delta`` at which shuffling ``n`` ``eps0``-LDP reports is ``(eps, delta)``-DP.

    References
    ----------
    Feldman, McMillan, Talwar, FOCS 2021, Theorem 3.2 (numerical evaluation).
    """
    from scipy import stats

    n, eps0 = _check(n, eps0)
    if not (math.isfinite(eps) and eps >= 0):
        raise ValueError(f"eps ({eps!r}) must be a finite number >= 0")
    if eps >= eps0:
        return 0.0
    alpha = 1.0 / (1.0 + math.exp(-eps0))
    e = math.exp(eps)
    t = (e * alpha - (1 - alpha)) / (alpha - e * (1 - alpha))  # ratio P/Q > e^eps iff k/(c-k+1) > t
    beta = t / (1 + t)
    binom_c = stats.binom(n - 1, math.exp(-eps0))
    lo, hi = int(binom_c.ppf(_TAIL)), int(binom_c.isf(_TAIL))
    c = np.arange(max(lo, 0), min(hi, n - 1) + 1)
    left_out = 1.0 - float(binom_c.cdf(c[-1]) - binom_c.cdf(c[0] - 1))
    k = np.floor(beta * (c + 1)).astype(np.int64) + 1  # first count with P/Q > e^eps
    ge_km1 = stats.binom.sf(k - 2, c, 0.5)  # Pr[A >= k - 1]
    ge_k = stats.binom.sf(k - 1, c, 0.5)  # Pr[A >= k]
    p_tail = alpha * ge_km1 + (1 - alpha) * ge_k
    q_tail = (1 - alpha) * ge_km1 + alpha * ge_k
    per_c = np.maximum(p_tail - e * q_tail, 0.0)
    return float(min(1.0, np.dot(binom_c.pmf(c), per_c) + max(left_out, 0.0)))


def shuffle_epsilon(n: int, eps0: float, delta: float, *, iterations: int = 40) -> float:
    """Smallest central ``eps`` (to ``eps0 / 2^iterations``) with ``shuffle_delta <= delta``.

    References
    ----------
    Feldman, McMillan, Talwar, FOCS 2021, Sec. 5 (binary search over eps).
    """
    n, eps0 = _check(n, eps0)
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ValueError(f"delta ({delta!r}) must be in (0, 1)")
    lo, hi = 0.0, eps0
    for _ in range(iterations):  # bisection: delta(eps) decreases in eps
        mid = (lo + hi) / 2
        if shuffle_delta(n, eps0, mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def closed_form_epsilon(n: int, eps0: float, delta: float) -> float | None:
    """The paper's closed-form bound, or ``None`` outside its range ``eps0 <= ln(n / (16 ln(2/delta)))``.

    ``log(1 + (e^eps0 - 1)/(e^eps0 + 1) (8 sqrt(e^eps0 ln(4/delta)) / sqrt(n) + 8 e^eps0 / n))``

    References
    ----------
    Feldman, McMillan, Talwar, FOCS 2021, Theorem 3.1.
    """
    n, eps0 = _check(n, eps0)
    if not (0 < delta < 1):
        raise ValueError(f"delta ({delta!r}) must be in (0, 1)")
    if eps0 > math.log(n / (16 * math.log(2 / delta))):
        return None
    ex = math.exp(eps0)
    amp = 8 * math.sqrt(ex * math.log(4 / delta)) / math.sqrt(n) + 8 * ex / n
    return math.log(1 + (ex - 1) / (ex + 1) * amp)


#: shuffling is reported as amplification only when its central epsilon is at most this share of the local one
MEANINGFUL_SHUFFLE = 0.9


def meaningful(central: float, eps0: float) -> bool:
    """Whether a central bound is worth stating as amplification: at most :data:`MEANINGFUL_SHUFFLE` of the
    local epsilon (a bound no lower than the local epsilon adds nothing)."""
    return central <= MEANINGFUL_SHUFFLE * eps0


def statement(n: int, eps0: float, delta: float, *, names: tuple[str, str] = ("n", "delta")
              ) -> dict[str, float | int | str | None]:
    """The figures ``lopub privacy --shuffle-n`` prints; ``names`` of n and delta for messages.
    ``note`` says when the shuffle gives no meaningful amplification (too few reports for ``eps0``)."""
    _check(n, eps0, names[0])
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ValueError(f"{names[1]} ({delta!r}) must be in (0, 1)")
    central = shuffle_epsilon(n, eps0, delta)
    out: dict[str, float | int | str | None] = {
        "shuffle_n": int(n), "delta": float(delta), "local_epsilon": float(eps0), "central_epsilon": central,
        "closed_form_epsilon": closed_form_epsilon(n, eps0, delta)}
    if not meaningful(central, eps0):
        out["note"] = (f"no meaningful amplification: {int(n):,} shuffled reports are too few at local epsilon "
                       f"{eps0:g} (central bound {central:.3g}); rely on the local guarantee")
    return out
