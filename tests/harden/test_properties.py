"""Item 14 of issue 15: property-based tests (hypothesis) of every loader and parser and of the
command line's argument parsing.  For all generated input the outcome is a correct result or a
clean error: the documented exception with a one-line message (loaders), or exit 2 with one
line on stderr and no traceback (command line)."""
import copy
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from lopub.cli.oracle_files import load_reports
from lopub.data.domain import Domain
from lopub.errors import DomainError, ReportsFormatError, SpecError
from lopub.model.format import ModelFormatError
from lopub.model.graphical import Model
from lopub.reports.bloom import Reports
from lopub.reports.spec import CollectionSpec

from .conftest import run_cli

FIXTURE = settings(max_examples=60, deadline=None,
                   suppress_health_check=[HealthCheck.function_scoped_fixture])
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=8),
                    lambda kids: st.lists(kids, max_size=4)
                    | st.dictionaries(st.text(max_size=8), kids, max_size=4), max_leaves=12)


def one_line(exc):
    text = str(exc)
    assert text and "\n" not in text.strip(), text


def mutate(doc, data):
    """``doc`` with one value somewhere (chosen by hypothesis) replaced by generated JSON."""
    doc = copy.deepcopy(doc)
    node = doc
    for _ in range(data.draw(st.integers(0, 5))):
        keys = list(node.keys()) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            break
        key = data.draw(st.sampled_from(keys))
        if not isinstance(node[key], (dict, list)) or not node[key]:
            break
        node = node[key]
    keys = list(node.keys()) if isinstance(node, dict) else list(range(len(node)))
    if keys:
        node[data.draw(st.sampled_from(keys))] = data.draw(JSON)
    return doc


@FIXTURE
@given(data=st.data())
def test_domain_loader(files, data):
    doc = mutate(json.loads(Path(files["dom.json"]).read_text()), data)
    try:
        d = Domain.from_dict(doc)
    except (DomainError, TypeError) as exc:
        one_line(exc)
        return
    assert Domain.from_dict(d.to_dict()) == d  # what loads round-trips


@FIXTURE
@given(data=st.data())
def test_spec_loader(files, data):
    spec = Reports.load(files["r.parquet"]).spec
    doc = mutate(spec.to_dict(), data)
    try:
        s = CollectionSpec.from_dict(doc)
    except (SpecError, DomainError, TypeError, ValueError) as exc:
        one_line(exc)
        return
    assert 0 < s.f < 1 and CollectionSpec.from_dict(s.to_dict()) == s


@FIXTURE
@given(data=st.data())
def test_model_loader(files, tmp_path, data):
    doc = mutate(json.loads(Path(files["m.json"]).read_text()), data)
    doc.pop("checksum", None)  # without it, every field check is exercised
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    try:
        m = Model.load(path)
    except ModelFormatError as exc:
        one_line(exc)
        assert str(path) in str(exc)
        return
    for c in m.cliques:  # what loads is a valid model
        assert np.all(c.values >= 0) and c.values.sum() == pytest.approx(1.0)


@FIXTURE
@given(cut=st.integers(0, 10**6), flips=st.lists(st.integers(0, 10**9), max_size=3),
       junk=st.binary(max_size=40))
def test_reports_loader_on_damaged_bytes(files, tmp_path, cut, flips, junk):
    data = bytearray(Path(files["r.parquet"]).read_bytes())
    data = data[: cut % (len(data) + 1)] if cut % 3 == 0 else data
    for f in flips:
        if data:
            data[f % len(data)] ^= 1 << (f % 8)
    path = tmp_path / "r.parquet"
    path.write_bytes(bytes(data) + (junk if cut % 5 == 0 else b""))
    original = Reports.load(files["r.parquet"])
    try:
        r = Reports.load(path)
    except (ReportsFormatError, SpecError, DomainError) as exc:
        one_line(exc)
        return
    assert r.spec == original.spec and np.array_equal(r.packed, original.packed)


@FIXTURE
@given(cut=st.integers(0, 10**6), flips=st.lists(st.integers(0, 10**9), max_size=3))
def test_npz_loader_on_damaged_bytes(files, tmp_path, cut, flips):
    data = bytearray(Path(files["o.npz"]).read_bytes())
    data = data[: cut % (len(data) + 1)] if cut % 2 == 0 else data
    for f in flips:
        if data:
            data[f % len(data)] ^= 1 << (f % 8)
    path = tmp_path / "o.npz"
    path.write_bytes(bytes(data))
    meta, arrays = load_reports(files["o.npz"])
    try:
        got, got_arrays = load_reports(str(path))
    except ValueError as exc:
        one_line(exc)
        assert str(path) in str(exc)
        return
    assert got == meta and all(np.array_equal(got_arrays[k], v) for k, v in arrays.items())


CELL = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6)


@FIXTURE
@given(rows=st.lists(st.lists(CELL, min_size=0, max_size=4), min_size=0, max_size=5),
       sep=st.sampled_from([",", ";"]), raw=st.binary(max_size=30), use_raw=st.booleans())
def test_csv_reader(tmp_path, capsys, rows, sep, raw, use_raw):
    path = tmp_path / "x.csv"
    if use_raw:
        path.write_bytes(raw)
    else:
        path.write_text("\n".join(sep.join(r) for r in rows), encoding="utf-8")
    code, err = run_cli(["schema", path, "--quiet"], capsys)
    assert code in (0, 2), err
    assert "Traceback" not in err
    if code == 2:
        assert len(err.strip().splitlines()) == 1, err


NUMBER = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
                   st.integers(-5, 60).map(str),  # sizes stay small: a valid size must run fast
                   st.sampled_from(["", "abc", "1e400", "-0", "0x10", " 1", "1,2", "nan", "-inf",
                                    "100000000000000", "-100000000000000"]))
COMMANDS = {
    "privacy": [["--f"], ["--epsilon"], ["--h"], ["--d"]],
    "plan": [["--n"], ["--epsilon"]],
    "synthesize": [["--n"], ["--seed"]],
    "fit": [["--phi"], ["--model-phi"], ["--clique-budget"], ["--tol"]],
    "estimate": [["--tol"], ["--max-iter"], ["--memory-budget-mb"]],
    "compare-protocols": [["--epsilons"], ["--runs"], ["--eps1-ratio"], ["--n"]],
    "encode": [["--f"], ["--epsilon"], ["--m"], ["--h"], ["--fp-rate"]],
    "schema": [["--bins"], ["--max-categories"]],
}


def _base(cmd, files, tmp):
    return {"privacy": ["privacy", "--f", "0.3"],
            "plan": ["plan", "--domain", files["dom.json"], "--n", "500", "--epsilon", "1"],
            "synthesize": ["synthesize", files["m.json"], "--n", "5", "--out", f"{tmp}/s.csv"],
            "fit": ["fit", files["r.parquet"], "--out", f"{tmp}/m.json"],
            "estimate": ["estimate", files["r.parquet"], "--attrs", "a", "--max-iter", "20"],
            "compare-protocols": ["compare-protocols", "--n", "200", "--runs", "1", "--epsilons",
                                  "1", "--protocols", "spl-grr"],
            "encode": ["encode", files["d.csv"], "--domain", files["dom.json"], "--out",
                       f"{tmp}/r.parquet", "--seed", "1"],
            "schema": ["schema", files["d.csv"]]}[cmd]


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(cmd=st.sampled_from(sorted(COMMANDS)), data=st.data(), value=NUMBER)
def test_cli_numeric_options(files, tmp_path, capsys, cmd, data, value):
    option = data.draw(st.sampled_from(COMMANDS[cmd]))[0]
    argv = _base(cmd, files, tmp_path)
    if cmd == "encode" and option in ("--m", "--h", "--fp-rate"):
        argv = argv + ["--f", "0.3"]
    elif cmd == "encode" and option == "--f":
        pass
    if option in argv:
        argv[argv.index(option) + 1] = value
    else:
        argv = argv + [option, value]
    if cmd == "privacy" and option == "--epsilon":
        argv.remove("--f"), argv.remove("0.3")
    assume(not (cmd == "encode" and option == "--fp-rate" and "--m" in argv))
    code, err = run_cli(argv + ["--quiet", "--max-memory-mb", "512"], capsys)
    assert "Traceback" not in err
    assert code in (0, 2), (code, err)
    if code == 2:
        assert len(err.strip().splitlines()) == 1, err
        assert "error:" in err


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=st.lists(st.sampled_from(["--f", "--epsilon", "--n", "--out", "--quiet", "--json", "-h",
                                      "x", "0.5", "", "--", "--nosuch", "privacy", "fit",
                                      "query", "=", "--attrs", "--where", "a=b"]), max_size=6),
       cmd=st.sampled_from(["privacy", "query", "fit", "nosuch", "synthesize", "schema"]))
def test_cli_any_token_sequence(files, capsys, argv, cmd):
    assume("-h" not in argv)
    code, err = run_cli([cmd] + argv, capsys)
    assert "Traceback" not in err
    assert code in (0, 2)
    if code == 2:
        assert len(err.strip().splitlines()) == 1, err
