"""Items 5, 6, 8, 9 and 10 of issue 15: bad input is a clear one-line error, never exit 0."""
import errno

import numpy as np
import pytest

from lopub.client import encode
from lopub.datasets import embedded
from lopub.estimate import estimate
from lopub.estimate.postprocess import project_simplex
from lopub.reports.bloom import Reports
from lopub.reports.spec import CollectionSpec

from .conftest import run_cli


def clear(code, err, *words):
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, (w, err)


# item 5
@pytest.mark.parametrize("option, value, words", [
    ("--epsilons", "0", "--epsilons ('0')"), ("--epsilons", "-1", "--epsilons ('-1')"),
    ("--epsilons", "nan", "--epsilons ('nan')"), ("--epsilons", "abc", "--epsilons ('abc')"),
    ("--epsilons", "1,inf", "--epsilons ('1,inf')"), ("--runs", "0", "--runs (0)"),
    ("--runs", "-1", "--runs (-1)"), ("--eps1-ratio", "0", "--eps1-ratio (0)"),
    ("--eps1-ratio", "1.5", "--eps1-ratio (1.5)"), ("--eps1-ratio", "nan", "--eps1-ratio (nan)"),
    # a comparison that would never end (a hypothesis run once hung CI on --runs 1e14)
    # (a huge --n is refused by the memory check: tests/harden/test_limits.py)
    ("--runs", "100000000000000", "--runs (100000000000000) x 300 records")])
def test_compare_protocols_refuses_bad_settings(capsys, option, value, words):
    argv = {"--n": "300", "--epsilons": "1", "--runs": "1", "--protocols": "spl-grr,allomfree"}
    argv[option] = value
    code, err = run_cli(["compare-protocols", "--quiet"] + [x for kv in argv.items() for x in kv],
                        capsys)
    clear(code, err, words)


def test_compare_refuses_more_than_the_simulation_limit_and_runs_up_to_it():
    from lopub.collect.compare import MAX_SIMULATED_REPORTS, check_work

    n, n_eps, n_prot = 1000, 2, 5
    most = MAX_SIMULATED_REPORTS // (n * n_eps * n_prot)
    assert check_work(most, n, n_eps, n_prot) == most
    with pytest.raises(ValueError, match=r"runs \(%d\) x 1000 records x 2 epsilon\(s\) x 5 protocol" % (most + 1)):
        check_work(most + 1, n, n_eps, n_prot)


def test_compare_library_checks_runs_and_ratio():
    from lopub.collect.compare import compare

    codes, sizes = np.zeros((10, 1), dtype=int), [2]
    for kwargs, words in [({"runs": 0}, "runs (0)"), ({"eps1_ratio": 1.5}, "eps1_ratio (1.5)")]:
        with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
            compare(codes, sizes, [1.0], ["spl-grr"], **kwargs)
    with pytest.raises(ValueError, match=r"epsilons \(nan\)"):
        compare(codes, sizes, [float("nan")], ["spl-grr"])


# item 6
@pytest.mark.parametrize("f", [1 - 1e-12, 1 - 1e-15])
@pytest.mark.parametrize("method", ["hybrid", "hybrid-lasso", "moment"])
def test_estimators_at_f_near_one_return_a_distribution(f, method):
    data = embedded(300, rng=0).select(["sex", "race"])
    reports = encode(data, CollectionSpec.from_domain(data.domain, f=f), rng=0)
    m = estimate(reports, ["sex", "race"], method)
    assert np.all(m.values >= 0) and m.values.sum() == pytest.approx(1.0)


def test_project_simplex_of_huge_values_is_the_largest_vertex():
    v = np.array([-5.5e21, -7.0e21, 3.0e21, -4.1e20])
    assert project_simplex(v).tolist() == [0.0, 0.0, 1.0, 0.0]
    assert project_simplex(np.array([0.2, 0.9, -1.0])).sum() == pytest.approx(1.0)


# item 8
def test_repeated_where_on_one_attribute_is_an_error(files, capsys):
    code, err = run_cli(["query", files["m.json"], "--attrs", "a", "--where", "b=u",
                         "--where", "b=v"], capsys)
    clear(code, err, "--where names attribute 'b' twice")


# item 9
def test_schema_refuses_negative_max_categories(files, capsys):
    code, err = run_cli(["schema", files["d.csv"], "--max-categories", "-1"], capsys)
    clear(code, err, "max_categories (-1)")


def test_schema_edges_must_cover_the_data(tmp_path, capsys):
    csv = tmp_path / "n.csv"
    csv.write_text("x\n" + "\n".join(str(v) for v in np.linspace(-1, 1, 50)) + "\n")
    code, err = run_cli(["schema", csv, "--edges", "x=0,0.5"], capsys)
    clear(code, err, "edges for column 'x' leave data outside every bin", "value -1")
    code, _ = run_cli(["schema", csv, "--edges", "x=-1,0,1", "--quiet"], capsys)
    assert code == 0


@pytest.mark.parametrize("text, words", [
    ("a,b\n1,2,3\n4,5\n", "Expected 2 fields in line 2, saw 3"),
    ("sex,sex\n1,2\n", "has the column 'sex' twice"),
    ("a,b\n\xe4,1\n".encode("latin-1"), "is not UTF-8 text (it has the byte 0xe4)")])
def test_malformed_csv_is_an_error_naming_the_file(tmp_path, capsys, text, words):
    csv = tmp_path / "bad.csv"
    (csv.write_bytes if isinstance(text, bytes) else csv.write_text)(text)
    code, err = run_cli(["schema", csv], capsys)
    clear(code, err, words, str(csv))


# item 10
@pytest.mark.parametrize("cmd", ["synthesize", "fit", "graph"])
def test_output_that_is_a_folder_names_the_option(files, tmp_path, capsys, cmd):
    argv = {"synthesize": ["synthesize", files["m.json"], "--n", "5", "--out", tmp_path],
            "fit": ["fit", files["r.parquet"], "--out", tmp_path],
            "graph": ["graph", files["m.json"], "--out-json", tmp_path]}[cmd]
    code, err = run_cli(argv, capsys)
    clear(code, err, f"('{tmp_path}') is a folder")
    assert ".tmp" not in err and list(tmp_path.iterdir()) == []


def test_zero_reports_fail_at_once(files, tmp_path, capsys):
    r = Reports.load(files["r.parquet"])
    empty = tmp_path / "empty.parquet"
    Reports(r.spec, r.packed[:0]).save(empty)
    for argv in (["estimate", empty, "--attrs", "a,b"], ["fit", empty, "--out", tmp_path / "m.json"],
                 ["estimate-freq", empty], ["graph", empty]):
        code, err = run_cli(argv, capsys)
        clear(code, err, f"reports file '{empty}' holds no reports (n = 0)")


def test_memory_budget_nan_is_a_usage_error(files, capsys):
    code, err = run_cli(["estimate", files["r.parquet"], "--attrs", "a",
                         "--memory-budget-mb", "nan"], capsys)
    clear(code, err, "--memory-budget-mb: ('nan') must be a finite number")


@pytest.mark.parametrize("cmd", ["estimate", "fit"])
@pytest.mark.parametrize("option", ["--memory-budget-mb", "--max-memory-mb"])
def test_memory_sizes_beyond_2_to_the_63_bytes_are_usage_errors(files, tmp_path, capsys, cmd, option):
    # 1.7e302 MiB overflowed to an infinite byte count (a hypothesis example found it)
    base = {"estimate": ["estimate", files["r.parquet"], "--attrs", "a"],
            "fit": ["fit", files["r.parquet"], "--out", tmp_path / "m.json"]}[cmd]
    code, err = run_cli(base + [option, "1.7144137714980277e+302"], capsys)
    clear(code, err, option, "1.7144137714980277e+302",
          "must be a finite number of MiB > 0 and at most 8796093022208")
    assert not (tmp_path / "m.json").exists()


def test_disk_full_names_the_output(files, tmp_path, capsys, monkeypatch):
    import lopub.cli.pipeline as cli_pipeline

    def full(df, path, **dialect):  # write_release(df, path, sep=..., decimal=...) for a CSV
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("lopub.publish.synthesize.write_release", full)
    out = tmp_path / "s.csv"
    code, err = run_cli(["synthesize", files["m.json"], "--n", "5", "--out", out], capsys)
    clear(code, err, f"cannot write --out {out}: No space left on device")
    assert cli_pipeline is not None
