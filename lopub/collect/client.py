"""Client side of marginal sampling: assign a subset, report its joint value.

A user is assigned one subset of the plan, either dealt at random in equal
shares (:func:`assign_random`; ``rng=None``: OS entropy) or derived from a
user id with BLAKE2b keyed by the plan's ``key`` (stable across collections
with the same plan).  The user
reports the flat index of their values in the subset's joint domain
(``numpy.ravel_multi_index`` order, first attribute slowest) through the
subset's oracle at the full per-user epsilon.
"""
from __future__ import annotations

import hashlib
from typing import Any, Iterable

import numpy as np

from lopub._util import resolve_rng
from lopub.collect.plan import MarginalPlan, PlanError
from lopub.collect.reports import MarginalReports
from lopub.data.dataset import Dataset


def _check_plan(plan: Any) -> MarginalPlan:
    if not isinstance(plan, MarginalPlan):
        raise TypeError(f"plan ({type(plan).__name__}) must be a MarginalPlan")
    return plan


def assign_random(plan: MarginalPlan, n: int, *, rng: np.random.Generator | int | None = None
                  ) -> np.ndarray:
    """Subset ids of ``n`` users in equal shares, at random (``rng=None``: OS entropy).

    A random permutation of the users is dealt round-robin to the subsets
    taken in a random order, so group sizes differ by at most one (every
    group gets ``n // g`` or ``n // g + 1`` users) and each user's subset is
    uniform.  Independent draws could leave a subset empty by chance; the
    plan's minimum group size (:mod:`lopub.collect.groups`) is met exactly.
    The keyed assignment (:func:`assign_user`, for devices that assign
    themselves) gives multinomial groups of the same expected size.
    """
    plan = _check_plan(plan)
    n = int(n)
    if n < 0:
        raise ValueError(f"n ({n}) must be a non-negative number of users")
    rng = resolve_rng(rng)
    g = plan.n_subsets
    out = np.empty(n, dtype=np.int32)
    out[rng.permutation(n)] = rng.permutation(g).astype(np.int32)[np.arange(n) % g]
    return out


def _plan_key(plan: MarginalPlan) -> bytes:
    if plan.key is None:
        raise PlanError("plan.key is None; a keyed assignment from user ids needs a plan with a key "
                        "(or assign at random with rng=None)")
    return plan.key.encode("utf-8")


def assign_user(plan: MarginalPlan, user_id: Any) -> int:
    """Subset id of one user from their id: BLAKE2b(str(user_id), key=plan.key) mod g.

    What a device runs for stable assignment; the 64-bit digest makes the
    modulo bias below ``g / 2^64``.
    """
    key = _plan_key(_check_plan(plan))
    digest = hashlib.blake2b(str(user_id).encode("utf-8"), digest_size=8, key=key).digest()
    return int.from_bytes(digest, "big") % plan.n_subsets


def assign_ids(plan: MarginalPlan, user_ids: Iterable[Any]) -> np.ndarray:
    """:func:`assign_user` for many ids (one C-level hash per id)."""
    key = _plan_key(_check_plan(plan))
    g = plan.n_subsets
    out = [int.from_bytes(hashlib.blake2b(str(u).encode("utf-8"), digest_size=8, key=key).digest(),
                          "big") % g for u in user_ids]  # one keyed hash per id, as each device does
    return np.asarray(out, dtype=np.int32)


def joint_index(codes: np.ndarray, plan: MarginalPlan, i: int) -> np.ndarray:
    """Flat index of each record's values of subset ``i`` (``codes``: ``(n, d)`` in domain order)."""
    cols = plan.domain.indices(plan.subsets[i])
    sizes = [plan.domain.sizes[c] for c in cols]
    return np.ravel_multi_index(tuple(codes[:, c].astype(np.int64) for c in cols), sizes)


def perturb_groups(codes: np.ndarray, subset: np.ndarray, plan: MarginalPlan, *,
                   rng: np.random.Generator | int | None = None) -> MarginalReports:
    """Reports of users with records ``codes`` assigned to ``subset`` (one oracle call per subset)."""
    rng = resolve_rng(rng)
    subset = np.asarray(subset)
    if subset.shape != (codes.shape[0],):
        raise ValueError(f"subset (shape {subset.shape}) must have one id per record ({codes.shape[0]})")
    if subset.size and (subset.min() < 0 or subset.max() >= plan.n_subsets):
        raise ValueError(f"subset ids must be in [0, {plan.n_subsets - 1}]")
    order = np.argsort(subset, kind="stable")
    bounds = np.searchsorted(subset[order], np.arange(plan.n_subsets + 1))
    groups = []
    for i in range(plan.n_subsets):  # one vectorized oracle call per subset
        rows = order[bounds[i]:bounds[i + 1]]
        values = joint_index(codes[rows], plan, i)
        groups.append(plan.oracle(i).perturb(values, rng=rng))
    return MarginalReports(plan, subset[order].astype(np.int32), tuple(groups))


def collect_records(dataset: Dataset, plan: MarginalPlan, *,
                    rng: np.random.Generator | int | None = None,
                    user_ids: Iterable[Any] | None = None) -> MarginalReports:
    """Simulate the clients of a data owner: every record reports under ``plan``.

    Parameters
    ----------
    dataset : Dataset
        One record per user, coded against ``plan.domain``.
    plan : MarginalPlan
    rng : Generator, int or None
        Randomness of the assignment and the oracles; ``None`` draws OS
        entropy (what a deployed client must use), an int seeds a simulation.
    user_ids : iterable, optional
        One id per record: assign subsets by the plan's keyed hash instead of
        at random.

    Returns
    -------
    MarginalReports
        Reports grouped by subset (users in subset order; the server needs no
        link between a report and its record).
    """
    plan = _check_plan(plan)
    if not isinstance(dataset, Dataset):
        raise TypeError(f"dataset ({type(dataset).__name__}) must be a lopub Dataset")
    if dataset.domain != plan.domain:
        raise PlanError(f"dataset attributes {list(dataset.domain.attrs)} (with their categories) "
                        f"differ from the plan's domain {list(plan.domain.attrs)}")
    rng = resolve_rng(rng)
    if user_ids is not None:
        subset = assign_ids(plan, user_ids)
        if subset.shape[0] != dataset.n:
            raise ValueError(f"user_ids has {subset.shape[0]} ids for {dataset.n} records")
    else:
        subset = assign_random(plan, dataset.n, rng=rng)
    return perturb_groups(np.asarray(dataset.codes), subset, plan, rng=rng)
