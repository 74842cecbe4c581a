"""Model files: every corruption is refused on load with one clear error naming file and field."""
import gzip
import json

import numpy as np
import pytest

from lopub.cli import main
from lopub.model.format import model_checksum
from lopub.model.graphical import Model, ModelFormatError
from test_model import CHAIN, TREE, exact_model, tree_joint


@pytest.fixture
def chain_dict():
    full, g = tree_joint(*CHAIN)
    return exact_model(full, g).to_dict()


@pytest.fixture
def tree_dict():
    full, g = tree_joint(*TREE)
    return exact_model(full, g).to_dict()


def write(tmp_path, obj, name="model.json"):
    """``obj`` written as lopub writes models, with a checksum (so that every field check is
    reached: a file without one is refused first); NaN cannot be summed: a placeholder."""
    obj = dict(obj)
    try:
        obj["checksum"] = model_checksum(obj)
    except ValueError:
        obj["checksum"] = "sha256:" + "0" * 64
    path = tmp_path / name
    path.write_text(json.dumps(obj))  # json writes NaN for float("nan"), as a corrupt file may hold
    return path


def set_p(obj, i, values):
    obj["cliques"][i]["p"] = values
    return obj


def test_error_class_is_a_value_error():
    assert issubclass(ModelFormatError, ValueError)


def test_valid_file_still_loads(tmp_path, tree_dict):
    back = Model.load(write(tmp_path, tree_dict))
    assert back.n == 5000 and len(back.cliques) == len(tree_dict["cliques"])


def test_null_n_is_allowed(tmp_path, chain_dict):
    chain_dict["n"] = None  # a model built without a report count; synthesis then needs --n
    assert Model.load(write(tmp_path, chain_dict)).n is None


def test_truncated_gzip(tmp_path, tree_dict):
    full = tmp_path / "full.json.gz"
    full.write_bytes(gzip.compress(json.dumps(tree_dict).encode()))
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    with pytest.raises(ModelFormatError, match=r"cut\.json\.gz.*(truncated|not valid)"):
        Model.load(cut)


@pytest.mark.parametrize("content", [b"", b"{\"format\": \"lopub-model\", ", b"\x00\x01binary",
                                     b"[1, 2, 3]"])
def test_not_json_or_not_an_object(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(ModelFormatError, match=r"bad\.json"):
        Model.load(path)


def test_gzip_detected_by_content_not_name(tmp_path, chain_dict):
    path = tmp_path / "model.lopub"
    path.write_bytes(gzip.compress(json.dumps({**chain_dict, "checksum": model_checksum(chain_dict)}).encode()))
    assert Model.load(path).n == 5000


@pytest.mark.parametrize("key", ["n", "domain", "junction_tree", "cliques"])
def test_missing_required_key(tmp_path, chain_dict, key):
    del chain_dict[key]
    with pytest.raises(ModelFormatError, match=rf"model\.json: missing field '{key}'"):
        Model.load(write(tmp_path, chain_dict))


@pytest.mark.parametrize("n", [-3, 0, "abc", 2.5, True, [1]])
def test_bad_n(tmp_path, chain_dict, n):
    chain_dict["n"] = n
    with pytest.raises(ModelFormatError, match=r"model\.json: field 'n' .*positive integer"):
        Model.load(write(tmp_path, chain_dict))


def test_nan_in_table(tmp_path, chain_dict):
    p = chain_dict["cliques"][1]["p"]
    p[2] = float("nan")
    with pytest.raises(ModelFormatError, match=r"field 'cliques\[1\]\.p'.*entry 2 is nan.*finite"):
        Model.load(write(tmp_path, chain_dict))


def test_infinite_in_table(tmp_path, chain_dict):
    chain_dict["cliques"][0]["p"][0] = float("inf")
    with pytest.raises(ModelFormatError, match=r"field 'cliques\[0\]\.p'.*finite"):
        Model.load(write(tmp_path, chain_dict))


def test_negative_entry_even_if_the_sum_is_one(tmp_path, chain_dict):
    p = chain_dict["cliques"][0]["p"]
    p[0], p[1] = p[0] - 0.5, p[1] + 0.5
    with pytest.raises(ModelFormatError, match=r"field 'cliques\[0\]\.p'.*entry 0 is -.*>= 0"):
        Model.load(write(tmp_path, chain_dict))


def test_table_not_summing_to_one(tmp_path, chain_dict):
    chain_dict["cliques"][2]["p"] = [2 * x for x in chain_dict["cliques"][2]["p"]]
    with pytest.raises(ModelFormatError, match=r"field 'cliques\[2\]\.p'.*sums to 2.*expected 1"):
        Model.load(write(tmp_path, chain_dict))


@pytest.mark.parametrize("p", [[0.5, "x"], "abc", [[0.5], [0.5]], None])
def test_table_of_wrong_type(tmp_path, chain_dict, p):
    set_p(chain_dict, 0, p)
    with pytest.raises(ModelFormatError, match=r"field 'cliques\[0\]\.p'.*list of numbers"):
        Model.load(write(tmp_path, chain_dict))


def test_table_of_wrong_length_or_shape(tmp_path, chain_dict):
    obj = json.loads(json.dumps(chain_dict))
    obj["cliques"][0]["p"] = obj["cliques"][0]["p"][:-1]
    with pytest.raises(ModelFormatError, match=r"field 'cliques\[0\]\.p'.*11 values.*expected 12"):
        Model.load(write(tmp_path, obj))
    chain_dict["cliques"][0]["shape"] = [4, 3]
    with pytest.raises(ModelFormatError, match=r"field 'cliques\[0\]\.shape'.*\[4, 3\].*expected \[3, 4\]"):
        Model.load(write(tmp_path, chain_dict))


def test_clique_attrs_must_match_the_tree(tmp_path, chain_dict):
    chain_dict["cliques"][0]["attrs"] = ["B", "A"]
    with pytest.raises(ModelFormatError, match=r"field 'cliques\[0\]\.attrs'.*expected \['A', 'B'\]"):
        Model.load(write(tmp_path, chain_dict))
    chain_dict["cliques"] = chain_dict["cliques"][:2]
    with pytest.raises(ModelFormatError, match=r"field 'cliques'.*2 tables.*expected 3"):
        Model.load(write(tmp_path, chain_dict))


def test_unknown_attribute_in_a_clique(tmp_path, chain_dict):
    chain_dict["junction_tree"]["cliques"][0] = ["A", "Z"]
    with pytest.raises(ModelFormatError, match=r"field 'junction_tree\.cliques\[0\]'.*'Z'"):
        Model.load(write(tmp_path, chain_dict))


def test_tree_edge_to_a_missing_clique(tmp_path, chain_dict):
    chain_dict["junction_tree"]["edges"].append([1, 7])
    with pytest.raises(ModelFormatError,
                       match=r"field 'junction_tree\.edges\[2\]'.*\[1, 7\].*clique indices in 0\.\.2"):
        Model.load(write(tmp_path, chain_dict))


def test_tree_with_a_cycle(tmp_path, tree_dict):
    jt = tree_dict["junction_tree"]
    assert jt["edges"] == [[1, 0], [1, 3], [1, 4], [0, 2]]
    jt["edges"].append([3, 4])  # 1 - 3 - 4 - 1
    with pytest.raises(ModelFormatError, match=r"field 'junction_tree\.edges'.*cycle"):
        Model.load(write(tmp_path, tree_dict))


def test_clique_with_two_parents(tmp_path, tree_dict):
    jt = tree_dict["junction_tree"]
    jt["edges"][3] = [3, 2]  # clique 2 was a child of 0; 0 -> 2 removed, 3 -> 2 added: still a tree
    jt["edges"].append([0, 2])  # ... and now 2 has two parents (a cycle 1-0-2-3-1)
    with pytest.raises(ModelFormatError, match=r"field 'junction_tree\.edges'"):
        Model.load(write(tmp_path, tree_dict))


def test_tree_not_connected_per_component(tmp_path, chain_dict):
    jt = chain_dict["junction_tree"]
    jt["edges"] = jt["edges"][:1]  # clique 2 now has no parent and is no root
    with pytest.raises(ModelFormatError, match=r"field 'junction_tree\.roots'.*one root per"):
        Model.load(write(tmp_path, chain_dict))


def test_running_intersection_is_checked(tmp_path, chain_dict):
    jt = chain_dict["junction_tree"]
    assert jt["cliques"] == [["A", "B"], ["B", "C"], ["C", "D"]]
    jt["edges"], jt["order"] = [[0, 2], [2, 1]], [0, 2, 1]  # AB - CD - BC: B is cut
    with pytest.raises(ModelFormatError, match=r"field 'junction_tree'.*running intersection.*'B'"):
        Model.load(write(tmp_path, chain_dict))


def test_order_must_put_parents_first(tmp_path, chain_dict):
    jt = chain_dict["junction_tree"]
    jt["order"] = jt["order"][::-1]
    with pytest.raises(ModelFormatError, match=r"field 'junction_tree\.order'.*parent"):
        Model.load(write(tmp_path, chain_dict))


def test_bad_domain_and_graph_and_meta(tmp_path, chain_dict):
    obj = json.loads(json.dumps(chain_dict))
    obj["domain"]["attributes"][0]["categories"] = []
    with pytest.raises(ModelFormatError, match=r"field 'domain'.*no categories"):
        Model.load(write(tmp_path, obj))
    obj = json.loads(json.dumps(chain_dict))
    obj["graph"] = {"phi": 0.4, "mi": [[0.0]], "edges": []}
    with pytest.raises(ModelFormatError, match=r"field 'graph'"):
        Model.load(write(tmp_path, obj))
    obj = json.loads(json.dumps(chain_dict))
    obj["meta"] = [1, 2]
    with pytest.raises(ModelFormatError, match=r"field 'meta'.*object"):
        Model.load(write(tmp_path, obj))


def test_format_and_version(tmp_path, chain_dict):
    chain_dict["version"] = 99
    with pytest.raises(ModelFormatError, match=r"model\.json: field 'version'.*99.*expected 1"):
        Model.load(write(tmp_path, chain_dict))
    chain_dict["format"] = "other"
    with pytest.raises(ModelFormatError, match=r"field 'format'.*lopub-model"):
        Model.load(write(tmp_path, chain_dict))


@pytest.mark.parametrize("command", [["query", "--attrs", "A"], ["synthesize", "--out", "x.csv"],
                                     ["graph"]])
def test_cli_exits_2_with_the_message(tmp_path, chain_dict, capsys, command):
    full = gzip.compress(json.dumps(chain_dict).encode())
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(full[: len(full) // 2])
    nan = json.loads(json.dumps(chain_dict))
    nan["cliques"][0]["p"][0] = float("nan")
    for path, field in ((cut, "truncated"), (write(tmp_path, nan, "nan.json"), "cliques[0].p")):
        argv = [command[0], str(path)] + [str(tmp_path / x) if x.endswith(".csv") else x
                                          for x in command[1:]]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert path.name in err and field in err and "Traceback" not in err


def leaves(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from leaves(v, path + (k,))
    elif isinstance(obj, list) and obj:
        for i in sorted({0, len(obj) - 1}):
            yield from leaves(obj[i], path + (i,))
    yield path


@pytest.mark.parametrize("bad", [None, "x", -1, 0.5, [], {}, [[1, 2]], True, float("nan")])
def test_any_single_corruption_loads_or_raises_model_format_error(tmp_path, tree_dict, bad):
    """Replace each field (and first/last list items, recursively) by a wrong value."""
    paths = [p for p in leaves(tree_dict) if p]
    rng = np.random.default_rng(0)
    for k in rng.choice(len(paths), size=min(150, len(paths)), replace=False):
        obj = json.loads(json.dumps(tree_dict))
        target = obj
        for key in paths[k][:-1]:
            target = target[key]
        target[paths[k][-1]] = bad
        path = write(tmp_path, obj)
        try:
            Model.load(path)
        except ModelFormatError as exc:
            assert str(exc).startswith(str(path)), exc
