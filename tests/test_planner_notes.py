"""The plan says what its predictions assume when no prior is given (a new user's demo at epsilon 2 was
told 0.151 and measured 0.253: the embedded data depend more than the default 0.1)."""
from __future__ import annotations

from lopub.collect.planner import plan
from lopub.datasets import embedded


def test_predictions_name_their_assumed_dependence_without_a_prior():
    data = embedded(2_000, rng=0)
    plain = plan(data.domain, data.n, 2.0, dependence=0.07)
    said = [t for t in plain.notes if t.startswith("predictions:")]
    assert len(said) == 1 and "mean pair dependence of 0.07" in said[0]
    assert "check: predictions:" in plain.to_text()
    informed = plan(data.domain, data.n, 2.0, prior=data)  # a public prior supplies tables and dependence
    assert not [t for t in informed.notes if t.startswith("predictions:")]
