"""Export to pgmpy and the UAI MARKOV format: pgmpy's exact inference answers lopub's queries."""
import itertools
import pickle
import warnings

import numpy as np
import pytest

from lopub.client import encode
from lopub.datasets import embedded
from lopub.publish.export import clique_potentials, export_model, to_pgmpy, uai_text, write_uai
from lopub.pipeline.steps import fit
from lopub.reports.spec import CollectionSpec

pgmpy = pytest.importorskip("pgmpy")
from pgmpy.inference import BeliefPropagation, VariableElimination  # noqa: E402

# race is independent of the others here: the model is a forest (two components)
ATTRS = ["age_group", "sex", "marital", "relationship", "household_size", "urban", "race"]
TOL = 1e-9


def fitted_model(**kw):
    """fit() returns (Model, report) today and may return a result object with .model later."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fit(**kw)
    model = out[0] if isinstance(out, tuple) else getattr(out, "model", out)
    # the pgmpy export carries the junction tree; measured sets in no clique (relaxed regions,
    # lopub.model.pgm.relaxed) answer their own queries and are not part of it, so the export's
    # queries are compared with the tree's answers
    model.meta.pop("regions", None)
    return model


@pytest.fixture(scope="module", params=["exact", "reports"])
def model(request):
    data = embedded(3000, rng=1).select(ATTRS)
    if request.param == "exact":
        return fitted_model(estimator=data, phi=0.4)
    reports = encode(data, CollectionSpec.from_domain(data.domain, f=0.5), rng=2)
    return fitted_model(reports=reports, phi=0.4, method="moment")


def aligned(factor, attrs):
    """pgmpy factor values with axes in the order of ``attrs``."""
    order = [factor.variables.index(a) for a in attrs]
    return np.transpose(factor.values, order)


QUERIES = [["sex"], ["age_group", "marital"], ["sex", "urban"], ["urban", "race", "age_group"],
           ["household_size", "sex", "marital", "race"]]


@pytest.mark.parametrize("kind,engine", [("markov", VariableElimination),
                                          ("junction", BeliefPropagation)])
def test_pgmpy_exact_inference_answers_model_queries(model, kind, engine):
    assert len(model.tree.roots) >= 1
    inf = engine(to_pgmpy(model, kind))
    for attrs in QUERIES:
        got = inf.query(attrs, show_progress=False)
        np.testing.assert_allclose(aligned(got, attrs), model.query(attrs).values, atol=TOL, rtol=0)
    where = {"relationship": model.domain.labels("relationship")[0], "race": model.domain.labels("race")[1]}
    got = inf.query(["sex", "household_size"], evidence=where, show_progress=False)
    want = model.query(["sex", "household_size"], where=where)
    if kind == "markov":  # pgmpy leaves Markov-network answers unnormalized: P(attrs, evidence)
        assert got.values.sum() == pytest.approx(want.meta["condition_mass"], abs=TOL)
        got = got.normalize(inplace=False)
    np.testing.assert_allclose(aligned(got, ["sex", "household_size"]), want.values, atol=TOL, rtol=0)
    assert got.state_names["sex"] == list(model.domain.labels("sex"))


def test_model_to_pgmpy_method_and_partition_function(model):
    net = to_pgmpy(model)
    assert set(net.nodes) == set(model.domain.attrs)
    assert net.get_partition_function() == pytest.approx(1.0, abs=TOL)
    jt = to_pgmpy(model, "junction")
    assert len(jt.nodes) == len(model.tree.cliques)


def joint(model):
    attrs = list(model.domain.attrs)
    return attrs, model.project(attrs).values


def test_map_query_returns_a_most_probable_configuration(model):
    attrs, p = joint(model)
    inf = VariableElimination(to_pgmpy(model))
    best = inf.map_query(show_progress=False)  # all variables
    cell = tuple(model.domain.labels(a).index(best[a]) for a in attrs)
    assert p[cell] == pytest.approx(p.max(), abs=1e-12)
    sub = ["sex", "urban", "race"]
    best = BeliefPropagation(to_pgmpy(model, "junction")).map_query(sub, show_progress=False)
    q = model.project(sub).values
    cell = tuple(model.domain.labels(a).index(best[a]) for a in sub)
    assert q[cell] == pytest.approx(q.max(), abs=1e-12)


def read_uai(text):
    """Tiny UAI MARKOV reader: (type, cardinalities, scopes, tables)."""
    tok = text.split()
    kind, nvar = tok[0], int(tok[1])
    cards = [int(t) for t in tok[2:2 + nvar]]
    pos = 2 + nvar
    nf = int(tok[pos])
    pos += 1
    scopes = []
    for _ in range(nf):
        k = int(tok[pos])
        scopes.append([int(t) for t in tok[pos + 1:pos + 1 + k]])
        pos += 1 + k
    tables = []
    for s in scopes:
        size = int(tok[pos])
        assert size == int(np.prod([cards[i] for i in s]))
        tables.append(np.array([float(t) for t in tok[pos + 1:pos + 1 + size]]).reshape([cards[i] for i in s]))
        pos += 1 + size
    assert pos == len(tok)
    return kind, cards, scopes, tables


def test_uai_file_parses_back_to_the_factors(model, tmp_path):
    path = tmp_path / "model.uai"
    write_uai(model, path)
    kind, cards, scopes, tables = read_uai(path.read_text())
    attrs = list(model.domain.attrs)
    assert kind == "MARKOV" and cards == list(model.domain.sizes)
    assert scopes == [[attrs.index(a) for a in c] for c in model.tree.cliques]
    for t, pot in zip(tables, clique_potentials(model)):
        np.testing.assert_array_equal(t, pot)
    # the product of the factors is the model's joint
    letters = {a: chr(97 + i) for i, a in enumerate(attrs)}
    spec = ",".join("".join(letters[attrs[i]] for i in s) for s in scopes)
    prod = np.einsum(spec + "->" + "".join(letters[a] for a in attrs), *tables)
    np.testing.assert_allclose(prod, joint(model)[1], atol=1e-12, rtol=0)


@pytest.mark.parametrize("kind,engine", [("markov", VariableElimination),
                                          ("junction", BeliefPropagation)])
def test_export_pgmpy_pickle_round_trips(model, tmp_path, kind, engine):
    path = tmp_path / "model.pkl"
    export_model(model, path, "pgmpy", kind=kind)
    with open(path, "rb") as fh:
        net = pickle.load(fh)
    got = engine(net).query(["sex", "urban"], show_progress=False)
    np.testing.assert_allclose(aligned(got, ["sex", "urban"]), model.query(["sex", "urban"]).values,
                               atol=TOL, rtol=0)


def test_formats_that_cannot_hold_the_model_say_why(model, tmp_path):
    with pytest.raises(ValueError, match=r"format \('xml'\) must be one of \['uai', 'pgmpy'\]"):
        export_model(model, tmp_path / "m.xml", "xml")
    total = sum(t.values.size for t in model.cliques)
    for fmt, name in (("uai", "UAI"), ("pgmpy", "pgmpy")):
        with pytest.raises(ValueError, match=rf"the {name} export would hold {total:,} factor-table entries, "
                                             r"more than max_cells \(10\)"):
            export_model(model, tmp_path / "m.out", fmt, max_cells=10)
    assert not (tmp_path / "m.out").exists()
    with pytest.raises(ValueError, match=r"kind \('bayes'\) must be one of"):
        to_pgmpy(model, "bayes")
    with pytest.raises(TypeError, match=r"model \(dict\) must be a lopub Model"):
        uai_text({})


def test_separator_division_assigned_once(model):
    pots = clique_potentials(model)
    for i, (t, pot) in enumerate(zip(model.cliques, pots)):
        sep = model.tree.separator(i)
        if not sep:
            np.testing.assert_array_equal(pot, t.values)
            continue
        axes = tuple(k for k, a in enumerate(t.attrs) if a not in sep)
        sums = pot.sum(axis=axes)  # a conditional: sums to 1 over the new attributes where P(S) > 0
        ps = t.project([a for a in t.attrs if a in sep]).values
        np.testing.assert_allclose(sums[ps > 0], 1.0, atol=1e-12)
        assert np.all(sums[ps == 0] == 0)
    assert any(model.tree.separator(i) for i in range(len(pots)))
    assert list(itertools.chain.from_iterable(model.tree.cliques))


def test_pgmpy_uai_reader_reads_the_file(tmp_path):
    # pgmpy's reader takes its nodes from the edges, so this model has no isolated attribute
    from pgmpy.readwrite import UAIReader

    data = embedded(2000, rng=3).select(["sex", "relationship", "marital", "age_group"])
    model = fitted_model(estimator=data, phi=0.4)
    write_uai(model, tmp_path / "m.uai")
    net = UAIReader(str(tmp_path / "m.uai")).get_model()
    var = {a: f"var_{i}" for i, a in enumerate(model.domain.attrs)}
    for a, b in [("sex", "marital"), ("age_group", "sex")]:
        got = VariableElimination(net).query([var[a], var[b]], show_progress=False)
        np.testing.assert_allclose(aligned(got, [var[a], var[b]]), model.query([a, b]).values,
                                   atol=TOL, rtol=0)


def _models_with_isolated_attributes():
    from lopub.data.dataset import Dataset
    from lopub.data.domain import Attribute, Domain
    from lopub.pipeline.steps import independence_model

    data = embedded(3000, rng=1).select(["age_group", "sex", "marital", "relationship", "race"])
    rng = np.random.default_rng(4)  # a column independent of everything: no edge reaches it
    domain = Domain(tuple(data.domain.attributes) + (Attribute("coin", ("h", "t")),))
    noise = Dataset.from_pandas(data.to_pandas().assign(coin=rng.choice(["h", "t"], data.n)), domain)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        partly = fitted_model(estimator=noise, phi=0.4)
    return {"independence": independence_model(data), "one isolated": partly,
            "forest": fitted_model(estimator=embedded(3000, rng=1).select(ATTRS), phi=0.4)}


@pytest.mark.parametrize("name", ["independence", "one isolated", "forest"])
def test_uai_round_trips_through_pgmpys_reader(name, tmp_path):
    # issue 26: pgmpy's UAIReader dropped attributes no edge joins ("Factors defined on variable
    # not in the model"); every model must read back with the same joint
    from pgmpy.readwrite import UAIReader

    model = _models_with_isolated_attributes()[name]
    if name != "forest":
        assert any(len(c) == 1 for c in model.tree.cliques)
    path = tmp_path / "model.uai"
    write_uai(model, path)
    net = UAIReader(str(path)).get_model()
    attrs = list(model.domain.attrs)
    names = [f"var_{i}" for i in range(len(attrs))]
    assert sorted(net.nodes()) == sorted(names)
    got = VariableElimination(net).query(names, show_progress=False)
    got = aligned(got, names) / got.values.sum()  # a Markov network's answer is not normalized
    np.testing.assert_allclose(got, joint(model)[1], atol=1e-12, rtol=0)
