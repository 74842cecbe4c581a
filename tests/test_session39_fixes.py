"""Wording of the report's privacy text and of the verdict's dependency check (session 38's notes)."""
from lopub.model.checks import _strong_without_edge
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
