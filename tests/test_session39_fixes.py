"""Wording of the report's privacy text and of the verdict's dependency check (session 38's notes)."""
from lopub.model.checks_signal import _strong_without_edge
from lopub.publish.report.notes import epsilon_meaning


def test_epsilon_meaning_grades_the_guarantee():
    # epsilon 8 (odds factor 2,981) was "a moderate guarantee", like epsilon 1.5
    assert "weak guarantee" in epsilon_meaning(8.0) and "moderate" not in epsilon_meaning(8.0)
    assert "2,981" in epsilon_meaning(8.0) or "2.98e+03" in epsilon_meaning(8.0)
    assert "moderate guarantee" in epsilon_meaning(2.0)
    assert "strong guarantee" in epsilon_meaning(0.5)
    assert "nominal guarantee only" in epsilon_meaning(12.0)
    assert "weak guarantee" in epsilon_meaning(3.5) and "moderate" in epsilon_meaning(3.0)


def test_one_strong_dependency_is_singular():
    assert _strong_without_edge(1) == "1 strong measured dependency without an edge"
    assert _strong_without_edge(3, "The ") == "The 3 strong measured dependencies without an edge"


def test_device_client_reads_a_missing_answer_as_the_missing_category():
    """lopub.client.Client (through Dataset.from_pandas) took None for the missing-value category;
    the serve clients' check refused it ("answer for 'income' (None) must be one of [...]")."""
    import math

    import pandas as pd
    import pytest

    from lopub import Attribute, Domain
    from lopub.serve.client import check_answers

    dom = Domain([Attribute("income", ["low", "high", "unknown"], missing="unknown"),
                  Attribute("smoker", ["yes", "no"])])
    for missing in (None, math.nan, pd.NA):
        assert check_answers(dom, {"income": missing, "smoker": "no"}) == {"income": "unknown", "smoker": "no"}
    with pytest.raises(ValueError, match=r"answer for 'smoker' is missing \(None\) but 'smoker' has no "
                                         r"missing-value category; it must be one of \['yes', 'no'\]"):
        check_answers(dom, {"income": "low", "smoker": None})
    with pytest.raises(ValueError, match=r"answer for 'smoker' \('maybe'\) must be one of"):
        check_answers(dom, {"income": "low", "smoker": "maybe"})
