"""Tour 40: the float probabilities of the unary encodings (SUE, OUE, their longitudinal
protocols, UE-LIP) and of the plans served to devices keep epsilon exactly.

A device draws exactly Bernoulli(p) with the published float p (lopub.client.device, the JS
client, bernoulli_fill), so the float pair itself is the mechanism: its exact ratio, computed
here with Fractions and compared with e^eps to 60 digits, must not exceed e^eps.
"""
import decimal
import itertools
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

import lopub.oracles as O
from lopub import Attribute, Domain
from lopub.client import device
from lopub.collect import MarginalPlan

GRID = 2 ** 53  # Generator.random draws j / 2^53
EPSILONS = [float(e) for e in np.round(np.linspace(0.05, 12, 240), 4)] + [0.001, 0.01, 15.0, 20.0,
                                                                            30.0, 40.0, 75.0]


def _within_exp(ratio: Fraction, eps: float) -> bool:
    """ratio <= e^eps, exactly (e^eps to 60 digits; a ratio of floats is never that close)."""
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        return Decimal(ratio.numerator) / Decimal(ratio.denominator) <= Decimal(eps).exp()


def _ue_ratio(p, q) -> Fraction:
    p, q = Fraction(p), Fraction(q)
    return p * (1 - q) / ((1 - p) * q)


def _enumerated_ratio(k: int, p, q) -> Fraction:
    """max over reports y and inputs x, x' of P(y | x) / P(y | x'), every y of 2^k bits."""
    p, q = Fraction(p), Fraction(q)

    def prob(y, x):
        return math.prod((p if j == x else q) if b else (1 - (p if j == x else q)) for j, b in enumerate(y))

    rows = [[prob(y, x) for y in itertools.product((0, 1), repeat=k)] for x in range(k)]
    return max(a / b for col in zip(*rows) for a in col for b in col)


def _failures(check, cases):
    return [case for case in cases if not check(*case)]


@pytest.mark.parametrize("cls", [O.SUE, O.OUE])
def test_sue_and_oue_float_probabilities_keep_epsilon_exactly(cls):
    """OUE(eps).q = 1/(e^eps + 1) rounded: its exact ratio (1 - q)/q was above e^eps for 117 of
    the 240 budgets in 0.05..12 (OUE(1.5), the shared vectors' plan: q 0.18242552380635632),
    SUE's p (1 - q)/((1 - p) q) for 23 (the rounding of e^(-eps/2), q and 1 - q).  The device
    draws exactly those floats, so it was eps + ~1e-16 LDP."""
    def ok(eps):
        o = cls(eps, 5)
        return o.q < o.p and _within_exp(_ue_ratio(o.p, o.q), eps)

    assert _failures(ok, [(e,) for e in EPSILONS]) == []


@pytest.mark.parametrize("eps", [0.05, 0.1, 0.25, 0.6, 1.5, 3.0])
@pytest.mark.parametrize("cls", [O.SUE, O.OUE])
def test_unary_worst_case_is_the_one_ratio_checked(cls, eps):
    """The enumerated channel of every 3-bit report (Fractions) has the unary ratio as its
    maximum, so checking p (1 - q)/((1 - p) q) covers both directions of every pair."""
    o = cls(eps, 3)
    assert _enumerated_ratio(3, o.p, o.q) == _ue_ratio(o.p, o.q)
    assert _within_exp(_enumerated_ratio(3, o.p, o.q), eps)


def test_unary_probabilities_move_toward_more_noise_only():
    """The fix raises q by ulps (p = 1/2 for OUE; p the largest float <= 1 - q for SUE): never
    less noise than the formula's rounding, and only a few ulps from it."""
    for eps in EPSILONS[:240]:
        tail = 1 / (math.exp(eps) + 1)
        q = O.OUE(eps, 4).q
        assert q >= tail * (1 - 1e-15) and abs(q - tail) <= 8 * math.ulp(tail)
        s = O.SUE(eps, 4)
        assert s.p <= 1 - s.q and abs(s.q - 1 / (math.exp(eps / 2) + 1)) <= 8 * math.ulp(s.q)


def test_served_marginal_plan_oracles_keep_epsilon_exactly():
    """A served plan carries each subset's p, q (and g) to the devices (device.oracle_params,
    what lopub.js randomizes with): the OUE subsets' pairs were above e^eps as OUE's were."""
    dom = Domain([Attribute("a", ["x", "y"]), Attribute("b", ["1", "2", "3"]),
                  Attribute("c", [f"c{i}" for i in range(40)])])
    subsets, oracles = (("a", "b"), ("c",), ("b", "c")), ("grr", "oue", "olh")

    def ok(eps):
        plan = MarginalPlan(dom, subsets, eps, oracles=oracles)
        for i in range(plan.n_subsets):
            prm = device.oracle_params(plan, i)
            p = Fraction(prm["p"])
            if prm["oracle"] == "oue":
                ratio = _ue_ratio(prm["p"], prm["q"])
            else:  # keep w.p. p, else one of the other n - 1 uniformly
                n = prm["k"] if prm["oracle"] == "grr" else prm["g"]
                ratio = p * (n - 1) / (1 - p)
            if not _within_exp(ratio, eps):
                return False
        return True

    assert _failures(ok, [(e,) for e in EPSILONS[:240:2]]) == []
