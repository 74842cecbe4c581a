"""Two-phase marginal sampling: disjoint users, the main plan's rule, merged reports, the planner's use."""
import itertools

import numpy as np
import pytest

from lopub.collect import (MarginalPlan, MarginalReports, PlanError, collect, collect_records,
                           measure_marginals, merge_reports, plan)
from lopub.collect.adaptive import choose_subsets, predict_pair_errors, predict_plan_error
from lopub.collect.groups import needs, shortfall
from lopub.collect.phases import collect_two_phase
from lopub.collect.twophase import DEFAULT_SCREEN_SHARE, ScreenProfile, TwoPhasePlan
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.pipeline.steps import fit


def domain(sizes):
    return Domain.from_categories({f"a{i}": [str(j) for j in range(k)] for i, k in enumerate(sizes)})


def chain_data(n, sizes=(3, 3, 4, 2, 3, 5), seed=4242, dep=0.6):
    """Each attribute copies the previous one (mod its size) with probability ``dep``."""
    dom = domain(sizes)
    rng = np.random.default_rng(seed)
    cols = [rng.integers(0, sizes[0], n)]
    for k in sizes[1:]:
        cols.append(np.where(rng.random(n) < dep, cols[-1] % k, rng.integers(0, k, n)))
    return Dataset(np.column_stack(cols), dom)


@pytest.fixture(scope="module")
def data():
    return chain_data(30000)


@pytest.fixture(scope="module")
def phases(data):
    tp = TwoPhasePlan.build(data.domain, data.n, 2.0)
    screen, main = collect_two_phase(data, tp, rng=5)
    return tp, screen, main


def test_each_user_reports_once_in_one_phase_at_the_full_epsilon(data, phases):
    tp, screen, main = phases
    assert tp.n_screen == round(DEFAULT_SCREEN_SHARE * data.n) and tp.n_main == data.n - tp.n_screen
    assert screen.n == tp.n_screen and main.n == tp.n_main  # disjoint groups: the counts add up
    assert screen.plan.epsilon == main.plan.epsilon == 2.0
    merged = merge_reports(screen, main)
    assert merged.n == data.n  # one report per user, none dropped or doubled
    assert merged.plan.epsilon == 2.0
    sizes = merged.group_sizes()
    for s, n_s in zip(merged.plan.subsets, sizes):  # a subset of both phases: both groups, once each
        want = sum(int(r.group_sizes()[r.plan.subsets.index(s)]) for r in (screen, main)
                   if s in r.plan.subsets)
        assert n_s == want
    for i, s in enumerate(merged.plan.subsets):  # same subset -> same oracle in every plan
        for r in (screen, main):
            if s in r.plan.subsets:
                assert r.plan.oracles[r.plan.subsets.index(s)] == merged.plan.oracles[i]


def test_main_plan_is_the_candidate_of_lowest_predicted_error(phases):
    tp, screen, main = phases
    source = measure_marginals(screen)
    profile = ScreenProfile(tp.screen.domain, source)
    extra = [(list(tp.screen.subsets), float(tp.n_screen))]
    errs = {name: predict_plan_error(tp.screen.domain, tp.n_main, 2.0, s, prior=profile, extra_phases=extra)
            for name, s in tp.main_candidates(source).items()}
    best = min(errs.values())
    got = predict_plan_error(tp.screen.domain, tp.n_main, 2.0, main.plan.subsets, prior=profile,
                             extra_phases=extra)
    assert got == pytest.approx(best, rel=1e-9)
    assert {a for s in main.plan.subsets for a in s} == set(tp.screen.domain.attrs)


def test_screen_profile_reads_the_screen_tables(phases):
    tp, screen, _ = phases
    source = measure_marginals(screen)
    prof = ScreenProfile(tp.screen.domain, source)
    a, b = tp.screen.subsets[0]
    tab = source.marginal([a, b]).values
    np.testing.assert_allclose(prof.probs((a, b)), np.clip(tab, 0, None).ravel())
    raw = prof.probs((a, b)) - np.outer(prof.probs((a,)), prof.probs((b,))).ravel()
    # the screen's bias shrunk by its positive-part James-Stein factor (noise of the pair table)
    lam = max(0.0, 1.0 - float(np.sum(source.marginal([a, b]).variance)) / float(raw @ raw))
    np.testing.assert_allclose(prof.bias(a, b), lam * raw)
    # own margins: the pair table's own d, with the noise in its (K_a - 1)(K_b - 1) interaction directions
    own = ScreenProfile(tp.screen.domain, source, own_margins=True)
    t = np.clip(tab, 0, None)
    d = (t - np.outer(t.sum(axis=1), t.sum(axis=0))).ravel()
    share = (t.shape[0] - 1) * (t.shape[1] - 1) / t.size
    lam = max(0.0, 1.0 - share * float(np.sum(source.marginal([a, b]).variance)) / float(d @ d))
    assert 0.0 < lam < 1.0
    np.testing.assert_allclose(own.bias(a, b), lam * d)


def test_screen_profile_shrinks_a_pure_noise_bias_to_nothing():
    # two independent uniform binary attributes, a noisy screen: the raw bias is noise
    from lopub.collect.server import MarginalSource
    from lopub.estimate.measurement import Measurement

    dom = Domain.from_categories({"a": "01", "b": "01"})
    table = np.array([[0.27, 0.23], [0.23, 0.27]])  # bias 0.02 per cell, noise sd 0.05 per cell
    m = Measurement(dom, table, 100, variance=0.05 ** 2, raw=table)
    prof = ScreenProfile(dom, MarginalSource(dom, [m], n=100))
    assert np.all(prof.bias("a", "b") == 0.0)
    m = Measurement(dom, table, 100, variance=0.001 ** 2, raw=table)  # clear of its noise: kept
    prof = ScreenProfile(dom, MarginalSource(dom, [m], n=100))
    np.testing.assert_allclose(prof.bias("a", "b"), 0.02 * np.array([1, -1, -1, 1]), rtol=0.01)


def test_merged_measurements_are_unbiased_with_the_analytic_variance(data, phases):
    """Every measured table of the merged reports is within 6 analytic SDs of the truth in every cell
    (per cell P(|Z| > 6) = 2e-9; a few hundred cells)."""
    _, screen, main = phases
    source = measure_marginals(merge_reports(screen, main))
    for m in source.measurements():
        truth = data.project(list(m.attrs)).values
        assert np.all(np.abs(m.raw - truth) <= 6 * np.sqrt(m.variance) + 1e-12), m.attrs


@pytest.mark.slow
@pytest.mark.parametrize("dep", [0.0, 0.6])
def test_merged_measurements_variance_matches_simulation(dep):
    """Over 200 two-phase collections the spread of a pair measured in both phases matches the
    analytic variance (chi-square bounds at 1e-6) and its mean the truth (6 SDs of the mean).

    The variance is evaluated at the reference table, the product of the pooled one-way tables
    (lopub/collect/server.py: weights that do not follow a group's own noise): exact per cell for
    independent attributes; for dependent ones (``dep`` 0.6) the cells are those of independence
    (here off by up to 1.6x either way), so there the total over the cells -- what pooling and
    the fit weigh by -- is what must match."""
    from scipy.stats import chi2

    data = chain_data(6000, sizes=(3, 2, 4), seed=11, dep=dep)
    tp = TwoPhasePlan.build(data.domain, data.n, 3.0)
    pair = tp.screen.subsets[0]
    raws, vars_ = [], []
    for r in range(200):  # simulations, not users
        merged = merge_reports(*collect_two_phase(data, tp, rng=1000 + r))
        m = measure_marginals(merged).marginal(list(pair))
        raws.append(m.raw.ravel())
        vars_.append(m.variance.ravel())
    raws, var = np.array(raws), np.mean(vars_, axis=0)
    truth = data.project(list(pair)).values.ravel()
    assert np.all(np.abs(raws.mean(0) - truth) <= 6 * np.sqrt(var / len(raws)))
    emp = raws.var(axis=0, ddof=1)
    df = len(raws) - 1
    lo, hi = chi2.ppf(1e-6, df) / df, chi2.ppf(1 - 1e-6, df) / df
    if dep == 0.0:
        assert np.all(emp <= hi * var) and np.all(emp >= lo * var)
    # a sum of per-cell sample variances spreads no more than its widest term
    assert lo * var.sum() <= emp.sum() <= hi * var.sum()


def test_fit_takes_merged_reports_and_the_file_round_trips(data, phases, tmp_path):
    _, screen, main = phases
    merged = merge_reports(screen, main)
    path = tmp_path / "two.npz"
    merged.save(path)
    back = MarginalReports.load(path)
    assert back.plan_id == merged.plan_id and back.n == data.n
    assert main.screened == 0 and back.screened == 0 and back.users == data.n  # a kept screen is in the file
    model = fit(back).model
    assert model.n == data.n and model.users == data.n


def test_merge_reports_bad_input(data, phases):
    _, screen, main = phases
    with pytest.raises(TypeError, match="main"):
        merge_reports(screen, "x")
    other = collect_records(data, MarginalPlan(data.domain, [(a,) for a in data.domain.attrs], 1.0), rng=1)
    with pytest.raises(PlanError, match="epsilon"):
        merge_reports(screen, other)


def test_planner_uses_two_phase_where_the_uniform_rule_measures_more_than_the_smallest_pairs():
    dom = domain([2, 5, 4, 9, 3, 16, 2, 6])
    smallest = min(dom.cells(p) for p in itertools.combinations(dom.attrs, 2))
    seen = set()
    for n, eps in [(20000, 0.5), (20000, 1.0), (20000, 3.0), (60000, 2.0), (20000, 8.0), (1_000_000, 2.0)]:
        name = choose_subsets(dom, n, eps)[0]
        report = plan(dom, n, eps)
        rule = name.split(" ")[0]
        cut = rule.startswith("pairs<=") and int(rule[7:]) > smallest
        # ... and only where the screen's groups get their minimum (lopub.collect.groups)
        screen = [tuple(p) for p in itertools.combinations(dom.attrs, 2)]
        fillable = not shortfall(dom, int(round(n * DEFAULT_SCREEN_SHARE)), eps, screen)
        want = (cut or rule in ("pairs", "triples")) and fillable
        assert (report.two_phase is not None) == want, (n, eps, name)
        opt = report.option("marginals")
        assert opt.params["strategy"] == ("two-phase" if want else name)
        if want:
            assert report.marginal_plan.plan_id == report.two_phase.screen.plan_id
            assert report.to_dict()["two_phase"]["n_screen"] == report.two_phase.n_screen
        seen.add(want)
    assert seen == {True, False}  # both branches exercised
    assert plan(dom, 20000, 3.0, prior=chain_data(500, sizes=(2, 5, 4, 9, 3, 16, 2, 6))).two_phase is None


def test_collect_auto_runs_both_phases(data):
    report = plan(data.domain, data.n, 2.0)
    assert report.two_phase is not None and report.recommended == "marginals"
    reports, rep2 = collect(data, 2.0, protocol="auto", rng=3)
    assert isinstance(reports, MarginalReports) and reports.n == data.n
    screened = set(report.two_phase.screen.subsets)
    assert screened <= set(reports.plan.subsets)  # the screen's pairs are all in the merged plan
    opt = rep2.option("marginals")  # predicted from the screen's tables now, for every candidate
    preds = opt.params["screen_predictions"]
    assert len(preds) >= 2 and all(0.0 <= v <= 1.0 for v in preds.values())
    assert opt.params["main"] in preds and opt.predicted_tvd == min(preds.values())
    assert rep2.recommended == report.recommended
    assert report.option("marginals").params.get("screen_predictions") is None  # the plan-time report is unchanged
    again, _ = collect(data, 2.0, protocol="marginals", rng=3)
    assert again.plan_id == reports.plan_id and np.array_equal(again.subset, reports.subset)


def test_bloom_is_ranked_against_marginals_from_the_screen_not_at_uniform_tables():
    """Where Bloom is predicted lowest at uniform tables but the marginals option is two-phase, the
    plan recommends the screen, and the screen's tables decide between Bloom and marginal sampling."""
    from lopub.collect.bloom_cost import predict_bloom
    from lopub.reports.bloom import Reports

    data = chain_data(20000, sizes=(2, 2, 2, 2, 2))
    report = plan(data.domain, data.n, 16.0)
    preds = {o.protocol: o.predicted_tvd for o in report.options}
    assert report.two_phase is not None and min(preds, key=preds.get) == "bloom"
    assert report.recommended == "marginals" and any(t.startswith("bloom:") for t in report.notes)
    # a smaller screen than the default: if Bloom wins after it, its users are lost to the release
    from lopub.collect.planner import BLOOM_SCREEN_SHARE

    assert report.two_phase.n_screen == round(BLOOM_SCREEN_SHARE * data.n) < round(DEFAULT_SCREEN_SHARE * data.n)
    opt = report.option("marginals")
    assert opt.params["n_screen"] == report.two_phase.n_screen and opt.params["plan_id"] == report.marginal_plan.plan_id
    assert f"({report.two_phase.n_screen} users" in opt.description
    seen = set()
    for eps in (8.0, 16.0):
        reports, after = collect(data, eps, protocol="auto", rng=1)
        got = {o.protocol: o for o in after.options}
        marg = got["marginals"].predicted_tvd
        assert got["bloom"].params["after_screen"] and got["one-attribute"].params["after_screen"]
        # the release is what the screen predicted lowest, and the report says which
        want = "bloom" if got["bloom"].predicted_tvd < marg else "marginals"
        assert after.recommended == want
        assert isinstance(reports, Reports if want == "bloom" else MarginalReports)
        if want == "bloom":  # the main-phase users only: the screen's users reported marginals
            assert reports.n == report.two_phase.n_main
        seen.add(want)
    assert seen == {"bloom", "marginals"}
    # the Bloom prediction after the screen is the cost model at the screen's tables for n_main users
    tp = report.two_phase
    screen = collect_records(data.subset(np.arange(tp.n_screen)), tp.screen, rng=2)
    prof = ScreenProfile(data.domain, measure_marginals(screen))
    h = report.option("bloom").params["h"]
    assert predict_bloom(data.domain, tp.n_main, 16.0, h, prior=prof) > predict_bloom(data.domain, data.n, 16.0, h,
                                                                                       prior=prof)


def test_collect_two_phase_alternative_runs_only_when_predicted_lower(data):
    from lopub.collect.phases import Alternative

    tp = TwoPhasePlan.build(data.domain, data.n, 2.0)
    ran = []
    for value in (0.0, np.inf):
        alt = Alternative("other", lambda prof, n_main, v=value: (ran.append(n_main), v)[1],
                          lambda rest, rng: ("alternative", rest.n))
        preds: dict = {}
        _, main = collect_two_phase(data, tp, rng=7, predictions=preds, alternative=alt)
        assert preds["other"] == value and "one-attribute" in preds and len(preds) >= 4
        if value == 0.0:
            assert main == ("alternative", tp.n_main)
        else:
            assert isinstance(main, MarginalReports) and main.n == tp.n_main
    assert ran == [tp.n_main, tp.n_main]


def test_screen_pairs_are_a_public_sample_holding_every_attribute():
    from lopub.collect.twophase import screen_pairs

    for d in (7, 40):
        dom = domain([2] * d)
        total = d * (d - 1) // 2
        assert screen_pairs(dom, total + 5) == [tuple(p) for p in itertools.combinations(dom.attrs, 2)]
        for count in (-(-d // 2), 60):
            got = screen_pairs(dom, count)
            assert got == screen_pairs(dom, count)  # public: the same pairs for everyone
            assert len(got) == len(set(got)) == min(count, total)
            assert all(dom.index(a) < dom.index(b) for a, b in got)
            assert got == sorted(got, key=lambda p: (dom.index(p[0]), dom.index(p[1])))
            assert {a for p in got for a in p} == set(dom.attrs)  # one matching holds every attribute


def test_two_phase_screens_a_sample_above_the_pair_cap_and_only_what_its_users_fill():
    from lopub.collect.twophase import MAX_SCREEN_PAIRS, screen_pairs

    dom = domain([2] * 40)  # 780 pairs
    tp = TwoPhasePlan.build(dom, 200_000, 8.0)
    assert list(tp.screen.subsets) == screen_pairs(dom, MAX_SCREEN_PAIRS)
    assert not shortfall(dom, tp.n_screen, 8.0, tp.screen.subsets)
    need = max(needs(dom, 8.0, tp.screen.subsets))
    # too few users for 435 pairs: a smaller public sample that they fill, down to one matching
    fewer = TwoPhasePlan.build(dom, int((MAX_SCREEN_PAIRS * need - 1) / DEFAULT_SCREEN_SHARE), 8.0)
    assert 20 <= len(fewer.screen.subsets) < MAX_SCREEN_PAIRS
    assert list(fewer.screen.subsets) == screen_pairs(dom, len(fewer.screen.subsets))
    assert not shortfall(dom, fewer.n_screen, 8.0, fewer.screen.subsets)
    assert {a for p in fewer.screen.subsets for a in p} == set(dom.attrs)
    with pytest.raises(PlanError, match=rf"the screen needs >= {20 * need} users \(20 pairs"):
        TwoPhasePlan.build(dom, int((20 * need - 1) / DEFAULT_SCREEN_SHARE), 8.0)
    small = domain([3] * 12)  # 66 pairs: all of them
    assert len(TwoPhasePlan.build(small, 200_000, 4.0).screen.subsets) == 66
    with pytest.raises(PlanError, match="the screen needs"):  # all pairs or none below 30 attributes
        TwoPhasePlan.build(small, int((66 * max(needs(small, 4.0, TwoPhasePlan.build(
            small, 200_000, 4.0).screen.subsets)) - 1) / DEFAULT_SCREEN_SHARE), 4.0)
    # a wide domain whose uniform rule is a triple cover gets no sampled screen (it cost more than it
    # told: planner module docstring); every pair of a single-phase plan is measured, and the
    # predictions come from those tables
    report = plan(dom, 200_000, 8.0)
    assert report.option("marginals").params["strategy"] == "triples"
    assert report.two_phase is None and report.recommended == "marginals"
    assert plan(small, 200_000, 4.0).two_phase is not None
    # a wide domain whose uniform rule cuts the pairs by size gets a screen sized to its users, at
    # any epsilon; a triple cover does not
    mixed = domain([2] * 13 + [3] * 14 + [4] * 10)  # 666 pairs
    cut = plan(mixed, 50_000, 2.0)
    assert cut.option("marginals").params["uniform_rule"].startswith("pairs<=")
    assert cut.two_phase is not None and len(cut.two_phase.screen.subsets) < MAX_SCREEN_PAIRS
    assert not shortfall(mixed, cut.two_phase.n_screen, 2.0, cut.two_phase.screen.subsets)
    triples = plan(mixed, 50_000, 4.0)
    assert triples.option("marginals").params["strategy"] == "triples" and triples.two_phase is None
    hail = domain([2] * 2 + [3] * 25 + [4] * 20 + [5] * 2 + [6] * 3 + [7] * 2 + [11] * 2)  # bn-hailfinder's sizes
    for eps in (8.0, 16.0):  # before session 33 no screen above epsilon 4: worse at 8 than at 4
        cut = plan(hail, 50_000, eps)
        assert cut.option("marginals").params["uniform_rule"].startswith("pairs<=")
        assert cut.two_phase is not None and len(cut.two_phase.screen.subsets) < MAX_SCREEN_PAIRS
        assert not shortfall(hail, cut.two_phase.n_screen, eps, cut.two_phase.screen.subsets)


def test_predictions_on_a_sample_of_pairs_are_the_full_predictions_restricted():
    data = chain_data(5000, sizes=(3, 2, 4, 2, 3, 2, 2))
    dom = data.domain
    subsets = [("a0", "a1", "a2"), ("a3", "a4"), ("a5",), ("a6",)]
    full = predict_pair_errors(dom, 5000, 2.0, subsets, prior=data)
    some = [("a0", "a2"), ("a1", "a5"), ("a4", "a6")]
    assert predict_pair_errors(dom, 5000, 2.0, subsets, prior=data, pairs=some) == {p: full[p] for p in some}
    # unmeasured: the independence completion, also where a subset holds the pair
    none = predict_pair_errors(dom, 5000, 2.0, subsets, prior=data, pairs=some, unmeasured=True)
    alone = predict_pair_errors(dom, 5000, 2.0, subsets, prior=data, select_edges=False)
    assert none[("a1", "a5")] == full[("a1", "a5")] == alone[("a1", "a5")]  # not measured either way
    assert none[("a0", "a2")] >= full[("a0", "a2")]  # the measured table is kept where it is better


def test_the_screened_sample_estimates_the_mean_over_all_pairs():
    """A sampled screen's pairs are uniform enough that their mean predicted error is the mean over all
    pairs within 4 standard errors of a simple random sample (finite-population corrected)."""
    from lopub.collect.adaptive import Profile, triple_cover
    from lopub.collect.twophase import screen_pairs

    sizes = tuple([2, 3, 2, 4] * 10)  # 40 attributes, 780 pairs
    data = chain_data(20000, sizes=sizes, seed=77, dep=0.5)
    dom, prof = data.domain, Profile(data.domain, data)
    for subsets in ([(a,) for a in dom.attrs], triple_cover(dom)):
        full = predict_pair_errors(dom, 200_000, 4.0, subsets, prior=prof)
        errs = np.array(list(full.values()))
        for count in (60, 200):
            sample = screen_pairs(dom, count)
            got = np.mean(list(predict_pair_errors(dom, 200_000, 4.0, subsets, prior=prof, pairs=sample).values()))
            se = errs.std(ddof=1) * np.sqrt((1 - count / errs.size) / count)
            assert abs(got - errs.mean()) <= 4 * se, (len(subsets), count, got, errs.mean(), se)


def test_a_single_phase_collection_measuring_every_pair_is_predicted_from_its_own_tables():
    from lopub.collect.adaptive import Profile
    from lopub.collect.twophase import MAX_SCREEN_PAIRS, screen_pairs

    sizes = tuple([2, 3] * 16)  # 32 attributes, 496 pairs: no two-phase
    data = chain_data(60000, sizes=sizes, seed=5, dep=0.5)
    report = plan(data.domain, data.n, 8.0)
    assert report.two_phase is None and report.recommended == "marginals"
    subsets = report.marginal_plan.subsets
    assert all(len(s) == 3 for s in subsets)  # a triple cover: every pair measured
    reports, after = collect(data, 8.0, protocol="auto", rng=6)
    for name in ("marginals", "one-attribute"):
        assert after.option(name).params["after_collection"]
        assert "after_collection" not in report.option(name).params
    # the prediction is the cost model at the collected tables on the public sample of pairs
    prof = ScreenProfile(data.domain, measure_marginals(reports), own_margins=True)
    pairs = screen_pairs(data.domain, MAX_SCREEN_PAIRS)
    assert after.option("marginals").predicted_tvd == predict_plan_error(data.domain, data.n, 8.0, list(subsets),
                                                                         prior=prof, pairs=pairs)
    # ... and close to the cost model at the true tables (the chain's dependence, not the 0.1 prior)
    truth = predict_plan_error(data.domain, data.n, 8.0, [(a,) for a in data.domain.attrs],
                               prior=Profile(data.domain, data))
    assert abs(report.option("one-attribute").predicted_tvd - truth) > abs(
        after.option("one-attribute").predicted_tvd - truth)
    _, same = collect(data, 8.0, protocol="marginals", rng=6)  # not auto: the plan-time report
    assert "after_collection" not in same.option("marginals").params


# detection screen of the pairs a trimmed plan leaves out (issue 24, session 36) ---------------------
ADULT_SIZES = (8, 9, 8, 16, 16, 7, 15, 6, 5, 2, 8, 8, 8, 42, 2)  # Adult as `lopub schema` bins it; a3, a4: education(-num)
ADULT_N = 32561


def test_planner_screens_the_pairs_a_trimmed_triple_cover_leaves_out():
    from lopub.collect.adaptive import all_pairs, candidate_plans
    from lopub.collect.groups import fit_to_users
    from lopub.collect.detect import DETECT_SHARE, DetectPlan, detect_users, unmeasured_pairs

    dom = domain(ADULT_SIZES)
    assert choose_subsets(dom, ADULT_N, 8.0)[0] == "triples (trimmed)"  # no screen of all pairs fits
    report = plan(dom, ADULT_N, 8.0)
    dp = report.two_phase
    assert isinstance(dp, DetectPlan) and not dp.keeps_screen and report.recommended == "marginals"
    base = fit_to_users(dom, dp.n_main, 8.0, candidate_plans(dom)["triples"])
    screened = list(dp.screen.subsets)
    assert screened == unmeasured_pairs(dom, base) and ("a3", "a4") in screened
    held = {frozenset(p) for s in base + screened for p in itertools.combinations(s, 2)}
    assert len(held) == len(all_pairs(dom))  # the screen and the trimmed plan hold every pair between them
    per = max(detect_users(8.0, dom.cells(p)) for p in screened)
    assert dp.n_screen == len(screened) * per <= DETECT_SHARE * ADULT_N
    assert per < min(needs(dom, 8.0, [("a3", "a13")]))  # sized to detect, below the informative minimum
    assert report.marginal_plan is dp.screen and report.option("marginals").params["n_screen"] == dp.n_screen
    assert "detection screen of 30 pairs" in report.to_text()
    with pytest.raises(PlanError, match="too small for a detection screen"):
        DetectPlan.build(dom, ADULT_N, 8.0, "triples", share=0.001)
    with pytest.raises(PlanError, match="measures every pair"):
        DetectPlan.build(dom, 10**7, 8.0, "triples")
    assert plan(dom, ADULT_N, 8.0, prior=chain_data(500, ADULT_SIZES)).two_phase is None  # a prior: no screen


def test_detection_screen_adds_the_deterministic_pair_and_is_not_released():
    from lopub.collect.detect import DetectPlan

    dom = domain(ADULT_SIZES)
    rng = np.random.default_rng(7)
    cols = [rng.integers(0, k, ADULT_N) for k in ADULT_SIZES]
    cols[4] = cols[3].copy()  # a4 is a3: a pair the trimmed plan leaves out, released at independence
    data = Dataset(np.column_stack(cols), dom)
    reports, report = collect(data, 8.0, protocol="auto", rng=1)
    dp = plan(dom, ADULT_N, 8.0).two_phase
    assert isinstance(dp, DetectPlan) and ("a3", "a4") in dp.screen.subsets
    main = reports.plan.subsets
    assert reports.n == dp.n_main  # only the main phase's users are released
    assert reports.screened == dp.n_screen and reports.users == ADULT_N  # but their count is kept
    assert any({"a3", "a4"} <= set(s) for s in main)  # the screen found the pair; the main plan measures it
    preds = report.option("marginals").params["screen_predictions"]
    assert report.option("marginals").params["main"] != "triples (fitted)" and "triples (fitted)" in preds
    model = fit(reports).model
    joint = np.asarray(model.project(["a3", "a4"]).values)
    assert np.trace(joint) > 0.8  # measured, not released at independence (1/16 on the diagonal)


def test_cli_collect_says_the_screen_reports_are_not_in_the_file(tmp_path, capsys):
    """``lopub collect --protocol auto`` after a detection screen: the line and the JSON say how many
    reports the file holds (the screen's users spent their budget but are not released)."""
    import json

    import pandas as pd

    from lopub.cli import main
    from lopub.collect.detect import DetectPlan

    dom = domain(ADULT_SIZES)
    rng = np.random.default_rng(3)
    cols = [rng.integers(0, k, ADULT_N) for k in ADULT_SIZES]
    pd.DataFrame({a.name: [a.categories[c] for c in col] for a, col in zip(dom.attributes, cols)}).to_csv(
        tmp_path / "d.csv", index=False)
    dom.to_json(tmp_path / "dom.json")
    dp = plan(dom, ADULT_N, 8.0).two_phase
    assert isinstance(dp, DetectPlan)
    args = ["collect", str(tmp_path / "d.csv"), "--domain", str(tmp_path / "dom.json"), "--epsilon", "8",
            "--seed", "1", "--quiet"]
    assert main(args + ["--out", str(tmp_path / "r.npz")]) in (0, None)
    line = capsys.readouterr().out
    assert f"collected {ADULT_N:,} reports" in line
    assert f"{dp.n_main:,} written: the {dp.n_screen:,} reports of the screen" in line
    assert MarginalReports.read_meta(tmp_path / "r.npz")["screened"] == dp.n_screen  # the file counts them
    assert main(args + ["--out", str(tmp_path / "r2.npz"), "--json"]) in (0, None)
    summary = json.loads(capsys.readouterr().out)
    assert summary["n"] == ADULT_N and summary["n_released"] == dp.n_main


def test_synthesizer_samples_as_many_records_as_its_input_after_a_detection_screen(tmp_path):
    """The screen's reports are not released, but ``Synthesizer.sample()`` gives the input's rows (the
    users), as its docstring says, also after save / load."""
    import pandas as pd

    from lopub import Synthesizer
    from lopub.collect.detect import DetectPlan

    dom = domain(ADULT_SIZES)
    assert isinstance(plan(dom, ADULT_N, 8.0).two_phase, DetectPlan)
    rng = np.random.default_rng(5)
    df = pd.DataFrame({a.name: [a.categories[c] for c in rng.integers(0, a.size, ADULT_N)]
                       for a in dom.attributes})
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the verdict on uniform noise is not what this checks
        syn = Synthesizer(epsilon=8.0, domain=dom, rng=0).fit(df)
    assert syn.model_.n < ADULT_N  # the released reports
    assert len(syn.sample(seed=1)) == ADULT_N and len(syn.sample(10, seed=1)) == 10
    syn.save(tmp_path / "m.json")
    assert len(Synthesizer.load(tmp_path / "m.json").sample(seed=1)) == ADULT_N
