"""LH-LIP's condition on the budget: can a hash into ``g`` buckets give every bucket prior
mass ``>= 1/(e^eps + 1)``?

With ``m*`` the largest achievable mass of the lightest bucket over all assignments of
the values to ``g`` buckets, some hash can meet the condition iff
``1/(e^eps + 1) <= m*``, i.e. ``eps >= ln((1 - m*) / m*)``.  ``m*`` is a partition
problem; :func:`split_bounds` brackets it (exactly for two buckets and up to
:data:`EXACT_K` values) so that LH-LIP refuses at construction a budget that no hash
can meet, instead of failing its seed redraws at every user.
"""
from __future__ import annotations

import math

import numpy as np

from lopub.errors import LIPBudgetError

#: Largest domain whose two-bucket splits are all enumerated (2^k subset sums).
EXACT_K = 20


def split_bounds(prior: np.ndarray, g: int) -> tuple[float, float]:
    """``(lo, hi)`` with ``lo <= m* <= hi``: ``m*`` the best lightest-bucket mass of the
    values of ``prior`` split into ``g`` buckets.

    ``hi``: the ``j`` largest values take at most ``j`` buckets, so some other bucket has
    at most ``(1 - their sum) / (g - j)`` (``j = 0 .. g - 1``).  ``lo``: the greedy split
    (largest value first, to the lightest bucket).  For ``g = 2`` and at most
    :data:`EXACT_K` values, both are ``m*`` (every subset sum, vectorized).
    """
    p = np.sort(np.asarray(prior, dtype=float))[::-1]
    top = np.concatenate([[0.0], np.cumsum(p[:g - 1])])
    hi = max(0.0, float(min((1.0 - top[j]) / (g - j) for j in range(min(g, top.size)))))
    if p.size < g:
        return 0.0, 0.0
    if g == 2 and p.size <= EXACT_K:
        sums = np.zeros(1)
        for value in p[1:]:  # subsets of the other values (the largest on the other side)
            sums = np.concatenate([sums, sums + value])
        best = float(np.minimum(sums, 1.0 - sums).max())
        return best, best
    buckets = np.zeros(g)
    for value in p:  # greedy over the k values (not users): LPT
        buckets[buckets.argmin()] += value
    return float(buckets.min()), hi


def _round_up(x: float, digits: int = 6) -> float:
    """``x`` rounded up to ``digits`` significant digits (a budget one can type and meet)."""
    if x <= 0 or not math.isfinite(x):
        return x
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(x)))
    return math.ceil(x * scale * (1 - 1e-15)) / scale


def check_split_budget(prior: np.ndarray, epsilon: float, g: int, bound: float) -> None:
    """Refuse (:class:`~lopub.errors.LIPBudgetError`) a budget at which no hash of ``prior``
    into ``g`` buckets gives every bucket mass ``>= bound = 1/(e^eps + 1)``."""
    lo, hi = split_bounds(prior, g)
    if hi >= bound:
        return
    values = [f"{v:.4g}" for v in np.asarray(prior)]
    shown = "[" + ", ".join(values if len(values) <= 12 else values[:5] + ["..."] + values[-5:]) + "]"
    more = ", or a smaller g" if g > 2 else ""
    if hi <= 0.0:
        raise LIPBudgetError(f"LH-LIP with g ({g}) buckets needs at least g values; the prior "
                             f"{shown} has {prior.size}: use a smaller g, RR-LIP or UE-LIP")
    best = ("the best split of the prior into g buckets gives its lightest bucket" if hi - lo <= 1e-12
            else "no split of the prior into g buckets gives its lightest bucket more than")
    need = _round_up(math.log((1.0 - hi) / hi))
    raise LIPBudgetError(
        f"epsilon ({epsilon}) is too small for LH-LIP with the prior {shown} and g ({g}): "
        f"each user's hash must give every bucket prior mass >= 1/(e^eps + 1) = {bound:.6g}, and "
        f"{best} {hi:.6g}; LH-LIP needs epsilon >= ln((1 - {hi:.6g}) / {hi:.6g}) = {need:.6g} "
        f"for this prior: use a larger epsilon{more}, RR-LIP or UE-LIP")
