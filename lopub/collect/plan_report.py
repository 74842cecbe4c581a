"""The planner's answer (:func:`lopub.collect.planner.plan`): each protocol family's option with its
predicted mean 2-way TVD, the recommendation, the plan-time checks, the privacy statement, and the
predictions redone after a two-phase screen or a single-phase collection's own tables."""
from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from lopub.collect.adaptive import predict_plan_error
from lopub.collect.plan import MarginalPlan, PlanError

#: Per-record budget above which the planner adds a warning line.
WARN_EPSILON = 10.0


@dataclass(frozen=True)
class ProtocolOption:
    """One protocol family's parameters and predicted mean 2-way TVD."""

    protocol: str
    predicted_tvd: float
    params: dict[str, Any]
    description: str

    def to_dict(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "predicted_tvd": self.predicted_tvd,
                "params": self.params, "description": self.description}


@dataclass(frozen=True)
class PlanReport:
    """The planner's answer: options, recommendation, privacy statement.

    ``marginal_plan`` is the plan of the ``marginals`` option (``None`` when
    there are fewer users than attributes and only Bloom is possible; the
    screen's plan when the option is two-phase); ``two_phase`` is the
    :class:`~lopub.collect.twophase.TwoPhasePlan` of a two-phase option
    or the :class:`~lopub.collect.detect.DetectPlan` of a trimmed plan's
    detection screen (else ``None``).
    """

    n: int
    epsilon: float
    options: tuple[ProtocolOption, ...]
    recommended: str
    privacy: str
    warning: str | None
    marginal_plan: MarginalPlan | None = field(repr=False)
    two_phase: Any = field(default=None, repr=False)
    #: plan-time checks: group sizes of the sampling options (:mod:`lopub.collect.groups`)
    notes: tuple[str, ...] = ()
    #: protocol -> why it is not offered (too few users, no distinct Bloom filters)
    refused: dict = field(default_factory=dict)

    def option(self, protocol: str) -> ProtocolOption:
        """The option of ``protocol``.

        Raises
        ------
        PlanError
            The protocol was refused at plan time (the message says why) or is unknown.
        """
        for o in self.options:
            if o.protocol == protocol:
                return o
        if protocol in self.refused:
            raise PlanError(f"protocol {protocol!r} is not possible here: {self.refused[protocol]}")
        raise PlanError(f"protocol ({protocol!r}) must be one of {[o.protocol for o in self.options]}")

    def after_screen(self, predictions: dict[str, float], pilot: dict[str, Any] | None = None) -> "PlanReport":
        """This report with the ``marginals`` option predicted from a two-phase screen.

        ``predictions`` maps each main-phase candidate to its predicted mean
        2-way TVD from the screen's tables (:meth:`~lopub.collect.twophase.TwoPhasePlan.select`);
        the option's ``predicted_tvd`` becomes the chosen (lowest) one,
        ``params["screen_predictions"]`` keeps them all and ``params["main"]``
        names the choice.  A ``"bloom"`` entry (Bloom reports from the
        main-phase users, :func:`~lopub.collect.auto.collect`) becomes the
        ``bloom`` option's prediction, and the recommendation when it is the
        lowest (otherwise the recommendation is unchanged); a
        ``"one-attribute"`` entry becomes that option's prediction (both
        marked ``params["after_screen"]``).  ``pilot``: the screen's pilot outcome
        (:meth:`~lopub.collect.twophase.TwoPhasePlan.pilot_stops`), kept as
        ``params["pilot"]``; where it stopped the screen, ``params["n_screen"]`` becomes the
        pilot's users and a note says so.
        """
        if not predictions:
            return self
        other = ("bloom", "one-attribute")
        marg = {k: v for k, v in predictions.items() if k not in other}
        main = min(marg, key=lambda k: marg[k])
        opts = tuple(dataclasses.replace(o, predicted_tvd=marg[main], params={
            **o.params, "main": main, "screen_predictions": dict(marg)}) if o.protocol == "marginals"
            else dataclasses.replace(o, predicted_tvd=predictions[o.protocol], params={
                **o.params, "after_screen": True}) if o.protocol in other and o.protocol in predictions
            else o for o in self.options)
        rec = "bloom" if predictions.get("bloom", math.inf) < marg[main] else self.recommended
        notes, two = self.notes, self.two_phase
        if pilot and pilot["stopped"] and two is not None:  # the screen was its pilot
            two = dataclasses.replace(two, n_screen=pilot["users"], n_pilot=0)
        if pilot:
            opts = tuple(dataclasses.replace(o, params={
                **o.params, "pilot": dict(pilot), **({"n_screen": pilot["users"]} if pilot["stopped"] else {})})
                if o.protocol == "marginals" else o for o in opts)
            notes = notes + ((f"marginals: the screen's pilot of {pilot['users']} users "
                              + (f"stopped the screen: predicted {pilot['one_way']:.4f} with one attribute per "
                                 f"user for the others against {pilot['screen']:.4f} after the whole screen "
                                 "(the pilot's pairs show too little dependence to repay a screen)"
                                 if pilot["stopped"] else
                                 f"continued the screen: predicted {pilot['screen']:.4f} after it against "
                                 f"{pilot['one_way']:.4f} with one attribute per user after the pilot")),)
        return dataclasses.replace(self, options=opts, recommended=rec, notes=notes, two_phase=two)

    def after_collection(self, source: Any) -> PlanReport:
        """This report with the ``marginals`` and ``one-attribute`` predictions from a single-phase
        marginal collection's own tables (``source``, its measurements), where its plan measures
        every attribute pair (otherwise unchanged).

        The measured tables replace the uniform tables and the prior dependence
        (:class:`~lopub.collect.screen.ScreenProfile` with ``own_margins``), evaluated on a public
        sample of at most :data:`~lopub.collect.screen.MAX_SCREEN_PAIRS`
        pairs (:func:`~lopub.collect.screen.screen_pairs`); both options get
        ``params["after_collection"]``.  The recommendation is unchanged
        (the reports are collected).
        """
        from lopub.collect.screen import MAX_SCREEN_PAIRS, ScreenProfile, screen_pairs

        mplan = self.marginal_plan
        if mplan is None or self.two_phase is not None:
            return self
        domain = mplan.domain
        held = {frozenset(p) for s in mplan.subsets for p in itertools.combinations(s, 2)}
        if len(domain) < 2 or len(held) < len(domain) * (len(domain) - 1) // 2:
            return self
        profile = ScreenProfile(domain, source, own_margins=True)
        pairs = screen_pairs(domain, MAX_SCREEN_PAIRS)
        got = {"marginals": predict_plan_error(domain, self.n, self.epsilon, list(mplan.subsets),
                                               prior=profile, pairs=pairs),
               "one-attribute": predict_plan_error(domain, self.n, self.epsilon,
                                                   [(a,) for a in domain.attrs], prior=profile, pairs=pairs)}
        opts = tuple(dataclasses.replace(o, predicted_tvd=got[o.protocol], params={
            **o.params, "after_collection": True}) if o.protocol in got else o for o in self.options)
        return dataclasses.replace(self, options=opts)

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "epsilon_per_record": self.epsilon,
                "options": [o.to_dict() for o in self.options], "recommended": self.recommended,
                "privacy": self.privacy, "warning": self.warning,
                "marginal_plan": None if self.marginal_plan is None else self.marginal_plan.to_dict(),
                "two_phase": None if self.two_phase is None else {
                    "n_screen": self.two_phase.n_screen, "n_main": self.two_phase.n_main,
                    "n_pilot": getattr(self.two_phase, "n_pilot", 0),
                    "screen_plan_id": self.two_phase.screen.plan_id,
                    "screen_released": self.two_phase.keeps_screen},
                "checks": list(self.notes), "refused": dict(self.refused)}

    def to_text(self) -> str:
        lines = [f"n = {self.n} users, epsilon = {self.epsilon:g} per record",
                 "predicted mean 2-way TVD:"]
        for o in self.options:
            mark = "  <- recommended" if o.protocol == self.recommended else ""
            lines.append(f"  {o.protocol:<14} {o.predicted_tvd:.4f}  {o.description}{mark}")
        lines += [f"  {p:<14} refused: {why}" for p, why in self.refused.items()]
        lines += [f"check: {t}" for t in self.notes]
        if self.warning:
            lines.append(self.warning)
        lines.append(self.privacy)
        return "\n".join(lines)


def privacy_statement(epsilon: float) -> tuple[str, str | None]:
    """One-line privacy statement and, above :data:`WARN_EPSILON`, a warning line."""
    ratio = f"~{math.exp(epsilon):.3g}" if epsilon <= 700 else "more than 1e304"
    text = (f"Privacy: each user's report is epsilon-LDP with epsilon = {epsilon:g} for the whole "
            f"record: the probability of any report differs by at most a factor e^{epsilon:g} "
            f"({ratio}) between any two records.")
    warning = None
    if epsilon > WARN_EPSILON:
        warning = (f"WARNING: epsilon {epsilon:g} per record is a weak guarantee: one report can "
                   f"multiply an observer's odds about any property of the user's record by "
                   f"e^{epsilon:g} ({ratio}); deployed systems use about 1 to 8.")
    return text, warning
