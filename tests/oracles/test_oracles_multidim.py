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
    att = sample_attributes(40_000, 4, 1, rng=np.random.default_rng())
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


def _allomfree(sizes):
    from lopub.oracles.allomfree import Allomfree
    return Allomfree(2.0, 1.0, sizes)


@pytest.mark.parametrize("make", [lambda: SMP("grr", 1.0, SIZES), lambda: _allomfree(SIZES)])
@pytest.mark.parametrize(("attributes", "error", "message"), [
    ([0, 1, 4], ValueError, r"attributes contains 4; indices must be in \[0, 3\]"),
    ([0, -1, 2], ValueError, r"attributes contains -1"),
    ([0, 1], ValueError, r"attributes \(shape \(2,\)\) must have shape \(3, 1\) or \(3,\)"),
    ([0, 1, 2, 3], ValueError, r"attributes \(shape \(4,\)\)"),
    ([0.0, 1.0, 2.0], TypeError, r"attributes \(dtype float64\) must be an integer array"),
])
def test_given_attributes_are_checked(make, attributes, error, message):
    codes = np.zeros((3, 4), dtype=int)
    with pytest.raises(error, match=message):
        make().perturb(codes, rng=0, attributes=np.array(attributes))


def test_given_attributes_r2():
    smp = SMP("grr", 1.0, SIZES, r=2)
    codes = np.zeros((3, 4), dtype=int)
    with pytest.raises(ValueError, match=r"attributes row 1 \(\[2, 2\]\) names an attribute twice"):
        smp.perturb(codes, rng=0, attributes=np.array([[0, 1], [2, 2], [3, 0]]))
    with pytest.raises(ValueError, match=r"attributes \(shape \(6,\)\) must have shape \(3, 2\):"):
        smp.perturb(codes, rng=0, attributes=np.array([0, 1, 2, 3, 3, 0]))
    rep = smp.perturb(codes, rng=0, attributes=np.array([[0, 1], [2, 3], [3, 0]]))
    assert rep.n_per_attr().tolist() == [2, 1, 1, 2]
    assert [len(p) for p in rep.per_attr] == [2, 1, 1, 2]


def test_given_attributes_accepted_shapes():
    codes = np.zeros((3, 4), dtype=int)
    for att in (np.array([0, 2, 3]), np.array([[0], [2], [3]], dtype=np.int32)):
        rep = SMP("grr", 1.0, SIZES).perturb(codes, rng=0, attributes=att)
        assert rep.attributes.tolist() == [[0], [2], [3]]
        rep = _allomfree(SIZES).perturb(codes, rng=0, attributes=att)
        assert rep.n_per_attr().tolist() == [1, 0, 1, 1]


@pytest.mark.parametrize("cls", [SPL, SMP])
def test_lgrr_variant_forwarded(cls):
    from lopub.oracles.multidim import build_oracle
    paper = cls("l-grr", 4.0, SIZES, eps_1=2.0)
    exact = cls("l-grr", 4.0, SIZES, eps_1=2.0, lgrr_variant="exact")
    assert {o.variant for o in paper.oracles} == {"paper"}
    assert {o.variant for o in exact.oracles} == {"exact"}
    # the exact variant spends eps_1 (scaled per attribute) fully
    scale = 1 / len(SIZES) if cls is SPL else 1.0
    for o in exact.oracles:
        assert o.single_report_epsilon() == pytest.approx(2.0 * scale, rel=1e-12)
    assert build_oracle("l-grr", 32, 1.0, 0.6, 1.0, "exact").variance(10_000) < 0.005
    with pytest.raises(ValueError, match=r"lgrr_variant \('best'\) must be one of"):
        cls("l-grr", 4.0, SIZES, eps_1=2.0, lgrr_variant="best")
    with pytest.raises(TypeError, match=r"lgrr_variant \(1\) must be a string"):
        cls("grr", 4.0, SIZES, lgrr_variant=1)


def test_compare_protocols_checked_and_defaults_complete():
    from lopub.collect.compare import DEFAULT_PROTOCOLS, check_protocols, compare
    assert check_protocols(DEFAULT_PROTOCOLS) == DEFAULT_PROTOCOLS
    for name in ("spl-sue", "spl-blh", "smp-blh", "smp-l-grr", "smp-l-osue"):
        assert name in DEFAULT_PROTOCOLS
    codes = np.zeros((10, 2), dtype=int)
    with pytest.raises(ValueError, match=r"protocols \('spl-xyz'\) must be 'bloom'"):
        compare(codes, (2, 3), [1.0], ["smp-grr", "spl-xyz"], rng=0)
    with pytest.raises(ValueError, match=r"protocols \(none\)"):
        compare(codes, (2, 3), [1.0], [], rng=0)


def test_compare_lgrr_variant_changes_lgrr_only():
    from lopub.collect.compare import _oracle_scheme
    exact = _oracle_scheme("smp-l-grr", 1.0, (32,), 0.6, "exact")
    paper = _oracle_scheme("smp-l-grr", 1.0, (32,), 0.6)
    assert exact.oracles[0].variance(10_000) < 0.05 * paper.oracles[0].variance(10_000)
    assert _oracle_scheme("allomfree", 1.0, (32,), 0.6, "exact").lgrr_variant == "exact"
