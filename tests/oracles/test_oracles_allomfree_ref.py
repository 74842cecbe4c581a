"""ALLOMFREE against the reference library's selection rule (multi-freq-ldpy 0.2.5, L_ADP).

The reference's rule is transcribed here (its own algebraic form of the
L-GRR p2 and its ``VAR_Long_Pure``), so the test needs no extra package.
It pins that, for one attribute, ALLOMFREE and the reference's L-ADP use the
same protocol with the same (p1, q1, p2, q2) and Var*, i.e. that an MSE gap
between them in ``pipelines/bench_vs_multifreq.py`` cannot come from the
parameters (see docs/bench_oracles.md, "ALLOMFREE MSE mismatch").
"""
import numpy as np
import pytest

from lopub.oracles.allomfree import Allomfree
from lopub.oracles.longitudinal import LGRR, LOSUE
from lopub.estimate.postprocess import clip_normalize


def _reference_rule(eps_perm, eps_1, k):
    """multi_freq_ldpy.long_freq_est.L_ADP.L_ADP_Client, parameter part, verbatim formulas."""
    b = np.exp(eps_1)
    p1_grr = np.exp(eps_perm) / (np.exp(eps_perm) + k - 1)
    q1_grr = (1 - p1_grr) / (k - 1)
    p2_grr = (q1_grr - b * p1_grr) / ((-p1_grr * b) + k * q1_grr * b - q1_grr * b
                                      - p1_grr * (k - 1) + q1_grr)
    q2_grr = (1 - p2_grr) / (k - 1)
    p1_ue, q1_ue = 1 / 2, 1 / (np.exp(eps_perm) + 1)
    p2_ue = (1 - np.exp(eps_1 + eps_perm)) / (b - np.exp(eps_perm) - np.exp(eps_1 + eps_perm) + 1)
    q2_ue = 1 - p2_ue

    def var(p1, q1, p2, q2, n=1, f=0):  # VAR_Long_Pure
        sig = f * (2 * p1 * p2 - 2 * p1 * q2 + 2 * q2 - 1) + p2 * q1 + q2 * (1 - q1)
        return sig * (1 - sig) / (n * (p1 - q1) ** 2 * (p2 - q2) ** 2)

    grr = (p1_grr, q1_grr, p2_grr, q2_grr)
    ue = (p1_ue, q1_ue, p2_ue, q2_ue)
    if var(*grr) <= var(*ue):
        return "l-grr", grr, var(*grr)
    return "l-osue", ue, var(*ue)


@pytest.mark.parametrize(("eps_inf", "eps_1"), [(0.5, 0.15), (1.0, 0.6), (2.0, 1.2), (4.0, 2.4)])
@pytest.mark.parametrize("k", [2, 3, 4, 5, 6, 11, 20, 21, 100])
def test_same_protocol_parameters_and_variance_as_reference(eps_inf, eps_1, k):
    name, params, var1 = _reference_rule(eps_inf, eps_1, k)
    proto = Allomfree(eps_inf, eps_1, (k,)).protocols[0]
    assert proto.name == name
    np.testing.assert_allclose([proto.p1, proto.q1, proto.p2, proto.q2], params, rtol=1e-12)
    assert proto.variance(1) == pytest.approx(var1, rel=1e-12)


def test_benchmark_setting_is_losue_with_table1_variance():
    # n = 100,000, k = 20, (1, 0.6): both sides pick L-OSUE, Var* = 1.0784e-4,
    # L-GRR would be 3.5e-3 (PAPERS.md Sec. 3, Table 1 check values at n = 10,000).
    scheme = Allomfree(1.0, 0.6, (20,))
    assert isinstance(scheme.protocols[0], LOSUE)
    assert scheme.variance(100_000)[0] == pytest.approx(1.0783693e-4, rel=1e-6)
    assert LGRR(1.0, 0.6, 20).variance(100_000) == pytest.approx(3.5354630e-3, rel=1e-6)


def test_single_attribute_mse_matches_var_star():
    # One attribute: n_1 = n, so the unclipped MSE is the exact variance at n
    # (Var* plus the f (1 - Ps - Qs) term, no sampling term) averaged over values;
    # clip-and-renormalize (the reference's MI estimator) can only lower it here.
    n, k, runs = 20_000, 20, 60
    rng = np.random.default_rng(0)
    w = 1 / np.arange(1, k + 1) ** 1.1
    values = rng.choice(k, size=n, p=w / w.sum())
    f = np.bincount(values, minlength=k) / n
    scheme = Allomfree(1.0, 0.6, (k,))
    expected = float(np.mean(scheme.variance(n, [f])[0]))
    raw, clipped = [], []
    for r in range(runs):
        est = scheme.estimate(scheme.perturb(values.reshape(-1, 1), rng=100 + r))[0]
        raw.append(np.mean((est - f) ** 2))
        clipped.append(np.mean((clip_normalize(est) - f) ** 2))
    # sd of the mean of 60 runs is about 5 % of Var*; allow 20 %
    assert np.mean(raw) == pytest.approx(expected, rel=0.2)
    assert np.mean(clipped) <= np.mean(raw) * 1.05
