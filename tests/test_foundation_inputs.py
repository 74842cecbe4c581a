"""Bad input at the foundation's public boundary (issue 2): each names what is wrong."""
import os
import stat

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lopub import CollectionSpec, Dataset, Domain, Reports, infer_domain
from lopub.reports import privacy
from lopub.cli import main
from lopub.client import encode
from lopub.errors import DomainError, ReportsFormatError, SpecError


@pytest.fixture
def spec():
    d = Domain.from_categories({"a": [str(i) for i in range(5)], "b": ["x", "y"]})
    return CollectionSpec.from_domain(d, f=0.5, m=[20, 9], h=[2, 2])  # 29 bits: 3 padding bits


@pytest.fixture
def saved(spec, tmp_path):
    rng = np.random.default_rng(0)
    codes = np.column_stack([rng.integers(0, s, 1000) for s in spec.domain.sizes])
    p = tmp_path / "r.parquet"
    encode(Dataset(codes, spec.domain), spec, rng=1).save(p)
    return p


def _rewrite(path, out, mutate):
    t = pq.read_table(path)
    packed = np.frombuffer(t.column("report").chunk(0).buffers()[1], np.uint8).reshape(t.num_rows, -1).copy()
    arr, mask = mutate(packed)
    col = pa.array([bytes(r) if ok else None for r, ok in zip(arr, mask)], pa.binary(arr.shape[1]))
    pq.write_table(pa.table({"report": col}).replace_schema_metadata(t.schema.metadata), out)


def test_null_reports_and_padding_bits_are_refused(saved, tmp_path):
    def nulls(p):
        mask = np.ones(len(p), bool)
        mask[7] = False
        return p, mask
    _rewrite(saved, tmp_path / "nulls.parquet", nulls)
    with pytest.raises(ReportsFormatError, match=r"1 missing \(null\) report"):
        Reports.load(tmp_path / "nulls.parquet")

    def padding(p):
        p[11, -1] |= 0x01  # bit 31 of 29
        return p, np.ones(len(p), bool)
    _rewrite(saved, tmp_path / "pad.parquet", padding)
    with pytest.raises(ReportsFormatError, match="user 11 has padding bits set"):
        Reports.load(tmp_path / "pad.parquet")
    with pytest.raises(ReportsFormatError, match="padding bits"):
        list(Reports.iter_file(tmp_path / "pad.parquet", chunk_size=100))


def test_load_spec_of_wrong_kind(saved):
    with pytest.raises(TypeError, match="spec must be a CollectionSpec"):
        Reports.load(saved, spec="abc")


def test_saved_files_get_the_umask_mode(saved, spec, tmp_path):
    mask = os.umask(0o022)
    os.umask(mask)
    expected = 0o666 & ~mask
    assert stat.S_IMODE(saved.stat().st_mode) == expected
    spec.to_json(tmp_path / "spec.json")
    assert stat.S_IMODE((tmp_path / "spec.json").stat().st_mode) == expected
    os.chmod(tmp_path / "spec.json", 0o640)  # replacing a file keeps its mode
    spec.to_json(tmp_path / "spec.json")
    assert stat.S_IMODE((tmp_path / "spec.json").stat().st_mode) == 0o640


def test_privacy_rejects_bad_d_and_huge_epsilon(capsys):
    assert main(["privacy", "--f", "0.5", "--h", "4", "--d", "0"]) == 2
    assert "d (0)" in capsys.readouterr().err
    assert main(["privacy", "--epsilon", "1e5", "--h", "1", "--d", "1"]) == 2
    assert "epsilon (100000) is too large" in capsys.readouterr().err
    with pytest.raises(ValueError, match="largest usable epsilon is 1400"):
        privacy.f_for_epsilon(1e4, 1, 1)
    assert privacy.f_for_epsilon(1399.0, 1, 1) > 0


def test_out_is_a_directory(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    pd.DataFrame({"a": ["x", "y"]}).to_csv(csv, index=False)
    dom = tmp_path / "dom.json"
    assert main(["schema", str(csv), "--out", str(dom)]) == 0
    (tmp_path / "somedir").mkdir()
    assert main(["encode", str(csv), "--domain", str(dom), "--f", "0.5", "--out", str(tmp_path / "somedir")]) == 2
    assert "somedir" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "somedir").iterdir()] == []


def test_schema_of_an_int_column_with_gaps_encodes_without_them(tmp_path, capsys):
    # read with the gap the column is float (1.0, 2.0); without it, int (1, 2)
    with_gap, without = tmp_path / "s1.csv", tmp_path / "s2.csv"
    with_gap.write_text("a,n\nx,1\ny,2\nx,\n")
    without.write_text("a,n\nx,1\ny,2\n")
    dom = tmp_path / "s.json"
    assert main(["schema", str(with_gap), "--out", str(dom)]) == 0
    assert Domain.from_json(dom).labels("n") == ("1", "2", "(missing)")  # issue 23: a category
    assert main(["schema", str(with_gap), "--out", str(dom), "--missing", "drop"]) == 0
    assert Domain.from_json(dom).labels("n") == ("1", "2")
    assert main(["encode", str(without), "--domain", str(dom), "--f", "0.5", "--out", str(tmp_path / "r.parquet")]) == 0
    # an older schema spelled the labels "1.0", "2.0": integer data still matches them
    old = Domain.from_categories({"a": ["x", "y"], "n": ["1.0", "2.0"]})
    ds = Dataset.from_pandas(pd.read_csv(without), old)
    assert ds.codes[:, 1].tolist() == [0, 1]
    assert infer_domain(pd.DataFrame({"n": [1.5, 2.0, np.nan]}), missing="drop").labels("n") == ("1.5", "2")
    with pytest.raises(DomainError, match=r"unknown category \['3'\]"):
        Dataset.from_pandas(pd.DataFrame({"a": ["x"], "n": [3]}), old)


@pytest.mark.parametrize("attr, match", [
    ({"name": "a", "categories": ["x"], "binning": {"edge": [1, 2]}}, r'"binning" must be \{"edges"'),
    ({"name": "a", "categories": ["x"], "binning": [1, 2]}, r'"binning" must be'),
    ({"name": "a", "categories": "xy"}, r'"categories" must be a list'),
])
def test_domain_json_errors_name_the_field(attr, match):
    with pytest.raises(DomainError, match=match):
        Domain.from_dict({"format": "lopub-domain", "version": 1, "attributes": [attr]})


def test_spec_and_dataset_argument_kinds():
    d = Domain.from_categories({"a": ["x", "y"]})
    with pytest.raises(TypeError, match="key must be a string"):
        CollectionSpec.from_domain(d, f=0.5, key=3)
    with pytest.raises(TypeError, match="domain must be a lopub Domain"):
        CollectionSpec.from_domain({"a": [1]}, f=0.5)
    with pytest.raises(TypeError, match="domain must be a lopub Domain"):
        Dataset.from_pandas(pd.DataFrame({"a": ["x"]}), None)
    with pytest.raises(SpecError, match="must be at most 64 bytes"):
        CollectionSpec.from_domain(d, f=0.5, key="k" * 65)
    with pytest.raises(SpecError, match="non-empty string"):
        CollectionSpec.from_domain(d, f=0.5, key="")


@pytest.mark.parametrize("argv, match", [
    (["schema", "{csv}", "--edges", "n=a,b"], r"--edges 'n=a,b': the edges must be numbers"),
    (["encode", "{csv}", "--domain", "{dom}", "--f", "0.5", "--key", "", "--out", "{out}"], r"key \(''\) must be a non-empty"),
])
def test_cli_messages_name_the_option(argv, match, tmp_path, capsys):
    csv, dom, out = tmp_path / "d.csv", tmp_path / "dom.json", tmp_path / "r.parquet"
    pd.DataFrame({"n": [1, 2, 3]}).to_csv(csv, index=False)
    Domain.from_categories({"n": ["1", "2", "3"]}).to_json(dom)
    argv = [x.format(csv=csv, dom=dom, out=out) for x in argv]
    assert main(argv) == 2
    assert __import__("re").search(match, capsys.readouterr().err)
    assert not out.exists()


def test_negative_seed_is_an_argument_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["demo", "--out", str(tmp_path / "demo"), "--seed", "-1"])
    assert e.value.code == 2
    assert "seed ('-1') must be a non-negative integer" in capsys.readouterr().err


def test_demo_with_bad_f_writes_nothing(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--f", "2", "--quiet"]) == 2
    assert "f (2" in capsys.readouterr().err
    assert not out.exists()
