"""Small shared helpers: randomness resolution and input checks.

Every stochastic function in lopub takes a keyword-only
``rng: numpy.random.Generator | int | None`` and resolves it once with
:func:`resolve_rng`.  ``None`` draws fresh OS entropy (what a deployed client
must use); an ``int`` seeds a reproducible generator (simulation and tests).
"""
from __future__ import annotations

import numbers

import numpy as np


def resolve_rng(rng: np.random.Generator | int | None, name: str = "rng") -> np.random.Generator:
    """Return a Generator: passed through, seeded from an int, or OS entropy for None; ``name``: the
    parameter's name in the caller's signature, for the messages."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng()  # OS entropy via SeedSequence()
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if int(rng) < 0:
            raise ValueError(f"{name} ({rng}) must be a non-negative integer seed")
        return np.random.default_rng(int(rng))
    raise TypeError(
        f"{name} ({rng!r}) must be a numpy.random.Generator, a non-negative int seed or None"
    )


def check_open_unit(name: str, value: float) -> float:
    """Check that ``value`` is a real number in the open interval (0, 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} ({value!r}) must be a real number")
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} ({value}) must be in (0, 1)")
    return value


def check_positive(name: str, value: float) -> float:
    """Check that ``value`` is a finite real number > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} ({value!r}) must be a real number")
    try:
        value = float(value)
    except OverflowError:  # an int beyond the floats, such as 10**400
        digits = len(str(abs(int(value))))
        raise ValueError(f"{name} (an integer of {digits} digits) must be a finite number > 0 "
                         f"(it is beyond the largest float, about 1.8e308)") from None
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} ({value}) must be a finite number > 0")
    return value


def check_int(name: str, value: int, minimum: int) -> int:
    """Check that ``value`` is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} ({value!r}) must be an integer")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} ({value}) must be an integer >= {minimum}")
    return value


def seed_arg(text: str) -> int:
    """argparse type of ``--seed``: a non-negative integer."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"seed ({text!r}) must be a non-negative integer")
    return value
