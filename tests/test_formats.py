"""lopub.formats: the JSON Schemas are valid, every file lopub writes matches its schema, and
documents the schema rejects are rejected by lopub's loaders too."""
import copy
import gzip
import json
import tomllib
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

jsonschema = pytest.importorskip("jsonschema")

from lopub import CollectionSpec, Domain, Reports, formats  # noqa: E402
from lopub.cli import main  # noqa: E402
from lopub.errors import DomainError, ReportsFormatError  # noqa: E402
from lopub.reports.parquet import read_metadata  # noqa: E402
from lopub.model.graphical import Model, ModelFormatError  # noqa: E402
from test_model import CHAIN, exact_model, tree_joint  # noqa: E402

ValidationError = jsonschema.ValidationError


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Tiny CSV -> `lopub schema` -> `lopub encode` -> `lopub fit` (gzip model)."""
    d = tmp_path_factory.mktemp("formats")
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 300)
    pd.DataFrame({"A": np.array(list("xyz"))[a], "B": np.array(list("pqr"))[(a + rng.integers(0, 2, 300)) % 3],
                  "C": np.array(["u", "v"])[rng.integers(0, 2, 300)],
                  "age": rng.uniform(18, 80, 300).round(1)}).to_csv(d / "tiny.csv", index=False)
    assert main(["schema", str(d / "tiny.csv"), "--bins", "4", "--out", str(d / "domain.json")]) == 0
    assert main(["encode", str(d / "tiny.csv"), "--domain", str(d / "domain.json"), "--f", "0.3",
                 "--seed", "1", "--out", str(d / "reports.parquet")]) == 0
    assert main(["fit", str(d / "reports.parquet"), "--method", "moment", "--quiet",
                 "--out", str(d / "model.json.gz")]) == 0
    return d


@pytest.fixture(scope="module")
def docs(files):
    """One parsed document of each format, as lopub wrote them."""
    meta = read_metadata(files / "reports.parquet")
    return {"domain": json.loads((files / "domain.json").read_text()),
            "spec": json.loads(meta["lopub.spec"]), "reports-metadata": meta,
            "model": json.loads(gzip.decompress((files / "model.json.gz").read_bytes()))}


# the schemas themselves ----------------------------------------------------------------
def test_domain_schema_lists_every_kind_a_domain_accepts():
    """The JSON Schema's ``kind`` enum is the domain's KINDS (it lacked "datetime" when the kind came)."""
    from lopub.data.domain import KINDS, Attribute

    enums = [v["enum"] for v in _walk(formats.schema("domain")) if isinstance(v, dict) and "enum" in v
             and "date" in v["enum"]]
    assert enums == [[*KINDS, None]]
    doc = Domain((Attribute("t", ("2024-01-01 08:00:00",), None, "datetime"),)).to_dict()
    jsonschema.validate(doc, formats.schema("domain"))


def _walk(node):
    """Every dict and list inside a JSON document, depth first."""
    yield node
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for child in children:
        yield from _walk(child)


@pytest.mark.parametrize("name", formats.SCHEMAS)
def test_schemas_are_valid_draft_2020_12(name):
    s = formats.schema(name)
    jsonschema.Draft202012Validator.check_schema(s)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert s["$id"] == formats.SCHEMA_ID.format(name=name)


@pytest.mark.parametrize("name, fmt, version", [
    ("domain", formats.DOMAIN_FORMAT, formats.DOMAIN_VERSION),
    ("spec", formats.SPEC_FORMAT, formats.SPEC_VERSION),
    ("model", formats.MODEL_FORMAT, formats.MODEL_VERSION),
])
def test_schema_header_matches_the_code(name, fmt, version):
    props = formats.schema(name)["properties"]
    assert props["format"]["const"] == fmt and props["version"]["const"] == version


def test_reports_schema_header_matches_the_code():
    props = formats.schema("reports-metadata")["properties"]
    assert props["lopub.format"]["const"] == formats.REPORTS_FORMAT
    assert props["lopub.version"]["const"] == str(formats.REPORTS_VERSION)


def test_schema_lookup_and_package_data():
    with pytest.raises(ValueError, match=r"name \('adult'\) is not a lopub file format"):
        formats.schema("adult")
    s = formats.schema("domain")
    s["title"] = "changed"
    assert formats.schema("domain")["title"] != "changed"  # a fresh copy every time
    folder = resources.files("lopub.formats").joinpath("jsonschema")
    shipped = sorted(p.name for p in folder.iterdir() if p.name.endswith(".json"))
    assert shipped == sorted(f"{n}.schema.json" for n in formats.SCHEMAS)
    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert "formats/jsonschema/*.schema.json" in pyproject["tool"]["setuptools"]["package-data"]["lopub"]
    assert any(d.startswith("jsonschema") for d in pyproject["project"]["optional-dependencies"]["test"])


# every file lopub writes matches its schema -----------------------------------------------
def test_domain_from_lopub_schema_validates(docs):
    formats.validate(docs["domain"], "domain")
    assert any("binning" in a for a in docs["domain"]["attributes"])  # the binned column is covered


def test_shipped_dataset_domains_validate():
    names = [p for p in resources.files("lopub.datasets.schemas").iterdir() if p.name.endswith(".json")]
    assert names  # adult.json, retail.json: lopub-domain documents
    for p in names:
        formats.validate(json.loads(p.read_text()), "domain")


def test_spec_file_validates(files, tmp_path):
    domain = Domain.from_json(files / "domain.json")
    for spec in (CollectionSpec.from_domain(domain, f=0.25, key="k"),
                 CollectionSpec.from_domain(domain, epsilon=3.0, fp_rate=0.01)):
        spec.to_json(tmp_path / "spec.json")
        formats.validate(json.loads((tmp_path / "spec.json").read_text()), "spec")


def test_reports_metadata_and_its_spec_validate(docs, files):
    formats.validate(docs["reports-metadata"], "reports-metadata")
    formats.validate(docs["spec"], "spec")  # contentSchema is an annotation: check the spec itself
    assert int(docs["reports-metadata"]["lopub.n"]) == Reports.load(files / "reports.parquet").n == 300


def test_model_from_lopub_fit_validates(docs):
    formats.validate(docs["model"], "model")
    assert docs["model"]["graph"] is not None and docs["model"]["meta"]["fit"]  # both parts covered


@pytest.mark.parametrize("name", ["model.json", "model.json.gz"])
def test_model_save_validates_also_without_n_and_graph(tmp_path, name):
    full, g = tree_joint(*CHAIN)
    model = exact_model(full, g)
    for m in (model, Model(model.domain, model.tree, model.cliques, None, None, {})):
        m.save(tmp_path / name)
        raw = (tmp_path / name).read_bytes()
        doc = json.loads(gzip.decompress(raw) if name.endswith(".gz") else raw)
        formats.validate(doc, "model")
        assert doc["n"] == m.n and doc["graph"] is None


# broken documents: refused by the schema and by the loader --------------------------------
def _set(path, value):
    def mutate(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        if value is _DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value
    return mutate


_DELETE = object()

BROKEN = {
    "domain": [(("format",), "lopub-spec"), (("version",), 2), (("version",), True),
               (("attributes",), {}), (("attributes", 0, "categories"), ["x", "x"]),
               (("attributes", 0, "categories"), []), (("attributes", 0, "name"), _DELETE),
               (("attributes", 3, "binning", "edges"), [18.0])],
    "spec": [(("f",), 1.5), (("f",), 0), (("m", 0), 0), (("h",), "4"), (("key",), ""),
             (("salts",), _DELETE), (("domain", "attributes", 1, "categories"), ["p", "p", "q"])],
    "model": [(("format",), "lopub-domain"), (("version",), 2), (("n",), 0), (("n",), "400"),
              (("junction_tree",), _DELETE), (("junction_tree", "edges"), [[0]]),
              (("junction_tree", "cliques"), []), (("cliques", 0, "p", 0), -0.5),
              (("cliques", 0, "shape"), "3x3"), (("cliques", 0, "meta"), [1]), (("meta",), [1, 2]),
              (("graph", "phi"), 0), (("graph", "mi", 0, 1), -1.0),
              (("domain", "attributes", 0, "categories"), [])],
}
LOADERS = {"domain": (Domain.from_dict, DomainError),
           "spec": (CollectionSpec.from_dict, (ValueError, TypeError)),  # SpecError, DomainError, f...
           "model": (Model.from_dict, ModelFormatError)}


@pytest.mark.parametrize("name, path, value", [(n, p, v) for n, cases in BROKEN.items() for p, v in cases],
                         ids=lambda x: x if isinstance(x, str) else None)
def test_broken_document_is_refused_by_schema_and_loader(docs, name, path, value):
    doc = copy.deepcopy(docs[name])
    _set(path, value)(doc)
    with pytest.raises(ValidationError):
        formats.validate(doc, name)
    load, error = LOADERS[name]
    with pytest.raises(error):
        load(doc)


@pytest.mark.parametrize("key, value", [("lopub.version", "7"), ("lopub.n", "many"), ("lopub.n", "-3"),
                                        ("lopub.format", "parquet"), ("lopub.spec", None)])
def test_broken_reports_metadata_is_refused_by_schema_and_loader(docs, files, tmp_path, key, value):
    meta = dict(docs["reports-metadata"])
    if value is None:
        del meta[key]
    else:
        meta[key] = value
    with pytest.raises(ValidationError):
        formats.validate(meta, "reports-metadata")
    table = pq.read_table(files / "reports.parquet")
    pq.write_table(table.replace_schema_metadata(meta), tmp_path / "bad.parquet")
    with pytest.raises(ReportsFormatError, match="bad.parquet"):
        Reports.load(tmp_path / "bad.parquet")


INFORMATIVE = {"separators", "decisions", "dropped_for_budget", "epsilon_per_record"}


def _leaves(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(obj, list) and obj:
        for i in sorted({0, len(obj) - 1}):
            yield from _leaves(obj[i], path + (i,))
    if path:
        yield path


@pytest.mark.parametrize("name", ["domain", "spec", "model"])
def test_what_the_schema_refuses_the_loader_refuses(docs, name):
    """Replace each field (first/last list items, recursively) by a wrong value: whenever the
    schema refuses the document, lopub's loader refuses it too (the loader checks more, never
    less), except for informative fields the loader ignores."""
    check = formats.validator(name)
    load, error = LOADERS[name]
    paths = [p for p in _leaves(docs[name]) if not INFORMATIVE & set(map(str, p))
             and p[:1] != ("meta",) and "meta" not in p[2:3]]
    refused = 0
    for value in (None, "x", -1, [], {}, [["a", "b"]], 0.5):
        for path in paths:
            doc = copy.deepcopy(docs[name])
            _set(path, value)(doc)
            if check.is_valid(doc):
                continue
            refused += 1
            with pytest.raises(error):
                load(doc)
    assert refused > len(paths)  # the corruptions did exercise the schema
