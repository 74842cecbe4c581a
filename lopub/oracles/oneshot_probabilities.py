"""The float probabilities of GRR, SUE and OUE as a device and a simulation realize them, exact to epsilon.

Each pair is the textbook one (Wang et al. 2017) rounded so that the exact
rational ratio of the floats is at most ``e^eps`` (:func:`~lopub.oracles.base.ratio_within`):
a device draws exactly Bernoulli(p) with these numbers.  Cached: planners ask again and again.
"""
from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np

from lopub.oracles.base import MIN_PROBABILITY, complement_down, logistic_tail, noisier_until, ratio_within, ue_ratio


@functools.lru_cache(maxsize=4096)  # the exact check costs ~0.1 ms; planners ask again and again
def grr_probabilities(eps: float, size: int) -> tuple[float, float]:
    """``(p, q) = (e^eps, 1) / (e^eps + size - 1)`` as a GRR sampler realizes them.

    ``q0 = e^-eps / (1 + (size - 1) e^-eps)`` (no overflow for any float
    ``eps``), ``p`` the largest float ``<= 1 - (size - 1) q0``
    (:func:`~lopub.oracles.base.complement_down`), lowered by an ulp while the
    exact ratio ``p (size - 1) / (1 - p)`` exceeds ``e^eps``
    (:func:`~lopub.oracles.base.ratio_within`; the rounding of ``e^-eps`` and
    of ``q0`` can leave it an ulp above), and ``q = (1 - p) / (size - 1)``, the
    probability of each other value that keeping with probability ``p`` followed
    by a uniform other value realizes.  So ``p / q <= e^eps`` holds exactly for
    the real probabilities of a device (exact Bernoulli(p)) and of
    :func:`_grr_on` (which keeps with a probability ``<= p``); for ``eps``
    above about ``36.7 + ln(size - 1)`` (``1 - p < 2^-52``) the mechanism stays
    the one at that budget.
    """
    tail = float(np.exp(-eps))
    q0 = max(tail / (1.0 + (size - 1) * tail), MIN_PROBABILITY)
    p = complement_down((size - 1) * q0)
    while p > 0.0 and not ratio_within(Fraction(p) * (size - 1) / (1 - Fraction(p)), eps):
        p = float(np.nextafter(p, 0.0))
    return p, (1.0 - p) / (size - 1)


@functools.lru_cache(maxsize=4096)  # exact checks, ~0.1 ms each; planners ask again and again
def sue_probabilities(eps: float) -> tuple[float, float]:
    """SUE's ``(p, q) = (e^(eps/2), 1) / (e^(eps/2) + 1)`` as float probabilities whose
    exact ratio ``p (1 - q) / ((1 - p) q)`` is ``<= e^eps``.

    ``q = 1 / (e^(eps/2) + 1)`` (finite for any ``eps``), raised by ulps while the
    exact ratio (:func:`~lopub.oracles.base.ue_ratio`) with ``p`` the largest
    float ``<= 1 - q`` exceeds ``e^eps``: the rounding of ``e^(-eps/2)``, of
    ``q`` and of ``1 - q`` left it above in about one budget in ten (SUE(0.05)).
    A device draws exactly Bernoulli(p) and Bernoulli(q) with these floats, so
    the bound holds for what it realizes.
    """
    q = noisier_until(logistic_tail(eps / 2),
                      lambda x: ratio_within(ue_ratio(complement_down(x), x), eps))
    return complement_down(q), q


@functools.lru_cache(maxsize=4096)
def oue_probabilities(eps: float) -> tuple[float, float]:
    """OUE's ``(p, q) = (1/2, 1 / (e^eps + 1))`` as float probabilities whose exact ratio
    ``(1 - q) / q`` is ``<= e^eps``: ``q`` raised by ulps where the rounding of
    ``e^-eps`` and of the quotient left it above (about half of all budgets)."""
    q = noisier_until(logistic_tail(eps), lambda x: ratio_within(ue_ratio(0.5, x), eps))
    return 0.5, q
