"""Quality scores of a release against real data, on SDMetrics' definitions, plus lopub's.

SDMetrics' single-table quality report (https://docs.sdv.dev/sdmetrics/reports/quality-report)
has two properties, both computed on every categorical column (pair):

* **Column Shapes**: per column, TVComplement = 1 - TVD(real, synthetic)
  with TVD = 1/2 sum_w |R_w - S_w| over the column's categories
  (https://docs.sdv.dev/sdmetrics/metrics/quality-metrics/tvcomplement); the
  property is the mean over columns.
* **Column Pair Trends**: per pair, ContingencySimilarity = 1 - TVD of the
  two normalized contingency tables (proportion of rows in each combination
  of categories; https://docs.sdv.dev/sdmetrics/metrics/quality-metrics/contingencysimilarity);
  the property is the mean over pairs.  SDMetrics' ``QualityReport`` sets a
  *real association threshold* of 0.3: a pair counts only when Cramér's V of
  its real contingency table (``scipy.stats.contingency.association(...,
  method="cramer")``, no continuity correction, over the categories observed
  in the real data; undefined with fewer than two observed categories on a
  side) is strictly above 0.3 (``ContingencySimilarity.compute_breakdown``
  and ``ColumnPairTrends._compute_pair_score`` in sdv-dev/SDMetrics,
  ``sdmetrics/column_pairs/statistical/contingency_similarity.py`` and
  ``sdmetrics/reports/single_table/_properties/column_pair_trends.py``).
  Pairs of independent attributes are left out, which raises the score of a
  release that gets associations wrong only where there are none.

lopub's own figures: the mean (and max) 2-way TVD over *all* pairs (``lopub
evaluate``), and the same scores for the **independence of the model's one-way
marginals**: the release a publisher gets from the model's one-way marginals
alone (estimated from the noisy reports), whose pair tables are exactly the
outer products ``P(a) P(b)`` (no sampling).  It is not the verdict's baseline
(:mod:`lopub.publish.report.verdict_block`), the independence of the *true*
one-way marginals, which has no noise.

Every source answers ``project(attrs)`` (a Dataset, a Model, the baseline), so
the scores of a synthetic release and of the model itself are computed alike.
"""
from __future__ import annotations

import itertools
from typing import Any, Sequence

import numpy as np

from lopub.dependency.cache import query_source
from lopub.dependency.mi import mutual_information
from lopub.data.marginal import Marginal
from lopub.data.pairs import pair_source

SDMETRICS_ASSOCIATION_THRESHOLD = 0.3


def tvd_table(p: np.ndarray, q: np.ndarray) -> float:
    """Total variation distance 1/2 sum |p - q| of two probability tables of one shape."""
    return 0.5 * float(np.abs(np.asarray(p, float) - np.asarray(q, float)).sum())


def cramers_v(table: np.ndarray) -> float:
    """Cramér's V of a 2-way table of counts or probabilities, as SDMetrics computes it.

    ``sqrt(phi^2 / (min(r, c) - 1))`` with ``phi^2 = chi^2 / n`` over the
    rows and columns with a positive total (the categories observed), no
    continuity correction; NaN when fewer than two rows or columns are
    observed.  It depends on the proportions only, so a probability table
    gives the value of its counts.
    """
    t = np.clip(np.asarray(table, dtype=float), 0.0, None)
    t = t[t.sum(1) > 0][:, t.sum(0) > 0]
    if min(t.shape) < 2:
        return float("nan")
    p = t / t.sum()
    expected = p.sum(1, keepdims=True) * p.sum(0, keepdims=True)
    phi2 = float(((p - expected) ** 2 / expected).sum())
    return float(np.sqrt(min(phi2 / (min(t.shape) - 1), 1.0)))


class IndependenceRelease:
    """The release built from ``model``'s one-way marginals only: every joint is a product.

    ``project(attrs)`` is the outer product of the model's one-way marginals,
    exactly what a synthetic release sampling each attribute on its own
    converges to.
    """

    def __init__(self, model: Any) -> None:
        self.domain = model.domain
        self._one = {a: query_source(model, [a]).values for a in model.domain.attrs}
        self.n = getattr(model, "n", None)

    def project(self, attrs: Sequence[str]) -> Marginal:
        attrs = list(attrs)
        values = self._one[attrs[0]]
        for a in attrs[1:]:
            values = np.multiply.outer(values, self._one[a])
        return Marginal(self.domain.project(attrs), values, self.n, {"method": "independence"})

    marginal = project


def pair_tables(source: Any, attrs: Sequence[str]) -> dict[tuple[str, str], np.ndarray]:
    """The 2-way table of every pair of ``attrs`` (in that order) from ``source``."""
    pairs = list(itertools.combinations(attrs, 2))
    source = pair_source(source, pairs)  # a wide Dataset: every pair in one product
    return {(a, b): query_source(source, [a, b]).values for a, b in pairs}


def column_shapes(real: Any, synthetic: Any, attrs: Sequence[str] | None = None) -> dict[str, Any]:
    """SDMetrics' Column Shapes: mean over columns of TVComplement = 1 - TVD.

    Definition: https://docs.sdv.dev/sdmetrics/metrics/quality-metrics/tvcomplement
    (score = 1 - 1/2 sum_w |R_w - S_w|) and the quality report's Column
    Shapes property (mean over columns).

    Returns ``{"score": mean, "per_column": {attr: 1 - TVD}}``.
    """
    attrs = list(real.domain.attrs if attrs is None else attrs)
    per = {a: 1.0 - tvd_table(query_source(real, [a]).values, query_source(synthetic, [a]).values)
           for a in attrs}
    return {"score": float(np.mean(list(per.values()))), "per_column": per}


def column_pair_trends(real: Any, synthetic: Any, attrs: Sequence[str] | None = None, *,
                       association_threshold: float = 0.0) -> dict[str, Any]:
    """SDMetrics' Column Pair Trends: mean over pairs of ContingencySimilarity = 1 - TVD.

    Definition: https://docs.sdv.dev/sdmetrics/metrics/quality-metrics/contingencysimilarity
    (1 - TVD of the normalized contingency tables); the threshold follows
    ``real_association_threshold`` of SDMetrics' ``ContingencySimilarity`` and
    ``ColumnPairTrends`` (Cramér's V of the real table, see :func:`cramers_v`).

    With ``association_threshold > 0`` only pairs whose real Cramér's V is
    strictly above it count (SDMetrics' ``QualityReport`` uses 0.3); the
    score is NaN when no pair counts.

    Returns ``{"score", "counted", "total", "threshold", "pairs": [{"a", "b",
    "score", "real_association", "counted"}]}``.
    """
    attrs = list(real.domain.attrs if attrs is None else attrs)
    return _pair_trends(pair_tables(real, attrs), pair_tables(synthetic, attrs), association_threshold)


def _pair_trends(real: dict, release: dict, threshold: float) -> dict[str, Any]:
    rows = []
    for (a, b), r in real.items():
        v = cramers_v(r)
        counted = threshold <= 0 or (not np.isnan(v) and v > threshold)
        rows.append({"a": a, "b": b, "score": 1.0 - tvd_table(r, release[a, b]),
                     "real_association": v, "counted": bool(counted)})
    kept = [row["score"] for row in rows if row["counted"]]
    return {"score": float(np.mean(kept)) if kept else float("nan"), "counted": len(kept),
            "total": len(rows), "threshold": threshold, "pairs": rows}


def quality_scores(model: Any, real: Any, release: Any, *,
                   association_threshold: float = SDMETRICS_ASSOCIATION_THRESHOLD) -> dict[str, Any]:
    """Every score of the report for ``release`` (synthetic data or the model) and the baseline.

    Returns a dict with ``release`` and ``independence`` entries, each
    holding ``column_shapes``, ``column_pair_trends`` (all pairs),
    ``column_pair_trends_associated`` (pairs above the real-association
    threshold), ``overall`` (SDMetrics' QualityReport: mean of Column Shapes
    and the thresholded Column Pair Trends), ``mean_pair_tvd`` and
    ``max_pair_tvd`` (lopub, all pairs); plus ``pairs`` (per pair: real
    Cramér's V, real MI in nats, TVD of release and baseline) and
    ``per_column``.
    """
    attrs = list(model.domain.attrs)
    base = IndependenceRelease(model)
    real_pairs = pair_tables(real, attrs)
    out: dict[str, Any] = {"attrs": attrs, "threshold": association_threshold}
    for key, source in (("release", release), ("independence", base)):
        shapes = column_shapes(real, source, attrs)
        pairs = pair_tables(source, attrs)
        everything = _pair_trends(real_pairs, pairs, 0.0)
        assoc = _pair_trends(real_pairs, pairs, association_threshold)
        tvds = [1.0 - p["score"] for p in everything["pairs"]]
        out[key] = {"column_shapes": shapes["score"], "column_pair_trends": everything["score"],
                    "column_pair_trends_associated": assoc["score"], "associated_pairs": assoc["counted"],
                    "pairs_total": assoc["total"],
                    "overall": float(np.nanmean([shapes["score"], assoc["score"]])),
                    "mean_pair_tvd": float(np.mean(tvds)) if tvds else float("nan"),
                    "max_pair_tvd": float(np.max(tvds)) if tvds else float("nan"),
                    "per_column": shapes["per_column"], "pairs": assoc["pairs"]}
    out["pairs"] = [{"a": r["a"], "b": r["b"], "real_association": r["real_association"],
                     "counted": r["counted"], "real_mi": mutual_information(real_pairs[r["a"], r["b"]]),
                     "tvd_release": 1.0 - r["score"], "tvd_independence": 1.0 - b["score"]}
                    for r, b in zip(out["release"]["pairs"], out["independence"]["pairs"])]
    return out


def pair_matrix(pairs: list[dict[str, Any]], attrs: Sequence[str], key: str,
                diagonal: dict[str, float] | None = None) -> np.ndarray:
    """Symmetric d x d matrix of ``pair[key]`` (NaN diagonal unless given)."""
    idx = {a: i for i, a in enumerate(attrs)}
    m = np.full((len(attrs), len(attrs)), np.nan)
    for p in pairs:
        i, j = idx[p["a"]], idx[p["b"]]
        m[i, j] = m[j, i] = p[key]
    if diagonal is not None:
        for a, v in diagonal.items():
            m[idx[a], idx[a]] = v
    return m
