"""The ``lopub estimate`` subcommand (register() into a parser, and python -m lopub)."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

import numpy as np
import pytest

from lopub.cli import estimate as cli_estimate
from lopub.client.encode import encode
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.errors import BudgetError, DomainError
from lopub.reports.spec import CollectionSpec


@pytest.fixture(scope="module")
def reports_file(tmp_path_factory):
    dom = Domain.from_categories({"x": ["p", "q", "r"], "y": ["u", "v"], "z": ["0", "1", "2", "3"]})
    rng = np.random.default_rng(5)
    codes = np.column_stack([rng.integers(0, s, 3000) for s in dom.sizes])
    spec = CollectionSpec.from_domain(dom, f=0.3, m=32, h=4)
    path = tmp_path_factory.mktemp("est") / "reports.parquet"
    encode(Dataset(codes, dom), spec, rng=1).save(path)
    return str(path)


def _parser():
    p = argparse.ArgumentParser(prog="lopub")
    sub = p.add_subparsers(dest="command", required=True)
    cli_estimate.register(sub)
    return p


@pytest.mark.parametrize("method", ["em", "lasso", "moment", "hybrid"])
def test_json_output(reports_file, method, capsys):
    args = _parser().parse_args(["estimate", reports_file, "--attrs", "y,x", "--method", method,
                                 "--json", "--quiet"])
    args.func(args)
    out = json.loads(capsys.readouterr().out)
    assert out["attrs"] == ["y", "x"] and out["shape"] == [2, 3]
    assert out["categories"]["x"] == ["p", "q", "r"]
    assert sum(out["p"]) == pytest.approx(1.0)
    assert out["meta"]["method"] == method and out["n"] == 3000
    assert "loglik_trace" not in out["meta"]


def test_text_output(reports_file, capsys):
    args = _parser().parse_args(["estimate", reports_file, "--attrs", "x", "--quiet",
                                 "--postprocess", "simplex", "--tol", "1e-7"])
    args.func(args)
    out = capsys.readouterr().out
    assert "method=em" in out and "postprocess=simplex" in out and "converged=True" in out
    assert all(label in out for label in ("p", "q", "r"))


def test_errors(reports_file):
    p = _parser()
    with pytest.raises(DomainError, match="unknown attribute 'w'"):
        a = p.parse_args(["estimate", reports_file, "--attrs", "x,w", "--quiet"])
        a.func(a)
    with pytest.raises(BudgetError, match="memory_budget"):
        a = p.parse_args(["estimate", reports_file, "--attrs", "x,y,z", "--memory-budget-mb", "0.001",
                          "--quiet"])
        a.func(a)
    with pytest.raises(ValueError, match="--attrs"):
        a = p.parse_args(["estimate", reports_file, "--attrs", ",", "--quiet"])
        a.func(a)


def test_python_m_lopub(reports_file):
    run = subprocess.run([sys.executable, "-m", "lopub", "estimate", reports_file, "--attrs", "x,y",
                          "--method", "moment", "--json", "--quiet"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["meta"]["method"] == "moment"


def test_main_reports_errors_with_status_2(reports_file, capsys):
    from lopub.cli import main

    assert main(["estimate", reports_file, "--attrs", "x,x", "--quiet"]) == 2
    assert "duplicate attributes" in capsys.readouterr().err


def test_support_without_hybrid_is_refused(tmp_path, capsys):
    import numpy as np

    from lopub import CollectionSpec, Dataset, Domain
    from lopub.cli import main
    from lopub.client import encode

    d = Domain.from_categories({"a": ["x", "y"], "b": ["u", "v", "w"]})
    codes = np.random.default_rng(0).integers(0, 2, (200, 2))
    p = tmp_path / "r.parquet"
    encode(Dataset(codes, d), CollectionSpec.from_domain(d, f=0.5), rng=1).save(p)
    assert main(["estimate", str(p), "--attrs", "a,b", "--method", "em", "--support", "lasso"]) == 2
    assert "--support (lasso) applies to --method hybrid only" in capsys.readouterr().err


def test_budget_error_names_cli_option_and_requested_order():
    import numpy as np
    import pytest

    from lopub import CollectionSpec, Dataset, Domain
    from lopub.errors import BudgetError
    from lopub.estimate import Estimator
    from lopub.client import encode

    d = Domain.from_categories({"a": [str(i) for i in range(30)], "b": [str(i) for i in range(20)]})
    codes = np.random.default_rng(0).integers(0, 20, (100, 2))
    r = encode(Dataset(codes, d), CollectionSpec.from_domain(d, f=0.5), rng=1)
    with pytest.raises(BudgetError, match=r"\['b', 'a'\] has 20 x 30 = 600 cells.*--memory-budget-mb"):
        Estimator(r, method="em", memory_budget=1000).marginal(["b", "a"])
