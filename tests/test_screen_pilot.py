"""The two-phase screen's pilot: the split-half dependence total, the calibrated shrink, the stop rule."""
import itertools

import numpy as np
import pytest

from lopub.collect import MarginalReports, collect, collect_records, measure_marginals, plan
from lopub.collect.phases import collect_two_phase
from lopub.collect.screen import ScreenProfile, calibrated_noise_factor, split_groups, split_total
from lopub.collect.twophase import PILOT_SHARE, TwoPhasePlan
from lopub.data.dataset import Dataset
from test_collect_twophase import chain_data, domain


def independent_data(n, d=12, seed=7):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.2, 0.8, d)
    return Dataset((rng.random((n, d)) < p).astype(np.int64), domain([2] * d))


def test_calibrated_noise_factor_zeroes_noise_and_keeps_a_pair_far_above_it():
    noise = np.ones(50)
    dev = np.full(50, 1.5)  # each pair above its noise, in all no dependence: every pair zeroed
    c = calibrated_noise_factor(dev, noise, 0.0)
    assert np.all(np.clip(1 - c * noise / dev, 0, None) == 0)
    dev[0] = 101.0  # one pair far above: a target of about its dependence zeroes the others
    c = calibrated_noise_factor(dev, noise, 98.0)
    kept = np.clip(1 - c * noise / dev, 0, None)
    assert kept[0] > 0.98 and np.all(kept[1:] == 0)
    assert np.sum(dev * kept ** 2) <= 98.0 + 1e-9
    assert calibrated_noise_factor(np.array([10.0, 0.5]), np.array([1.0, 1.0]), 8.5) == 1.0  # JS keeps less


@pytest.mark.parametrize("parts", [2, 4])
def test_split_groups_deals_every_group_into_disjoint_shares(parts):
    data = chain_data(3000)
    tp = TwoPhasePlan.build(data.domain, data.n, 4.0)
    reports = collect_records(data.subset(np.arange(tp.n_screen)), tp.screen, rng=1)
    shares = split_groups(reports, parts)
    assert len(shares) == parts and all(isinstance(s, MarginalReports) for s in shares)
    for i, g in enumerate(reports.groups):
        got = [np.asarray(s.groups[i]) for s in shares]
        assert sum(map(len, got)) == len(g) and max(map(len, got)) - min(map(len, got)) <= 1
        assert np.array_equal(np.sort(np.concatenate(got), axis=0), np.sort(np.asarray(g), axis=0))
    assert sum(s.n for s in shares) == reports.n


def test_split_total_is_unbiased_for_the_pairs_total_dependence():
    """The mean over independent collections is within 4 of its standard errors of the true total
    (the spread each run returns is a conservative standard deviation of its own total)."""
    data = chain_data(20000)
    tp = TwoPhasePlan.build(data.domain, data.n, 4.0)
    pairs = list(tp.screen.subsets)
    truth = 0.0
    for p in pairs:
        t = np.asarray(data.marginal(list(p)).values, dtype=float)
        t = t / t.sum()
        d = t - np.outer(t.sum(axis=1), t.sum(axis=0))
        truth += float(np.vdot(d, d))
    totals, spreads = [], []
    for seed in range(12):
        reports = collect_records(data, tp.screen, rng=seed)
        total, spread = split_total(reports, pairs)
        totals.append(total)
        spreads.append(spread)
    se = np.sqrt(np.mean(np.square(spreads)) / len(totals))
    assert abs(np.mean(totals) - truth) <= 4 * se
    assert truth > 4 * se  # the test can tell the chain's dependence from none


def _own_margins_total(reports, pairs):
    """The estimate split_total replaced: two halves' ``t - r c'`` with each table's own margins."""
    out, plan = 0.0, reports.plan
    for i, p in enumerate(plan.subsets):
        assert tuple(p) == tuple(pairs[i])
        g, oracle = np.asarray(reports.groups[i]), plan.oracle(i)
        ds = []
        for h in (0, 1):
            t = np.asarray(oracle.estimate(g[h::2]), dtype=float)[:plan.cells(i)].reshape(plan.subset_domain(i).sizes)
            ds.append((t - np.outer(t.sum(axis=1), t.sum(axis=0))).ravel())
        out += float(np.vdot(ds[0], ds[1]))
    return out


def test_split_total_is_unbiased_where_noise_dominates_small_groups():
    """A pilot's shape (bn-water at epsilon 1: hundreds of 4 x 4 pairs, 128 users each, unary
    reports): on independent data the total is within 4 standard errors of none over 24 collections;
    a table's own margins carry its cells' noise into both sums, and that estimate's mean, for
    contrast, is far above none (about 7 standard errors)."""
    from lopub.collect.plan import MarginalPlan

    d, k, users = 28, 4, 128
    pairs = list(itertools.combinations([f"a{i}" for i in range(d)], 2))
    rng = np.random.default_rng(11)
    data = Dataset(rng.integers(0, k, (len(pairs) * users, d)), domain([k] * d))
    screen = MarginalPlan(data.domain, tuple(pairs), 1.0)
    assert set(screen.oracles) == {"oue"}
    totals, spreads, old = [], [], []
    for seed in range(24):
        reports = collect_records(data, screen, rng=seed)
        total, spread = split_total(reports, pairs)
        totals.append(total)
        spreads.append(spread)
        old.append(_own_margins_total(reports, pairs))
    se = np.sqrt(np.mean(np.square(spreads)) / len(totals))
    assert abs(np.mean(totals)) <= 4 * se  # independent: the true total is 0
    assert np.mean(old) > 4 * se  # the test tells the biased estimate from this one


def test_split_total_refuses_a_pair_without_a_user_in_each_quarter():
    data = chain_data(3000)
    tp = TwoPhasePlan.build(data.domain, data.n, 4.0)
    few = collect_records(data.subset(np.arange(45)), tp.screen, rng=0)  # 3 users for each of 15 pairs
    with pytest.raises(ValueError, match=r"pair \['a0', 'a1'\] has 3 users in the reports; .* needs >= 4"):
        split_total(few, [("a0", "a1")])
    assert np.isfinite(split_total(collect_records(data.subset(np.arange(60)), tp.screen, rng=0),
                                   [("a0", "a1")])[0])


def test_a_stopping_pilot_leaves_every_other_user_one_attribute(monkeypatch):
    data = independent_data(200_000)
    tp = TwoPhasePlan.build(data.domain, data.n, 1.0)
    assert tp.n_pilot == round(PILOT_SHARE * data.n) < tp.n_screen
    seen = []

    def stops(self, reports):
        seen.append(reports.n)
        return {"users": self.n_pilot, "stopped": True, "one_way": 0.01, "screen": 0.02}

    monkeypatch.setattr(TwoPhasePlan, "pilot_stops", stops)
    out, preds = {}, {}
    screen, main = collect_two_phase(data, tp, rng=3, pilot=out, predictions=preds)
    assert seen == [tp.n_pilot] and out["stopped"] and preds == {"one-way": 0.01}
    assert screen.n == tp.n_pilot and main.n == data.n - tp.n_pilot  # each user once
    assert screen.plan == tp.screen and main.plan.subsets == tuple((a,) for a in data.domain.attrs)


def test_pilot_on_independent_data_finds_no_dependence():
    """Its split-half total is within two of its standard deviations of none (the stop also needs the
    one-way prediction to be lowest: a 5 % pilot rarely bounds the dependence tightly enough)."""
    data = independent_data(200_000)
    tp = TwoPhasePlan.build(data.domain, data.n, 1.0)
    out = {}
    collect_two_phase(data, tp, rng=3, pilot=out)
    assert out["dependence_total"] <= 2 * out["dependence_spread"]
    assert out["stopped"] == (out["one_way"] <= out["screen"])


@pytest.mark.parametrize("seed", range(4))
def test_pilot_continues_where_it_finds_dependence(seed):
    data = chain_data(30000)
    tp = TwoPhasePlan.build(data.domain, data.n, 2.0)
    assert tp.n_pilot > 0
    out = {}
    screen, main = collect_two_phase(data, tp, rng=seed, pilot=out)
    assert not out["stopped"] and out["one_way"] > out["screen"]  # the chain's pairs repay the screen
    assert screen.n == tp.n_screen and main.n == tp.n_main  # the whole screen, then the main plan


def test_no_pilot_where_its_users_cannot_give_every_pair_four_users():
    """split_total deals each pair's users into quarters: a pilot below four users a pair has none
    (2,000 records of 8 attributes: a 5 % pilot is 100 users for 28 pairs, and measuring it failed)."""
    data = chain_data(3000)
    tp = TwoPhasePlan.build(data.domain, data.n, 4.0)
    assert tp.n_pilot == 150  # 5 % of 3,000 users: 10 for each of the 15 pairs
    assert TwoPhasePlan.build(data.domain, data.n, 4.0, pilot_share=0.02).n_pilot == 60  # 4 a pair
    assert TwoPhasePlan.build(data.domain, data.n, 4.0, pilot_share=0.0197).n_pilot == 0  # 59 users
    assert TwoPhasePlan.build(data.domain, data.n, 4.0, pilot_share=None).n_pilot == 0
    with pytest.raises(ValueError, match="pilot_share"):
        TwoPhasePlan.build(data.domain, data.n, 4.0, pilot_share=1.5)


def test_pilot_profile_reads_the_raw_tables():
    """The pilot's shrink compares each pair's unbiased table with its stated variance (the variance
    of the raw estimate); the post-processed table holds less noise than that states."""
    data = chain_data(30000)
    tp = TwoPhasePlan.build(data.domain, data.n, 2.0)
    src = measure_marginals(collect_records(data.subset(np.arange(tp.n_pilot)), tp.screen, rng=0))
    post, raw = ScreenProfile(data.domain, src), ScreenProfile(data.domain, src, raw=True)
    p = tp.screen.subsets[0]
    m = src.marginal(list(p))
    want = np.asarray(m.raw).ravel() - np.outer(post.probs(p[:1]), post.probs(p[1:])).ravel()
    assert np.allclose(raw._raw(*p)[0], want) and not np.allclose(post._raw(*p)[0], want)


def test_after_screen_records_a_stopping_pilot():
    data = independent_data(200_000)
    report = plan(data.domain, data.n, 1.0)
    pilot = {"users": 10_000, "stopped": True, "one_way": 0.01, "screen": 0.02,
             "dependence_total": 0.0, "dependence_spread": 1.0}
    after = report.after_screen({"one-way": 0.01}, pilot=pilot)
    opt = after.option("marginals")
    assert opt.params["pilot"] == pilot and opt.params["n_screen"] == 10_000 and opt.params["main"] == "one-way"
    assert any("stopped the screen" in n for n in after.notes)
    assert report.two_phase is not None  # the report's two-phase plan is the one that ran: its pilot as screen
    assert after.to_dict()["two_phase"]["n_screen"] == 10_000 and after.two_phase.n_pilot == 0


def test_collect_auto_reports_the_pilot_outcome():
    data = chain_data(30000)
    report = plan(data.domain, data.n, 2.0)
    assert report.two_phase is not None and report.option("marginals").params["n_pilot"] == report.two_phase.n_pilot > 0
    assert "pilot" in report.option("marginals").description
    reports, after = collect(data, 2.0, protocol="auto", rng=0)
    got = after.option("marginals").params["pilot"]
    assert got["users"] == report.two_phase.n_pilot and got["stopped"] is False
    assert any("continued the screen" in n for n in after.notes)
    assert reports.n == data.n


def test_cli_collect_says_what_the_pilot_did(tmp_path, capsys):
    import json

    import pandas as pd

    from cli_run import run

    data = chain_data(30000)
    pd.DataFrame(np.asarray(data.codes), columns=data.domain.attrs).astype(str).to_csv(tmp_path / "c.csv", index=False)
    assert run(capsys, "schema", tmp_path / "c.csv", "--out", tmp_path / "d.json")[0] == 0
    code, out, err = run(capsys, "collect", tmp_path / "c.csv", "--domain", tmp_path / "d.json", "--epsilon", "2",
                         "--out", tmp_path / "r.npz", "--seed", "1")
    assert code == 0, err
    assert "the screen's pilot of 1,500 users continued it" in out
    code, out, _ = run(capsys, "collect", tmp_path / "c.csv", "--domain", tmp_path / "d.json", "--epsilon", "2",
                       "--out", tmp_path / "r2.npz", "--seed", "1", "--json")
    assert json.loads(out)["pilot"]["stopped"] is False


def test_a_continuing_pilot_gives_the_release_of_one_never_measured():
    """Measuring the pilot draws no randomness: where it continues, the planned release is the one whose
    pilot is told to continue unmeasured (pipelines' ``planned-pilot-continues``); with the pilot off the
    plan has none and the collection's draws differ."""
    from pipelines.harness.methods import METHODS

    data = chain_data(30000)
    on = METHODS["planned"](data, 2.0, 0)
    assert on["pilot_stopped"] is False
    same = METHODS["planned-pilot-continues"](data, 2.0, 0)
    assert same["pilot_stopped"] is False and np.isclose(same["tvd"], on["tvd"], rtol=1e-12, atol=0)
    off = METHODS["planned-no-pilot"](data, 2.0, 0)
    assert "pilot_stopped" not in off and off["pick"] == on["pick"]
    assert plan(data.domain, data.n, 2.0).two_phase.n_pilot > 0  # the patch is undone
