"""Tour 40: a release gives all-missing pandas extension columns back with their dtype."""
import warnings

import numpy as np
import pandas as pd
import pytest

from lopub import Synthesizer


def _frame(n=600):
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": rng.choice(list("xyz"), n), "b": rng.choice(list("pq"), n)})


@pytest.mark.parametrize("dtype", ["boolean", "string", "Float64", "Float32"])
def test_an_all_missing_extension_column_comes_back_as_its_dtype(dtype, tmp_path):
    """An all-missing Int64 column came back Int64 (7d9fcaa); all-missing 'string' came back a
    categorical of no label, 'Float64' as float64 NaN (the column has no value, so its kind
    cannot tell).  Now each comes back as its input dtype, all <NA>, after save/load too;
    with values such a column comes back by its kind, as before."""
    df = _frame()
    df["e"] = pd.array([pd.NA] * len(df), dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the notes on a constant, all-missing column
        syn = Synthesizer(epsilon=4).fit(df)
    out = syn.sample(40, seed=1)
    assert str(out["e"].dtype) == dtype and out["e"].isna().all()
    assert out["a"].dtype == "category" and set(out["a"]) <= {"x", "y", "z"}
    assert syn.dtypes_["e"] == {"type": dtype}
    syn.save(tmp_path / "s.json")
    pd.testing.assert_frame_equal(Synthesizer.load(tmp_path / "s.json").sample(40, seed=1), out)
    assert syn.sample(5, seed=1, labels=True)["e"].dtype == "category"  # labels: as before


def test_an_extension_column_with_values_keeps_its_kind():
    """Only all-missing columns are recorded: with values the attribute's kind gives the dtype."""
    df = _frame()
    df["s"] = pd.array(np.where(np.arange(len(df)) % 2, "u", "v"), dtype="string")
    df["f"] = pd.array(np.linspace(0, 1, len(df)), dtype="Float64")
    syn = Synthesizer(epsilon=4).fit(df)
    out = syn.sample(40, seed=1)
    assert "s" not in syn.dtypes_ and "f" not in syn.dtypes_
    assert out["s"].dtype == "category" and set(out["s"]) <= {"u", "v"}
    assert out["f"].dtype == np.float64 and out["f"].between(0, 1).all()
