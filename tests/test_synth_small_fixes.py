"""Two small Synthesizer defects: a list as a condition's value, an all-missing nullable integer column."""
import warnings

import numpy as np
import pandas as pd
import pytest

from lopub import Synthesizer


def _frame(n=200, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.choice(list("xyz"), n), "b": rng.choice(list("pq"), n)})


def _fit(df, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Synthesizer(epsilon=8, rng=0, **kw).fit(df)


def test_a_list_as_a_condition_is_a_type_error_naming_it_before_any_sampling(monkeypatch):
    # before: DomainError "condition b=['p', 'q']: attribute 'b' has no such category; expected one of
    # ['p', 'q']" (the two labels given, "expected"), raised from the junction tree's evidence step
    import lopub.pipeline.synthesizer as mod

    syn = _fit(_frame())
    called = []
    monkeypatch.setattr(mod, "synthesize", lambda *a, **k: called.append(1))
    for value, shown in ((["p", "q"], r"a list, \['p', 'q'\]"), (("p",), r"a tuple, \('p',\)"),
                         ({"p"}, r"a set, \{'p'\}"), (np.array(["p", "q"]), r"a ndarray, array\(")):
        with pytest.raises(TypeError, match=r"^conditions\['b'\] is " + shown) as err:
            syn.sample(10, seed=1, conditions={"b": value})
        text = str(err.value)
        assert "; expected one label of attribute 'b', e.g. 'p' (labels ['p', 'q'])" in text
        assert "in proportion to query('b')" in text  # the way to several values
    with pytest.raises(TypeError, match=r"^conditions \(list\) must be a mapping attribute -> label"):
        syn.sample(10, seed=1, conditions=[("b", "p")])
    assert called == []  # raised before any sampling work
    monkeypatch.undo()
    # one value still works, and an unknown attribute is still a DomainError (the attribute is the error)
    assert set(syn.sample(20, seed=1, conditions={"b": "q"})["b"]) == {"q"}
    from lopub.errors import DomainError
    with pytest.raises(DomainError, match="does not have"):
        syn.sample(5, seed=1, conditions={"zz": ["p"]})


def test_a_list_condition_names_an_integer_column_label():
    df = _frame()
    df.columns = range(2)
    syn = _fit(df)
    with pytest.raises(TypeError, match=r"^conditions\[1\] is a list, \['p', 'q'\]; expected one label of "
                                        r"attribute '1', e\.g\. 'p'"):
        syn.sample(10, seed=1, conditions={1: ["p", "q"]})


def test_an_all_missing_nullable_integer_column_comes_back_as_its_dtype(tmp_path):
    # before: float64 (all NaN): the column has no values, so its inferred kind is "number"
    df = _frame()
    df["k"] = pd.array([pd.NA] * len(df), dtype="Int64")
    df["k32"] = pd.array([pd.NA] * len(df), dtype="Int32")
    df["j"] = pd.array(np.arange(len(df)) % 5, dtype="Int64")  # with values: unchanged (int64, no missing drawn)
    syn = _fit(df)
    out = syn.sample(50, seed=1)
    assert out["k"].dtype == "Int64" and out["k"].isna().all()
    assert out["k32"].dtype == "Int32" and out["k32"].isna().all()
    assert out["j"].dtype == np.int64
    assert syn.dtypes_ == {"k": {"type": "Int64"}, "k32": {"type": "Int32"}}
    syn.save(tmp_path / "s.json")
    pd.testing.assert_frame_equal(Synthesizer.load(tmp_path / "s.json").sample(50, seed=1), out)
    assert syn.sample(5, seed=1, labels=True)["k"].dtype == "category"  # labels: as before


def test_restore_casts_whole_numbers_and_keeps_others():
    from lopub.pipeline.synth_dtypes import check, restore

    how = {"k": {"type": "Int64"}}
    out = restore(pd.DataFrame({"k": [1.0, np.nan, 3.0]}), how)
    assert out["k"].dtype == "Int64" and out["k"].tolist()[::2] == [1, 3] and out["k"].isna()[1]
    kept = restore(pd.DataFrame({"k": [1.5, np.nan]}), how)  # a binned number (a given domain): not rounded
    assert kept["k"].dtype == np.float64
    assert check({"k": {"type": "UInt8"}}, "f") == {"k": {"type": "UInt8"}}
    with pytest.raises(ValueError, match="must map"):
        check({"k": {"type": "int64"}}, "f")  # numpy's name: not a nullable dtype


def test_a_list_in_query_where_is_a_type_error_naming_where():
    # before: DomainError "attribute 'b' has no category ['p', 'q']; expected one of ['p', 'q']"
    syn = _fit(_frame())
    with pytest.raises(TypeError, match=r"^where\['b'\] is a list, \['p', 'q'\]; expected one label of attribute "
                                        r"'b'.*add each value's query weighted by its share in query\('b'\)"):
        syn.query("a", where={"b": ["p", "q"]})
    assert syn.query("a", where={"b": "p"}).values.sum() == pytest.approx(1.0)
