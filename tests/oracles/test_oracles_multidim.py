"""SPL and SMP with every oracle."""
import numpy as np
import pytest

from lopub.oracles.multidim import SMP, SPL, sample_attributes, split_by_attribute

SIZES = (3, 5, 2, 7)
ORACLES = ["grr", "sue", "oue", "olh", "blh", "l-grr", "l-osue"]


def _data(n, rng):
    codes = np.column_stack([rng.integers(0, k, n) for k in SIZES])
    f = [np.bincount(codes[:, j], minlength=k) / n for j, k in enumerate(SIZES)]
    return codes, f


@pytest.mark.parametrize("oracle", ORACLES)
@pytest.mark.parametrize("kind", ["spl", "smp1", "smp2"])
def test_marginals_within_sd(oracle, kind):
    rng = np.random.default_rng()
    n = 40_000
    codes, f = _data(n, rng)
    scheme = {"spl": SPL(oracle, 4.0, SIZES, eps_1=2.0),
              "smp1": SMP(oracle, 4.0, SIZES, eps_1=2.0),
              "smp2": SMP(oracle, 4.0, SIZES, r=2, eps_1=2.0)}[kind]
    est = scheme.estimate(scheme.perturb(codes, rng=rng))
    for e, fj, var in zip(est, f, scheme.variance(n, f)):
        assert np.all(np.abs(e - fj) < 5 * np.sqrt(var))


def test_budget_split():
    spl = SPL("grr", 4.0, SIZES)
    assert all(o.epsilon == pytest.approx(1.0) for o in spl.oracles)
    smp = SMP("oue", 4.0, SIZES, r=2)
    assert all(o.epsilon == pytest.approx(2.0) for o in smp.oracles)
    lsmp = SMP("l-osue", 4.0, SIZES, r=2, eps_1=1.0)
    assert lsmp.oracles[0].eps_inf == pytest.approx(2.0)
    assert lsmp.oracles[0].eps_1 == pytest.approx(0.5)


def test_smp_paper_variance():
    smp = SMP("grr", 2.0, SIZES)
    from lopub.oracles.oneshot import GRR
    assert smp.variance(1000)[1] == pytest.approx(4 * GRR(2.0, 5).variance(1000))


def test_sampled_attribute_indices_in_report():
    rng = np.random.default_rng(0)
    codes, _ = _data(1000, rng)
    rep = SMP("grr", 1.0, SIZES, r=2).perturb(codes, rng=rng)
    assert rep.attributes.shape == (1000, 2)
    assert np.all(rep.attributes[:, 0] != rep.attributes[:, 1])
    assert [len(p) for p in rep.per_attr] == rep.n_per_attr().tolist()
    groups = split_by_attribute(rep.attributes, 4)
    for j, users in enumerate(groups):
        assert np.all((rep.attributes[users] == j).any(axis=1))


def test_sample_attributes_uniform():
    att = sample_attributes(40_000, 4, 1, np.random.default_rng())
    counts = np.bincount(att.ravel(), minlength=4)
    assert np.all(np.abs(counts - 10_000) < 5 * np.sqrt(40_000 * 0.25 * 0.75))


def test_errors():
    with pytest.raises(ValueError, match=r"r \(5\) must be <= the number of attributes \(4\)"):
        SMP("grr", 1.0, SIZES, r=5)
    with pytest.raises(ValueError, match="eps_1"):
        SPL("l-grr", 1.0, SIZES)
    with pytest.raises(ValueError, match=r"codes \(shape \(3, 2\)\) must have shape \(n, 4\)"):
        SPL("grr", 1.0, SIZES).perturb(np.zeros((3, 2), dtype=int), rng=0)
    with pytest.raises(ValueError, match=r"codes column 1"):
        SPL("grr", 1.0, SIZES).perturb(np.array([[0, 5, 0, 0]]), rng=0)
    with pytest.raises(ValueError, match=r"sizes\[0\] \(1\)"):
        SPL("grr", 1.0, (1, 2))
