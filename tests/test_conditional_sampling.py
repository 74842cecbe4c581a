"""Conditional sampling (issue 26): exact under the model, clear errors for impossible conditions.

The sample's conditional marginals are compared with the model's, computed by
a different path (exact inference, ``Model.query(attrs, where)``), with
Pearson's chi-square against the multinomial law of the sample: at level
1e-6 per table, about 100 tables a run, a correct sampler fails with
probability below 1e-4 for any seed.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from lopub.cli import main
from lopub.data.dataset import Dataset
from lopub.data.domain import Attribute, Domain
from lopub.data.marginal import ZeroProbabilityError
from lopub.datasets import embedded_model
from lopub.errors import DomainError
from lopub.pipeline.steps import fit
from lopub.publish.synthesize import sample_codes, synthesize

LEVEL = 1e-6
N = 20_000
CONDITIONS = [{"sex": "Female"},
              {"sex": "Female", "income": ">50K"},
              {"race": "Black", "occupation": "Sales", "hours": None}]  # None: the first label


@pytest.fixture(scope="module")
def model():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = fit(estimator=embedded_model(), phi=0.4).model
    # the tree model: its conditional draws are exact for every set.  The relaxed regions (measured
    # sets in no clique, lopub.model.pgm.relaxed) update conditional draws by a heuristic that is
    # within sampling error only for the regions' own sets: tests/test_conditional_regions.py
    m.meta.pop("regions", None)
    return m


def _where(model, cond):
    return {a: (model.domain.labels(a)[0] if v is None else v) for a, v in cond.items()}


def chi2_pvalue(counts: np.ndarray, p: np.ndarray) -> float:
    """Pearson's test of ``counts`` against cell probabilities ``p`` (cells of p = 0 must be empty)."""
    counts, p = counts.ravel(), np.clip(p.ravel(), 0.0, None)
    p = p / p.sum()
    assert counts[p == 0].sum() == 0, "a cell of probability 0 under the model was drawn"
    keep = p > 0
    n = counts.sum()
    stat = float(((counts[keep] - n * p[keep]) ** 2 / (n * p[keep])).sum())
    return float(stats.chi2.sf(stat, max(int(keep.sum()) - 1, 1)))


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("k", range(len(CONDITIONS)))
def test_conditional_marginals_match_exact_inference(model, k, seed):
    where = _where(model, CONDITIONS[k])
    rows = sample_codes(model, N, rng=seed, where=where)
    dom = model.domain
    for a, label in where.items():  # every record carries the condition
        assert (rows.codes[:, dom.index(a)] == dom.labels(a).index(label)).all()
    free = [a for a in dom.attrs if a not in where]
    tables = [[a] for a in free] + [list(p) for p in zip(free[:-1], free[1:])]
    for attrs in tables:
        want = model.query(attrs, where).values
        got = rows.project(attrs).values * N
        pv = chi2_pvalue(np.rint(got).astype(int), want)
        assert pv > LEVEL, f"P({attrs} | {where}): chi-square p = {pv:.2e}"


def test_sampler_checker_rejects_unconditional_draws(model):
    # the test can fail: unconditioned records (with the condition pasted on) do not match
    where = {"sex": "Female", "income": ">50K"}
    rows = synthesize(model, N, rng=0)
    want = model.query(["marital"], where).values
    got = rows["marital"].value_counts().reindex(model.domain.labels("marital"), fill_value=0).to_numpy()
    assert chi2_pvalue(got, want) < LEVEL


def test_same_seed_same_conditional_sample(model):
    where = {"sex": "Male"}
    pd.testing.assert_frame_equal(synthesize(model, 500, rng=3, where=where),
                                  synthesize(model, 500, rng=3, where=where))


def _copy_model():
    dom = Domain((Attribute("a", ("x", "y")), Attribute("b", ("x", "y")), Attribute("c", ("u", "v", "w"))))
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 2000)
    codes = np.column_stack([a, a, rng.integers(0, 3, 2000)])  # b is a copy of a
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit(estimator=Dataset(codes, dom), phi=0.4, release="cliques").model  # exact zeros


def test_impossible_condition_is_refused():
    model = _copy_model()
    assert any({"a", "b"} <= set(c) for c in model.tree.cliques)
    with pytest.raises(ZeroProbabilityError, match=r"condition a=x, b=y has probability 0"):
        synthesize(model, 10, rng=0, where={"a": "x", "b": "y"})
    assert set(synthesize(model, 50, rng=0, where={"a": "y"})["b"]) == {"y"}


def test_unknown_attribute_or_label_named(model):
    with pytest.raises(DomainError, match=r"attribute 'colour', which the model does not have"):
        synthesize(model, 10, rng=0, where={"colour": "red"})
    with pytest.raises(DomainError, match=r"sex='Robot'.*expected one of \['Female', 'Male'\]"):
        synthesize(model, 10, rng=0, where={"sex": "Robot"})
    with pytest.raises(TypeError, match="mapping"):
        sample_codes(model, 10, rng=0, where=[("sex", "Male")])


def test_synthesizer_and_cli_conditions(model, tmp_path, capsys):
    from lopub.pipeline.synthesizer import Synthesizer

    data = embedded_model().sample(3000, rng=0).to_pandas()
    syn = Synthesizer(epsilon=8, rng=0).fit(data)
    df = syn.sample(200, seed=1, conditions={"sex": "Female", "income": ">50K"})
    assert len(df) == 200 and set(df["sex"]) == {"Female"} and set(df["income"]) == {">50K"}
    with pytest.raises(DomainError, match="no such category"):
        syn.sample(10, seed=1, conditions={"sex": "x"})
    path = tmp_path / "model.json"
    model.save(path)
    out = tmp_path / "s.csv"
    assert main(["synthesize", str(path), "--n", "300", "--seed", "2", "--where", "sex=Female",
                 "--where", "income=>50K", "--out", str(out), "--quiet"]) == 0
    got = pd.read_csv(out)
    assert len(got) == 300 and set(got["sex"]) == {"Female"} and set(got["income"]) == {">50K"}
    assert main(["synthesize", str(path), "--n", "3", "--where", "sex=Robot", "--out", str(out)]) != 0
    assert "no such category" in capsys.readouterr().err
