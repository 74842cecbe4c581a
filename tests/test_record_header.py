"""A DataFrame whose column names are a record (a CSV file without a header row, such as UCI
Adult's ``adult.data``, read by ``pandas.read_csv(path)``): infer_schema / infer_domain and
through them Synthesizer.fit warn once, naming the evidence and the pandas way out; the names
pandas gives a file read with ``header=None`` (0, 1, ...) and ordinary names do not warn."""
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lopub import Dataset, Synthesizer, infer_domain, infer_schema
from lopub.cli import main, read_csv
from lopub.data._header import header_evidence
from lopub.errors import DomainError, RecordHeaderWarning

ADULT_NAMES = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status", "occupation",
               "relationship", "race", "sex", "capital_gain", "capital_loss", "hours_per_week",
               "native_country", "income"]
RECORD = "the column names of the data look like a record, not a header"
WAY_OUT = "pandas.read_csv(path, header=None, names=[...]) (its {k} column names, in order)"


def _adult() -> Path:
    path = Path(os.environ.get("LOPUB_DATA_DIR", "")) / "adult" / "adult.data"
    if not path.is_file():
        pytest.skip("LOPUB_DATA_DIR holds no adult/adult.data")
    return path


def _record_warnings(call, *args, **kwargs) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call(*args, **kwargs)
    return [w for w in caught if issubclass(w.category, RecordHeaderWarning)]


def _frame(n: int = 300) -> pd.DataFrame:
    """Records (age, sex, income, hours) with ordinary names; every label recurs."""
    i = np.arange(n)
    return pd.DataFrame({"age": 20 + (7 * i) % 50, "sex": np.where(i % 2, "F", "M"),
                         "income": np.where(i % 3, "<=50K", ">50K"), "hours": 30 + i % 20})


def test_adult_read_by_plain_pandas_warns_once_naming_the_first_cells():
    df = pd.read_csv(_adult())  # the first record became the column names
    for call in (infer_domain, infer_schema):
        found = _record_warnings(call, df)
        assert len(found) == 1
        text = str(found[0].message)
        assert text.startswith(RECORD)
        assert "6 are numbers in columns of numbers ('39', ' 77516', ' 13', ' 2174', ' 0', ' 40')" in text
        assert "9 are also values of their own column (' State-gov', ' Bachelors'" in text and "' Male'" in text
        assert WAY_OUT.format(k=15) in text
        assert found[0].filename == __file__  # points at the caller's line, not inside lopub


def test_adult_read_with_names_or_header_none_does_not_warn():
    named = pd.read_csv(_adult(), header=None, names=ADULT_NAMES, skipinitialspace=True)
    assert len(named) == 32561
    assert _record_warnings(infer_domain, named) == []
    numbered = pd.read_csv(_adult(), header=None)  # pandas' own names 0 .. 14
    assert _record_warnings(infer_domain, numbered) == []
    # a few of them: as strings they would be evidence (numbers in their columns of numbers)
    some = numbered[[0, 2, 4, 10]]
    assert header_evidence(some.rename(columns=str)) == (["0", "2", "4", "10"], [])
    assert _record_warnings(infer_domain, some) == []


def test_ordinary_names_do_not_warn_and_a_constructed_record_header_does():
    df = _frame()
    assert _record_warnings(infer_domain, df) == []
    # the same records written without a header row and read by plain pandas.read_csv
    headerless = pd.read_csv(pd.io.common.StringIO(df.to_csv(index=False, header=False)))
    assert list(headerless.columns) == ["20", "M", ">50K", "30"] and len(headerless) == len(df) - 1
    found = _record_warnings(infer_schema, headerless)
    assert len(found) == 1
    assert "of its 4 names, 2 are numbers in columns of numbers ('20', '30') and 2 are also values " \
           "of their own column ('M', '>50K')" in str(found[0].message)


def test_booleans_named_by_numbers_are_no_numbers():
    df = pd.DataFrame({"-1": np.arange(40) % 2 == 0, "1": np.arange(40) % 3 == 0})
    assert header_evidence(df) == ([], [])
    assert _record_warnings(infer_domain, df) == []


def test_synthesizer_fit_on_the_headerless_frame_warns():
    df = pd.read_csv(_adult(), nrows=2000).iloc[:, [0, 1, 9, 14]]  # '39', ' State-gov', ' Male', ' <=50K'
    found = _record_warnings(Synthesizer(epsilon=4, random_state=0).fit, df)
    assert len(found) == 1 and found[0].filename == __file__
    assert "of its 4 names, 1 are numbers in columns of numbers ('39') and 3 are also values of their " \
           "own column (' State-gov', ' Male', ' <=50K')" in str(found[0].message)
    numbered = pd.read_csv(_adult(), header=None, nrows=2000)[[0, 2, 4, 10]]  # renamed '0', '2', ...
    assert _record_warnings(Synthesizer(epsilon=4, random_state=0).fit, numbered) == []


def test_a_domain_given_is_not_weighed_and_from_pandas_says_why_columns_are_missing():
    named = pd.read_csv(_adult(), header=None, names=ADULT_NAMES, skipinitialspace=True, nrows=2000)
    cols = ["age", "workclass", "sex", "income"]
    domain = infer_domain(named[cols])
    assert _record_warnings(Synthesizer(epsilon=4, domain=domain, random_state=0).fit, named[cols]) == []
    headerless = pd.read_csv(_adult(), nrows=2000, skipinitialspace=True)
    with pytest.raises(DomainError, match=r"missing columns \['age', 'workclass', 'sex', 'income'\].*"
                                          + RECORD + r".*pandas\.read_csv\(path, header=None, names="):
        Dataset.from_pandas(headerless, domain)
    with pytest.raises(DomainError) as caught:
        Dataset.from_pandas(_frame(), domain)  # other names, no record: no such hint
    assert RECORD not in str(caught.value)


def test_the_command_line_warns_once_in_its_own_words(tmp_path, capsys):
    assert main(["schema", str(_adult()), "--out", str(tmp_path / "d.json")]) == 0
    err = capsys.readouterr().err
    assert err.count("looks like a record") == 1 and RECORD not in err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = read_csv(str(_adult()))  # lopub.cli.read_csv warns itself (logged)
    assert _record_warnings(infer_domain, df) == []
    assert _record_warnings(infer_domain, df.copy()) == []
