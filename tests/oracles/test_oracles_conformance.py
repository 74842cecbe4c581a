"""One conformance test for every mechanism exported by lopub.oracles.

Each exported class must be a declared mechanism (a case in oracle_cases) or
listed as not one, so a new class cannot be forgotten.  Every mechanism must
satisfy its protocol, be consistent (estimate = estimate_from_counts of
aggregate; measure = estimate + variance), unbiased within a few analytic
standard deviations, and its channel must meet its privacy guarantee exactly.
"""
import inspect
import json

import numpy as np
import pytest
from oracle_cases import CLASS_CASES, MULTI, NOT_MECHANISMS, SINGLE, dataset, records

import lopub.oracles as O
from lopub.estimate.measurement import Measurement
from lopub.oracles.base import ldp_level
from lopub.oracles.lip_channel import lip_level
from lopub.oracles.oneshot import LocalHashing
from lopub.oracles.protocol import FrequencyOracle, MultiAttributeProtocol

SEED = int(np.random.SeedSequence().entropy % 2**32)  # tests hold for any seed
N = 20_000
Z = 5.5  # standard deviations; Bonferroni over ~100 values keeps false alarms < 1e-5


def test_every_exported_class_is_covered():
    exported = {name for name in O.__all__ if inspect.isclass(getattr(O, name))}
    unknown = exported - set(CLASS_CASES) - NOT_MECHANISMS
    assert not unknown, f"exported classes without a conformance case: {sorted(unknown)}"
    assert set(CLASS_CASES) <= exported
    for name, ids in CLASS_CASES.items():
        for case in ids:
            obj = (SINGLE.get(case) or MULTI[case])[0]()
            assert type(obj) is getattr(O, name)


@pytest.mark.parametrize("case", sorted(SINGLE))
def test_single_attribute_protocol(case):
    build, f = SINGLE[case]
    oracle = build()
    assert isinstance(oracle, FrequencyOracle) and not isinstance(oracle, MultiAttributeProtocol)
    params = oracle.params()
    assert params["protocol"] == oracle.name and json.loads(json.dumps(params)) == params
    assert oracle.privacy in ("ldp", "lip") and isinstance(oracle.estimator, str)
    assert oracle.k == len(f) and oracle.epsilon > 0
    values = dataset(f, N)
    reports = oracle.perturb(values, rng=SEED)
    assert oracle.n_reports(reports) == N
    est = oracle.estimate(reports)
    np.testing.assert_allclose(est, oracle.estimate_from_counts(oracle.aggregate(reports), N))
    var = np.asarray(oracle.variance(N, f), dtype=float)
    assert var.shape in ((), (len(f),)) and np.all(var > 0)
    # unbiased: the dataset's frequencies within Z analytic standard deviations
    assert np.all(np.abs(est - f) < Z * np.sqrt(var)), f"seed {SEED}: {est} vs {f}"


@pytest.mark.parametrize("case", sorted(SINGLE))
def test_single_attribute_measure(case):
    build, f = SINGLE[case]
    oracle = build()
    reports = oracle.perturb(dataset(f, 2000), rng=SEED)
    m = oracle.measure(reports)
    assert isinstance(m, Measurement) and m.attrs == ("x",) and m.n == 2000
    np.testing.assert_allclose(m.raw, oracle.estimate(reports))
    np.testing.assert_allclose(m.values.sum(), 1.0)
    assert np.all(m.values >= 0)
    np.testing.assert_allclose(m.variance, oracle.variance(2000, m.values))
    assert m.provenance["protocol"] == oracle.name
    assert m.provenance["estimator"] == oracle.estimator
    assert m.provenance["postprocess"] == "norm-sub" and m.provenance["variance"]
    counts = oracle.aggregate(reports)
    again = oracle.measure_counts(counts, 2000, postprocess="clip")
    assert again.provenance["postprocess"] == "clip"
    np.testing.assert_allclose(again.raw, m.raw)


def _channels(oracle):
    if isinstance(oracle, LocalHashing):
        return [oracle.transition_matrix(a, b) for a, b in ((1, 0), (7, 3), (12345, 999))]
    if isinstance(oracle, O.LHLIP):
        a, b = oracle._valid_seeds(3, np.random.default_rng(SEED))
        return [oracle.transition_matrix(int(x), int(y)) for x, y in zip(a, b)]
    return [oracle.transition_matrix()]


@pytest.mark.parametrize("case", sorted(SINGLE))
def test_exact_privacy_ratio(case):
    oracle = SINGLE[case][0]()
    eps = oracle.epsilon
    for q in _channels(oracle):
        np.testing.assert_allclose(q.sum(axis=1), 1.0)
        if oracle.privacy == "ldp":
            assert ldp_level(q) <= eps * (1 + 1e-9)
        else:  # eps-LIP under the prior, hence 2 eps-LDP
            assert lip_level(q, oracle.prior) <= eps * (1 + 1e-9)
            assert ldp_level(q) <= 2 * eps * (1 + 1e-9)
    if hasattr(oracle, "permanent"):  # longitudinal: the memoized round at eps_inf
        rounds = O.LGRR if isinstance(oracle, O.LGRR) else None
        if rounds is not None:
            perm = np.full((oracle.k, oracle.k), oracle.q1)
            np.fill_diagonal(perm, oracle.p1)
        else:
            from lopub.oracles.base import ue_output_matrix
            perm = ue_output_matrix(oracle.k, oracle.p1, oracle.q1)
        assert ldp_level(perm) <= oracle.eps_inf * (1 + 1e-9)


@pytest.mark.parametrize("case", sorted(MULTI))
def test_multi_attribute_protocol(case):
    build, fs = MULTI[case]
    scheme = build()
    assert isinstance(scheme, MultiAttributeProtocol) and not isinstance(scheme, FrequencyOracle)
    params = scheme.params()
    assert params["protocol"] == scheme.name and json.loads(json.dumps(params)) == params
    assert all(isinstance(o, FrequencyOracle) for o in scheme.oracles)
    assert tuple(o.k for o in scheme.oracles) == scheme.sizes
    codes = records(fs, N, np.random.default_rng(SEED))
    reports = scheme.perturb(codes, rng=SEED)
    est = scheme.estimate(reports)
    var = scheme.variance(N, fs)
    for e, f, v in zip(est, fs, var):
        assert np.all(np.abs(e - f) < Z * np.sqrt(v)), f"seed {SEED}: {e} vs {f}"
    ms = scheme.measure(reports)
    assert [m.attrs for m in ms] == [(f"x{j}",) for j in range(len(fs))]
    for m, e in zip(ms, est):
        assert isinstance(m, Measurement) and m.provenance["variance"]
        np.testing.assert_allclose(m.raw, e)
        assert np.all(m.variance > 0)
