"""Adaptive marginal-sampling plans: which subsets to measure for N, epsilon and the domain.

Cost model (:func:`predict_pair_errors`; formulas in :mod:`lopub.collect.cost`)
-------------------------------------------------------------------------------
The target is the mean 2-way TVD over all attribute pairs.  With ``g``
subsets, each group has ``n / g`` users.  For a pair ``(a, b)``:

* measured (inside one or more subsets ``S``): noise only.  Each containing
  subset gives per-cell variance :func:`~lopub.collect.cost.cell_var` of its
  oracle with ``n / g`` users after merging ``K_S / K_ab`` cells, plus the
  sampling term of a random group; several are combined by inverse variance.
  Without post-processing the error would be ``E TVD = K sqrt(2 v / pi) / 2``;
  the tables are Norm-Sub post-processed, modelled by
  :func:`~lopub.collect.cost.normsub_errors` (each cell ``max(p + e - delta,
  0)`` with the shift ``delta`` that makes the expected total 1);
* not measured: the model completes it from the one-way tables
  (maximum-entropy completion = independence), so the error is the pair's
  dependence ``delta`` (TVD of the pair from the product of its one-way
  marginals: a prior guess, default :data:`DEFAULT_DEPENDENCE` = 0.1, the
  prior's, or measured in a screening phase) combined per cell, as a folded
  normal, with the noise of the product of the post-processed one-way
  tables (delta method: ``p_b^2 mse_a + p_a^2 mse_b`` per cell);
* the cell probabilities are uniform (``1/K``) unless a ``prior`` (tables
  of a public or earlier dataset) is given; every prediction is saturated
  at ``1 - 1/K`` (a post-processed table is a distribution);
* the release is a model fitted with noise-aware structure selection, which
  falls back to independence for a pair whose measured table is noisier than
  its dependence: a measured pair's predicted error is the smaller of the
  two (``select_edges=False`` gives the measured table's own error).

Rule (:func:`plan_marginals`, ``strategy="auto"``): evaluate the candidate
plans -- one-way (every attribute alone: the independence release), all
pairs, a greedy cover of all pairs by triples, and "pairs up to L cells" (pairs
with ``K_ab <= L``, one-way for the attributes they leave out; large domains
are then only measured one-way, and any subset above
:data:`~lopub.collect.cost.OUE_MAX_CELLS` cells uses OLH) for every distinct
``L`` -- and keep the one of lowest predicted mean 2-way TVD.  Each
candidate is first fitted to the users (:mod:`lopub.collect.groups`): every
group gets at least its documented minimum of users, or the candidate keeps
only the multi-attribute subsets the users can fill (one-way subsets for the
attributes it leaves out); candidates no users can fill are skipped before
their cost is computed.  At small ``epsilon * n`` the noise
of a pair table with ``n / g`` users exceeds the prior dependence and
one-way wins; as ``epsilon * n`` grows, pairs (then triples, which need fewer
groups) win.

Two-phase (:class:`~lopub.collect.twophase.TwoPhasePlan`, module
:mod:`lopub.collect.twophase`): a share of the users (default 30 %) measures
all pairs; the main plan is the candidate above (or a cut of the pairs
ranked by the screen's dependence) of lowest predicted error with the
screen's tables in place of the uniform tables and prior dependence
(:class:`~lopub.collect.screen.ScreenProfile`).  The screen's tables stay
measurements of the release.  The planner uses it at mid epsilon
(:mod:`lopub.collect.planner`).
Where the rule's triple cover is trimmed to fit the users, the planner may
instead screen only the pairs the trimmed plan leaves out, with a few users
each (:class:`~lopub.collect.detect.DetectPlan`).
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Mapping, Sequence, cast

import numpy as np

from lopub._util import check_positive
from lopub.collect.cost import (
    best_oracle,
    cell_var,
    expected_tvd,
    normsub_errors,
    normsub_uniform,
)
from lopub.collect.candidates import (PRIOR_CUTS, all_pairs, candidate_plans, pairs_up_to,  # noqa: F401
                                     prior_cuts, triple_cover)  # (re-exported)
from lopub.collect.groups import MIN_GROUP_FLOOR, cells, fit_to_users, sizes_of
from lopub.collect.plan import PlanError, check_n
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain

STRATEGIES = ("auto", "one-way", "pairs", "triples", "two-phase")
#: Default prior guess of the mean TVD of a pair from independence.
DEFAULT_DEPENDENCE = 0.1

Pair = tuple[str, str]


class Profile:
    """Cell probabilities the cost model evaluates variances at.

    Without a prior: uniform tables (``1/K`` per cell) and a scalar prior
    ``dependence``.  With a ``prior`` (anything with ``project(attrs)`` ->
    marginal: a public or earlier dataset, a fitted model): its tables, and
    each pair's bias under independence is ``p_ab - p_a p_b`` of the prior.
    """

    def __init__(self, domain: Domain, prior: Any = None,
                 dependence: float | Mapping[Pair, float] = DEFAULT_DEPENDENCE) -> None:
        self.domain, self.prior, self.dependence = domain, prior, dependence
        self._cache: dict[tuple, np.ndarray] = {}

    @property
    def uniform(self) -> bool:
        """Uniform tables: every pair's error depends only on its shape and variances."""
        return self.prior is None and type(self) is Profile

    def probs(self, attrs: Sequence[str]) -> np.ndarray:
        """Flat cell probabilities of ``attrs`` (in this order)."""
        key = tuple(attrs)
        if key not in self._cache:
            k = self.domain.cells(key)
            if self.prior is None:
                self._cache[key] = np.full(k, 1.0 / k)
            else:
                self._cache[key] = np.asarray(self.prior.project(list(key)).values, dtype=float).ravel()
        return self._cache[key]

    def bias(self, a: str, b: str) -> np.ndarray | float:
        """Per-cell error of the independence completion of pair ``(a, b)``."""
        if self.prior is None:
            return 2 * _dep(self.dependence, a, b) / self.domain.cells((a, b))
        d = self.probs((a, b)) - np.outer(self.probs((a,)), self.probs((b,))).ravel()
        n = self.prior.n if isinstance(self.prior, Dataset) else None
        if not n:  # a model's tables (or exact ones): no sampling noise known
            return d
        # records: the sample's own noise reads as dependence (a 5,000-record sample of independent binary
        # answers shows ~0.006 TVD per pair); shrunk by its positive-part James-Stein factor, the noise
        # the multinomial variance p (1 - p) / n cut to the interaction share (as ScreenProfile's own_margins)
        p = self.probs((a, b))
        ka, kb = self.domain.size(a), self.domain.size(b)
        noise = float(np.sum(p * (1 - p))) / n * (ka - 1) * (kb - 1) / (ka * kb)
        dev = float(np.vdot(d, d))
        return d * (max(0.0, 1.0 - noise / dev) if dev > 0 else 0.0)


def _inverse_variances(profile: Profile, eps: float, phases: Sequence[tuple[Sequence, float]],
                       n_total: float, keep: set | None = None) -> tuple[dict, dict]:
    """Summed inverse per-cell variances of every pair and attribute over all phases
    (``keep``: only these pairs and their attributes)."""
    domain = profile.domain
    pair_w: dict[tuple, np.ndarray] = {}
    one_w: dict[str, np.ndarray] = {}
    attrs = None if keep is None else {a for p in keep for a in p}
    for subsets, n_phase in phases:  # phases x subsets x their pairs: small loops, no users
        if not subsets:
            continue
        n_g = n_phase / len(subsets)
        for s in subsets:
            if attrs is not None and not attrs.intersection(s):
                continue
            k = domain.cells(s)
            oracle = best_oracle(eps, max(k, 2))
            for a in s:
                if attrs is not None and a not in attrs:
                    continue
                f = profile.probs((a,))
                v = cell_var(oracle, eps, k, n_g, merged=k // f.size, f=f) + _sampling(f, n_g, n_total)
                one_w[a] = one_w.get(a, 0.0) + _inv(v)
            for a, b in itertools.combinations(sorted(s, key=domain.index), 2):
                if keep is not None and (a, b) not in keep:
                    continue
                f = profile.probs((a, b))
                v = cell_var(oracle, eps, k, n_g, merged=k // f.size, f=f) + _sampling(f, n_g, n_total)
                pair_w[(a, b)] = pair_w.get((a, b), 0.0) + _inv(v)
    return pair_w, one_w


def _inv(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(v > 0, 1.0 / np.where(v > 0, v, 1.0), np.inf)


def _sampling(f: np.ndarray, n_group: float, n: float) -> np.ndarray:
    """Per-cell variance of a random group of ``n_group`` of the ``n`` users."""
    return np.maximum(0.0, f * (1 - f) * (1.0 / n_group - 1.0 / n))


def predict_pair_errors(domain: Domain, n: int, epsilon: float, subsets: Sequence[Sequence[str]],
                        *, dependence: float | Mapping[Pair, float] = DEFAULT_DEPENDENCE,
                        prior: Any = None, extra_phases: Sequence[tuple[Sequence, float]] = (),
                        select_edges: bool = True, pairs: Sequence[Pair] | None = None,
                        unmeasured: bool = False) -> dict[Pair, float]:
    """Predicted TVD of every attribute pair for a plan measuring ``subsets`` with ``n`` users.

    ``dependence``: one prior guess for all pairs or a mapping pair -> TVD
    from independence; ``prior``: tables to evaluate at instead of uniform
    ones (see :class:`Profile`; its own dependence replaces ``dependence``);
    ``extra_phases``: further ``(subsets, users)`` phases (a screening
    phase) whose tables are combined with this plan's; ``select_edges``
    (default): the release is a model fitted with noise-aware structure
    selection, which keeps a measured pair only where it beats independence
    (error = the smaller of the two); ``False``: the error of the measured
    table itself; ``pairs`` (attribute pairs in domain order): only these
    pairs are evaluated (a sample of the pairs, e.g. those a screen measured:
    their mean estimates the mean over all pairs at a cost independent of the
    number of attributes); ``unmeasured``: every pair's error as if no
    subset held it (its independence completion from the one-way tables the
    plan gives), the error of a pair outside a screen's sample under a plan
    that measures only screened pairs.
    """
    profile = prior if isinstance(prior, Profile) else Profile(domain, prior, dependence)
    phases = [(list(subsets), float(n))] + [(list(s), float(u)) for s, u in extra_phases]
    n_total = sum(u for _, u in phases)
    keep = None if pairs is None else {tuple(p) for p in pairs}
    if profile.uniform and not unmeasured:
        out = _uniform_pair_errors(profile, epsilon, phases, n_total, select_edges)
        return out if keep is None else {p: v for p, v in out.items() if p in keep}
    pair_w, one_w = _inverse_variances(profile, epsilon, phases, n_total, keep)
    out = {}
    with np.errstate(divide="ignore"):  # zero inverse variance: not measured at all
        one_v = {a: 1.0 / w for a, w in one_w.items()}
        pair_v = {p: 1.0 / w for p, w in pair_w.items()}
    one_mse = {a: normsub_errors(profile.probs((a,)), v)[1] for a, v in one_v.items()}
    for a, b in (all_pairs(domain) if keep is None else sorted(keep, key=lambda p: tuple(map(domain.index, p)))):
        kab = domain.cells((a, b))
        va, vb = one_mse.get(a, np.inf), one_mse.get(b, np.inf)
        pa, pb = profile.probs((a,)), profile.probs((b,))
        with np.errstate(invalid="ignore"):  # inf * 0 where a cell has probability 0
            pv = np.nan_to_num(np.outer(va, pb ** 2) + np.outer(pa ** 2, vb), nan=0.0).ravel()
        indep = expected_tvd(pv, profile.bias(a, b), cells=kab)
        v = None if unmeasured else pair_v.get((a, b))
        measured = normsub_errors(profile.probs((a, b)), v)[0] if v is not None else math.inf
        out[(a, b)] = min(measured, indep) if select_edges else (measured if v is not None else indep)
    return out


def _uniform_pair_errors(profile: Profile, eps: float, phases: Sequence[tuple[Sequence, float]],
                         n_total: float, select_edges: bool) -> dict[Pair, float]:
    """:func:`predict_pair_errors` at uniform tables: the same formulas with one value per
    cell, each evaluated once per distinct (sizes, variances) signature."""
    domain = profile.domain
    size = sizes_of(domain)
    pos = {a: i for i, a in enumerate(domain.attrs)}
    dependence = profile.dependence
    scalar = not isinstance(dependence, Mapping)
    inv: dict[tuple, float] = {}
    pair_w: dict[Pair, float] = {}
    one_w: dict[str, float] = {}
    for subsets, n_phase in phases:  # phases x subsets x their pairs: no users
        if not subsets:
            continue
        n_g = n_phase / len(subsets)
        for s in subsets:
            k = cells(size, s)
            for a in s:
                one_w[a] = one_w.get(a, 0.0) + _uniform_inv(inv, eps, k, n_g, size[a], n_total)
            for a, b in itertools.combinations(sorted(s, key=pos.__getitem__), 2):
                w = _uniform_inv(inv, eps, k, n_g, size[a] * size[b], n_total)
                pair_w[(a, b)] = pair_w.get((a, b), 0.0) + w
    one_mse = {}
    for a, w in one_w.items():  # attributes
        key = (size[a], w)
        if key not in inv:
            inv[key] = normsub_uniform(size[a], 1.0 / w if w > 0 else math.inf)[1]
        one_mse[a] = inv[key]
    memo: dict[tuple, float] = {}
    out = {}
    for a, b in all_pairs(domain):  # one dictionary look-up per pair
        ka, kb, wp = size[a], size[b], pair_w.get((a, b))
        dep = cast(float, dependence) if scalar else _dep(dependence, a, b)
        pkey = (ka, kb, wp, one_mse.get(a, math.inf), one_mse.get(b, math.inf), dep)
        if pkey not in memo:
            memo[pkey] = _uniform_pair(pkey, select_edges)
        out[(a, b)] = memo[pkey]
    return out


def _uniform_inv(cache: dict, eps: float, k: int, n_g: float, kx: int, n_total: float) -> float:
    """Inverse per-cell variance of a ``kx``-cell projection of a ``k``-cell subset (uniform)."""
    key = (k, n_g, kx)
    if key not in cache:
        f = 1.0 / kx
        v = cell_var(best_oracle(eps, max(k, 2)), eps, k, n_g, merged=k // kx, f=f)
        v = float(v) + max(0.0, f * (1 - f) * (1.0 / n_g - 1.0 / n_total))
        cache[key] = 1.0 / v if v > 0 else math.inf
    return cache[key]


def _uniform_pair(key: tuple, select_edges: bool) -> float:
    ka, kb, w, va, vb, dep = key
    kab = ka * kb
    pv = va / (kb * kb) + vb / (ka * ka)  # p_b^2 mse_a + p_a^2 mse_b with p = 1/K
    indep = expected_tvd(pv, 2 * dep / kab, cells=kab)
    if w is None:
        return indep
    measured = normsub_uniform(kab, 1.0 / w if w > 0 else math.inf)[0]
    return min(measured, indep) if select_edges else measured


def _dep(dependence: Any, a: str, b: str) -> float:
    if isinstance(dependence, Mapping):
        return float(dependence.get((a, b), dependence.get((b, a), DEFAULT_DEPENDENCE)))
    return float(dependence)


def predict_plan_error(domain: Domain, n: int, epsilon: float, subsets: Sequence[Sequence[str]],
                       **kwargs: Any) -> float:
    """Mean over pairs of :func:`predict_pair_errors` (one-attribute domain: the one-way error)."""
    if len(domain) == 1:
        k = domain.sizes[0]
        return expected_tvd(cell_var(best_oracle(epsilon, max(k, 2)), epsilon, k, n), 0.0, cells=k)
    errs = predict_pair_errors(domain, n, epsilon, subsets, **kwargs)
    return float(np.mean(list(errs.values())))


def _check_args(domain: Any, n: Any, epsilon: Any) -> tuple[Domain, int, float]:
    if not isinstance(domain, Domain):
        raise TypeError(f"domain ({type(domain).__name__}) must be a lopub Domain")
    return domain, check_n("n", n), check_positive("epsilon", epsilon)


def choose_subsets(domain: Domain, n: int, epsilon: float, *,
                   dependence: float = DEFAULT_DEPENDENCE, prior: Any = None
                   ) -> tuple[str, list, float]:
    """``(name, subsets, predicted error)`` of the best candidate (the ``auto`` rule).

    Every candidate is first fitted to the ``n`` users
    (:func:`~lopub.collect.groups.fit_to_users`: each group gets its
    minimum, else the candidate keeps the subsets it can fill and is named
    ``"<name> (trimmed)"``); a candidate no users can fill is skipped before
    any cost is computed, and so is a fitted candidate equal to one already
    evaluated.

    Raises
    ------
    PlanError
        ``n`` cannot fill even one attribute per group.
    """
    best = None
    profile = prior if isinstance(prior, Profile) else Profile(domain, prior, dependence)
    seen: set[tuple] = set()
    ranked = prior_cuts(domain, profile) if profile.prior is not None and type(profile) is Profile else {}
    for name, subsets in {**candidate_plans(domain), **ranked}.items():
        fitted = fit_to_users(domain, n, epsilon, subsets)
        if fitted is None or tuple(fitted) in seen:
            continue
        seen.add(tuple(fitted))
        if fitted != [tuple(t) for t in subsets]:
            name = f"{name} (trimmed)"
        err = predict_plan_error(domain, n, epsilon, fitted, prior=profile)
        if best is None or err < best[2] - 1e-12:
            best = (name, fitted, err)
    if best is None:
        raise PlanError(f"n ({n}) is too small for marginal sampling over {len(domain)} attributes: "
                        f"even one attribute per group needs >= {MIN_GROUP_FLOOR} users per group, "
                        f"{MIN_GROUP_FLOOR * len(domain)} users")
    return best


def _check_dependence(value: Any) -> float:
    value = float(value) if not isinstance(value, bool) else value
    if not isinstance(value, float) or not (0.0 <= value <= 1.0):
        raise ValueError(f"dependence ({value!r}) must be a TVD in [0, 1]")
    return value
