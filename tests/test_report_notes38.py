"""Report text that was false or one-sided for some releases (session-38 report tour)."""
from __future__ import annotations

from lopub.publish.report.notes import not_converged, privacy_statement


def _marginals(eps: float) -> dict:
    return {"protocol": "marginals", "epsilon_per_record": eps, "subsets": [["a"], ["b"]],
            "oracles": ["grr", "grr"]}


def test_high_epsilon_advice_of_marginal_sampling_names_epsilon_not_bloom_parameters():
    text = " ".join(privacy_statement(_marginals(12.0), real_shown=False))
    assert "no meaningful protection" in text
    assert "hash functions" not in text and "raise f" not in text  # marginal sampling has no f, no h
    assert "collect again with a smaller per-record epsilon (lopub collect --epsilon)" in text


def test_high_epsilon_advice_of_bloom_reports_keeps_f_and_h():
    bloom = {"protocol": "bloom", "epsilon_per_record": 16.0, "f": 0.7}
    assert "raise f or use fewer hash functions h" in " ".join(privacy_statement(bloom, real_shown=False))


def test_max_iter_advice_gives_the_python_way_too():
    text = not_converged({"stop": "max_iter", "gap": 5.0e4}, python=True)  # as the report calls it
    assert "lopub fit --max-iter N" in text and "fit_options={'max_iter': N}" in text
    assert not_converged({"stop": "max_iter", "gap": 5.0e4}).endswith("lopub fit --max-iter)")  # the CLI's


def test_the_reports_model_table_gives_the_python_way():
    import warnings

    import numpy as np

    from lopub.collect import collect
    from lopub.data.dataset import Dataset
    from lopub.data.domain import Domain
    from lopub.pipeline.steps import fit
    from lopub.publish.report import build_report

    rng = np.random.default_rng(0)
    dom = Domain.from_categories({a: ["x", "y", "z"] for a in "abcd"})
    a = rng.integers(0, 3, 4000)
    data = Dataset(np.column_stack([a, a, rng.integers(0, 3, 4000), a]), dom)
    reports, _ = collect(data, 4.0, protocol="marginals", rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit(reports, fit_options={"max_iter": 2}).model
    assert model.meta["fit"]["model_fit"]["stop"] == "max_iter"
    assert "in Python fit(..., fit_options={&#x27;max_iter&#x27;: N})" in build_report(model)


def test_privacy_statement_after_a_screen_says_how_its_users_reported():
    import numpy as np

    from lopub.collect import collect
    from lopub.pipeline.steps import fit
    from lopub.publish.report import build_report
    from test_collect_twophase import chain_data

    data = chain_data(2000, sizes=(2, 2, 2, 2, 2))  # the screen (10 % of the users) picks Bloom
    reports, _ = collect(data, 16.0, rng=0)
    model = fit(reports, warn=False).model
    screened = model.users - model.n
    assert screened > 0
    page = build_report(model)
    privacy = page[page.index('<section id="privacy">'):page.index('<section id="protocol">')]
    assert "Every user behind the release sent their record as a LoPub report" in privacy
    assert (f"The {screened:,} users of the screen that chose the plan are not among those reports: each "
            "of them reported once under the screen&#x27;s own attribute sets instead") in privacy
    plain = " ".join(privacy_statement(_marginals(2.0), real_shown=False))  # no screen: no such sentence
    assert "Every user was assigned" in plain and "screen" not in plain


def test_no_associated_pair_is_explained_not_a_bare_na():
    import numpy as np

    from lopub.data.dataset import Dataset
    from lopub.data.domain import Domain
    from lopub.publish.report import build_report
    from test_report_verdict_truth import _independent_model

    rng = np.random.default_rng(3)
    dom = Domain.from_categories({"a": ["0", "1"], "b": ["0", "1"]})
    real = Dataset(np.column_stack([rng.random(2000) < 0.2, rng.random(2000) < 0.7]).astype(int), dom)
    page = build_report(_independent_model(0.2, 0.7), real=real)  # independent: Cramer's V near 0
    assert "<td>n/a: no pair&#x27;s real Cramer&#x27;s V is above 0.3</td>" in page
    assert "Column Pair Trends (no associated pair: Column Shapes alone)" in page
