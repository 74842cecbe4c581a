"""The candidate plans of the planner: subset lists the cost model ranks (:mod:`lopub.collect.adaptive`).

One attribute per user, all pairs, pairs up to ``L`` cells, a greedy triple
cover (:func:`candidate_plans`), and with a public prior the pairs it ranks
most dependent (:func:`prior_cuts`).
"""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from lopub.collect.groups import sizes_of
from lopub.data.domain import Domain

if TYPE_CHECKING:  # pragma: no cover
    from lopub.collect.adaptive import Profile

Pair = tuple[str, str]


def all_pairs(domain: Domain) -> list[Pair]:
    return list(itertools.combinations(domain.attrs, 2))


def triple_cover(domain: Domain) -> list[tuple[str, ...]]:
    """Greedy cover of all pairs by triples.

    Uncovered pairs are taken in increasing joint size; each gets the third
    attribute that covers most further uncovered pairs (ties: the smallest
    attribute, then the first).  One vectorized step per triple: about
    ``d^2 / 6`` steps of ``O(d)``.
    """
    attrs = list(domain.attrs)
    d = len(attrs)
    if d < 3:
        return [tuple(attrs)]
    sizes = np.asarray(domain.sizes, dtype=float)
    left = 1 - np.eye(d)  # 1 where the pair is not covered yet
    rank = np.argsort(np.argsort(sizes, kind="stable"), kind="stable") / d  # ties: smallest, then first
    rows, cols = np.triu_indices(d, 1)
    order = np.argsort(sizes[rows] * sizes[cols], kind="stable")
    out: list[tuple[str, ...]] = []
    for i, j in zip(rows[order].tolist(), cols[order].tolist()):  # pairs: about d^2 / 2
        if not left[i, j]:
            continue
        score = left[i] + left[j] - rank  # pairs newly covered, then the smallest attribute
        score[i] = score[j] = -3.0
        c = int(score.argmax())
        left[i, j] = left[j, i] = left[i, c] = left[c, i] = left[j, c] = left[c, j] = 0.0
        out.append(tuple(attrs[t] for t in sorted((i, j, c))))
    return out


def pairs_up_to(domain: Domain, limit: int) -> list[tuple[str, ...]]:
    """Pairs with at most ``limit`` cells, plus one-way subsets for uncovered attributes."""
    size = sizes_of(domain)
    pairs = [p for p in all_pairs(domain) if size[p[0]] * size[p[1]] <= limit]
    covered = {a for p in pairs for a in p}
    return pairs + [(a,) for a in domain.attrs if a not in covered]


def candidate_plans(domain: Domain) -> dict[str, list[tuple[str, ...]]]:
    """The candidate subset lists of the ``auto`` rule, by name."""
    out: dict[str, list[tuple[str, ...]]] = {"one-way": [(a,) for a in domain.attrs]}
    if len(domain) >= 2:
        out["pairs"] = [tuple(p) for p in all_pairs(domain)]
        size = sizes_of(domain)
        limits = sorted({size[a] * size[b] for a, b in all_pairs(domain)})[:-1]
        if len(limits) > 12:  # about a dozen cut points, spread over the distinct sizes
            limits = [limits[i] for i in np.unique(np.linspace(0, len(limits) - 1, 12).astype(int))]
        for lim in limits:
            out[f"pairs<={lim}"] = pairs_up_to(domain, lim)
    if len(domain) >= 4:
        out["triples"] = triple_cover(domain)
    return out


#: cut points of a prior's dependence ranking tried as plans (as the two-phase screen's, twophase.RANKED_CUTS)
PRIOR_CUTS = 12


def prior_cuts(domain: Domain, profile: Profile) -> dict[str, list[tuple[str, ...]]]:
    """Plans of the pairs a public prior ranks most dependent: the top ``k`` pairs by the prior's TVD from
    independence, at about :data:`PRIOR_CUTS` cut points, plus one-way subsets for the attributes they
    leave out (the candidates a two-phase screen ranks from its measurements,
    :meth:`~lopub.collect.twophase.TwoPhasePlan.main_candidates`; a prior is independent of the reports,
    so ranking on it and predicting with it has no winner's curse from the collection's noise).
    Measured: docs/BENCHMARKS.md, "Planning from public knowledge"."""
    pairs = [tuple(p) for p in all_pairs(domain)]
    dep = np.array([0.5 * float(np.abs(profile.bias(a, b)).sum()) for a, b in pairs])  # pairs, not users
    order = np.argsort(-dep, kind="stable")
    out = {}
    for k in np.unique(np.linspace(1, len(pairs), PRIOR_CUTS).astype(int)).tolist():
        top = [pairs[i] for i in order[:k]]
        covered = {a for p in top for a in p}
        out[f"top-{k}-pairs"] = top + [(a,) for a in domain.attrs if a not in covered]
    return out
