"""Users of a detection screen whose reports only chose the plan: the marginal reports file counts
them (``screened``), ``fit`` records the users in the model's collection parameters, and a release
has one record per user by default (``lopub synthesize``, ``synthesize``, ``Synthesizer.load``)."""
import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from lopub.cli import main
from lopub.collect import MarginalPlan, MarginalReports, collect_records
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.errors import ReportsFormatError
from lopub.formats._io import npz_checksum
from lopub.model.graphical import Model
from lopub.pipeline.steps import fit
from lopub.publish.synthesize import synthesize

SIZES = (3, 4, 2, 3)
N, SCREENED = 3000, 123


def _data(n=N, seed=11):
    dom = Domain.from_categories({f"a{i}": [str(j) for j in range(k)] for i, k in enumerate(SIZES)})
    rng = np.random.default_rng(seed)
    cols = [rng.integers(0, SIZES[0], n)]
    for k in SIZES[1:]:  # each attribute copies the previous one (mod its size) half the time
        cols.append(np.where(rng.random(n) < 0.5, cols[-1] % k, rng.integers(0, k, n)))
    return Dataset(np.column_stack(cols), dom)


@pytest.fixture(scope="module")
def reports():
    data = _data()
    plan = MarginalPlan(data.domain, (("a0", "a1"), ("a1", "a2"), ("a2", "a3"), ("a0", "a3")), 4.0)
    return dataclasses.replace(collect_records(data, plan, rng=3), screened=SCREENED)


def _rewrite(path, out, edit):
    """``path``'s file with its metadata edited by ``edit``, under a valid checksum (as a writer made it)."""
    with np.load(path) as z:
        meta, arrays = json.loads(bytes(z["meta"]).decode()), {k: z[k] for k in z.files if k != "meta"}
    meta = edit({k: v for k, v in meta.items() if k != "checksum"})
    meta["checksum"] = npz_checksum(meta, arrays)
    np.savez_compressed(out, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)


def test_reports_file_round_trips_the_screened_users(reports, tmp_path):
    assert reports.n == N and reports.users == N + SCREENED
    reports.save(tmp_path / "r.npz")
    assert MarginalReports.read_meta(tmp_path / "r.npz")["screened"] == SCREENED
    back = MarginalReports.load(tmp_path / "r.npz")
    assert (back.n, back.screened, back.users) == (N, SCREENED, N + SCREENED)
    assert back.merge(back).users == 2 * (N + SCREENED)  # two collections: their screens add up


def test_files_without_the_count_read_as_no_screen(reports, tmp_path):
    reports.save(tmp_path / "r.npz")
    _rewrite(tmp_path / "r.npz", tmp_path / "old.npz", lambda m: {k: v for k, v in m.items() if k != "screened"})
    old = MarginalReports.load(tmp_path / "old.npz")  # a version 3 file written before the key
    assert (old.n, old.screened, old.users) == (N, 0, N)
    v2 = {"format": "lopub-marginal-reports", "version": 2, "plan": reports.plan.to_dict(),
          "plan_id": reports.plan_id, "n": reports.n, "group_sizes": reports.group_sizes().tolist(),
          "report_kinds": list(reports.plan.oracles)}
    arrays = {"subset": reports.subset, **{f"group_{i}": g for i, g in enumerate(reports.groups)}}
    np.savez_compressed(tmp_path / "v2.npz", meta=np.frombuffer(json.dumps(
        {**v2, "checksum": npz_checksum(v2, arrays)}).encode(), dtype=np.uint8), **arrays)
    assert MarginalReports.load(tmp_path / "v2.npz").users == N


@pytest.mark.parametrize("value", [-1, "123", 1.5, True, None])
def test_a_bad_count_in_a_file_is_refused_naming_it(reports, tmp_path, value):
    reports.save(tmp_path / "r.npz")
    _rewrite(tmp_path / "r.npz", tmp_path / "bad.npz", lambda m: {**m, "screened": value})
    with pytest.raises(ReportsFormatError, match=r"bad\.npz.*'screened' \(.*\) must be an integer >= 0"):
        MarginalReports.load(tmp_path / "bad.npz")


def test_a_bad_count_is_refused_by_the_constructor(reports):
    with pytest.raises(ValueError, match=r"screened \(-2\) must be an integer >= 0"):
        dataclasses.replace(reports, screened=-2)
    with pytest.raises(TypeError, match=r"screened \(2.0\) must be an integer"):
        dataclasses.replace(reports, screened=2.0)
    assert dataclasses.replace(reports, screened=np.int64(5)).screened == 5


def test_fit_records_the_users_and_synthesize_defaults_to_them(reports, tmp_path):
    model = fit(reports, warn=False).model
    assert model.n == N and model.collection["users"] == N + SCREENED and model.users == N + SCREENED
    model.save(tmp_path / "m.json")
    back = Model.load(tmp_path / "m.json")
    assert back.users == N + SCREENED
    assert len(synthesize(back, rng=0)) == N + SCREENED and len(synthesize(back, 10, rng=0)) == 10
    no_screen = fit(dataclasses.replace(reports, screened=0), warn=False).model
    assert no_screen.users == no_screen.n == N and len(synthesize(no_screen, rng=0)) == N


@pytest.mark.parametrize("users", [None, "many", N - 1, True])
def test_a_model_without_a_usable_user_count_keeps_its_n(reports, users):
    model = fit(reports, warn=False).model
    coll = {k: v for k, v in model.collection.items() if k != "users"}
    model.meta["fit"]["collection"] = coll if users is None else {**coll, "users": users}
    assert model.users == N and len(synthesize(model, rng=0)) == N


def test_cli_fit_synthesize_and_report_show_the_users(reports, tmp_path, capsys):
    reports.save(tmp_path / "r.npz")
    assert main(["inspect-reports", str(tmp_path / "r.npz"), "--json"]) in (0, None)
    seen = json.loads(capsys.readouterr().out)
    assert (seen["n"], seen["users"], seen["screened_not_released"]) == (N, N + SCREENED, SCREENED)
    assert main(["fit", str(tmp_path / "r.npz"), "--out", str(tmp_path / "m.json"), "--quiet"]) in (0, None)
    out = capsys.readouterr().out
    assert f"reports: {N} of {N + SCREENED} users (the {SCREENED} reports of the screen" in out
    meta = json.loads((tmp_path / "m.json").read_text())
    assert meta["n"] == N and meta["meta"]["fit"]["collection"]["users"] == N + SCREENED
    assert main(["synthesize", str(tmp_path / "m.json"), "--out", str(tmp_path / "s.csv"), "--seed", "0"]) in (0, None)
    assert f"{N + SCREENED} synthetic records" in capsys.readouterr().out
    assert len(pd.read_csv(tmp_path / "s.csv")) == N + SCREENED
    assert main(["synthesize", str(tmp_path / "m.json"), "--out", str(tmp_path / "t.csv"), "--n", "40"]) in (0, None)
    assert len(pd.read_csv(tmp_path / "t.csv")) == 40
    assert main(["report", str(tmp_path / "m.json"), "--out", str(tmp_path / "r.html"), "--quiet"]) in (0, None)
    html = (tmp_path / "r.html").read_text()
    assert f"{N:,} of {N + SCREENED:,} users (the {SCREENED:,} reports of the screen" in html


def test_cli_fit_of_reports_without_a_screen_prints_no_users(reports, tmp_path, capsys):
    dataclasses.replace(reports, screened=0).save(tmp_path / "r.npz")
    assert main(["fit", str(tmp_path / "r.npz"), "--out", str(tmp_path / "m.json"), "--quiet"]) in (0, None)
    out = capsys.readouterr().out
    assert f"reports: {N}, attributes" in out and "users" not in out.split("\n")[0]
    assert main(["synthesize", str(tmp_path / "m.json"), "--out", str(tmp_path / "s.csv")]) in (0, None)
    assert len(pd.read_csv(tmp_path / "s.csv")) == N


def test_synthesizer_loaded_from_a_lopub_fit_model_samples_the_users(reports, tmp_path):
    from lopub import Synthesizer

    fit(reports, warn=False).model.save(tmp_path / "m.json")
    syn = Synthesizer.load(tmp_path / "m.json")
    assert syn.fit_report_.collection.n == N + SCREENED
    assert len(syn.sample(seed=1)) == N + SCREENED and len(syn.sample(7, seed=1)) == 7
