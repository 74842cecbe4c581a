"""Exact float parameters of the encoded LIP mechanisms (UE-LIP's ``q``, LH-LIP's keep threshold).

The closed forms of the LIP paper, evaluated in floats, can land a hair outside
``[e^-eps, e^eps]``; these helpers compute UE-LIP's exact ratio extremes
(:func:`ue_lip_bounds`, in rationals under the float prior) and move each
parameter by ulps until the bound holds exactly (:func:`ue_lip_q`,
:func:`lh_keep_threshold`).  Used by :class:`~lopub.oracles.lip_encoded.UELIP`
and :class:`~lopub.oracles.lip_encoded.LHLIP`; :mod:`lopub.oracles.lip_encoded`
re-exports them.

References
----------
Jiang, Li, Tandon, "Local Information Privacy and Its Application to
Privacy-Preserving Data Aggregation", IEEE TDSC 2022 (LIP paper), Thm. 4
(UE-LIP) and LH-LIP; PAPERS.md Sec. 4.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from lopub.client.randomize import uniform_threshold
from lopub.oracles.base import MIN_PROBABILITY, noisier_until, ratio_within, ue_ratio


def lh_keep_threshold(eps: float) -> float:
    """The largest multiple of ``2^-53`` that is ``<= 1 - e^-eps`` exactly: LH-LIP keeps
    ``h(x)`` when ``rng.random()`` (a multiple of ``2^-53``) is below it, so with
    probability exactly the threshold, never above ``1 - e^-eps`` (``rng.random() <
    -expm1(-eps)`` could be, by up to ``2^-53``)."""
    t = uniform_threshold(float(-np.expm1(-eps)))
    while t > 0.0 and not ratio_within(1 / (1 - Fraction(t)), eps):  # 1 / (1 - t) <= e^eps
        t -= 2.0 ** -53
    return t


def ue_lip_bounds(prior: np.ndarray, q: float) -> tuple[Fraction, Fraction]:
    """The exact extremes of ``P(y) / P(y | x)`` for UE-LIP (own bit 1 w.p. ``1/2``,
    others w.p. ``q``) under the float ``prior`` (taken as the exact rationals it
    holds, normalized by their exact sum ``S``).

    ``P(y | x') / P(y | x) = L(y_x') / L(y_x)`` with ``L(1) = p / q`` and
    ``L(0) = (1 - p) / (1 - q)``, so ``P(y) / P(y | x)`` is largest for ``y_x = 0``
    and every other bit 1, ``(Pmin + (S - Pmin) R) / S``, and smallest for
    ``y_x = 1`` and every other bit 0, ``(Pmin + (S - Pmin) / R) / S``, with
    ``R = (1 - q) / q`` the unary ratio and ``Pmin`` the smallest prior
    mass.  LIP at ``eps`` needs them in ``[e^-eps, e^eps]``.
    """
    return _lip_extremes(*_prior_mass(prior), q)


def _prior_mass(prior: np.ndarray) -> tuple[Fraction, Fraction]:
    """The smallest mass and the sum of a float prior, exactly."""
    return Fraction(float(prior.min())), sum((Fraction(float(x)) for x in prior), Fraction(0))


def _lip_extremes(pmin: Fraction, total: Fraction, q: float) -> tuple[Fraction, Fraction]:
    ratio = ue_ratio(0.5, q)
    return (pmin + (total - pmin) / ratio) / total, (pmin + (total - pmin) * ratio) / total


def ue_lip_q(prior: np.ndarray, eps: float) -> float:
    """UE-LIP's ``q = (1 - Pmin) / (e^eps - 2 Pmin + 1)`` (LIP paper, Thm. 4; times
    ``e^-eps`` above and below, no overflow), raised by ulps until both extremes of
    :func:`ue_lip_bounds` are exactly within ``[e^-eps, e^eps]``: the rounding left the
    upper one (tight by the theorem) above ``e^eps`` for many priors and budgets.  A
    larger ``q`` lowers ``R`` and moves both extremes toward 1."""
    pmin, tail = float(prior.min()), float(np.exp(-eps))
    q = float((1 - pmin) * tail / (1 + (1 - 2 * pmin) * tail))

    mass = _prior_mass(prior)

    def within(x: float) -> bool:
        low, high = _lip_extremes(*mass, x)
        return ratio_within(high, eps) and ratio_within(1 / low, eps)

    return noisier_until(max(q, MIN_PROBABILITY), within)
