"""``auto`` does not recommend Bloom reports above ``BLOOM_AUTO_MAX_D`` attributes, where its fit
estimates every attribute pair's table by EM (a user's 200-column CSV: an hour); the option stays listed
and can be asked for (lopub/collect/planner.py, "Bloom's fit cost")."""
from __future__ import annotations

from lopub.collect.auto import _bloom_alternative
from lopub.collect.planner import BLOOM_AUTO_MAX_D, plan
from lopub.data.domain import Domain


def binary(d: int) -> Domain:
    return Domain.from_categories({f"c{i}": "01" for i in range(d)})


def test_bloom_predicted_lowest_on_wide_data_is_listed_not_recommended():
    d = BLOOM_AUTO_MAX_D + 1
    report = plan(binary(d), 2 * d, 16.0)  # two users per one-way table: Bloom is predicted lowest
    predicted = {o.protocol: o.predicted_tvd for o in report.options}
    assert min(predicted, key=predicted.get) == "bloom"
    assert report.recommended != "bloom"
    assert predicted[report.recommended] == min(v for k, v in predicted.items() if k != "bloom")
    note = [t for t in report.notes if t.startswith("bloom:")]
    assert len(note) == 1 and f"{d * (d - 1) // 2:,} attribute pairs" in note[0]
    assert report.option("bloom").params["h"] >= 1  # still there for protocol="bloom"
    assert _bloom_alternative(binary(d), report, None) is None  # no Bloom main phase after a screen


def test_bloom_is_still_recommended_up_to_the_limit():
    d = BLOOM_AUTO_MAX_D
    report = plan(binary(d), 2 * d, 16.0)
    predicted = {o.protocol: o.predicted_tvd for o in report.options}
    assert min(predicted, key=predicted.get) == "bloom"
    assert report.recommended == "bloom"
    assert not [t for t in report.notes if "not recommended above" in t]
    assert _bloom_alternative(binary(d), report, None) is not None
