"""What a fit's verdict is computed from (:func:`fit_verdict`): the measurements in the fit's cache, the
per-subset groups of a marginal-sampling collection, and the attribute pairs it never measured
(:func:`unmeasured_pairs`); the checks themselves are :mod:`lopub.model.checks`."""
from __future__ import annotations

import itertools
from typing import Any, Sequence

from lopub.estimate.measurement import Measurement
from lopub.model.checks import assess
from lopub.model.table_stats import gather_measurements
from lopub.model.verdict import Verdict


def unmeasured_pairs(source: Any, attrs: Sequence[str]) -> list[tuple[str, str]] | None:
    """Pairs of ``attrs`` no measured set of ``source`` contains (None: every pair measurable).

    ``source`` is a marginal-sampling source (``covers(attrs)``), or one that
    wraps it (``.source``, as :class:`~lopub.collect.server.CompletedSource`);
    any other source (Bloom reports, exact marginals) can answer every pair.
    """
    covers = getattr(source, "covers", None)
    if not callable(covers):
        covers = getattr(getattr(source, "source", None), "covers", None)
    if not callable(covers):
        return None
    return [(a, b) for a, b in itertools.combinations(attrs, 2) if not covers([a, b])]


def fit_verdict(cache: Any, model: Any, report: Any) -> Verdict:
    """The verdict :func:`lopub.pipeline.steps.fit` stores: :func:`assess` on what ``cache`` holds.

    ``report`` is the :class:`~lopub.model.fit_result.FitReport` (its
    measured sets, model-fit summary, users and collection); a cache over
    marginal-sampling measurements (``cache.source.measurements()``) also
    gives the per-subset groups.
    """
    source = getattr(cache, "source", None)
    per_set = getattr(source, "measurements", None)
    groups = [m for m in per_set() if isinstance(m, Measurement)] if callable(per_set) else []
    eps = (report.collection or {}).get("epsilon_per_record")
    return assess(model, gather_measurements(cache, report.measurements), fit=report.model_fit,
                  groups=groups, n=report.n, epsilon=None if eps is None else float(eps),
                  unmeasured=unmeasured_pairs(source, list(cache.domain.attrs)))
