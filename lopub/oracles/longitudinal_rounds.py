"""Round probabilities of the longitudinal protocols (:mod:`lopub.oracles.longitudinal`).

The formulas of the ALLOMFREE paper (Sec. 4) in floating point, then adjusted by
ulps toward more noise until the float probabilities keep both budgets exactly:
round 1 at ``eps_inf`` and one report (both rounds) at ``eps_1``, checked on the
exact rationals of the floats (:func:`~lopub.oracles.base.ratio_within`).  A
device draws exactly Bernoulli with these floats, and the simulated samplers
realize probabilities that only lower the ratios.

References
----------
Arcolezi, Couchot, Al Bouna, Xiao, "Improving the utility of locally
differentially private protocols for longitudinal and multidimensional
frequency estimates", Digital Communications and Networks 2022, Sec. 4,
Eq. 13-14.
"""
from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np

from lopub.oracles.base import MIN_PROBABILITY, complement_down, noisier_until, ratio_within
from lopub.oracles.oneshot import grr_probabilities, oue_probabilities, sue_probabilities


def _exp_gap(eps_small: float, eps_large: float) -> float:
    """``e^-eps_small - e^-eps_large`` (> 0 for ``eps_small < eps_large``), without cancellation."""
    return float(-np.exp(-eps_small) * np.expm1(eps_small - eps_large))


def lgrr_paper_round2(eps_inf: float, eps_1: float, k: int) -> tuple[float, float]:
    """Round-2 ``(p2, q2)`` of the paper's L-GRR (Eq. 13), finite for every budget.

    ``p2 = (ab - 1) / (-k b + (k - 1) a + b + ab - 1)`` with ``a = e^eps_inf``,
    ``b = e^eps_1``, divided through by ``ab``: ``q2 = (1 - p2) / (k - 1) =
    (B - A) / ((1 - AB) + (k - 1)(B - A))`` with ``A = e^-eps_inf``,
    ``B = e^-eps_1``; then rounded as the sampler realizes it
    (:func:`_grr_round`).

    References
    ----------
    ALLOMFREE paper, Sec. 4.1, Eq. 13.
    """
    both, gap = -np.expm1(-(eps_inf + eps_1)), _exp_gap(eps_1, eps_inf)
    return _grr_round(gap / (both + (k - 1) * gap), k)


def lgrr_exact_round2(eps_inf: float, eps_1: float, k: int) -> tuple[float, float]:
    """Round-2 ``(p2, q2)`` of the exact L-GRR: keep-probability ``alpha(eps_1) /
    alpha(eps_inf)`` with ``alpha(eps) = (e^eps - 1) / (e^eps + k - 1)``.

    ``q2 = (1 - alpha2) / k = (B - A) / ((1 + (k - 1) B)(1 - A))`` (no
    cancellation), rounded as the sampler realizes it (:func:`_grr_round`).
    """
    big_b = np.exp(-eps_1)
    q2 = _exp_gap(eps_1, eps_inf) / ((1 + (k - 1) * big_b) * -np.expm1(-eps_inf))
    return _grr_round(q2, k)


def _grr_round(q: float, k: int) -> tuple[float, float]:
    """``(p, q)`` of a GRR step with other-value probability ``q``: ``p`` the largest
    float ``<= 1 - (k - 1) q`` and ``q = (1 - p) / (k - 1)`` (what ``_grr_on`` draws)."""
    p = complement_down((k - 1) * max(float(q), MIN_PROBABILITY))
    return p, (1.0 - p) / (k - 1)


def grr_report_ratio(p1: float, p2: float, k: int) -> Fraction:
    """The exact privacy ratio of one report of two chained GRR steps over ``k`` values
    that keep with the float probabilities ``p1``, ``p2`` (else a uniform other value):
    ``P(y = x | x) / P(y = x | x')``, with ``q_i = (1 - p_i) / (k - 1)``."""
    p1_, p2_ = Fraction(p1), Fraction(p2)
    q1_, q2_ = (1 - p1_) / (k - 1), (1 - p2_) / (k - 1)
    same = p1_ * p2_ + (k - 1) * q1_ * q2_
    return same / (q1_ * p2_ + p1_ * q2_ + (k - 2) * q1_ * q2_)


@functools.lru_cache(maxsize=4096)  # exact checks, ~0.1 ms each; ALLOMFREE's choice asks often
def lgrr_rounds(eps_inf: float, eps_1: float, k: int, variant: str) -> tuple[float, float, float, float]:
    """``(p1, q1, p2, q2)`` of L-GRR: round 1 :func:`~lopub.oracles.oneshot_probabilities.grr_probabilities`
    at ``eps_inf``, round 2 the variant's (:func:`lgrr_paper_round2`,
    :func:`lgrr_exact_round2`) with ``p2`` lowered by ulps until one report's exact
    ratio (:func:`grr_report_ratio`) is ``<= e^eps_1``: the float rounding left the
    exact variant above in about one case in thirteen (any ``k``), the paper's at
    ``k = 2``, where it is exact, in a few (for ``k > 2`` it is below by design).  A
    lower ``p2`` is a smaller keep probability, more noise."""
    p1, q1 = grr_probabilities(eps_inf, k)
    round2 = lgrr_paper_round2 if variant == "paper" else lgrr_exact_round2
    p2, _ = round2(eps_inf, eps_1, k)
    while p2 > 1.0 / k and not ratio_within(grr_report_ratio(p1, p2, k), eps_1):
        p2 = float(np.nextafter(p2, 0.0))
    return p1, q1, p2, (1.0 - p2) / (k - 1)


def ue_report_ratio(p1: float, q1: float, p2: float, q2: float) -> Fraction:
    """The exact privacy ratio ``Ps (1 - Qs) / ((1 - Ps) Qs)`` of one report of a
    two-round unary protocol (Eq. 14) with the float round probabilities, where
    ``Ps = p1 p2 + q2 (1 - p1)`` and ``Qs = p2 q1 + q2 (1 - q1)``."""
    p1_, q1_, p2_, q2_ = (Fraction(x) for x in (p1, q1, p2, q2))
    ps, qs = p1_ * p2_ + q2_ * (1 - p1_), p2_ * q1_ + q2_ * (1 - q1_)
    return ps * (1 - qs) / ((1 - ps) * qs)


def _round2_within(p1: float, q1: float, q2: float, eps_1: float,
                   p2: float | None = None) -> tuple[float, float]:
    """Round 2 ``(p2, q2)`` with ``q2`` raised by ulps until one report's exact ratio
    (:func:`ue_report_ratio`) is ``<= e^eps_1``; ``p2`` fixed, or (``None``, symmetric
    round 2) the largest float ``<= 1 - q2``.  Every step adds noise: a larger
    ``q2`` moves ``Ps`` and ``Qs`` together toward ``1/2``."""
    def p2_of(x: float) -> float:
        return complement_down(x) if p2 is None else p2

    q2 = noisier_until(max(float(q2), MIN_PROBABILITY),
                       lambda x: ratio_within(ue_report_ratio(p1, q1, p2_of(x), x), eps_1))
    return p2_of(q2), q2


@functools.lru_cache(maxsize=4096)  # exact checks, ~0.1 ms each
def lsue_rounds(eps_inf: float, eps_1: float) -> tuple[float, float, float, float]:
    """``(p1, q1, p2, q2)`` of L-SUE: round 1 SUE at ``eps_inf``
    (:func:`~lopub.oracles.oneshot_probabilities.sue_probabilities`, its exact ratio ``<= e^eps_inf``),
    round 2 symmetric with ``q2 = 1 - p2 = (B' - A') / ((1 + B')(1 - A'))``,
    ``A' = e^-(eps_inf/2)``, ``B' = e^-(eps_1/2)``, raised by ulps until one
    report's exact ratio is ``<= e^eps_1`` (the float rounding left it above
    in about one case in six)."""
    p1, q1 = sue_probabilities(eps_inf)
    den = (1 + np.exp(-eps_1 / 2)) * -np.expm1(-eps_inf / 2)
    return (p1, q1) + _round2_within(p1, q1, _exp_gap(eps_1 / 2, eps_inf / 2) / den, eps_1)


@functools.lru_cache(maxsize=4096)
def losue_rounds(eps_inf: float, eps_1: float) -> tuple[float, float, float, float]:
    """``(p1, q1, p2, q2)`` of L-OSUE: round 1 OUE at ``eps_inf``
    (:func:`~lopub.oracles.oneshot_probabilities.oue_probabilities`), round 2 symmetric with
    ``p2 = (ab - 1) / (ab + a - b - 1)`` (divided through by ``ab``), ``q2``
    raised by ulps until one report's exact ratio is ``<= e^eps_1``."""
    p1, q1 = oue_probabilities(eps_inf)
    both, gap = -np.expm1(-(eps_inf + eps_1)), _exp_gap(eps_1, eps_inf)
    return (p1, q1) + _round2_within(p1, q1, gap / (both + gap), eps_1)


@functools.lru_cache(maxsize=4096)
def loue_rounds(eps_inf: float, eps_1: float) -> tuple[float, float, float, float]:
    """``(p1, q1, p2, q2)`` of L-OUE: OUE at ``eps_inf``, then ``p2 = 1/2`` and ``q2``
    (:func:`loue_q2`) raised by ulps until one report's exact ratio is ``<= e^eps_1``
    (the ratio falls as ``q2`` grows toward ``1/2``)."""
    p1, q1 = oue_probabilities(eps_inf)
    return (p1, q1) + _round2_within(p1, q1, loue_q2(eps_inf, eps_1), eps_1, p2=0.5)


def loue_q2(eps_inf: float, eps_1: float) -> float:
    """Round-2 ``q2`` of L-OUE: the root in ``[0, 1/2]`` of Eq. 14, in closed form.

    With ``Ps = 1/4 + q2/2``, ``Qs = c + d q2`` (``c = q1/2``, ``d = 1 - q1``),
    ``Ps (1 - Qs) = e^eps_1 (1 - Ps) Qs`` is the quadratic
    ``a2 q2^2 + a1 q2 + a0 = 0``; divided by ``e^eps_1`` and written with
    ``A = e^-eps_inf``, ``B = e^-eps_1``: ``a2 = 2 (1 - B) / (1 + A)``,
    ``a1 = (B - 1) + 2 (A - 1) / (1 + A)`` (< 0) and
    ``a0 = (2 (B - A) - A (1 - B)) / (2 (1 + A))`` (> 0 when L-OUE is
    feasible).  The root ``2 a0 / (-a1 + sqrt(a1^2 - 4 a2 a0))`` has no
    cancellation and stays accurate where ``q2`` is tiny (large ``eps_1``).

    References
    ----------
    ALLOMFREE paper, Sec. 4.2, Eq. 14.
    """
    big_a, one_minus_b = np.exp(-eps_inf), -np.expm1(-eps_1)
    a2 = 2 * one_minus_b / (1 + big_a)
    a1 = -one_minus_b + 2 * np.expm1(-eps_inf) / (1 + big_a)
    a0 = (2 * _exp_gap(eps_1, eps_inf) - big_a * one_minus_b) / (2 * (1 + big_a))
    return float(2 * a0 / (-a1 + np.sqrt(max(a1 * a1 - 4 * a2 * a0, 0.0))))


def loue_max_eps1(eps_inf: float) -> float:
    """Largest single-report budget L-OUE can reach: ``ln((2 e^eps_inf + 1) / 3)``."""
    if eps_inf > 1.0:  # eps_inf + ln((2 + e^-eps_inf) / 3): no overflow
        return float(eps_inf + np.log((2 + np.exp(-eps_inf)) / 3))
    return float(np.log1p(2 * np.expm1(eps_inf) / 3))  # exact for tiny eps_inf
