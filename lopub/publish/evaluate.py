"""Utility of a release: TVD/AVD over k-way marginals, correlation identification.

Every source answers ``project(attrs)`` (or ``marginal(attrs)``): a
:class:`~lopub.data.dataset.Dataset` of real or synthetic records, a fitted
:class:`~lopub.model.graphical.Model`, an estimator, an exact model.  So the same code
compares real data with a release, with a model, or with the truth.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Eq. 32 (AVD = 1/2 sum |P - Q|, i.e. the
total variation distance) averaged over random k-subsets of attributes, and
Sec. VII-C (correlation identification: accuracy, added and lost edges).
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Iterable, Sequence

import numpy as np

from lopub._util import check_int, resolve_rng
from lopub.dependency.cache import query_source
from lopub.data.marginal import Marginal
from lopub.data.pairs import pair_source


def tvd(p: Marginal, q: Marginal) -> float:
    """Total variation distance 1/2 sum |P - Q| over the cells of ``p`` (Eq. 32).

    References
    ----------
    Ren et al., IEEE TIFS 2018, Eq. 32.
    """
    return p.avd(q)


def _domain_of(source: Any):
    dom = getattr(source, "domain", None)
    if dom is None:
        raise TypeError(f"source ({type(source).__name__}) has no domain")
    return dom


def k_subsets(attrs: Sequence[str], k: int, subsets: int | None = None, *,
              rng: np.random.Generator | int | None = None) -> list[tuple[str, ...]]:
    """All k-subsets of ``attrs``, or ``subsets`` of them drawn without replacement.
    """
    k = check_int("k", k, 1)
    if k > len(attrs):
        raise ValueError(f"k ({k}) must be at most the number of attributes ({len(attrs)})")
    total = math.comb(len(attrs), k)
    if subsets is None or subsets >= total:
        return list(itertools.combinations(attrs, k))
    subsets = check_int("subsets", subsets, 1)
    gen = resolve_rng(rng)
    if total <= 1_000_000:
        every = list(itertools.combinations(attrs, k))
        return [every[i] for i in sorted(gen.choice(total, size=subsets, replace=False))]
    seen: set[tuple[str, ...]] = set()
    while len(seen) < subsets:  # loop over subsets, not records
        pick = tuple(sorted(gen.choice(len(attrs), size=k, replace=False)))
        seen.add(tuple(attrs[i] for i in pick))
    return sorted(seen)


def average_tvd(real: Any, synthetic: Any, k: int = 2, *, subsets: int | None = None,
                attrs: Sequence[str] | None = None,
                rng: np.random.Generator | int | None = None) -> dict[str, Any]:
    """Average TVD between ``real`` and ``synthetic`` over k-way marginals.

    Parameters
    ----------
    real, synthetic : projectable
        Objects with ``project(attrs)``/``marginal(attrs)`` over the same domain.
    k : int
        Marginal order.
    subsets : int, optional
        Sample this many k-subsets (the paper uses 100); all when None.
    attrs : sequence of str, optional
        Restrict to these attributes (default: the real source's domain).
    rng : Generator, int or None
        For the subset sample.

    Returns
    -------
    dict with ``k``, ``subsets`` (count), ``mean``, ``max``, ``per_subset``.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Eq. 32 and Sec. VII.
    """
    attrs = list(_domain_of(real).attrs if attrs is None else attrs)
    sets = k_subsets(attrs, k, subsets, rng=rng)
    real, synthetic = pair_source(real, sets), pair_source(synthetic, sets)  # all pairs at once
    per = [(s, tvd(query_source(real, list(s)), query_source(synthetic, list(s)))) for s in sets]
    vals = np.array([v for _, v in per])
    return {"k": k, "subsets": len(per), "mean": float(vals.mean()), "max": float(vals.max()),
            "per_subset": [{"attrs": list(s), "tvd": float(v)} for s, v in per]}


def per_attribute_tvd(real: Any, synthetic: Any,
                      attrs: Sequence[str] | None = None) -> dict[str, float]:
    """TVD of every one-way marginal, by attribute name.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Eq. 32.
    """
    attrs = list(_domain_of(real).attrs if attrs is None else attrs)
    return {a: tvd(query_source(real, [a]), query_source(synthetic, [a])) for a in attrs}


def _norm(edges: Iterable[Sequence[str]]) -> set[frozenset]:
    return {frozenset(e) for e in edges}


def correlation_identification(found: Iterable[Sequence[str]], truth: Iterable[Sequence[str]],
                               attrs: Sequence[str]) -> dict[str, Any]:
    """Compare an estimated dependency graph with a reference graph.

    Parameters
    ----------
    found, truth : iterables of attribute pairs (edges)
    attrs : sequence of str
        All attributes; every unordered pair is one decision.

    Returns
    -------
    dict with ``accuracy`` (share of pairs whose edge/no-edge decision
    matches), ``added`` (edges in ``found`` only, false positives), ``lost``
    (edges in ``truth`` only), ``recall`` (share of true edges found),
    ``pairs``, ``true_edges``, ``found_edges`` and the edge lists.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Sec. VII-C (Tables IV-VI).
    """
    attrs = list(attrs)
    pos = {a: i for i, a in enumerate(attrs)}
    f, t = _norm(found), _norm(truth)
    for e in f | t:
        bad = [a for a in e if a not in pos]
        if bad or len(e) != 2:
            raise ValueError(f"edge {sorted(e)} must join two distinct attributes of {attrs}")
    pairs = math.comb(len(attrs), 2)
    added, lost = f - t, t - f
    order = lambda es: sorted((sorted(e, key=pos.__getitem__) for e in es),  # noqa: E731
                              key=lambda e: (pos[e[0]], pos[e[1]]))
    return {
        "pairs": pairs, "true_edges": len(t), "found_edges": len(f),
        "accuracy": (pairs - len(added) - len(lost)) / pairs if pairs else 1.0,
        "added": len(added), "lost": len(lost),
        "recall": (len(t & f) / len(t)) if t else 1.0,
        "added_edges": order(added), "lost_edges": order(lost),
    }


def evaluate_release(real: Any, synthetic: Any, *, k: int = 2, subsets: int | None = None,
                     rng: np.random.Generator | int | None = None) -> dict[str, Any]:
    """Average k-way TVD plus per-attribute TVD (the ``lopub evaluate`` report).
    """
    out = average_tvd(real, synthetic, k, subsets=subsets, rng=rng)
    out["per_attribute"] = per_attribute_tvd(real, synthetic)
    return out
