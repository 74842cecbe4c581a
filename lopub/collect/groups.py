"""Group sizes of a marginal-sampling plan: the minimum users per subset, checked at plan time.

Each of a plan's ``g`` subsets is measured by its own group of users; users
are dealt to the subsets in equal shares (:func:`~lopub.collect.client.assign_random`:
a random permutation dealt round-robin), so every group gets at least
``n // g`` users.  A plan is *fillable* by ``n`` users when ``n // g`` reaches
the minimum of every subset (:func:`min_users`).

The minimum (documented rule)
-----------------------------
A subset of ``K`` joint cells measured by ``n_g`` users through its oracle
at ``epsilon`` has, per cell, the variance ``V / n_g`` with ``V`` the
oracle's per-user variance at uniform cells plus the sampling term
``f (1 - f)`` (``f = 1/K``; :func:`~lopub.collect.cost.cell_var`).  Its
expected TVD before post-processing is ``K sqrt(2 V / (pi n_g)) / 2``
(:func:`~lopub.collect.cost.expected_tvd`).  A table whose expected TVD
exceeds :data:`INFORMATIVE_SHARE` of ``1 - 1/K`` -- the TVD between a
point mass and the uniform table, where the error of a table that carries
no information saturates -- is mostly noise: the model would do as well
without it and the group's users are better spent elsewhere.  So a
subset of two or more attributes needs

    ``n_min = ceil(K^2 V / (2 pi tau^2))``,  ``tau = INFORMATIVE_SHARE (1 - 1/K)``,

and at least :data:`MIN_GROUP_FLOOR` users.  A one-attribute subset is the
last resort of the family (there is nothing smaller to fall back to): it
needs :data:`MIN_GROUP_FLOOR` users, and a group below its informative
minimum is reported as a warning (:func:`noisy_one_way`), not dropped.

A detection screen (:class:`~lopub.collect.detect.DetectPlan`) is the
one exception: its pair groups are sized to find a strong dependence
(:func:`~lopub.collect.detect.detect_users`), below this minimum, and its
reports only choose the main plan; they are not part of the release.

``n_min`` falls as ``epsilon`` grows (``V`` falls), so a larger budget only
ever admits more subsets: within the marginal-sampling family the set of
fillable candidates grows with ``epsilon`` and the planner's predicted
error (a minimum over them) never rises.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from lopub.collect.cost import best_oracle, cell_var
from lopub.data.domain import Domain

#: Share of ``1 - 1/K`` (the error of an uninformative table) that a
#: multi-attribute subset's expected table error may reach.
INFORMATIVE_SHARE = 0.5
#: Fewest users of any group.
MIN_GROUP_FLOOR = 2
#: Stand-in for "no number of users suffices" (a budget too small to express).
UNREACHABLE = 1 << 62


def informative_users(epsilon: float, cells: int, oracle: str | None = None) -> int:
    """Users a ``cells``-cell table needs for an expected TVD within :data:`INFORMATIVE_SHARE`
    of ``1 - 1/cells`` (module docstring); at least :data:`MIN_GROUP_FLOOR`."""
    k = int(cells)
    if k <= 1:  # a one-cell table is exact
        return MIN_GROUP_FLOOR
    name = oracle or best_oracle(epsilon, k)
    f = 1.0 / k
    v = cell_var(name, epsilon, k, 1.0, f=f) + f * (1.0 - f)
    tau = INFORMATIVE_SHARE * (1.0 - f)
    need = k * k * v / (2.0 * math.pi * tau * tau)
    if not math.isfinite(need) or need >= UNREACHABLE:
        return UNREACHABLE
    return max(MIN_GROUP_FLOOR, math.ceil(need))


def min_users(domain: Domain, epsilon: float, subset: Sequence[str]) -> int:
    """Minimum users of ``subset``'s group: :func:`informative_users` for two or more
    attributes, :data:`MIN_GROUP_FLOOR` for one (module docstring)."""
    if len(subset) <= 1:
        return MIN_GROUP_FLOOR
    return informative_users(epsilon, domain.cells(subset))


def sizes_of(domain: Domain) -> dict[str, int]:
    """Attribute -> number of categories (a plain dict: fast look-ups in loops over subsets)."""
    return dict(zip(domain.attrs, domain.sizes))


def cells(size: dict[str, int], subset: Sequence[str]) -> int:
    """Joint domain size of ``subset`` from :func:`sizes_of` (no name checks)."""
    return math.prod(size[a] for a in subset)


def needs(domain: Domain, epsilon: float, subsets: Sequence[Sequence[str]]) -> list[int]:
    """:func:`min_users` of every subset (computed once per subset shape)."""
    cache: dict[tuple[bool, int], int] = {}
    size = sizes_of(domain)
    out = []
    for s in subsets:  # subsets, not users
        key = (len(s) > 1, cells(size, s))
        if key not in cache:
            cache[key] = min_users(domain, epsilon, s)
        out.append(cache[key])
    return out


def shortfall(domain: Domain, n: int, epsilon: float, subsets: Sequence[Sequence[str]]
              ) -> list[tuple[tuple[str, ...], int]]:
    """``(subset, minimum)`` of every subset whose group (``n // g`` users) is below its minimum."""
    per = n // max(len(subsets), 1)
    return [(tuple(s), m) for s, m in zip(subsets, needs(domain, epsilon, subsets)) if per < m]


def fit_to_users(domain: Domain, n: int, epsilon: float, subsets: Sequence[Sequence[str]]
                 ) -> list[tuple[str, ...]] | None:
    """``subsets`` if ``n`` users fill them, else the fillable plan that keeps most of them.

    Multi-attribute subsets are kept in increasing order of their minimum
    (ties in the given order) as long as the plan -- the kept subsets and
    one one-attribute subset per attribute they leave out -- gives every
    group its minimum; the longest such prefix wins.  ``None`` when not even
    one attribute per group is fillable (``n // d < MIN_GROUP_FLOOR``).
    """
    given: list[tuple[str, ...]] = [tuple(s) for s in subsets]
    if not shortfall(domain, n, epsilon, given):
        return given
    d = len(domain)
    if n // d < MIN_GROUP_FLOOR:
        return None
    multi = [tuple(s) for s in subsets if len(s) > 1]
    need = dict(zip(multi, needs(domain, epsilon, multi)))
    multi.sort(key=lambda s: need[s])  # stable: ties keep the candidate's order
    covered: set[str] = set()
    best_k, top = 0, MIN_GROUP_FLOOR
    for k, s in enumerate(multi, start=1):  # subsets, not users
        top = max(top, need[s])
        covered.update(s)
        g = k + d - len(covered)
        if n // g >= top:
            best_k = k
        elif n // k < top:  # longer prefixes have g >= k groups and a minimum >= top
            break
    kept = multi[:best_k]
    left = {a for s in kept for a in s}
    return kept + [(a,) for a in domain.attrs if a not in left]


def noisy_one_way(domain: Domain, n: int, epsilon: float, subsets: Sequence[Sequence[str]]
                  ) -> list[tuple[str, int]]:
    """``(attribute, informative minimum)`` of the one-attribute subsets whose group is below it."""
    per = n // max(len(subsets), 1)
    out = []
    for s in subsets:  # subsets, not users
        if len(s) == 1:
            need = informative_users(epsilon, domain.cells(s))
            if per < need:
                out.append((s[0], need))
    return out


def describe_groups(domain: Domain, n: int, epsilon: float, subsets: Sequence[Sequence[str]]) -> str:
    """One line for a plan report: group size and the largest minimum it meets."""
    g = len(subsets)
    per = n // g
    mins = needs(domain, epsilon, subsets)
    worst = max(range(g), key=lambda i: mins[i])
    line = (f"{g} subsets, >= {per} users each (balanced assignment); largest minimum "
            f"{mins[worst]} users ({list(subsets[worst])})")
    noisy = noisy_one_way(domain, n, epsilon, subsets)
    if noisy:
        a, need = max(noisy, key=lambda t: t[1])
        line += (f"; WARNING: {len(noisy)} one-attribute table(s) are expected to be mostly noise "
                 f"({per} users where {a!r} needs {need}); more users or a larger epsilon help")
    return line
