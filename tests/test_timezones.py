"""Timezone-aware timestamps keep their zone (issue: a tz-aware column came back tz-naive).

The domain records the zone (``"timezone"`` of a ``datetime`` attribute), bins are computed on
the UTC instants, and a release gives tz-aware values back in that zone: a DataFrame of a
tz-aware dtype, a CSV written ISO 8601 with the offset.  A CSV whose timestamps carry several
UTC offsets (summer and winter time of one zone) is normalized to UTC, and the schema says so.
"""
import json
import re

import numpy as np
import pandas as pd
import pytest

from lopub.cli import main
from lopub.data.domain import Attribute, Binning, Domain
from lopub.errors import DomainError
from lopub.pipeline.synthesizer import Synthesizer

EPOCH = pd.Timestamp("1970-01-01", tz="UTC")
ISO_OFFSET = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d+)?[+-]\d{2}:\d{2}$")


def _paris(n=400, seed=0):
    """Stamps in Europe/Paris from winter into summer time (+01:00 and +02:00), and a label."""
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2024-02-01 08:00", tz="Europe/Paris")
    when = start + pd.to_timedelta(np.sort(rng.integers(0, 120 * 86_400, n)), unit="s")
    return pd.DataFrame({"when": when, "x": rng.choice(["a", "b"], n)})


def _days(stamps):
    return ((pd.DatetimeIndex(stamps).tz_convert("UTC") - EPOCH) / pd.Timedelta(days=1)).to_numpy()


def test_synthesizer_gives_a_tz_aware_column_back_in_its_zone():
    df = _paris()
    syn = Synthesizer(epsilon=8, protocol="marginals", bins=4, random_state=0).fit(df)
    attr = syn.domain_["when"]
    assert attr.kind == "datetime" and attr.timezone == "Europe/Paris"
    days = _days(df["when"])
    assert attr.binning.edges[0] == pytest.approx(days.min()) and attr.binning.edges[-1] == pytest.approx(days.max())
    out = syn.sample(300, seed=1)
    assert isinstance(out["when"].dtype, pd.DatetimeTZDtype) and str(out["when"].dt.tz) == "Europe/Paris"
    got = _days(out["when"])
    assert got.min() >= days.min() - 1e-6 and got.max() <= days.max() + 1e-6
    assert {o.utcoffset() for o in out["when"]} == {pd.Timedelta(hours=1), pd.Timedelta(hours=2)}
    cond = syn.sample(20, seed=2, conditions={"when": df["when"].iloc[0]})  # a value as the data held it
    assert (_days(cond["when"]) < attr.binning.edges[1] + 1e-9).all()


def test_utc_dataframe_and_domain_json_round_trip(tmp_path):
    df = _paris().assign(when=lambda d: d["when"].dt.tz_convert("UTC"))
    syn = Synthesizer(epsilon=8, protocol="marginals", bins=3, random_state=0).fit(df)
    assert syn.domain_["when"].timezone == "UTC"
    syn.domain_.to_json(tmp_path / "d.json")
    back = Domain.from_json(tmp_path / "d.json")
    assert back == syn.domain_ and back["when"].timezone == "UTC"
    assert json.loads((tmp_path / "d.json").read_text())["attributes"][0]["timezone"] == "UTC"


def _csv(path, stamps):
    pd.DataFrame({"when": [s.isoformat() for s in stamps],
                  "x": np.where(np.arange(len(stamps)) % 3, "a", "b")}).to_csv(path, index=False)


def _run(tmp_path, csv, domain, extra=()):
    files = {k: str(tmp_path / f"{k}") for k in ("reports.npz", "model.json", "synthetic.csv")}
    assert main(["collect", str(csv), "--domain", str(domain), "--epsilon", "8", "--seed", "1",
                 "--out", files["reports.npz"], "--quiet"]) == 0
    assert main(["fit", files["reports.npz"], "--out", files["model.json"], "--quiet"]) == 0
    assert main(["synthesize", files["model.json"], "--seed", "2", "--n", "200",
                 "--out", files["synthetic.csv"], "--quiet"]) == 0
    return pd.read_csv(files["synthetic.csv"], dtype=str)


def test_cli_one_offset_csv_keeps_its_offset(tmp_path, capsys):
    stamps = pd.Timestamp("2024-01-10 10:00", tz="+01:00") + pd.to_timedelta(np.arange(300) * 9_973, unit="s")
    csv = tmp_path / "one.csv"
    _csv(csv, stamps)
    assert main(["schema", str(csv), "--out", str(tmp_path / "d.json"), "--bins", "4"]) == 0
    assert "datetime" in capsys.readouterr().out
    attr = json.loads((tmp_path / "d.json").read_text())["attributes"][0]
    assert (attr["name"], attr["kind"], attr["timezone"]) == ("when", "datetime", "+01:00")
    assert attr["binning"]["edges"][0] == pytest.approx(_days(stamps).min())
    out = _run(tmp_path, csv, tmp_path / "d.json")
    assert out["when"].str.fullmatch(ISO_OFFSET).all() and out["when"].str.endswith("+01:00").all()
    got = _days(pd.to_datetime(out["when"], utc=True))
    assert got.min() >= _days(stamps).min() - 1e-6 and got.max() <= _days(stamps).max() + 1e-6


def test_cli_mixed_offsets_are_normalized_to_utc_and_the_schema_says_so(tmp_path, capsys):
    stamps = _paris(300)["when"]
    csv = tmp_path / "mixed.csv"
    _csv(csv, stamps)
    assert main(["schema", str(csv), "--out", str(tmp_path / "d.json"), "--bins", "4"]) == 0
    out = capsys.readouterr().out
    assert "several UTC offsets (+01:00, +02:00): normalized to UTC" in out
    dom = json.loads((tmp_path / "d.json").read_text())
    assert dom["attributes"][0]["timezone"] == "UTC"
    assert dom["attributes"][0]["binning"]["edges"][0] == pytest.approx(_days(stamps).min())
    rel = _run(tmp_path, csv, tmp_path / "d.json")
    assert rel["when"].str.endswith("+00:00").all()
    # naming the zone in the domain file gives the release in that zone, summer and winter time
    dom["attributes"][0]["timezone"] = "Europe/Paris"
    (tmp_path / "paris.json").write_text(json.dumps(dom))
    rel = _run(tmp_path, csv, tmp_path / "paris.json")
    assert set(rel["when"].str[-6:]) == {"+01:00", "+02:00"}
    got = _days(pd.to_datetime(rel["when"], utc=True))
    assert got.min() >= _days(stamps).min() - 1e-6 and got.max() <= _days(stamps).max() + 1e-6


def test_timezone_field_is_checked_and_old_domains_still_load():
    b = Binning((19000.0, 19100.0))
    with pytest.raises(DomainError, match=r"attribute 't': timezone \('Mars/Olympus'\) is not a time zone"):
        Attribute("t", ("a",), b, "datetime", timezone="Mars/Olympus")
    with pytest.raises(DomainError, match=r"attribute 't': a timezone \('UTC'\) needs kind 'datetime', not 'date'"):
        Attribute("t", ("a",), b, "date", timezone="UTC")
    with pytest.raises(DomainError, match=r"\"timezone\" must be a string"):
        Domain.from_dict({"format": "lopub-domain", "version": 1, "attributes": [
            {"name": "t", "categories": ["a"], "binning": {"edges": [0, 1]}, "kind": "datetime", "timezone": 1}]})
    for zone in ("UTC", "+05:30", "-03:00", "America/New_York"):
        assert Attribute("t", ("a",), b, "datetime", timezone=zone).timezone == zone
    old = Domain.from_dict({"format": "lopub-domain", "version": 1, "attributes": [
        {"name": "t", "categories": ["a"], "binning": {"edges": [0, 1]}, "kind": "datetime"}]})
    assert old["t"].timezone is None and "timezone" not in old.to_dict()["attributes"][0]


def test_json_schema_accepts_timezone_and_old_files():
    jsonschema = pytest.importorskip("jsonschema")
    from importlib.resources import files

    schema = json.loads((files("lopub.formats") / "jsonschema" / "domain.schema.json").read_text())
    attr = {"name": "t", "categories": ["a"], "binning": {"edges": [0, 1]}, "kind": "datetime"}
    for a in (attr, {**attr, "timezone": "Europe/Paris"}):
        jsonschema.validate({"format": "lopub-domain", "version": 1, "attributes": [a]}, schema)
    assert "timezone" in schema["$defs"]["attribute"]["properties"]
