"""A release's verdict: good / usable with caveats / not usable, with the reasons.

:func:`lopub.model.checks.assess` runs the checks -- all of them
need no true data, only the fitted model and the noisy measurements it was
fitted to (with their variances) -- and folds their findings into a
:class:`Verdict`:

* any finding of severity ``"fatal"`` makes the release **not usable**
  (e.g. the model is uniform where the measurements are not, a fit that did
  not move, noise that swamps every column);
* otherwise any ``"caveat"`` makes it **usable with caveats** (a strong
  measured dependency no edge kept, a fit that stopped early, columns lost
  in noise, subsets with few users...);
* otherwise the release is **good**, and the ``"ok"`` findings say why (it
  fits its measurements within their noise, keeps their dependencies, ...).

``"info"`` findings (a constant column) never change the level.
:func:`lopub.pipeline.steps.fit` computes the verdict once; it is stored in
the fit report (``model.meta["fit"]["verdict"]``, :meth:`Verdict.to_dict`)
and read back by the CLI, :class:`~lopub.pipeline.synthesizer.Synthesizer`,
the demo and the HTML report (:meth:`Verdict.from_dict`).  With the true
data (a simulation), :meth:`Verdict.with_findings` adds the measured
utility (:mod:`lopub.publish.report.verdict_block`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence


GOOD, CAVEATS, NOT_USABLE = "good", "usable with caveats", "not usable"
LEVELS = (GOOD, CAVEATS, NOT_USABLE)
SEVERITIES = ("fatal", "caveat", "info", "ok")


class ReleaseQualityWarning(UserWarning):
    """The release's verdict is "not usable" or "usable with caveats" (the message gives the reasons)."""


@dataclass(frozen=True)
class Finding:
    """One check's result.

    Attributes
    ----------
    check : str
        "fit", "uniform", "independence", "lost-dependency", "no-information",
        "small-groups", "hopeless", "convergence" or "real-data".
    severity : {"fatal", "caveat", "info", "ok"}
    message : str
        One plain sentence (or two) for the user.
    figures : dict
        The numbers behind it (statistics, degrees of freedom, attributes).
    """

    check: str
    severity: str
    message: str
    figures: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity ({self.severity!r}) must be one of {SEVERITIES}")

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "severity": self.severity, "message": self.message,
                "figures": dict(self.figures)}


@dataclass(frozen=True)
class Verdict:
    """Level and findings of a release (see the module docstring).

    Attributes
    ----------
    level : {"good", "usable with caveats", "not usable"}
    findings : tuple of Finding
    """

    level: str
    findings: tuple[Finding, ...] = ()

    @classmethod
    def of(cls, findings: Sequence[Finding]) -> "Verdict":
        """The verdict the findings imply (fatal > caveat > good)."""
        sev = {f.severity for f in findings}
        level = NOT_USABLE if "fatal" in sev else CAVEATS if "caveat" in sev else GOOD
        order = {s: i for i, s in enumerate(SEVERITIES)}
        return cls(level, tuple(sorted(findings, key=lambda f: order[f.severity])))

    def with_findings(self, more: Sequence[Finding]) -> "Verdict":
        """This verdict with ``more`` findings (e.g. from the true data), level recomputed."""
        return Verdict.of(list(self.findings) + list(more))

    @property
    def reasons(self) -> list[str]:
        """Why the level is what it is: fatal and caveat messages, or the "ok" ones when good."""
        bad = [f.message for f in self.findings if f.severity in ("fatal", "caveat")]
        return bad or [f.message for f in self.findings if f.severity == "ok"]

    @property
    def warnings(self) -> list[str]:
        """Messages of the fatal and caveat findings (empty for a good release)."""
        return [f.message for f in self.findings if f.severity in ("fatal", "caveat")]

    def summary(self) -> str:
        """One line: ``verdict: <level>`` and the first reason."""
        first = self.reasons[0] if self.reasons else ""
        more = len(self.reasons) - 1
        return f"verdict: {self.level}" + (f" -- {first}" if first else "") + (
            f" (+{more} more)" if more > 0 else "")

    def warning_text(self) -> str:
        """The text of a :class:`ReleaseQualityWarning`: the level and every reason."""
        return f"release verdict: {self.level}: " + " | ".join(self.warnings)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``fit --json``'s ``verdict`` field, ``model.meta["fit"]["verdict"]``)."""
        return {"level": self.level, "reasons": self.reasons,
                "findings": [f.to_dict() for f in self.findings]}

    @classmethod
    def from_dict(cls, obj: Any) -> "Verdict | None":
        """A verdict from :meth:`to_dict` (None for anything else: an older model file)."""
        if not isinstance(obj, Mapping) or obj.get("level") not in LEVELS:
            return None
        found = [Finding(str(f.get("check", "")), f["severity"], str(f.get("message", "")),
                         dict(f.get("figures") or {}))
                 for f in obj.get("findings") or [] if isinstance(f, Mapping) and f.get("severity") in SEVERITIES]
        return cls(str(obj["level"]), tuple(found))


def verdict_of(model: Any) -> "Verdict | None":
    """The verdict stored in ``model.meta["fit"]["verdict"]`` (None when there is none)."""
    fit = getattr(model, "meta", {}).get("fit")
    return Verdict.from_dict(fit.get("verdict")) if isinstance(fit, Mapping) else None
