"""Tour 35: the frequency oracles, longitudinal and LIP protocols as a new user meets them."""
import json

import numpy as np
import pandas as pd
import pytest

from cli_run import run as _run


@pytest.fixture()
def wide(tmp_path):
    """A CSV with a 2-category and a 40-category attribute, and its domain."""
    rng = np.random.default_rng(0)
    n = 3000
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], n),
                       "city": [f"c{i:02d}" for i in rng.integers(0, 40, n)]})
    df.to_csv(tmp_path / "d.csv", index=False)
    dom = {"format": "lopub-domain", "version": 1, "attributes": [
        {"name": "sex", "categories": ["F", "M"]},
        {"name": "city", "categories": [f"c{i:02d}" for i in range(40)]}]}
    (tmp_path / "dom.json").write_text(json.dumps(dom))
    return tmp_path, df


def test_allomfree_file_with_losue_attribute_reads_back(wide, capsys):
    """ALLOMFREE picks L-OSUE for a large domain: its bit reports must read back."""
    from lopub.oracles import allomfree_choice

    tmp, df = wide
    assert allomfree_choice(1.0, 0.6, 40) == "l-osue" and allomfree_choice(1.0, 0.6, 2) == "l-grr"
    code, _, err = _run(capsys, "collect", str(tmp / "d.csv"), "--domain", str(tmp / "dom.json"),
                        "--protocol", "allomfree", "--epsilon", "1", "--eps-1", "0.6",
                        "--seed", "3", "--out", str(tmp / "af.npz"))
    assert code == 0, err
    code, out, err = _run(capsys, "estimate-freq", str(tmp / "af.npz"), "--json")
    assert code == 0, err
    marg = json.loads(out)["marginals"]
    assert list(marg["city"]) == [f"c{i:02d}" for i in range(40)]
    code, out, err = _run(capsys, "inspect-reports", str(tmp / "af.npz"))
    assert code == 0, err


@pytest.mark.parametrize("eps", [0.1, 0.5])
def test_lh_lip_transition_matrix_is_a_channel_the_clients_use(eps):
    """The default transition matrix is eps-LIP; a seed the clients would redraw is refused."""
    from lopub.oracles import LHLIP, lip_level

    prior = np.array([0.4, 0.25, 0.15, 0.12, 0.08])
    mech = LHLIP(prior, eps)
    assert lip_level(mech.transition_matrix(), prior) <= eps * (1 + 1e-9)
    bound = 1 / (np.exp(eps) + 1)
    a, b = 1, 0  # h(v) = v mod 2: bucket 1 holds 0.25 + 0.12 = 0.37 < bound
    assert mech.hashed_priors(np.array([a]), np.array([b])).min() < bound
    with pytest.raises(ValueError, match="never use"):
        mech.transition_matrix(a, b)


def _hashed(a, b, y, n=5):
    return np.array([[a, b, y]] * n, dtype=np.int64)


@pytest.mark.parametrize("make", ["olh", "blh", "lh-lip"])
@pytest.mark.parametrize("row", [(-1, 5, 0), (0, 5, 0), (1, -5, 0), (1, (1 << 31) - 1, 0),
                                 (1 << 31, 5, 0), (1, 5, 7), (1, 5, -1)])
def test_hashed_reports_out_of_range_are_refused(make, row):
    """Seeds outside the hash family (a in [1, P), b in [0, P)) or y outside [0, g) are refused,
    not estimated from (OLH gave [-1.1, -1.1, -1.1]; LH-LIP an IndexError traceback)."""
    from lopub.oracles import BLH, LHLIP, OLH

    mech = {"olh": lambda: OLH(1.0, 3), "blh": lambda: BLH(1.0, 3),
            "lh-lip": lambda: LHLIP([0.3, 0.3, 0.4], 1.0)}[make]()
    with pytest.raises(ValueError, match="reports"):
        mech.estimate(_hashed(*row))


@pytest.mark.parametrize("make", ["oue", "sue", "ue-lip"])
def test_unary_reports_must_be_bits(make):
    """A unary report holds 0/1 bits: 5 is not a bit (OUE counted it as a 1)."""
    from lopub.oracles import OUE, SUE, UELIP

    mech = {"oue": lambda: OUE(1.0, 3), "sue": lambda: SUE(1.0, 3),
            "ue-lip": lambda: UELIP([0.3, 0.3, 0.4], 1.0)}[make]()
    with pytest.raises(ValueError, match="0 or 1"):
        mech.estimate(np.full((5, 3), 5))
    ok = mech.estimate(np.eye(3, dtype=np.int64))  # integer 0/1 bits are fine
    assert ok.shape == (3,)


def test_rr_lip_fallback_lp_is_sparse():
    """The LP behind RR-LIP's fallback channel held a dense k^4 identity (k = 60: 100 MB,
    k = 4909: "unable to allocate 4.13 PiB"); sparse, it needs a few MB."""
    import tracemalloc

    from lopub.oracles import RRLIP, lip_level

    k, eps = 60, 1.0
    prior = np.random.default_rng(0).dirichlet(np.ones(k))
    assert prior.min() < 1 / (np.exp(eps) + 1)  # invalid for plain RR-LIP: the LP is used
    tracemalloc.start()
    try:
        mech = RRLIP(prior, eps, on_invalid="lp")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert mech.mechanism == "lp" and lip_level(mech.matrix, prior) <= eps * (1 + 1e-9)
    assert peak < 40 * 2**20


def test_rr_lip_fallback_too_large_domain_is_a_clear_error(tmp_path, capsys):
    from lopub.oracles import RRLIP

    with pytest.raises(ValueError, match="UE-LIP or LH-LIP"):
        RRLIP(np.full(4909, 1 / 4909), 2.0, on_invalid="lp")
    rng = np.random.default_rng(0)
    pd.DataFrame({"c": rng.integers(0, 300, 500).astype(str)}).to_csv(tmp_path / "d.csv",
                                                                      index=False)
    labels = sorted({str(i) for i in range(300)})
    (tmp_path / "dom.json").write_text(json.dumps({"format": "lopub-domain", "version": 1,
                                                   "attributes": [{"name": "c",
                                                                   "categories": labels}]}))
    (tmp_path / "prior.json").write_text(json.dumps({"c": [1 / 300] * 300}))
    code, _, err = _run(capsys, "collect", str(tmp_path / "d.csv"), "--domain",
                        str(tmp_path / "dom.json"), "--protocol", "rr-lip", "--epsilon", "2",
                        "--prior", str(tmp_path / "prior.json"), "--out", str(tmp_path / "r.npz"))
    assert code == 2 and "UE-LIP or LH-LIP" in err and "out of memory" not in err


def _peak(fn):
    import tracemalloc

    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("make", ["lh-lip", "ue-lip", "rr-lip"])
def test_lip_memory_does_not_grow_with_users_times_k(make):
    """LIP clients and servers worked on (users x k) blocks of 65,536 users whatever k:
    the 4,909-category column took 2.5 GB for 20,000 users.  Blocks are now bounded in cells."""
    from lopub.oracles import LHLIP, RRLIP, UELIP

    k, n = {"lh-lip": 2000, "ue-lip": 2000, "rr-lip": 1000}[make], 20_000
    prior = np.full(k, 1 / k)
    mech = {"lh-lip": lambda: LHLIP(prior, 1.0), "ue-lip": lambda: UELIP(prior, 1.0),
            "rr-lip": lambda: RRLIP(prior, 8.0)}[make]()
    values = np.random.default_rng(1).integers(0, k, n)
    reports, peak_client = _peak(lambda: mech.perturb(values, rng=2))
    est, peak_server = _peak(lambda: mech.estimate(reports))
    own = np.asarray(reports).nbytes + (mech.matrix.nbytes * 2 if make == "rr-lip" else 0)
    assert peak_client < own + 64 * 2**20 and peak_server < own + 64 * 2**20
    assert est.shape == (k,) and abs(est.sum() - 1) < 1e-6


@pytest.mark.parametrize("extra, want", [
    (["--protocol", "l-grr", "--eps-1", "0.6", "--lgrr-variant", "exact"],
     {"eps_1": 0.6, "lgrr_variant": "exact", "privacy": "ldp"}),
    (["--protocol", "oue", "--solution", "smp", "--r", "2"], {"r": 2, "privacy": "ldp"}),
    (["--protocol", "allomfree", "--eps-1", "0.6"],
     {"eps_1": 0.6, "lgrr_variant": "paper", "solution": "smp"}),
    (["--protocol", "ue-lip", "--prior", "PRIOR"], {"privacy": "lip"}),
])
def test_inspect_reports_shows_the_budgets_that_define_an_oracle_file(wide, capsys, extra, want):
    """inspect-reports printed epsilon only: not eps_1 of a longitudinal file, nor r of an SMP
    one, nor that LIP reports are eps-LIP (2 eps-LDP), not eps-LDP."""
    tmp, _ = wide
    (tmp / "prior.json").write_text(json.dumps({"sex": [0.5, 0.5], "city": [1 / 40] * 40}))
    extra = [str(tmp / "prior.json") if x == "PRIOR" else x for x in extra]
    code, _, err = _run(capsys, "collect", str(tmp / "d.csv"), "--domain", str(tmp / "dom.json"),
                        "--epsilon", "1", "--seed", "1", "--out", str(tmp / "r.npz"), *extra)
    assert code == 0, err
    code, out, err = _run(capsys, "inspect-reports", str(tmp / "r.npz"), "--json")
    assert code == 0, err
    got = json.loads(out)
    assert {key: got.get(key) for key in want} == want
    if want.get("privacy") == "lip":
        assert "LIP" in got["privacy_note"]


def test_compare_protocols_names_a_constant_column(tmp_path, capsys):
    """compare-protocols said "sizes[1] (1) must be an integer >= 2"; collect names the column."""
    pd.DataFrame({"a": ["x", "y"] * 20, "const": ["k"] * 40}).to_csv(tmp_path / "d.csv",
                                                                     index=False)
    dom = {"format": "lopub-domain", "version": 1, "attributes": [
        {"name": "a", "categories": ["x", "y"]}, {"name": "const", "categories": ["k"]}]}
    (tmp_path / "dom.json").write_text(json.dumps(dom))
    code, _, err = _run(capsys, "compare-protocols", "--dataset", str(tmp_path / "d.csv"),
                        "--domain", str(tmp_path / "dom.json"), "--epsilons", "1",
                        "--protocols", "spl-grr", "--seed", "1")
    assert code == 2 and "'const' (only ['k']) have one category" in err and "sizes[1]" not in err


@pytest.mark.parametrize("extra", [["--protocol", "oue"], ["--protocol", "grr", "--solution", "smp"],
                                   ["--protocol", "allomfree", "--eps-1", "2"],
                                   ["--protocol", "rr-lip", "--prior", "PRIOR", "--lip-method", "invert"]])
def test_estimate_freq_states_a_standard_error_that_covers_the_truth(wide, capsys, extra):
    """estimate-freq printed bare numbers (0.0000 for a city of 40 rows at epsilon 1, whose
    standard error is 0.63); it now states the analytic standard error of each estimate, and
    the unbiased estimate lies within 6 of them of the truth."""
    tmp, df = wide
    (tmp / "prior.json").write_text(json.dumps({"sex": [0.5, 0.5], "city": [1 / 40] * 40}))
    extra = [str(tmp / "prior.json") if x == "PRIOR" else x for x in extra]
    lip = [x for x in extra if x == "--lip-method" or x == "invert"]
    collect = [x for x in extra if x not in lip]
    code, _, err = _run(capsys, "collect", str(tmp / "d.csv"), "--domain", str(tmp / "dom.json"),
                        "--epsilon", "8", "--out", str(tmp / "r.npz"), *collect)
    assert code == 0, err
    code, out, err = _run(capsys, "estimate-freq", str(tmp / "r.npz"), "--json",
                          "--postprocess", "none", *lip)
    assert code == 0, err
    got = json.loads(out)
    for attr in ("sex", "city"):
        truth = df[attr].value_counts(normalize=True)
        est, se = got["marginals"][attr], got["stderr"][attr]
        assert list(se) == list(est) and all(s > 0 for s in se.values())
        z = [abs(est[lab] - truth.get(lab, 0.0)) / se[lab] for lab in est]
        assert max(z) < 6, (attr, max(z))
    code, out, _ = _run(capsys, "estimate-freq", str(tmp / "r.npz"), *lip)
    assert "standard error" in out


def test_estimate_freq_stderr_is_the_oracles_variance(wide, capsys):
    from lopub.oracles import OUE

    tmp, df = wide
    code, _, err = _run(capsys, "collect", str(tmp / "d.csv"), "--domain", str(tmp / "dom.json"),
                        "--epsilon", "4", "--protocol", "oue", "--seed", "1", "--out",
                        str(tmp / "r.npz"))
    assert code == 0, err
    code, out, err = _run(capsys, "estimate-freq", str(tmp / "r.npz"), "--json")
    got = json.loads(out)
    f = np.array(list(got["marginals"]["city"].values()))
    want = np.sqrt(OUE(2.0, 40).variance(len(df), f))
    np.testing.assert_allclose(list(got["stderr"]["city"].values()), want, rtol=1e-12)


def test_estimate_freq_on_marginal_reports_states_standard_errors(wide, capsys):
    tmp, _ = wide
    code, _, err = _run(capsys, "collect", str(tmp / "d.csv"), "--domain", str(tmp / "dom.json"),
                        "--epsilon", "2", "--protocol", "one-attribute", "--seed", "1", "--out",
                        str(tmp / "m.npz"))
    assert code == 0, err
    code, out, err = _run(capsys, "estimate-freq", str(tmp / "m.npz"), "--json")
    assert code == 0, err
    got = json.loads(out)
    assert list(got["stderr"]["city"]) == list(got["marginals"]["city"])
    assert all(0 < s < 1 for s in got["stderr"]["city"].values())
    code, _, err = _run(capsys, "estimate-freq", str(tmp / "m.npz"), "--lip-method", "invert")
    assert code == 2 and "--lip-method" in err


@pytest.mark.parametrize("protocol", ["rr-lip", "ue-lip", "lh-lip"])
def test_lip_collect_seeds_give_independent_runs(tmp_path, capsys, protocol):
    """collect seeded LIP attribute j with --seed + j: the runs --seed 1 and --seed 2 drew the
    same noise (attribute 1 of the first = attribute 0 of the second)."""
    from lopub.cli.oracle_files import load_reports

    rng = np.random.default_rng(0)
    col = rng.choice(list("vwxyz"), 500)
    pd.DataFrame({"a": col, "b": col}).to_csv(tmp_path / "d.csv", index=False)
    dom = {"format": "lopub-domain", "version": 1, "attributes": [
        {"name": x, "categories": list("vwxyz")} for x in ("a", "b")]}
    (tmp_path / "dom.json").write_text(json.dumps(dom))
    (tmp_path / "p.json").write_text(json.dumps({"a": [0.2] * 5, "b": [0.2] * 5}))
    runs = []
    for seed in ("1", "2"):
        code, _, err = _run(capsys, "collect", str(tmp_path / "d.csv"), "--domain",
                            str(tmp_path / "dom.json"), "--protocol", protocol, "--epsilon", "4",
                            "--prior", str(tmp_path / "p.json"), "--seed", seed, "--out",
                            str(tmp_path / f"r{seed}.npz"))
        assert code == 0, err
        runs.append(load_reports(str(tmp_path / f"r{seed}.npz"))[1])
    assert not np.array_equal(runs[0]["reports_1"], runs[1]["reports_0"])
    code, _, err = _run(capsys, "collect", str(tmp_path / "d.csv"), "--domain",
                        str(tmp_path / "dom.json"), "--protocol", protocol, "--epsilon", "4",
                        "--prior", str(tmp_path / "p.json"), "--seed", "1", "--out",
                        str(tmp_path / "again.npz"))
    again = load_reports(str(tmp_path / "again.npz"))[1]
    assert all(np.array_equal(again[key], runs[0][key]) for key in ("reports_0", "reports_1"))


def test_lh_lip_impossible_prior_says_why_and_offers_no_smaller_g():
    """'use a smaller g' was offered at g = 2, the smallest (and not an option of collect)."""
    from lopub.oracles import LHLIP

    with pytest.raises(ValueError) as info:  # at construction since tour 40
        LHLIP([1e-3, 1 - 1e-3], 0.5)
    msg = str(info.value)
    assert "smaller g" not in msg and "lightest bucket 0.001" in msg and "RR-LIP" in msg


def test_lip_prior_by_label(tmp_path, capsys):
    """A prior keyed by label (label order is easy to get wrong) is accepted; one that misses a
    label or names an unknown one is refused naming them ('has dict probabilities' before)."""
    from lopub.cli.oracle_files import load_reports

    pd.DataFrame({"c": ["Zürich", "Genève", "東京"] * 20}).to_csv(tmp_path / "d.csv", index=False)
    labels = ["Genève", "Zürich", "東京"]
    (tmp_path / "dom.json").write_text(json.dumps({"format": "lopub-domain", "version": 1,
                                                   "attributes": [{"name": "c",
                                                                   "categories": labels}]}))
    argv = ["collect", str(tmp_path / "d.csv"), "--domain", str(tmp_path / "dom.json"),
            "--protocol", "rr-lip", "--epsilon", "3", "--prior", str(tmp_path / "p.json"),
            "--seed", "1", "--out", str(tmp_path / "r.npz")]
    (tmp_path / "p.json").write_text(json.dumps({"c": {"東京": 0.5, "Zürich": 0.3, "Genève": 0.2}}))
    code, _, err = _run(capsys, *argv)
    assert code == 0, err
    assert load_reports(str(tmp_path / "r.npz"))[0]["priors"] == [[0.2, 0.3, 0.5]]
    (tmp_path / "p.json").write_text(json.dumps({"c": {"東京": 0.5, "Zurich": 0.5}}))
    code, _, err = _run(capsys, *argv)
    assert code == 2 and "missing ['Genève', 'Zürich']" in err and "['Zurich']" in err


@pytest.mark.parametrize("protocol", ["grr", "one-attribute"])
def test_collect_out_names_a_file_of_the_right_kind(wide, capsys, protocol):
    """An oracle collection wrote its NumPy archive under a .parquet name; 'out/' wrote a file
    named 'out'; an existing folder gave '[Errno 21] Is a directory: .../.exdir.xxxx.tmp'."""
    tmp, _ = wide
    base = ["collect", str(tmp / "d.csv"), "--domain", str(tmp / "dom.json"), "--protocol",
            protocol, "--epsilon", "2", "--seed", "1", "--out"]
    code, out, err = _run(capsys, *base, str(tmp / "r.parquet"))
    assert code == 0, err
    assert (tmp / "r.npz").is_file() and not (tmp / "r.parquet").exists() and "r.npz" in err
    (tmp / "folder").mkdir()
    for name in ("folder", "folder/", "newdir/"):
        code, _, err = _run(capsys, *base, f"{tmp}/{name}")  # (pathlib would drop the '/')
        assert code == 2 and "names a folder" in err and ".tmp" not in err, (name, err)
    assert not (tmp / "newdir").exists()


def test_compare_protocols_warns_about_options_it_ignores(wide, capsys):
    """--n with a CSV or Adult, --domain with the embedded data changed nothing, silently."""
    tmp, _ = wide
    code, _, err = _run(capsys, "compare-protocols", "--dataset", str(tmp / "d.csv"), "--domain",
                        str(tmp / "dom.json"), "--n", "500", "--epsilons", "2", "--protocols",
                        "spl-grr", "--seed", "1")
    assert code == 0 and "--n is ignored" in err
    code, _, err = _run(capsys, "compare-protocols", "--dataset", "embedded", "--domain",
                        str(tmp / "dom.json"), "--n", "500", "--epsilons", "2", "--protocols",
                        "spl-grr", "--seed", "1")
    assert code == 0 and "--domain is ignored" in err and "--n is ignored" not in err


def test_lh_lip_variance_closed_form_matches_enumeration_and_is_fast():
    """LH-LIP's variance enumerated (seeds x k x k x g): 46 s and 200 MB at k = 1,000.  The
    closed form equals the enumeration and takes a matrix product."""
    import time

    from lopub.oracles import LHLIP

    rng = np.random.default_rng(3)
    for k, eps, g in ((4, 1.0, 2), (9, 2.0, 3)):
        prior, f = rng.dirichlet(np.full(k, 5.0)), rng.dirichlet(np.ones(k))
        mech = LHLIP(prior, eps, g=g)
        a, b = mech._seeds_for_variance()
        q = mech._channels(a, b)  # (s, x, y): the enumeration the closed form replaces
        post = prior[None, :, None] * q / np.einsum("x,sxy->sy", prior, q)[:, None, :]
        mean = np.einsum("sxy,sky->xk", q, post) / q.shape[0]
        second = np.einsum("sxy,sky->xk", q, post ** 2) / q.shape[0]
        np.testing.assert_allclose(mech.variance(500, f), f @ (second - mean ** 2) / 500,
                                   rtol=1e-9)
    start = time.perf_counter()
    var = LHLIP(np.full(1000, 1e-3), 1.0).variance(10_000)
    assert time.perf_counter() - start < 15 and var.shape == (1000,) and np.all(var > 0)


@pytest.mark.parametrize("protocol, lip", [("rr-lip", []), ("lh-lip", []),
                                           ("ue-lip", ["--lip-method", "bayes"])])
def test_estimate_freq_states_no_standard_error_for_the_biased_posterior_mean(wide, capsys,
                                                                             protocol, lip):
    """The posterior mean sits near the prior: its small variance is not its error."""
    tmp, _ = wide
    (tmp / "prior.json").write_text(json.dumps({"sex": [0.5, 0.5], "city": [1 / 40] * 40}))
    code, _, err = _run(capsys, "collect", str(tmp / "d.csv"), "--domain", str(tmp / "dom.json"),
                        "--epsilon", "8", "--protocol", protocol, "--prior",
                        str(tmp / "prior.json"), "--out", str(tmp / "r.npz"))
    assert code == 0, err
    code, out, err = _run(capsys, "estimate-freq", str(tmp / "r.npz"), "--json", *lip)
    assert code == 0, err
    assert json.loads(out)["stderr"] == {"sex": None, "city": None}


@pytest.mark.parametrize("seed", [(0, 3), (-1, 3), (1, -1), (1 << 31, 0)])
def test_olh_transition_matrix_refuses_a_seed_outside_the_family(seed):
    """a = 0 hashes every value to one bucket: a channel of level 0 that no client uses."""
    from lopub.oracles import OLH

    with pytest.raises(ValueError, match="column (a|b)"):
        OLH(1.0, 4).transition_matrix(*seed)
    assert OLH(1.0, 4).transition_matrix(1, 0).shape == (4, 4)


def test_python_collect_points_an_oracle_name_to_lopub_oracles():
    """collect(dataset, eps, protocol='oue') only listed the planned protocols."""
    from lopub.collect import collect
    from lopub.datasets import embedded

    with pytest.raises(ValueError, match=r"lopub\.oracles .*--protocol oue"):
        collect(embedded(100, rng=0), 4.0, protocol="oue")


def test_estimate_freq_stderr_with_postprocess_none_is_not_below_var_star(wide, capsys):
    """With --postprocess none a negative estimate entered the variance as a negative
    frequency, lowering the standard error below the oracle's Var*."""
    from lopub.oracles import GRR

    tmp, df = wide
    code, _, err = _run(capsys, "collect", str(tmp / "d.csv"), "--domain", str(tmp / "dom.json"),
                        "--epsilon", "0.5", "--protocol", "grr", "--seed", "4", "--out",
                        str(tmp / "r.npz"))
    assert code == 0, err
    code, out, err = _run(capsys, "estimate-freq", str(tmp / "r.npz"), "--json",
                          "--postprocess", "none")
    got = json.loads(out)
    est = np.array(list(got["marginals"]["city"].values()))
    se = np.array(list(got["stderr"]["city"].values()))
    assert (est < 0).any()
    floor = np.sqrt(GRR(0.25, 40).variance(len(df), 0.0))
    assert np.all(se >= floor * (1 - 1e-12))


def test_measure_with_postprocess_none_evaluates_the_variance_at_a_frequency():
    from lopub.oracles import GRR

    oracle = GRR(0.25, 40)
    values = np.random.default_rng(0).integers(0, 40, 3000)
    m = oracle.measure(oracle.perturb(values, rng=1), postprocess="none")
    assert (m.values < 0).any()
    np.testing.assert_allclose(m.variance, oracle.variance(3000, np.clip(m.values, 0, 1)))
    assert np.all(m.variance >= oracle.variance(3000, 0.0) * (1 - 1e-12))
