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
#: fewest share of the public rows that must fit the domain (fewer: records of another schema)
MIN_KEPT = 0.5


def add_public(p: argparse.ArgumentParser) -> None:
    """Add ``--public FILE``, ``--public-na-values X,Y`` and ``--dependence X`` to a planning command."""
    from lopub.cli._common import split_list

    p.add_argument("--public", metavar="FILE", help=PUBLIC_HELP)
    p.add_argument("--public-na-values", type=split_list, metavar="X,Y",
                   help="cell values of the --public records read as missing, besides empty cells (default: "
                        "the command's --na-values, if it has them); a file without a header row whose width "
                        "is the domain's is read as the domain's columns in order")
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
    from lopub.cli._inputs import read_csv
    from lopub.data.dataset import Dataset

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
    na = a.public_na_values if getattr(a, "public_na_values", None) is not None else getattr(a, "na_values", None)
    names = _headerless(path, domain)
    try:
        df = read_csv(path, na, names=names)
        return Dataset.from_pandas(_fitted_to(df, domain, path), domain)
    except ValueError as exc:
        raise ValueError(f"--public: data file {path!r}: {exc}") from None


def _fitted_to(df: Any, domain: Any, path: str) -> Any:
    """The public records in the domain's terms, for predictions only: numbers beyond a binned attribute's
    edges clipped into its end bins, rows with a category the domain does not have (or a missing value
    where it has no missing category) dropped, refused when they are more than half of the rows; a note
    gives the counts.  Missing domain columns are an error (Dataset.from_pandas names them)."""
    import numpy as np
    import pandas as pd

    from lopub.progress import note

    df = df[[c for c in df.columns if c in domain]].copy()
    keep = np.ones(len(df), dtype=bool)
    clipped, dropped, unknown = {}, {}, {}
    for name in [x for x in domain.attrs if x in df.columns]:  # loop over attributes, not records
        attr, col = domain[name], df[name]
        if attr.binning is not None and attr.kind in (None, "number", "integer"):
            num = pd.to_numeric(col, errors="coerce")
            lo, hi = float(attr.binning.edges[0]), float(attr.binning.edges[-1])
            out = ((num < lo) | (num > hi)) & ~num.isin([float(v) for v in attr.binning.points])  # a point: its bin
            if out.any():
                clipped[name] = int(out.sum())
                df[name] = col.where(~out, num.clip(lo, hi))
            continue
        if attr.binning is None:
            labels = set(domain.labels(name))
            text = col.astype("string")
            bad = np.array(col.notna() & ~text.isin(labels), dtype=bool)
            if attr.missing is None:
                bad |= np.array(col.isna(), dtype=bool)
            if bad.any():
                dropped[name] = int(bad.sum())
                unknown[name] = sorted(set(text[bad].fillna("(missing)").astype(str)))[:5]
                keep &= ~bad
    if keep.sum() < MIN_KEPT * len(df):
        raise ValueError(f"{len(df) - int(keep.sum()):,} of its {len(df):,} rows hold categories the domain does "
                         f"not have ({'; '.join(f'{k!r}: {v}' for k, v in unknown.items())}): records of another "
                         f"schema (or missing values written another way: --public-na-values)")
    if clipped or dropped:
        note(f"--public ({path!r}), a prior for the predictions only: "
             + "; ".join([f"{v:,} value(s) of {k!r} beyond its bins clipped into them" for k, v in clipped.items()]
                         + [f"{v:,} row(s) with a category of {k!r} the domain does not have dropped"
                            for k, v in dropped.items()]))
    return df[keep]


def _headerless(path: str, domain: Any) -> list[str] | None:
    """The domain's attributes as the column names of a CSV whose first row holds none of them but as many
    fields as the domain has attributes (public files such as UCI's come without a header row); else None."""
    from lopub.cli._inputs import detect_sep
    from lopub.progress import note

    if path.lower().endswith((".parquet", ".pq")):
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            first = fh.readline().rstrip("\r\n")
        fields = [f.strip() for f in first.split(detect_sep(path))]
    except (OSError, ValueError):
        return None
    if len(fields) != len(domain) or any(f in domain for f in fields):
        return None
    note(f"--public ({path!r}): its first row holds no column of the domain: read as a file without a header "
         f"row, its {len(fields)} columns the domain's in order ({', '.join(domain.attrs[:3])}, ...)")
    return list(domain.attrs)
