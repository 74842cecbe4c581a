"""``--public FILE`` and ``--dependence X``: what the planner assumes about the data, from public knowledge.

Without them, the planner predicts every protocol at uniform one-way tables
and a mean pair dependence (TVD from independence) of 0.1
(:data:`lopub.collect.adaptive.DEFAULT_DEPENDENCE`).  Data whose attributes
depend far less (or more) than that get a plan that fits the guess, not the
data: on networks sampled at 10^6 records whose pairs depend 0.005-0.02 the
default plan measures pairs where one attribute per user is 5-20 % better
(docs/BENCHMARKS.md, "The networks at 10^6 records").  ``--public`` gives the
planner tables to predict with instead: public records of the same schema
(a CSV or Parquet file in the domain's columns: a census sample, an earlier
survey, a public release) or a model file of an earlier release (``lopub
fit``); ``--dependence`` gives only the scalar guess.

Both must be public: the plan is published with the collection, so a plan
computed from the private records themselves would reveal them.
"""
from __future__ import annotations

import argparse
import math
import os
from typing import Any

PUBLIC_HELP = ("public records of this schema (CSV or Parquet in the domain's columns: a census sample, an "
               "earlier survey, a public release) or a model file of an earlier release (lopub fit): the "
               "planner predicts at their one-way tables and pair dependence instead of uniform tables and a "
               "dependence of 0.1; must be public, never the records being collected (the plan is published)")
DEPENDENCE_HELP = ("prior mean TVD of an attribute pair from independence (default 0.1), where no --public "
                   "data is given: e.g. 0.01 for attributes known to depend little")


def add_public(p: argparse.ArgumentParser) -> None:
    """Add ``--public FILE`` and ``--dependence X`` to a planning command."""
    p.add_argument("--public", metavar="FILE", help=PUBLIC_HELP)
    p.add_argument("--dependence", type=float, metavar="X", help=DEPENDENCE_HELP)


def planner_knowledge(a: argparse.Namespace, domain: Any) -> dict[str, Any]:
    """``plan`` keyword arguments from ``--public`` / ``--dependence`` (``{}`` when neither is given).

    Raises ValueError naming the option: both given, a dependence outside
    [0, 1), a public file that is neither a model of this domain nor records
    of its columns and categories.
    """
    public, dependence = getattr(a, "public", None), getattr(a, "dependence", None)
    if public is not None and dependence is not None:
        raise ValueError("--dependence is the guess for when no --public data is given; with --public the "
                         "planner takes each pair's dependence from the public data: give one of them")
    if dependence is not None:
        if not (math.isfinite(dependence) and 0.0 <= dependence < 1.0):
            raise ValueError(f"--dependence ({dependence:g}) must be a mean TVD from independence in [0, 1)")
        return {"dependence": float(dependence)}
    if public is None:
        return {}
    return {"prior": _public_source(public, domain, a)}


def _public_source(path: str, domain: Any, a: argparse.Namespace) -> Any:
    """A model file of ``domain`` (its attributes and categories) or a data file coded against it."""
    from lopub.cli._inputs import dataset_from_file

    if not os.path.isfile(path):
        raise FileNotFoundError(f"--public ({path!r}): no such file")
    if path.lower().endswith((".json", ".json.gz")):
        from lopub.model.graphical import Model

        try:
            model = Model.load(path)
        except (OSError, ValueError) as exc:
            raise ValueError(f"--public ({path!r}) is not a lopub model file: {exc}") from None
        missing = [x for x in domain.attrs if x not in model.domain]
        if missing:
            raise ValueError(f"--public ({path!r}): the model has no attribute(s) {missing} of the domain")
        differ = [x for x in domain.attrs if model.domain.labels(x) != domain.labels(x)]
        if differ:
            raise ValueError(f"--public ({path!r}): the model's categories of {differ} differ from the "
                             f"domain's (another schema)")
        return model
    try:
        return dataset_from_file(path, domain, getattr(a, "na_values", None))
    except ValueError as exc:
        raise ValueError(f"--public: {exc}") from None
