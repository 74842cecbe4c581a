import numpy as np
import pandas as pd
import pytest

from lopub import Dataset, Domain, infer_domain
from lopub.data.domain import Attribute, Binning
from lopub.errors import DomainError


@pytest.fixture
def domain():
    return Domain((Attribute("sex", ("F", "M")), Attribute("age", Binning((0, 30, 60, 100)).labels, Binning((0, 30, 60, 100))),
                   Attribute("city", ("a", "b", "c"))))


def test_json_round_trip(domain, tmp_path):
    p = tmp_path / "d.json"
    domain.to_json(p)
    assert Domain.from_json(p) == domain
    assert Domain.from_json(domain.to_json()) == domain
    assert domain.attrs == ("sex", "age", "city") and domain.sizes == (2, 3, 3)
    assert domain.cells() == 18 and domain.cells(["sex", "city"]) == 6


@pytest.mark.parametrize("bad, match", [
    ("{not json", "does not parse"),
    ('{"format": "other"}', "not a lopub domain"),
    ('{"format": "lopub-domain", "version": 9, "attributes": []}', "version 9"),
    ('{"format": "lopub-domain", "version": 1, "attributes": [{"name": "a"}]}', "needs \"name\" and \"categories\""),
    ('{"format": "lopub-domain", "version": true, "attributes": []}', "version True"),
    ('{"format": "lopub-domain", "version": 1, "attributes": [{"name": "a", "categories": ["x", null]}]}',
     r"\('a'\): category None is not a string"),
    ('{"format": "lopub-domain", "version": 1, "attributes": [{"name": "a", "categories": ["x", "y"], '
     '"binning": {"edges": [0, "1", 2]}}]}', r"\('a'\): \"binning\" must be .* with numbers"),
])
def test_bad_domain_json(bad, match):
    with pytest.raises(DomainError, match=match):
        Domain.from_json(bad)


def test_domain_validation():
    with pytest.raises(DomainError, match="duplicate categories"):
        Attribute("a", ("x", "x"))
    with pytest.raises(DomainError, match="no categories"):
        Attribute("a", ())
    with pytest.raises(DomainError, match="duplicate attribute names"):
        Domain((Attribute("a", ("x",)), Attribute("a", ("y",))))
    with pytest.raises(DomainError, match="strictly increasing"):
        Binning((0, 0, 1))
    d = Domain.from_categories({"a": ["x"], "b": ["y", "z"]})
    with pytest.raises(DomainError, match="unknown attribute 'c'"):
        d.index("c")
    with pytest.raises(DomainError, match="duplicate attributes"):
        d.indices(["a", "a"])


def test_domain_is_frozen(domain):
    with pytest.raises(AttributeError):
        domain.attributes = ()


def test_dataset_round_trip_with_binning(domain):
    df = pd.DataFrame({"sex": ["M", "F", "M"], "age": [0, 45.5, 100], "city": ["c", "a", "b"], "extra": [1, 2, 3]})
    ds = Dataset.from_pandas(df, domain)
    assert ds.codes.tolist() == [[1, 0, 2], [0, 1, 0], [1, 2, 1]]
    back = ds.to_pandas()
    assert list(back.columns) == ["sex", "age", "city"]
    assert back["age"].astype(str).tolist() == ["[0, 30)", "[30, 60)", "[60, 100]"]
    assert Dataset.from_pandas(back, domain).codes.tolist() == ds.codes.tolist()


def test_project_counts(domain):
    rng = np.random.default_rng(3)
    codes = np.column_stack([rng.integers(0, s, 500) for s in domain.sizes])
    ds = Dataset(codes, domain)
    m = ds.project(["city", "sex"])
    expected = np.zeros((3, 2))
    np.add.at(expected, (codes[:, 2], codes[:, 0]), 1)
    np.testing.assert_allclose(m.values * 500, expected)
    assert m.to_frame()["count"].sum() == pytest.approx(500)
    np.testing.assert_allclose(m.project(["sex"]).values, ds.project(["sex"]).values)


@pytest.mark.parametrize("df, match", [
    (pd.DataFrame({"sex": ["M"], "age": [10]}), r"missing columns \['city'\]"),
    (pd.DataFrame({"sex": ["X"], "age": [10], "city": ["a"]}), r"attribute 'sex': unknown category \['X'\]"),
    (pd.DataFrame({"sex": [None], "age": [10], "city": ["a"]}), "attribute 'sex': 1 missing value"),
    (pd.DataFrame({"sex": ["M"], "age": [101], "city": ["a"]}), "attribute 'age': value 101.0 is outside"),
    (pd.DataFrame({"sex": [], "age": [], "city": []}), "empty"),
])
def test_dataset_bad_input(domain, df, match):
    with pytest.raises(DomainError, match=match):
        Dataset.from_pandas(df, domain)


def test_dataset_code_range(domain):
    with pytest.raises(DomainError, match="code 5"):
        Dataset(np.array([[0, 5, 0]]), domain)


def test_infer_domain_rules():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"num": rng.normal(size=1000), "small": rng.integers(0, 3, 1000), "cat": rng.choice(["b", "a"], 1000)})
    d = infer_domain(df, bins=4, max_categories=10, edges={"small": [0, 1, 3]})
    assert d.size("num") == 4 and d["num"].binning is not None
    assert d.labels("small") == ("[0, 1)", "[1, 3]")
    assert d.labels("cat") == ("a", "b")
    counts = Dataset.from_pandas(df, d).project(["num"]).values
    np.testing.assert_allclose(counts, 0.25, atol=0.002)  # quantile bins split evenly
    with pytest.raises(DomainError, match="column 'nope'"):
        infer_domain(df, edges={"nope": [0, 1]})


def test_condition_counts_refer_to_matching_records(domain):
    codes = np.array([[0, 0, 0], [0, 1, 1], [1, 1, 2], [1, 2, 2]])
    m = Dataset(codes, domain).project(["sex", "city"])
    c = m.condition({"sex": "M"})
    assert c.attrs == ("city",) and c.n == 2
    np.testing.assert_allclose(c.values, [0, 0, 1])
    np.testing.assert_allclose(c.counts, [0, 0, 2])
    with pytest.raises(DomainError, match="where names attribute 'age'"):
        m.condition({"age": "[0, 30)"})
    with pytest.raises(DomainError, match="no category 'X'"):
        m.condition({"sex": "X"})


def test_names_read_from_numpy_arrays_are_plain_strings():
    """Names and labels loaded from an .npz (numpy.str_) are plain str in the domain, so no
    user-facing text shows np.str_('Akt') (a PlanReport's notes and params did)."""
    names, cats = np.array(["Akt", "Erk"]), np.array(["low", "high"])
    dom = Domain.from_categories({n: cats for n in names})
    assert [type(a) for a in dom.attrs] == [str, str]
    assert {type(c) for a in dom.attributes for c in a.categories} == {str}
    a = Attribute(np.str_("x"), ("a", "b"), missing=np.str_("b"))
    assert type(a.name) is str and type(a.missing) is str and a == Attribute("x", ("a", "b"), missing="b")
    assert "np.str_" not in repr(dom.attrs) and dom.index("Erk") == 1


def test_plan_report_names_attributes_as_plain_strings():
    from lopub.collect import collect

    dom = Domain.from_categories({n: np.array(["0", "1", "2"]) for n in np.array(["Akt", "Erk", "Jnk"])})
    codes = np.random.default_rng(0).integers(0, 3, (3000, 3))
    report = collect(Dataset(codes, dom), 0.5, protocol="auto", rng=0)[1]
    assert "Akt" in repr(report) and "np.str_" not in repr(report)
