"""Schema inference a user can trust, missing values, release in the input's shape (issue 23)."""
import json

import numpy as np
import pandas as pd
import pytest

from lopub import Attribute, Binning, Dataset, Domain, infer_domain, infer_schema
from lopub.data.domain import INFERRED, PUBLIC
from lopub.data.schema import MISSING_LABEL, auto_bins, auto_max_categories
from lopub.data.values import to_values
from lopub.errors import DomainError
from lopub.formats import validator


def _zero_inflated(n=5000, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.where(rng.random(n) < 0.92, 0, rng.integers(100, 20000, n))


def test_point_mass_gets_its_own_bin_and_no_bin_is_empty():
    x = _zero_inflated()
    dom = infer_domain(pd.DataFrame({"gain": x}), bins=8)
    a = dom["gain"]
    assert a.binning.points == (0.0,) and a.categories[0] == "0" and a.size == 8
    codes = Dataset.from_pandas(pd.DataFrame({"gain": x}), dom).codes[:, 0]
    counts = np.bincount(codes, minlength=a.size)
    assert counts[0] == (x == 0).sum() and (counts > 0).all()


def test_binning_with_points_codes_labels_and_bounds():
    b = Binning((1, 100, 5000), (0, 40))
    assert b.labels == ("0", "[1, 100)", "40", "[100, 5000]")
    assert b.codes(np.array([0, 1, 40, 39.5, 100, 5000]), "x").tolist() == [0, 1, 2, 1, 3, 3]
    with pytest.raises(DomainError, match="outside the binning edges"):
        b.codes(np.array([-1.0]), "x")
    with pytest.raises(DomainError, match="points"):
        Binning((0, 1), (2, 1))


def _numeric_order(b: Binning) -> bool:
    """Every bin ends where (or before) the next begins, and no point lies inside an interval."""
    bounds = b.bounds()
    inside = [p for p in b.points for lo, hi, _ in bounds if lo < p < hi]
    return not inside and all(bounds[k][1] <= bounds[k + 1][0] for k in range(len(bounds) - 1))


@pytest.mark.parametrize("bins", [3, 4, 6, 8])
def test_inferred_bins_are_in_numeric_order_with_a_point_inside_the_range(bins, tmp_path):
    rng = np.random.default_rng(2)
    n = 4000
    hours = np.where(rng.random(n) < 0.45, 40, rng.integers(1, 99, n))  # 40 h/week: a point mass mid-range
    twin = np.where(rng.random(n) < 0.5, rng.choice([40, 41], n), rng.integers(1, 99, n))  # two adjacent points
    miss = np.where(rng.random(n) < 0.1, np.nan, hours)
    df = pd.DataFrame({"hours": hours, "twin": twin, "miss": miss})
    rep = infer_schema(df, bins=bins)
    for name, x in (("hours", hours), ("twin", twin), ("miss", miss[np.isfinite(miss)])):
        a = rep.domain[name]
        assert a.binning is not None and _numeric_order(a.binning), (name, a.categories)
        codes = a.binning.codes(x.astype(float), name)
        assert (np.bincount(codes, minlength=a.binning.n_bins) > 0).all()  # still no empty bin
    assert "40" in rep.domain.labels("hours") and rep.domain.size("hours") <= bins
    assert rep.domain.labels("miss")[-1] == MISSING_LABEL
    rep.domain.to_json(tmp_path / "d.json")  # the written file and the report: the same order
    back = Domain.from_json(tmp_path / "d.json")
    assert [back.labels(c) for c in df] == [tuple(d.categories) for d in rep.columns]


def test_bins_and_raw_categories_follow_the_number_of_rows():
    assert (auto_bins(150), auto_max_categories(150)) == (3, 6)
    assert (auto_bins(32561), auto_max_categories(32561)) == (8, 32)
    rng = np.random.default_rng(1)
    small = pd.DataFrame({"x": rng.normal(size=150).round(2), "k": rng.integers(0, 4, 150)})
    rep = infer_schema(small)
    assert rep.domain.size("x") == 3 and rep.domain["x"].binning is not None
    assert rep.domain.labels("k") == ("0", "1", "2", "3") and rep.domain["k"].kind == "integer"


def test_identifiers_are_excluded_with_a_note_unless_kept():
    n = 300
    df = pd.DataFrame({"id": [f"user-{i}" for i in range(n)], "row": np.arange(n) + 1,
                       "c": np.tile(["a", "b", "c"], n // 3)})
    with pytest.warns(UserWarning, match="identifier-like"):
        dom = infer_domain(df)
    assert dom.attrs == ("row", "c")  # an integer row number counts from 1,000 rows on
    rep = infer_schema(df)
    assert rep.excluded == ["id"] and "identifier-like" in rep.columns[0].notes[0]
    assert infer_schema(df, identifiers="keep").domain.size("id") == n
    assert infer_schema(df, columns=["id", "c"]).domain.size("id") == n
    big = pd.DataFrame({"row": np.arange(2000), "c": "a"})
    assert infer_schema(big).excluded == ["row"]


def test_many_text_categories_are_kept_with_a_note_and_a_constant_column_is_a_note():
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"city": [f"c{i}" for i in rng.integers(0, 500, 20000)], "k": "same"})
    rep = infer_schema(df)
    assert rep.domain.size("city") == 500 and "500 categories" in rep.columns[0].notes[0]
    assert rep.domain.labels("k") == ("same",) and "constant" in rep.columns[1].notes[0]


def test_missing_values_are_a_category_in_numbers_and_text():
    df = pd.DataFrame({"x": [str(v) for v in range(100)] + ["?", "NA", None],
                       "t": ["a", "b"] * 51 + [None]})
    rep = infer_schema(df)
    x, t = rep.domain["x"], rep.domain["t"]
    assert x.missing == MISSING_LABEL and x.categories[-1] == MISSING_LABEL and x.binning is not None
    assert t.categories == ("a", "b", MISSING_LABEL)
    assert rep.columns[0].missing_share == pytest.approx(3 / 103)
    codes = Dataset.from_pandas(df, rep.domain).codes
    assert (codes[-3:, 0] == x.size - 1).all() and codes[-1, 1] == 2
    assert infer_schema(df, missing="drop").domain["x"].missing is None
    with pytest.raises(DomainError, match="missing='refuse'"):
        infer_schema(df, missing="refuse")
    with pytest.raises(ValueError, match=r"missing \('keep'\)"):
        infer_schema(df, missing="keep")


def test_text_markers_stay_labels_with_a_note():
    df = pd.DataFrame({"w": ["a", "?", "b", "a"] * 10})
    rep = infer_schema(df)
    assert rep.domain.labels("w") == ("?", "a", "b") and rep.domain["w"].missing is None
    assert "may mark a missing value" in rep.columns[0].notes[0]


def test_provenance_and_privacy_note():
    df = pd.DataFrame({"x": np.linspace(0, 10, 200)})
    rep = infer_schema(df)
    assert rep.domain.provenance == INFERRED and "reveal" in rep.privacy_note
    pub = infer_schema(df, bounds={"x": (0, 10)}, bins=5)
    assert pub.domain.provenance == PUBLIC and pub.privacy_note is None
    assert pub.domain["x"].binning.edges == (0.0, 2.0, 4.0, 6.0, 8.0, 10.0)
    assert infer_schema(df, provenance=PUBLIC).domain.provenance == PUBLIC
    with pytest.raises(DomainError, match="outside every bin"):
        infer_schema(df, bounds={"x": (0, 5)})


def test_domain_json_with_new_fields_round_trips_and_old_files_still_load():
    a = Attribute("x", ("0", "[1, 100)", "[100, 500]", MISSING_LABEL), Binning((1, 100, 500), (0,)),
                  "integer", MISSING_LABEL)
    dom = Domain((a, Attribute("t", ("u", "v"), kind="text")), PUBLIC)
    obj = json.loads(dom.to_json())
    validator("domain").validate(obj)
    back = Domain.from_dict(obj)
    assert back == dom and back.provenance == PUBLIC and back["x"].binning.points == (0.0,)
    old = {"format": "lopub-domain", "version": 1, "attributes": [{"name": "a", "categories": ["x"]}]}
    validator("domain").validate(old)
    assert Domain.from_dict(old).provenance is None and Domain.from_dict(old)["a"].kind is None
    with pytest.raises(DomainError, match="kind"):
        Attribute("x", ("a",), kind="float")
    with pytest.raises(DomainError, match="last category"):
        Attribute("x", (MISSING_LABEL, "[0, 1]"), Binning((0, 1)), "number", MISSING_LABEL)


def test_dates_and_booleans():
    days = pd.date_range("2020-01-01", periods=400, freq="D").strftime("%Y-%m-%d")
    df = pd.DataFrame({"d": list(days), "b": ["True", "False"] * 200})
    dom = infer_schema(df).domain
    assert dom["d"].kind == "date" and dom["d"].binning is not None and dom["b"].kind == "boolean"
    assert dom["d"].categories[0].startswith("[2020-01-01, ")
    codes = Dataset.from_pandas(df, dom).codes
    out = to_values(codes, dom.attributes, rng=np.random.default_rng(0))
    assert pd.api.types.is_datetime64_any_dtype(out["d"]) and out["b"].dtype == bool
    assert (Dataset.from_pandas(out, dom).codes == codes).all()  # the values fall in their bins


def test_values_are_drawn_within_their_bins():
    b = Binning((1, 10, 50), (0, 5))
    a = Attribute("x", b.labels + (MISSING_LABEL,), b, "integer", MISSING_LABEL)
    f = Attribute("y", ("[0, 1)", "[1, 2]"), Binning((0, 1, 2)), "number")
    n = 4000
    rng = np.random.default_rng(3)
    codes = np.column_stack([rng.integers(0, a.size, n), rng.integers(0, 2, n)])
    out = to_values(codes, (a, f), rng=np.random.default_rng(4))
    assert str(out["x"].dtype) == "Int64" and out["x"].isna().sum() == (codes[:, 0] == a.size - 1).sum()
    assert (out["x"][codes[:, 0] == 0] == 0).all()  # a point mass returns its point
    assert not (out["x"][codes[:, 0] == b.labels.index("[1, 10)")] == 5).any()  # points left out
    dom = Domain((a, f))
    assert (Dataset.from_pandas(out, dom).codes == codes).all()
    labels = to_values(codes, (a, f), labels=True, rng=np.random.default_rng(4))
    assert labels["x"].iloc[0] == a.categories[codes[0, 0]]


def test_numeric_categories_come_back_as_numbers_and_odd_spellings_stay_text():
    df = pd.DataFrame({"k": ["1", "2", "3"] * 100, "z": ["01", "1", "2"] * 100})
    dom = infer_schema(df).domain
    assert dom["k"].kind == "integer" and dom["z"].kind == "text"
    out = to_values(Dataset.from_pandas(df, dom).codes, dom.attributes, rng=np.random.default_rng(0))
    assert out["k"].dtype == np.int64 and out["k"].tolist() == [1, 2, 3] * 100
    assert out["z"].astype(str).tolist() == df["z"].tolist()


def test_synthesizer_keeps_missing_values_and_the_input_shape():
    from lopub import Synthesizer

    rng = np.random.default_rng(5)
    n = 3000
    x = rng.normal(50, 10, n).round(1)
    x[rng.random(n) < 0.2] = np.nan
    df = pd.DataFrame({"id": [f"id{i}" for i in range(n)], "x": x,
                       "k": rng.integers(1, 4, n), "t": rng.choice(["a", "b"], n)})
    with pytest.warns(UserWarning, match="'id': identifier-like"):
        syn = Synthesizer(epsilon=8, rng=0).fit(df)
    assert syn.domain_["x"].missing is not None and "id" not in syn.domain_
    out = syn.sample(seed=1)
    assert list(out.columns) == ["x", "k", "t"]
    assert out["x"].dtype == float and out["k"].dtype == np.int64
    share = out["x"].isna().mean()  # sd about 0.008 (the n-record sample; LDP noise is smaller at eps 8)
    assert abs(share - 0.2) < 0.1
    assert set(out["k"]) <= {1, 2, 3} and set(out["t"].astype(str)) <= {"a", "b"}
    labels = syn.sample(10, seed=1, labels=True)
    assert set(labels["x"].astype(str)) <= set(syn.domain_.labels("x"))
