"""The options of a fit, with their defaults and checks in one place.

:class:`FitOptions` is what :func:`lopub.pipeline.fit` and
:func:`lopub.pipeline.dependency` take, what ``lopub fit`` and ``lopub graph``
build from their flags, what :class:`~lopub.Synthesizer` checks its parameters
with and what ``lopub demo`` passes on: a frozen value, checked when built, so
a bad option is refused (named, with what was expected) before any work.

>>> from lopub.pipeline.options import FitOptions
>>> FitOptions(phi=0.3).replace(method="moment").method
'moment'
>>> FitOptions(release="best")
Traceback (most recent call last):
...
ValueError: release ('best') must be one of ('pgm', 'cliques')
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from lopub._util import check_int
from lopub.dependency.graph import STRUCTURES, check_phi
from lopub.dependency.junction import HEURISTICS
from lopub.estimate.registry import METHODS

RELEASES = ("pgm", "cliques")
#: keys of ``FitOptions.fit_options``, passed to :func:`lopub.model.pgm.fit_mrf`
MRF_OPTIONS = ("accelerate", "max_iter", "memory_budget", "tol")


@dataclass(frozen=True)
class FitOptions:
    """Every option of a LoPub fit (see :func:`lopub.pipeline.fit` for what each does).

    Parameters
    ----------
    phi : float in (0, 1]
        Dependency degree (Eq. 26) of structure "phi"; the pruning share with ``prune``.
    method : str
        Estimator of Bloom reports' marginals, one of :data:`lopub.estimate.METHODS`.
    release : {"pgm", "cliques"}
        Graphical model fitted to the measurements, or the paper's clique joints.
    structure : {"auto", "phi", "tree"}
        Edge rule: noise-aware test, MI >= tau(phi), or a Chow-Liu tree.
    prune : bool
        Entropy-based pruning (Alg. 5); an option of structure "phi".
    clique_budget : int >= 1, optional
        Largest clique in cells (None: :func:`lopub.pipeline.steps.default_clique_budget`).
    heuristic : {"min-fill", "min-size"}
        Elimination order of the junction tree.
    model_phi : float in (0, 1], optional
        Structure "phi": the junction tree's own dependency degree.
    measure_triples : bool or int >= 0
        Release "pgm": also measure three-way marginals inside cliques (an int caps them).
    shrink : bool
        Release "pgm": empirical-Bayes shrinkage priors in the model fit (one-way
        tables towards uniform or towards the mean table of the attributes with as
        many categories, by what their noise cannot explain; :mod:`lopub.model.pgm.shrink`).
    estimator_options, prune_options, structure_options : mapping
        Passed to the estimator, to Alg. 5, to the structure rule.
    fit_options : mapping
        Passed to the model fit: some of ``tol``, ``max_iter``, ``accelerate``,
        ``memory_budget`` (bytes).
    """

    phi: float = 0.4
    method: str = "em"
    release: str = "pgm"
    structure: str = "auto"
    prune: bool = False
    clique_budget: int | None = None
    heuristic: str = "min-fill"
    model_phi: float | None = None
    measure_triples: bool | int = False
    shrink: bool = True
    estimator_options: Mapping[str, Any] = field(default_factory=dict)
    prune_options: Mapping[str, Any] = field(default_factory=dict)
    structure_options: Mapping[str, Any] = field(default_factory=dict)
    fit_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_phi(self.phi)
        if self.model_phi is not None:
            check_phi(self.model_phi, "model_phi")
        for name, allowed in (("method", METHODS), ("release", RELEASES), ("structure", STRUCTURES),
                              ("heuristic", HEURISTICS)):
            value = getattr(self, name)
            if not isinstance(value, str) or value not in allowed:
                raise ValueError(f"{name} ({value!r}) must be one of {tuple(allowed)}")
        for name in ("prune", "shrink"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} ({getattr(self, name)!r}) must be True or False")
        if self.structure == "tree" and (self.prune or self.model_phi is not None):
            raise ValueError(f"prune ({self.prune}) and model_phi ({self.model_phi}) are options of "
                             f"structure 'phi'; expected structure='phi' (or 'auto') with them, not 'tree'")
        if self.clique_budget is not None:
            check_int("clique_budget", self.clique_budget, 1)
        if not isinstance(self.measure_triples, bool):
            check_int("measure_triples", self.measure_triples, 0)
        for name in ("estimator_options", "prune_options", "structure_options", "fit_options"):
            value = getattr(self, name)
            if value is None:
                value = {}
            if not isinstance(value, Mapping):
                raise TypeError(f"{name} ({type(value).__name__}) must be a mapping of option names")
            object.__setattr__(self, name, dict(value))
        unknown = sorted(set(self.fit_options) - set(MRF_OPTIONS))
        if unknown:
            raise TypeError(f"fit_options has unknown key(s) {unknown}; expected some of {list(MRF_OPTIONS)}")

    @property
    def rule(self) -> str:
        """The structure rule that runs: "auto" with ``prune`` or ``model_phi`` means "phi"."""
        if self.structure == "auto" and (self.prune or self.model_phi is not None):
            return "phi"
        return self.structure

    def replace(self, **changes: Any) -> "FitOptions":
        """A copy with ``changes`` (checked); an unknown name is a TypeError listing the options."""
        names = [f.name for f in dataclasses.fields(self)]
        unknown = sorted(set(changes) - set(names))
        if unknown:
            raise TypeError(f"unknown fit option(s) {unknown}; expected some of {names}")
        return dataclasses.replace(self, **changes)

    @classmethod
    def build(cls, options: "FitOptions | None" = None, **changes: Any) -> "FitOptions":
        """``options`` (default: the defaults) with ``changes``; the one entry point of the checks."""
        if options is not None and not isinstance(options, FitOptions):
            raise TypeError(f"options ({type(options).__name__}) must be a FitOptions or None")
        return (options or cls()).replace(**changes) if changes else (options or cls())

    def to_dict(self) -> dict[str, Any]:
        """The options as plain JSON-able values (for a fit report or a saved synthesizer)."""
        return dataclasses.asdict(self)

