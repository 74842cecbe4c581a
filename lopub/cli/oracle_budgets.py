"""Checks of ``lopub collect``'s typed budgets for the frequency oracles, and the text that says
how it splits them over the attributes (so that an error names what was typed)."""
from __future__ import annotations

import argparse

import numpy as np

from lopub.oracles.longitudinal import loue_max_eps1
from lopub.cli.oracle_files import LIP, ORACLES


def _split(a: argparse.Namespace, d: int) -> str:
    """The typed budgets and how collect splits them over the ``d`` attributes (for errors)."""
    if a.protocol in LIP:
        return (f"--epsilon ({a.epsilon:g}) over {d} attributes: each attribute gets epsilon "
                f"{a.epsilon / d:.6g}")
    longitudinal = a.protocol.startswith("l-") or a.protocol == "allomfree"
    typed = f"--epsilon ({a.epsilon:g})" + (f", --eps-1 ({a.eps_1:g})" if longitudinal else "")
    if a.protocol == "allomfree":
        return f"{typed} (allomfree: each user reports one attribute at these budgets)"
    div, how = ((d, f"--solution spl over {d} attributes") if a.solution != "smp"
                else (a.r or 1, f"--solution smp with --r {a.r or 1}"))
    each = (f"eps_inf {a.epsilon / div:.6g} and eps_1 {a.eps_1 / div:.6g}" if longitudinal
            else f"epsilon {a.epsilon / div:.6g}")
    return f"{typed} and {how}: each attribute gets {each}"


def _check_budgets(a: argparse.Namespace, d: int) -> None:
    """Check the typed budgets before they are split over attributes."""
    if not (np.isfinite(a.epsilon) and a.epsilon > 0):
        raise ValueError(f"--epsilon ({a.epsilon:g}) must be a finite number > 0")
    if a.solution == "smp" and a.r is not None and a.protocol in ORACLES:
        if a.r < 1 or a.r > d:
            raise ValueError(f"--r ({a.r}) must be an integer >= 1" if a.r < 1 else
                             f"--r ({a.r}) must be <= the number of attributes ({d})")
    if not (a.protocol.startswith("l-") or a.protocol == "allomfree"):
        return
    if a.eps_1 is None:
        raise ValueError(f"--eps-1 is needed for {a.protocol} (0 < eps_1 < --epsilon)")
    if not 0 < a.eps_1 < a.epsilon:
        raise ValueError(f"--eps-1 ({a.eps_1:g}) must be > 0 and < --epsilon ({a.epsilon:g}) "
                         f"(one report cannot cost more than all reports together)")
    if a.protocol == "l-oue":
        div = d if a.solution != "smp" else (a.r or 1)
        how = (f"--solution spl over {d} attributes" if a.solution != "smp"
               else f"--solution smp with --r {a.r or 1}")
        ei, e1 = a.epsilon / div, a.eps_1 / div
        if not e1 < loue_max_eps1(ei):
            raise ValueError(
                f"--eps-1 ({a.eps_1:g}) must be < {div * loue_max_eps1(ei):.6g} for l-oue with "
                f"--epsilon ({a.epsilon:g}) and {how}: each attribute gets eps_inf = {ei:.6g} "
                f"and eps_1 = {e1:.6g}, and L-OUE needs eps_1 < ln((2 e^eps_inf + 1)/3) = "
                f"{loue_max_eps1(ei):.6g}; use l-osue or a smaller --eps-1")
