"""The protocol planner: predicted mean 2-way error of each protocol family at a budget.

:func:`plan` compares, for ``n`` users at a per-record ``epsilon``:

``bloom``
    LoPub's Bloom reports, every attribute at ``epsilon / d`` (flip
    probability ``f = f_for_epsilon(epsilon, h, d)``), the best ``h`` of
    1..4 and per attribute the smallest ``m`` (from the paper's default,
    doubling) that gives every value its own filter.  Prediction: each bit is
    a symmetric randomized response with ``p = 1 - f/2``, ``q = f/2``; a
    value's indicator read from its ``h`` bits has noise variance
    ``u = q (1 - q) / (h (p - q)^2)`` per user, and the product estimator of
    a pair cell ``(x, y)`` (mean over users of the product of the two
    indicators) has fixed-dataset variance
    ``(u_a u_b + u_a p_b(y) + u_b p_a(x)) / n`` (independent flips across
    attributes; ``u_j = u (1 - 1/K_j)`` because the indicators sum to 1);
    error of the post-processed table
    (:func:`~lopub.collect.cost.normsub_errors`) with the standard deviation
    scaled by :data:`BLOOM_EFFICIENCY` (EM is the maximum-likelihood
    estimator; calibrated on simulation).  As for the other families, the
    release is modelled as fitted with structure selection: a pair's error is
    the smaller of its direct estimate's and that of the product of the
    one-way Bloom estimates (noise ``u_j / n`` per value) with the pair's
    dependence.  Collisions of Bloom bits between values are ignored (every
    value has its own filter; with ``h = 1`` its own bit).
``one-attribute``
    Each user reports one attribute (``n / d`` users each) with the best
    oracle at the full ``epsilon``; pairs are released as the product of
    the one-way tables (independence): noise of the product plus the prior
    ``dependence``.
``marginals``
    Marginal sampling with the plan of :func:`~lopub.collect.adaptive.plan_marginals`
    (``strategy="auto"``), cost model of :mod:`lopub.collect.adaptive`.
    Where that rule measures more than the smallest pairs -- a cut "pairs
    up to L cells" above the smallest L, all pairs or a triple cover -- the
    option is the **two-phase** plan
    (:class:`~lopub.collect.twophase.TwoPhasePlan`, a share
    :data:`~lopub.collect.twophase.DEFAULT_SCREEN_SHARE` of the users screens
    all pairs, the rest measure the plan chosen from the screen's tables),
    when ``n`` can fill both phases and no ``prior`` was given.  Reason
    (measured, docs/BENCHMARKS.md "Budgets and protocols"): at those budgets
    which pairs pay off depends on the tables' skew and each pair's
    dependence, which uniform tables and one prior dependence misjudge
    (Adult, the embedded data and 10^6 Adult records at epsilon 4: the
    uniform rule's cut lost to measuring all pairs by 3-28 %; with the true
    tables the same cost model picks all or nearly all pairs); the screen
    supplies those tables.  The same holds where the uniform rule picks a
    triple cover: its prior dependence (0.1) overstates weakly dependent data,
    where the screen picks pairs or one-way tables (retail top-20 items at
    epsilon 1 and 2: mean 2-way TVD 0.033 and 0.015 with the single-phase
    triples, 0.022 and 0.011 two-phase; where triples are right the screen
    picks them and costs 0-12 %: bn-survey, bn-asia, bn-sachs and retail at
    epsilon 4 and 8, 50,000 records, 3 seeds; docs/BENCHMARKS.md
    "What the measurements know, kept").  At the smallest budgets (one-way tables, the smallest
    pairs) the uniform rule's choice was the measured best and stays
    single-phase.
    The option's ``predicted_tvd`` is then the uniform rule's prediction (the
    main plan is only known after the screen).
    **Bloom against a two-phase option** is ranked from the screen, not at
    uniform tables: where Bloom's uniform prediction is the lowest the plan
    recommends the screen (a ``notes`` line says so), and after it
    (:func:`~lopub.collect.auto.collect`) Bloom reports from the main-phase
    users are predicted at the screen's tables and used when that is below
    every marginal candidate's prediction (the screen's reports are then not
    part of the release; the Bloom reports count its users,
    :attr:`~lopub.reports.bloom.Reports.screened`, so a release still has one
    record per user).  Reason: uniform tables maximize the marginal
    plans' group-sampling variance ``f (1 - f) / n_g``, which dominates their
    error at large epsilon, while Bloom's error is mostly its noise, which
    depends little on the tables; on skewed data the uniform comparison
    therefore leaned to Bloom where marginal sampling was better (bn-sachs
    and retail top-20 items at epsilon 16: Bloom picked, 0.0179 and 0.0100
    mean 2-way TVD, worse than the epsilon-8 marginal plans' 0.0119 and
    0.0058; Bloom's own prediction was not optimistic: 0.0205 and 0.0162).
    The screen then takes ``BLOOM_SCREEN_SHARE`` (10 %) of the users, not
    30 %: where it confirms Bloom, those users are not in the release.
    Ranked from a 10 % screen (seeds 0-2, 50,000 / 88,162 records): bn-sachs
    and retail top-20 at epsilon 16 0.0115 and 0.0046, at or below their
    epsilon-8 figures (0.0116, 0.0051); bn-asia and bn-survey keep Bloom
    after the screen, from 90 % of the users: 0.0053 and 0.0043 (epsilon 8:
    0.0056, 0.0049), where Bloom from all users measured 0.0037 and 0.0032
    (with a 30 % screen 0.0060 and 0.0054).  That gap is larger than 10 %
    fewer users explains: on bn-asia at epsilon 16 Bloom from a random 90 %
    of the records measured 0.0053-0.0072 against 0.0037-0.0063 from the
    first 90 % (seeds 0-3).  That gap is seed noise: one Bloom release's mean
    2-way TVD there varies by about 25 % between seeds (the same random 90 %
    of the rows, sorted or in random order, 10 seeds each: 0.0051 +- 0.0004
    and 0.0045 +- 0.0002 standard error, 0.0037-0.0078 per run; the row
    order plays no part in the estimate), so four seeds cannot separate
    them.

Plan-time checks (:mod:`lopub.collect.groups`): a sampling option is only
offered when ``n`` users give every group its documented minimum (users are
dealt to the subsets in equal shares); the marginal plan is fitted to ``n``
(subsets it cannot fill are dropped, one-way tables measure what they leave
out) and the report's ``notes`` state each option's group size, the largest
minimum and any one-way table expected to be mostly noise.  Fewer than
:data:`~lopub.collect.groups.MIN_GROUP_FLOOR` users per attribute refuses
both sampling families; an attribute no Bloom filter size can separate
within the planner's bounds refuses Bloom (``refused`` names the reason;
:meth:`PlanReport.option` raises it).  The planner uses a two-phase plan
where the screen measures all pairs (at most
:data:`~lopub.collect.screen.MAX_SCREEN_PAIRS`, 30 attributes) and its
users fill them.  Above 30 attributes the screen is a public sample of pairs
(:func:`~lopub.collect.screen.screen_pairs`), as many as its users fill
(:meth:`~lopub.collect.twophase.TwoPhasePlan.build`), and the planner uses it
where the uniform rule cuts the pairs by size (``pairs<=L``, the smallest
pairs included): which pairs pay off is then exactly what the rule cannot
know and the screen measures.  Measured (3 seeds, 50,000 records, against the
single-phase cut): bn-alarm at epsilon 2 0.0684 -> 0.0567 mean 2-way TVD (107
screened pairs), bn-hailfinder at epsilon 4 / 8 / 16 0.0615 / 0.0570 / 0.0568
-> 0.0539 / 0.0445 / 0.0438 (69 / 283 / 283), bn-water at epsilon 4 0.0273 ->
0.0219 (435), bn-barley at epsilon 16 0.0813 -> 0.0701 (35).  Where the rule picks a
triple cover, sampled screens lost: digits at epsilon 2 / 4 0.095 / 0.060 ->
0.105 / 0.067 (1,797 records: 9 and 4 users per screened pair), retail top-100
at epsilon 4 0.0067 -> 0.0073, bn-alarm at epsilon 4 unchanged (0.0319 ->
0.0320); and at epsilon 8 and 16 they cost 7-35 % of release error (session 30:
retail top-100 items, bn-hepar2, bn-water and bn-alarm, where the uniform
rule's triples were right).  Until session 33 the cut got its screen only at
epsilon <= 4 too, which made bn-hailfinder's release worse at epsilon 8 than at
4 (0.0570 against 0.0539).  Single-phase plans that measure every pair are
predicted after the collection from their own tables
(:meth:`PlanReport.after_collection`).

Detection screen (:class:`~lopub.collect.detect.DetectPlan`, issue 24,
session 36): where the uniform rule picks a triple cover its users cannot
fill ("triples (trimmed)": the cheapest triples are kept, the pairs of the
others are never measured, whichever they are) and no screen of all pairs
fits, at most :data:`~lopub.collect.detect.DETECT_SHARE` (10 %) of the
users screen only the pairs the trimmed plan leaves out, each group sized to
find a strong dependence (:func:`~lopub.collect.detect.detect_users`), not
to measure the pair; the rest measure the trimmed plan or it with the
screen's most dependent pairs added (chosen by the cost model with each
screened pair's measured dependence); the screen's reports are not part of
the release.  Measured (seeds 0-2, mean 2-way TVD): Adult as ``lopub
schema`` bins it (32,561 records) at epsilon 8 0.0537 -> 0.0437, its pair
education x education-num (released at independence before) 0.763 -> 0.049;
the suite's cells whose plan changes (Adult with missing values at epsilon 8
and 16, bn-hepar2 at 4) within two standard errors of their paired
differences (docs/BENCHMARKS.md "Planning and collection at scale").

Bloom's fit cost: a Bloom release is fitted by estimating every attribute pair's joint table by EM
from the Bloom bits, d (d - 1) / 2 of them, which takes minutes to hours on wide data (a user's CSV of
500 rows x 200 columns at epsilon 1: ``auto`` recommended Bloom, predicted 0.8085 against 0.8319 for
marginal sampling, and ``fit`` estimated an hour after 134 of its 19,900 pairs; the suite's Bloom
baseline is skipped above 11 attributes, where its six fits passed 300 s).  So ``auto`` does not
recommend Bloom above :data:`BLOOM_AUTO_MAX_D` attributes (435 pairs, as many as a two-phase screen
measures) and a two-phase collection then offers no Bloom main phase; the option is still listed
with its prediction and can be asked for (``protocol="bloom"``).  Across the suite (18 shapes,
epsilon 0.5-16) no recommendation changes: Bloom is picked only on 6 to 14 attributes.

Cost: at uniform tables (no ``prior``) every pair's prediction depends only
on its shape and variances and is evaluated once per distinct signature, so
planning 300 binary attributes takes about a second of CPU whatever ``n``
(``pipelines/bench_plan_scale.py``, docs/BENCHMARKS.md).

Cell probabilities are uniform (``p = 1/K``) and the dependence of every
pair is the prior guess ``dependence``, unless ``prior`` (a public or
earlier dataset, a fitted model: anything with ``project(attrs)``) supplies
both.  The recommendation is the family of lowest predicted error (ties go
to the simpler protocol: one-attribute, then marginals, then Bloom).

Measured accuracy (``tests/test_planner.py``; Adult in the report of issue
12): the predicted error of the tables is within 10 % of simulation on the
small test cases for marginal sampling and one attribute per user, within
15 % for Bloom h = 1 with EM.
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from lopub.collect.adaptive import (
    DEFAULT_DEPENDENCE,
    Profile,
    _check_args,
    _check_dependence,
    candidate_plans,
    choose_subsets,
    predict_plan_error,
)
from lopub.collect.bloom_cost import (  # noqa: F401 (re-exported)
    BLOOM_EFFICIENCY,
    BLOOM_HS,
    MAX_BLOOM_M,
    bloom_m,
    bloom_unit_noise,
    predict_bloom,
)
from lopub.collect.detect import DETECT_TVD, DetectPlan
from lopub.collect.groups import MIN_GROUP_FLOOR, describe_groups, fit_to_users
from lopub.collect.plan import MarginalPlan, PlanError
from lopub.collect.plan_report import (  # noqa: F401 (re-exported)
    WARN_EPSILON,
    PlanReport,
    ProtocolOption,
    privacy_statement,
)
from lopub.collect.twophase import DEFAULT_SCREEN_SHARE, TwoPhasePlan
from lopub.data.domain import Domain
from lopub.errors import SpecError

#: Most attributes for which ``auto`` recommends Bloom reports (module docstring, "Bloom's fit cost").
BLOOM_AUTO_MAX_D = 30
#: Screen share of a two-phase plan where Bloom is predicted lowest at uniform tables: if the
#: screen then confirms Bloom, the screen's users are not part of the release (module docstring).
BLOOM_SCREEN_SHARE = 0.1


def plan(domain: Domain, n: int, epsilon: float, *, dependence: float = DEFAULT_DEPENDENCE,
         prior: Any = None, key: str | None = None) -> PlanReport:
    """Predict each protocol family's mean 2-way TVD and recommend one.

    Parameters
    ----------
    domain : Domain
    n : int
        Number of users (>= 1).
    epsilon : float
        Per-record budget (finite, > 0).
    dependence : float
        Prior guess of the mean TVD of a pair from independence.
    prior : object with ``project(attrs)``, optional
        Tables to evaluate the predictions at instead of uniform ones (a
        public or earlier dataset, a fitted model); its pairs' dependence
        replaces ``dependence`` (a Dataset's sampling noise shrunk away,
        :meth:`~lopub.collect.adaptive.Profile.bias`), the candidates include
        the pairs it ranks most dependent (:func:`~lopub.collect.adaptive.prior_cuts`)
        and no screen is planned.  It must be public: the plan is.
    key : str, optional
        Assignment key of the marginal plan.
    """
    domain, n, epsilon = _check_args(domain, n, epsilon)
    dependence = _check_dependence(dependence)
    d = len(domain)
    profile = Profile(domain, prior, dependence)
    options, mplan, two, notes, refused = [], None, None, [], {}
    if n // d >= MIN_GROUP_FLOOR:  # sampling protocols: every group gets its minimum
        one = [(a,) for a in domain.attrs]
        err = predict_plan_error(domain, n, epsilon, one, prior=profile)
        options.append(ProtocolOption("one-attribute", err, {"subsets": [list(s) for s in one]},
                                      "one attribute per user, best oracle, independence release"))
        notes.append("one-attribute: " + describe_groups(domain, n, epsilon, one))
        name, subsets, err = choose_subsets(domain, n, epsilon, prior=profile)
        two = _two_phase(domain, n, epsilon, name, key) if prior is None else None
        if two is None and prior is None:
            two = _detect(domain, n, epsilon, name, dependence, key)
        mplan = MarginalPlan(domain, tuple(subsets), epsilon, key=key) if two is None else two.screen
        params = {"strategy": name, "subsets": [list(s) for s in subsets],
                  "oracles": list(mplan.oracles), "plan_id": mplan.plan_id}
        text = f"marginal sampling ({name}, {len(subsets)} subsets)"
        if isinstance(two, DetectPlan):
            screened = len(two.screen.subsets)
            params.update(detect_screen=True, n_screen=two.n_screen, screen_pairs=screened)
            text = (f"marginal sampling ({name}, {len(subsets)} subsets); {two.n_screen} users first screen "
                    f"the {screened} pairs it leaves unmeasured for strong dependence, the rest measure it "
                    "with the pairs the screen finds dependent (the screen's reports are not released)")
            notes.append(f"marginals: detection screen of {screened} pairs, >= {two.n_screen // screened} users "
                         f"each (enough to tell a dependence of TVD {DETECT_TVD:g} from none, not to measure "
                         f"the pair); main phase before the screen's additions: "
                         + describe_groups(domain, two.n_main, epsilon,
                                           fit_to_users(domain, two.n_main, epsilon,
                                                        candidate_plans(domain)[two.rule]) or subsets))
        elif two is not None:
            params.update(strategy="two-phase", uniform_rule=name, n_screen=two.n_screen,
                          screen_share=DEFAULT_SCREEN_SHARE, n_pilot=two.n_pilot)
            screened = len(two.screen.subsets)
            which = "all pairs" if screened == d * (d - 1) // 2 else f"a public sample of {screened} pairs"
            pilot = (f"; the first {two.n_pilot} are a pilot that stops the screen where its pairs show too "
                     "little dependence to repay it" if two.n_pilot else "")
            text = (f"marginal sampling, two-phase ({two.n_screen} users screen {which}{pilot}, the rest "
                    f"measure the plan chosen from the screen; uniform rule: {name})")
            notes.append("marginals: screen " + describe_groups(domain, two.n_screen, epsilon,
                                                                  mplan.subsets))
        else:
            notes.append("marginals: " + describe_groups(domain, n, epsilon, subsets))
        options.append(ProtocolOption("marginals", err, params, text))
    else:
        why = (f"{n} users for {d} attributes: one attribute per group needs >= {MIN_GROUP_FLOOR} "
               f"users per group ({MIN_GROUP_FLOOR * d} users)")
        refused.update({"one-attribute": why, "marginals": why})
    constant = [a for a, k in zip(domain.attrs, domain.sizes) if k < 2]
    if constant:  # CollectionSpec.from_domain refuses them: a share of epsilon for nothing
        refused["bloom"] = (f"attribute(s) {constant} have one category: Bloom reports would spend "
                            f"a share of epsilon on them for nothing (leave them out of the domain)")
    else:
        try:
            options.append(_bloom_option(domain, n, epsilon, d, profile))
        except SpecError as exc:
            refused["bloom"] = str(exc)
    if not options:
        raise PlanError(f"no protocol fits: {'; '.join(f'{k}: {v}' for k, v in refused.items())}")
    ranked = sorted(options, key=lambda o: o.predicted_tvd)
    best = ranked[0].protocol
    if best == "bloom" and d > BLOOM_AUTO_MAX_D and len(ranked) > 1:  # its fit's cost (module docstring)
        best = ranked[1].protocol
        notes.append(f"bloom: predicted lowest ({ranked[0].predicted_tvd:.4f}) but not recommended above "
                     f"{BLOOM_AUTO_MAX_D} attributes: its fit estimates all {d * (d - 1) // 2:,} attribute pairs "
                     f"by EM from the Bloom bits (minutes to hours); it stays available as protocol 'bloom'")
    if best == "bloom" and isinstance(two, TwoPhasePlan):  # ranked from the screen's tables (module docstring)
        best = "marginals"
        small = _two_phase(domain, n, epsilon, name, key, share=BLOOM_SCREEN_SHARE)
        if small is not None:  # a smaller screen: the users it spends are lost to a Bloom release
            two, mplan = small, small.screen
            options = [dataclasses.replace(o, params={
                **o.params, "n_screen": small.n_screen, "screen_share": BLOOM_SCREEN_SHARE, "n_pilot": small.n_pilot,
                "oracles": list(mplan.oracles), "plan_id": mplan.plan_id},
                description=o.description.replace(f"({o.params['n_screen']} users", f"({small.n_screen} users"))
                if o.protocol == "marginals" else o for o in options]
        notes.append(f"bloom: predicted lowest at uniform tables; a screen of {two.n_screen} users decides "
                     "between Bloom reports and marginal sampling for the other users")
    if prior is not None and options:
        notes.append("prior: the predictions are at the given prior's tables (public records or a model): its one-way tables "
                     "and each pair's dependence; no screen (the prior says what a screen would measure)")
    if prior is None and options:  # what the predictions assume (module docstring, last paragraph)
        notes.append(f"predictions: at uniform one-way tables and a mean pair dependence of {dependence:g} "
                     "(TVD from independence; no prior given): on data whose pairs depend more, options that "
                     "measure few or no pairs release near independence and do worse than predicted (the "
                     "embedded data at epsilon 2: 0.151 predicted, 0.253 measured; its independence is 0.207)")
    text, warning = privacy_statement(epsilon)
    return PlanReport(n, epsilon, tuple(options), best, text, warning, mplan, two,
                      tuple(notes), refused)


def _two_phase(domain: Domain, n: int, epsilon: float, name: str, key: str | None, *,
               share: float = DEFAULT_SCREEN_SHARE) -> Any:
    """The two-phase plan where the uniform rule's pick ``name`` calls for one (module docstring)."""
    from lopub.collect.screen import MAX_SCREEN_PAIRS

    rule = name.split(" ")[0]  # "<rule> (trimmed)" for a plan cut to fit the users
    d = len(domain)
    cut = rule.startswith("pairs<=")  # pairs up to L cells
    if d < 3 or not (cut or rule in ("pairs", "triples")):
        return None
    wide = d * (d - 1) // 2 > MAX_SCREEN_PAIRS  # a sampled screen: only for a cut
    if wide and not cut:
        return None
    smallest = min(domain.cells(p) for p in itertools.combinations(domain.attrs, 2))
    if cut and int(rule[len("pairs<="):]) <= smallest and not wide:
        return None
    try:
        return TwoPhasePlan.build(domain, n, epsilon, screen_share=share, key=key)
    except PlanError:
        return None


def _detect(domain: Domain, n: int, epsilon: float, name: str, dependence: float, key: str | None) -> Any:
    """The detection screen where the uniform rule's pick ``name`` is a trimmed triple cover (module
    docstring), else ``None``."""
    if name != "triples (trimmed)":
        return None
    try:
        return DetectPlan.build(domain, n, epsilon, "triples", dependence=dependence, key=key)
    except PlanError:
        return None


def _bloom_option(domain: Domain, n: int, epsilon: float, d: int, profile: Profile) -> ProtocolOption:
    from lopub.reports.privacy import f_for_epsilon

    errs = {h: predict_bloom(domain, n, epsilon, h, prior=profile) for h in BLOOM_HS}
    failed: SpecError | None = None
    for h in sorted(errs, key=lambda k: errs[k]):  # the best h whose filters can be distinct
        try:
            m = bloom_m(domain, h)
            break
        except SpecError as exc:
            failed = exc
    else:
        raise SpecError(f"{failed} (tried h = {list(BLOOM_HS)})")
    try:
        f = f_for_epsilon(epsilon, h, d)
    except ValueError:
        f = None  # epsilon beyond what a float flip probability can express
    return ProtocolOption("bloom", errs[h], {"h": h, "m": list(m), "f": f,
                                             "epsilon_per_attribute": epsilon / d},
                          f"Bloom reports, h = {h}, epsilon {epsilon / d:.3g} per attribute")
