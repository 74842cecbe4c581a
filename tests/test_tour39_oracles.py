"""Tour 39: the frequency oracles, longitudinal and LIP protocols as a new user meets them."""
import json

import numpy as np
import pandas as pd
import pytest

import lopub.oracles as O
from cli_run import run as _run

PRIOR = np.array([0.2, 0.3, 0.5])


LIP_MECHANISMS = {
    "rr-lip": lambda: O.RRLIP(PRIOR, 2.0),
    "rr-lip-invert": lambda: O.RRLIP(PRIOR, 2.0, estimator="invert"),
    "channel-lip": lambda: O.ChannelLIP(PRIOR, 2.0, O.RRLIP(PRIOR, 2.0).matrix),
    "ue-lip": lambda: O.UELIP(PRIOR, 2.0),
    "ue-lip-invert": lambda: O.UELIP(PRIOR, 2.0, estimator="invert"),
    "lh-lip": lambda: O.LHLIP(PRIOR, 2.0),
}


@pytest.mark.parametrize("case", sorted(LIP_MECHANISMS))
def test_lip_counts_of_another_length_are_refused(case):
    """UE-LIP and LH-LIP estimated 4 frequencies of a 3-value domain from 4 counts (and
    measure_counts built a measurement of them); RR-LIP raised numpy's 'solve1: Input operand 1
    has a mismatch in its core dimension 0'.  Now every LIP mechanism checks the counts and n
    as the support-count oracles do."""
    mech = LIP_MECHANISMS[case]()
    with pytest.raises(ValueError, match=r"counts \(shape \(4,\)\) must have shape \(3,\)"):
        mech.estimate_from_counts([1.0, 2.0, 3.0, 4.0], 10)
    with pytest.raises(ValueError, match=r"counts \(shape \(4,\)\) must have shape \(3,\)"):
        mech.measure_counts([1.0, 2.0, 3.0, 4.0], 10)
    with pytest.raises(TypeError, match=r"n \(2\.5\) must be an integer"):
        mech.estimate_from_counts([1.0, 1.0, 0.5], 2.5)
    with pytest.raises(ValueError, match=r"n \(0\) must be an integer >= 1"):
        mech.estimate_from_counts([0.0, 0.0, 0.0], 0)
    reports = mech.perturb(np.array([0, 1, 2, 2, 1, 2]), rng=0)
    np.testing.assert_allclose(mech.estimate_from_counts(mech.aggregate(reports), 6),
                               mech.estimate(reports))


def _codes(n=600, sizes=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.integers(0, k, n) for k in sizes])


def test_spl_refuses_reports_of_another_number_of_attributes():
    """SPL('grr', 2, (3, 4)).estimate(reports[:1]) returned one estimate for a two-attribute
    scheme (zip dropped the second attribute; measure too), and SPL / ALLOMFREE variance(n, f)
    with one array of frequencies gave one variance; SMP.variance already refused that."""
    spl = O.SPL("grr", 2.0, (3, 4))
    reports = spl.perturb(_codes(), rng=1)
    want = r"reports \(1 report arrays?\) must hold one report array per attribute \(2\)"
    with pytest.raises(ValueError, match=want):
        spl.estimate(reports[:1])
    with pytest.raises(ValueError, match=want):
        spl.measure(reports[:1])
    assert len(spl.estimate(reports)) == 2 and len(spl.measure(reports)) == 2
    f3 = np.ones(3) / 3
    for scheme in (spl, O.SMP("grr", 2.0, (3, 4)), O.Allomfree(2.0, 1.0, (3, 4))):
        with pytest.raises(ValueError, match=r"f \(length 1\) must give one array per attribute \(2\)"):
            scheme.variance(100, [f3])
        assert len(scheme.variance(100, [f3, np.ones(4) / 4])) == 2


@pytest.mark.parametrize("make", [lambda: O.SMP("oue", 2.0, (3, 4)),
                                  lambda: O.Allomfree(2.0, 1.0, (3, 4))])
def test_sampling_schemes_say_what_reports_they_need(make):
    """SMP / ALLOMFREE estimate of a list of per-attribute arrays raised "AttributeError: 'list'
    object has no attribute 'per_attr'"; SampledReports of one attribute for two gave one
    estimate."""
    scheme = make()
    rep = scheme.perturb(_codes(), rng=2)
    with pytest.raises(TypeError, match=r"reports \(list\) must be SampledReports"):
        scheme.estimate(list(rep.per_attr))
    short = O.SampledReports(attributes=rep.attributes, per_attr=rep.per_attr[:1])
    with pytest.raises(ValueError, match=r"reports \(1 report array\) must hold one report "
                                         r"array per attribute \(2\)"):
        scheme.estimate(short)
    with pytest.raises(ValueError, match=r"one report array per attribute \(2\)"):
        scheme.measure(short)
    assert len(scheme.estimate(rep)) == 2


SUPPORT_ORACLES = {
    "grr": lambda: O.GRR(1.5, 3), "oue": lambda: O.OUE(1.5, 3), "olh": lambda: O.OLH(1.5, 3),
    "l-grr": lambda: O.LGRR(2.0, 1.2, 3), "l-osue": lambda: O.LOSUE(2.0, 1.2, 3),
}


@pytest.mark.parametrize("case", sorted(SUPPORT_ORACLES) + sorted(LIP_MECHANISMS))
def test_variance_refuses_frequencies_of_another_length(case):
    """GRR(2, 4).variance(10, [0.1, 0.2]) returned two variances for a 4-value domain (five for
    five frequencies; UE-LIP's inversion too); RR-LIP, UE-LIP's posterior mean and LH-LIP raised
    numpy's 'matmul: Input operand 1 has a mismatch in its core dimension 0' or a broadcasting
    error.  Now f must be the k frequencies (or, for the support-count oracles, one)."""
    mech = {**SUPPORT_ORACLES, **LIP_MECHANISMS}[case]()
    for bad in ([0.5, 0.5], np.full(4, 0.25), [[0.2, 0.3, 0.5]]):
        with pytest.raises(ValueError, match=r"f \(shape \(\d?,? ?\d?,?\)\) must be the "
                                             r"frequencies of the 3 values: an array of shape \(3,\)"):
            mech.variance(100, bad)
    assert np.shape(mech.variance(100, PRIOR)) == (3,)
    if case in SUPPORT_ORACLES:  # one frequency for every value, as documented
        assert mech.variance(100, 0.3) == pytest.approx(mech.variance(100, np.full(3, 0.3))[0])
    else:
        with pytest.raises(ValueError, match=r"an array of shape \(3,\)$"):
            mech.variance(100, 0.3)


@pytest.fixture()
def small(tmp_path):
    """A CSV with a 2-category and a 5-category attribute, its domain and a uniform prior."""
    rng = np.random.default_rng(0)
    n = 400
    pd.DataFrame({"a": rng.choice(["x", "y"], n),
                  "b": rng.choice(list("pqrst"), n)}).to_csv(tmp_path / "d.csv", index=False)
    dom = {"format": "lopub-domain", "version": 1, "attributes": [
        {"name": "a", "categories": ["x", "y"]}, {"name": "b", "categories": list("pqrst")}]}
    (tmp_path / "dom.json").write_text(json.dumps(dom))
    (tmp_path / "prior.json").write_text(json.dumps({"a": [0.5, 0.5], "b": [0.2] * 5}))
    return tmp_path


def _collect_err(capsys, tmp, *extra):
    code, _, err = _run(capsys, "collect", str(tmp / "d.csv"), "--domain", str(tmp / "dom.json"),
                        "--out", str(tmp / "r.npz"), "--seed", "1", *extra)
    assert code == 2 and not (tmp / "r.npz").exists()
    return err


@pytest.mark.parametrize(("extra", "want"), [
    (["--protocol", "grr", "--epsilon", "1e-12"],
     r"--epsilon \(1e-12\) and --solution spl over 2 attributes: each attribute gets epsilon "
     r"5e-13; epsilon \(5e-13\) too small for grr"),
    (["--protocol", "oue", "--epsilon", "1e-12", "--solution", "smp", "--r", "2"],
     r"--epsilon \(1e-12\) and --solution smp with --r 2: each attribute gets epsilon 5e-13; "
     r"epsilon \(5e-13\) too small for oue"),
    (["--protocol", "l-grr", "--epsilon", "1e-11", "--eps-1", "1e-12"],
     r"--epsilon \(1e-11\), --eps-1 \(1e-12\) and --solution spl over 2 attributes: each "
     r"attribute gets eps_inf 5e-12 and eps_1 5e-13; eps_inf \(5e-12\), eps_1 \(5e-13\) too small"),
    (["--protocol", "rr-lip", "--prior", "PRIOR", "--epsilon", "100"],
     r"--epsilon \(100\) over 2 attributes: each attribute gets epsilon 50; epsilon \(50\.0\) "
     r"must be <= 30"),
    (["--protocol", "lh-lip", "--prior", "PRIOR", "--epsilon", "0.02"],
     r"attribute 'b' \(lh-lip, --epsilon \(0\.02\) over 2 attributes: each attribute gets "
     r"epsilon 0\.01\): epsilon \(0\.01\) is too small for LH-LIP with the prior \[0\.2, 0\.2, "
     r"0\.2, 0\.2, 0\.2\] and g \(2\).* LH-LIP needs epsilon >= .* = 0\.405466"),
    (["--protocol", "grr", "--epsilon", "1", "--solution", "smp", "--r", "3"],
     r"--r \(3\) must be <= the number of attributes \(2\)"),
    (["--protocol", "grr", "--epsilon", "1", "--solution", "smp", "--r", "0"],
     r"--r \(0\) must be an integer >= 1"),
])
def test_collect_budget_errors_name_the_typed_options(small, capsys, extra, want):
    """collect's errors named the per-attribute values the user never typed: '--epsilon 1e-12'
    over 2 attributes said 'epsilon (5e-13) too small for grr', '--epsilon 100' for rr-lip
    '--prior for attribute 'a': epsilon (50.0) must be <= 30' (not the prior's fault), lh-lip
    'no valid hash found in 200 redraws ... at epsilon (0.01)' without the attribute, and
    '--r 3' 'r (3) must be <= the number of attributes (2)'."""
    extra = [str(small / "prior.json") if x == "PRIOR" else x for x in extra]
    err = _collect_err(capsys, small, *extra)
    assert len(err.strip().splitlines()) == 1, err
    assert __import__("re").search(want, err), err
    assert "--prior for attribute" not in err


LIP_ALL = {**LIP_MECHANISMS,
           "rr-lip-lp": lambda: O.RRLIP([0.1, 0.2, 0.7], 1.0, on_invalid="lp"),
           "binary-lip": lambda: O.BinaryBoundedLIP(0.3, 0.6, 1.0, on_invalid="lp")}


@pytest.mark.parametrize("case", sorted(LIP_ALL))
def test_lip_mechanisms_are_frozen_as_the_other_oracles(case):
    """RRLIP(prior, 2).epsilon = 0.5 was accepted: params() (what a reports file and a memo key
    record) then said epsilon 0.5 while the channel the clients ran stayed 2.0-LIP (its level
    2.0), and m.matrix[0, 0] = 1 changed the channel in place.  GRR / SPL refuse the same
    assignment (frozen dataclasses); the LIP mechanisms now do too."""
    from dataclasses import FrozenInstanceError

    from lopub.oracles.lip_channel import lip_level

    mech = LIP_ALL[case]()
    before = mech.params()
    for name in ("epsilon", "prior", "estimator"):
        with pytest.raises(FrozenInstanceError, match=f"cannot assign to field '{name}'"):
            setattr(mech, name, getattr(mech, name))
    with pytest.raises(FrozenInstanceError):
        del mech.epsilon
    with pytest.raises(ValueError, match="read-only"):
        mech.prior[0] = 0.9
    if hasattr(mech, "matrix"):
        with pytest.raises(ValueError, match="read-only"):
            mech.matrix[0, 0] = 1.0
        assert lip_level(mech.transition_matrix(), mech.prior) <= mech.epsilon * (1 + 1e-9)
    assert mech.params() == before
    values = np.repeat(np.arange(mech.k), 50)
    mech.estimate(mech.perturb(values, rng=3))  # still usable (LH-LIP fills a private cache)
    mech.variance(len(values))


def test_a_given_channel_is_copied_not_frozen_in_the_callers_hands():
    matrix = O.RRLIP(PRIOR, 2.0).matrix.copy()
    mech = O.ChannelLIP(PRIOR, 2.0, matrix)
    matrix[0, 0] = 0.5  # the caller's array stays theirs and writeable
    assert mech.matrix[0, 0] != 0.5 and matrix.flags.writeable


def test_compare_protocols_reads_its_lists_alike(capsys):
    """--epsilons '1, 2' was read but --protocols 'spl-grr, smp-oue' refused "protocols
    (' smp-oue') must be ..." (the item's space kept; the error named the Python parameter)."""
    code, out, err = _run(capsys, "compare-protocols", "--protocols", "spl-grr, smp-oue",
                          "--epsilons", "1, 2", "--n", "2000", "--seed", "1", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert {(r["protocol"], r["epsilon"]) for r in rows} == {
        (p, e) for p in ("spl-grr", "smp-oue") for e in (1.0, 2.0)}
    assert all(r["error"] is None and r["mse_avg"] > 0 for r in rows)
    code, _, err = _run(capsys, "compare-protocols", "--protocols", "spl-grr, smp-foo",
                        "--epsilons", "1", "--n", "2000")
    assert code == 2 and "--protocols ('smp-foo') must be 'bloom'" in err


def test_estimate_freq_names_a_missing_reports_file(tmp_path, capsys):
    """lopub estimate-freq nothere.npz said "[Errno 2] No such file or directory: 'nothere.npz'"
    where inspect-reports and fit say "reports file 'nothere.npz' does not exist"."""
    missing = str(tmp_path / "nothere.npz")
    for command in ("estimate-freq", "inspect-reports"):
        code, _, err = _run(capsys, command, missing)
        assert code == 2 and f"reports file {missing!r} does not exist" in err, err
        assert "Errno" not in err
    from lopub.cli.oracle_files import estimate_file

    with pytest.raises(FileNotFoundError, match="does not exist"):
        estimate_file(missing)
