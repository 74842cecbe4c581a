"""Epsilon accounting for LoPub's Bloom-filter randomized response.

References
----------
Ren et al., "LoPub: High-Dimensional Crowdsourced Data Publication with Local
Differential Privacy", IEEE TIFS 2018, Eq. 8: flipping each bit of a Bloom
filter with h hash functions with probability f gives
eps = 2 h ln((2 - f) / f) per attribute; a record of d attributes gives the sum.
"""
from __future__ import annotations

import decimal
import functools
import math
from decimal import Decimal
from fractions import Fraction
from typing import Sequence, cast

from lopub._util import check_int, check_open_unit, check_positive

#: the smallest eps/(2 sum h) for which f = 2/(1 + e^x) is below 1 in floating point
_SMALLEST_X = 4.5e-16


@functools.lru_cache(maxsize=1024)  # specs recompute their epsilon on every summary
def _log_odds(f: float) -> Decimal:
    """``ln((2 - f) / f)`` of the float ``f`` in ``(0, 1)``, exactly to 60 significant digits
    (:mod:`decimal`'s correctly rounded logarithms of the exact rational)."""
    ratio = (2 - Fraction(f)) / Fraction(f)
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        return ctx.ln(ratio.numerator) - ctx.ln(ratio.denominator)


def _exact(total_h: int, f: float) -> Decimal:
    """``2 total_h ln((2 - f)/f)`` of the float ``f``, to 60 significant digits."""
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        return 2 * total_h * _log_odds(f)


def _stated(total_h: int, f: float) -> float:
    """:func:`_exact` rounded once to the nearest float: an exact value ``<= epsilon``
    (a float) is then never stated above it."""
    return float(_exact(total_h, f))


def epsilon_per_attribute(f: float, h: int) -> float:
    """eps of one attribute's randomized Bloom filter: 2 h ln((2 - f)/f) (Eq. 8), the exact
    value of the float ``f`` correctly rounded."""
    return _stated(check_int("h", h, 1), check_open_unit("f", f))


def epsilon_per_record(f: float, h: int | Sequence[int], d: int | None = None) -> float:
    """eps of a whole record: sum over attributes of 2 h_j ln((2 - f)/f), i.e.
    ``2 (sum_j h_j) ln((2 - f)/f)``, exact and rounded once (not a float sum of
    rounded terms, which can land an ulp above the budget ``f`` was chosen for).

    ``h`` is one int (with ``d`` attributes) or a sequence of per-attribute h_j.
    """
    f = check_open_unit("f", f)
    if not isinstance(h, (list, tuple)):  # d equal attributes: no list of d entries (d may be huge)
        if d is None:
            raise ValueError("d (number of attributes) is required when h is a single int")
        return _stated(check_int("d", d, 1) * check_int("h", cast(int, h), 1), f)
    return _stated(sum(_hs(h, d)), f)


def f_for_epsilon(epsilon: float, h: int | Sequence[int], d: int | None = None) -> float:
    """Flip probability giving a per-record budget ``epsilon``: f = 2 / (1 + e^(eps / (2 sum_j h_j))),
    raised by ulps (more noise) until the exact ``2 (sum_j h_j) ln((2 - f)/f)`` of the float
    ``f`` is ``<= epsilon``: the rounding of ``e^x`` and of the quotient left it above
    (``--epsilon 4`` stated 4.000000000000001) in about half of all budgets."""
    epsilon = check_positive("epsilon", epsilon)
    total_h = (check_int("h", cast(int, h), 1) * check_int("d", d, 1) if not isinstance(h, (list, tuple))
               and d is not None else sum(_hs(h, d)))
    x = epsilon / (2.0 * total_h)
    if x > 700.0:  # e^x overflows a float and f underflows to 0
        raise ValueError(f"epsilon ({epsilon:g}) is too large for {total_h} hash functions in all: "
                         f"f = 2/(1 + e^(eps/(2 sum h))) would be below 1e-304; the largest "
                         f"usable epsilon is {1400.0 * total_h:g}")
    f = 2.0 / (1.0 + math.exp(x))
    while f < 1.0 and _exact(total_h, f) > Decimal(epsilon):
        f = math.nextafter(f, 1.0)
    if f >= 1.0:  # e^x rounds to 1: no flip probability below 1 exists in floating point
        smallest = 2.0 * total_h * _SMALLEST_X
        raise ValueError(f"epsilon ({epsilon:g}) is too small for {total_h} hash functions in all: "
                         f"f = 2/(1 + e^(eps/(2 sum h))) rounds to 1 (every bit a fair coin, no "
                         f"information); epsilon must be >= {smallest:.3g}")
    return f


def _hs(h: int | Sequence[int], d: int | None) -> list[int]:
    if isinstance(h, (list, tuple)):
        if d is not None and d != len(h):
            raise ValueError(f"d ({d}) does not match the {len(h)} per-attribute h values")
        return [check_int("h", x, 1) for x in h]
    if d is None:
        raise ValueError("d (number of attributes) is required when h is a single int")
    return [check_int("h", cast(int, h), 1)] * check_int("d", d, 1)
