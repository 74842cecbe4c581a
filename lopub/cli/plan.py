"""``lopub plan``: predicted error of each protocol family at a per-record budget, and the choice."""
from __future__ import annotations

import argparse
import json
import math

from lopub.cli._commands import add_command
from lopub.cli._common import add_verbosity
from lopub.cli._public import add_public, planner_knowledge


def cmd_plan(a: argparse.Namespace) -> None:
    from lopub.collect import plan
    from lopub.data.domain import Domain

    if not (math.isfinite(a.epsilon) and a.epsilon > 0):
        raise ValueError(f"--epsilon ({a.epsilon:g}) must be a finite number > 0")
    if a.n < 1:
        raise ValueError(f"--n ({a.n}) must be an integer >= 1 (the number of users)")
    domain = Domain.from_json(a.domain)
    report = plan(domain, a.n, a.epsilon, **planner_knowledge(a, domain))
    print(json.dumps(report.to_dict(), indent=1, default=str) if a.json else report.to_text())


def _register_plan(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "plan", description=(
        "For a per-record budget, predict the mean 2-way TVD of the release of each protocol "
        "family from the analytic variances -- LoPub Bloom reports (best h, collision-free m), one "
        "attribute per user (best oracle), marginal sampling with the adaptive plan -- and "
        "recommend the best; print the privacy statement.  Checked at plan time with the given "
        "--n: every subset of a sampling plan gets at least its minimum of users (the plan is "
        "cut to fit, or the protocol refused with the reason); the `check:` lines say so.  "
        "`lopub collect --protocol auto` collects with the recommendation.  The predictions assume "
        "uniform one-way tables and a mean pair dependence of 0.1 unless --public data (or --dependence) "
        "says what the data are like."))
    p.add_argument("--domain", required=True, help="domain JSON (the public schema)")
    p.add_argument("--n", required=True, type=int, help="number of users")
    p.add_argument("--epsilon", required=True, type=float, help="privacy budget per user (per record)")
    add_public(p)
    p.add_argument("--json", action="store_true", help="print the predictions as JSON")
    add_verbosity(p)
    p.set_defaults(func=cmd_plan)


REGISTER = {"plan": _register_plan}


def register(sub: argparse._SubParsersAction) -> None:
    for register_command in REGISTER.values():
        register_command(sub)
