"""`lopub schema --na-values '?'`: the report names what was read as missing ("empty or '?'"),
not "empty cells" for cells that held '?' (the CLI turns the tokens into missing values when
reading, so the schema step is told which tokens they were)."""
import json

import numpy as np
import pandas as pd
import pytest

from lopub.cli import main
from lopub.data.schema import infer_schema


def _csv(tmp_path):
    rows = ["age,work"] + [f"{20 + i % 50},{'?' if i % 10 == 0 else 'Private' if i % 3 else 'Gov'}"
                           for i in range(200)]
    rows[5] = "?,Private"   # a '?' in the numeric column
    rows[7] = ",Gov"        # an empty cell
    path = tmp_path / "data.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_schema_names_the_na_values_read_as_missing(tmp_path, capsys):
    path = _csv(tmp_path)
    assert main(["schema", str(path), "--na-values", "?"]) == 0
    out = capsys.readouterr().out
    assert "empty cells" not in out
    assert "20 missing (empty or '?'): kept as their own category" in out  # work: 20 '?' cells
    assert "2 missing (empty or '?')" in out                              # age: one '?', one empty
    assert main(["schema", str(path), "--na-values", "?", "--json"]) == 0
    notes = {c["column"]: c["notes"] for c in json.loads(capsys.readouterr().out)["decisions"]["columns"]}
    assert any(n.startswith("20 missing (empty or '?')") for n in notes["work"])


def test_schema_without_na_values_keeps_telling_tokens_and_empty_apart(tmp_path, capsys):
    path = _csv(tmp_path)
    assert main(["schema", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 missing (empty or '?')" in out  # the numeric column: '?' is a missing token there
    assert "'?' (20 rows) may mark a missing value" in out  # the text column keeps '?' as a label


def test_infer_schema_read_as_missing_parameter():
    df = pd.DataFrame({"a": ["x", "y", np.nan, "x"] * 10})
    note = infer_schema(df).columns[0].notes[0]
    assert note.startswith("10 missing (empty): ")
    note = infer_schema(df, read_as_missing=("", "?", "NA")).columns[0].notes[0]
    assert note.startswith("10 missing (empty or '?' or 'NA'): ")
    big = pd.DataFrame({"a": ["x", None] * 1000})
    assert infer_schema(big).columns[0].notes[0].startswith("1,000 missing (empty)")
    with pytest.raises(TypeError, match=r"read_as_missing must be a sequence of strings"):
        infer_schema(df, read_as_missing="?")
