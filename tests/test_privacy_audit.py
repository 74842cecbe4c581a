"""Exact privacy of what a user sends, as deployed (privacy audit, session 38).

The oracle-level channels are checked in tests/oracles (conformance) and one attribute's
Bloom filter in tests/test_client.py.  Here the *whole* output of one user: under a marginal
plan the subset id and its oracle's report (the subset is drawn independently of the
record, so ``P((i, y) | x) = P_i(y | x_S_i) / g``), built from the public description a
device reads (``GET /api/c/NAME``: the oracles' p, q, g, as lopub/client/device.py and
lopub.js use them); and a whole record's Bloom report (independent bits across attributes).
Each must meet the epsilon the plan, the description and the privacy statement state.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from lopub.collect import MarginalPlan, bloom_spec, plan
from lopub.data.domain import Domain
from lopub.oracles.base import ldp_level, ue_output_matrix
from lopub.oracles.oneshot import HASH_PRIME, lh_hash
from lopub.reports.spec import CollectionSpec
from lopub.serve.protocol import Collection

SIZES = [(2, 3, 4), (3, 3), (2, 2, 2, 3)]
EPSILONS = [0.5, 2.0, 8.0]
SEEDS = [(1, 0), (7, 3), (12345, 999), (HASH_PRIME - 1, HASH_PRIME - 1)]  # OLH hash seeds (a, b)


def _domain(sizes):
    return Domain.from_categories({f"a{i}": [str(j) for j in range(k)] for i, k in enumerate(sizes)})


def _device_channels(o: dict) -> list[np.ndarray]:
    """``P(y | v)`` of one subset's device randomizer from its published parameters (one per OLH seed)."""
    k, p, q = o["k"], o["p"], o["q"]
    if o["oracle"] == "grr":  # keep w.p. p, else one of the k - 1 others uniformly
        return [np.where(np.eye(k, dtype=bool), p, (1 - p) / (k - 1))]
    if o["oracle"] == "oue":  # own bit at p, every other at q
        return [ue_output_matrix(k, p, q)]
    g = o["g"]  # olh: hash with the device's (a, b), then GRR over g
    out = []
    for a, b in SEEDS:
        h = lh_hash(np.array([a]), np.array([b]), np.arange(k), g)[0]
        out.append(np.where(h[:, None] == np.arange(g)[None, :], p, (1 - p) / (g - 1)))
    return out


def _user_level(desc: dict, mp: MarginalPlan) -> float:
    """Exact LDP level of a user's whole output ``(subset i, report y)`` over all records."""
    dom = mp.domain
    records = np.array(list(itertools.product(*[range(s) for s in dom.sizes])))
    blocks = []
    for i, o in enumerate(desc["subset_oracles"]):  # the subset is chosen independently of the record
        cols = dom.indices(mp.subsets[i])
        v = np.ravel_multi_index(tuple(records[:, c] for c in cols), [dom.sizes[c] for c in cols])
        blocks += [T[v] / mp.n_subsets for T in _device_channels(o)]
    return max(ldp_level(b) for b in blocks)  # each block: outputs of one subset (and OLH seed)


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("oracle", [None, "grr", "oue", "olh"])
def test_a_users_whole_output_under_a_served_plan_is_exactly_epsilon(sizes, eps, oracle):
    dom = _domain(sizes)
    mp = plan(dom, 5000, eps).marginal_plan  # the planner's plan (None: its oracles)
    if oracle is not None:
        mp = MarginalPlan(dom, mp.subsets, eps, (oracle,) * mp.n_subsets)
    desc = Collection("m", mp).describe()
    assert desc["epsilon"] == eps and f"epsilon = {eps:g} for the whole record" in desc["privacy"]
    level = _user_level(desc, mp)
    assert level <= eps * (1 + 1e-12)
    assert level == pytest.approx(eps, rel=1e-9)  # tight: the statement is not loose either


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("eps", EPSILONS)
def test_a_whole_records_bloom_report_meets_the_spec_epsilon(sizes, eps):
    """Bits are independent, so the largest log-ratio over reports is the sum over attributes of
    the largest Hamming distance between two values' filters times ln((1 - f/2) / (f/2))."""
    dom = _domain(sizes)
    for spec in (bloom_spec(dom, plan(dom, 5000, eps)), CollectionSpec.from_domain(dom, epsilon=eps)):
        desc = Collection("b", spec).describe()
        per_bit = math.log((1 - spec.f / 2) / (spec.f / 2))
        exact = sum(int((H[:, None, :] != H[None, :, :]).sum(axis=2).max()) for H in spec.bloom) * per_bit
        assert exact <= desc["epsilon"] * (1 + 1e-12) and desc["epsilon"] == pytest.approx(eps, rel=1e-12)
        if all(len(set(np.flatnonzero(r).tolist())) == h for H, h in zip(spec.bloom, spec.h) for r in H):
            assert exact == pytest.approx(spec.epsilon, rel=1e-9)  # filters of h distinct bits: tight


@pytest.mark.parametrize("name", ["grr", "oue", "olh", "sue", "blh", "l-grr", "l-osue", "l-sue"])
@pytest.mark.parametrize("solution", ["spl", "smp"])
def test_a_whole_record_under_spl_or_smp_meets_the_budget_per_record(name, solution):
    """SPL (every attribute at eps/d) and SMP (r = 2 sampled attributes at eps/r, the sample drawn
    independently of the record): the record-level channel is the product over the reported
    attributes, so its level is the largest over record pairs of the summed per-attribute log-ratios.
    One report: at most eps (eps_1 for a longitudinal protocol); the memoized rounds: eps_inf."""
    from lopub.oracles.multidim import SMP, SPL
    from lopub.oracles.oneshot import LocalHashing

    sizes, eps = (2, 3, 4), 4.0
    kw = {"eps_1": 2.4} if name.startswith("l-") else {}
    scheme = SPL(name, eps, sizes, **kw) if solution == "spl" else SMP(name, eps, sizes, r=2, **kw)
    sets = [(0, 1, 2)] if solution == "spl" else list(itertools.combinations(range(3), 2))
    records = list(itertools.product(*[range(s) for s in sizes]))

    def level(mats):  # mats[j][x, y]: attribute j's channel; max_y log ratio per attribute, summed
        lr = [np.log(m[:, None, :] / m[None, :, :]).max(axis=2) for m in mats]
        return max(sum(lr[j][x[j], z[j]] for j in s) for s in sets
                   for x in records for z in records)

    def one_report(o):
        return o.transition_matrix(7, 3) if isinstance(o, LocalHashing) else o.transition_matrix()
    got = level([one_report(o) for o in scheme.oracles])
    assert got <= kw.get("eps_1", eps) * (1 + 1e-9)
    if not name.startswith("l-"):
        assert got == pytest.approx(eps, rel=1e-9)
    else:  # the memoized round of every attribute: eps_inf in all
        perm = [np.where(np.eye(o.k, dtype=bool), o.p1, o.q1) if name == "l-grr"
                else ue_output_matrix(o.k, o.p1, o.q1) for o in scheme.oracles]
        assert level(perm) == pytest.approx(eps, rel=1e-9)


def _spy_phases(monkeypatch):
    """Record the rows every phase of a collection draws from the data owner's records."""
    from lopub.data.dataset import Dataset

    taken: list[np.ndarray] = []
    original = Dataset.subset

    def subset(self, rows):
        taken.append(np.asarray(rows))
        return original(self, rows)
    monkeypatch.setattr(Dataset, "subset", subset)
    return taken


@pytest.mark.parametrize("sizes, n, eps, kind", [
    ((3, 3, 4, 2, 3, 5), 30000, 2.0, "TwoPhasePlan"),
    ((8, 9, 8, 16, 16, 7, 15, 6, 5, 2, 8, 8, 8, 42, 2), 32561, 8.0, "DetectPlan"),
])
def test_every_user_reports_in_exactly_one_phase_of_an_auto_collection(monkeypatch, sizes, n, eps, kind):
    """``collect(..., protocol="auto")`` with a screen: the rows of the phases are disjoint and cover
    every record once (a user in both phases would have spent epsilon twice)."""
    from lopub.collect import collect
    from lopub.data.dataset import Dataset

    dom = _domain(sizes)
    rng = np.random.default_rng(11)
    data = Dataset(np.column_stack([rng.integers(0, k, n) for k in sizes]), dom)
    assert type(plan(dom, n, eps).two_phase).__name__ == kind
    taken = _spy_phases(monkeypatch)
    reports, report = collect(data, eps, protocol="auto")
    rows = np.concatenate(taken)
    pilot = report.option("marginals").params.get("pilot")  # a screen's pilot that continued: 3 groups of rows
    assert len(taken) == (3 if pilot and not pilot["stopped"] else 2)
    assert rows.size == n and np.unique(rows).size == n  # disjoint, all of them
    params = reports.plan if hasattr(reports, "plan") else reports.spec  # marginal or Bloom main phase
    assert params.epsilon == pytest.approx(eps, rel=1e-12)
