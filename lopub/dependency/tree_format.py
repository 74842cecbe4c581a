"""The junction-tree object stored in model files (``"junction_tree"``).

JSON Schema: ``$defs/junction_tree`` of ``lopub/formats/jsonschema/model.schema.json``::

    {"cliques": [["A", "B"], ["B", "C"]], "edges": [[0, 1]], "roots": [0],
     "order": [0, 1], "fill_edges": [["A", "C"]], "separators": [[], ["B"]]}

``edges`` are ``[parent, child]`` clique indices, ``order`` lists parents
before children, ``separators`` is informative (recomputed on load).
Reading checks types, ranges and the structure (a forest, one parent per
clique, one root per component, running intersection) and raises
``ValueError`` naming the field (``junction_tree.edges[2]``...), its value and
what was expected.
"""
from __future__ import annotations

from typing import Any, Callable

import networkx as nx

from lopub.data.domain import Domain


def tree_to_dict(tree: Any) -> dict[str, Any]:
    """The JSON object of a :class:`~lopub.dependency.junction.JunctionTree`."""
    return {"cliques": [list(c) for c in tree.cliques], "edges": [list(e) for e in tree.edges],
            "roots": list(tree.roots), "fill_edges": [list(e) for e in tree.fill_edges],
            "order": list(tree.order),
            "separators": [list(tree.separator(i)) for i in range(len(tree.cliques))]}


def tree_from_dict(build: Callable[..., Any], obj: Any, domain: Domain | None = None, *,
                   name: str = "junction_tree") -> Any:
    """Validate a junction-tree object and return ``build(cliques, edges, roots, fill_edges, order)``.

    Raises
    ------
    ValueError
        Naming the field (``name.edges[2]``...), its value and what was
        expected: missing keys, wrong types, indices outside the cliques,
        attributes not in ``domain``, a cycle, a component without exactly
        one root, an order listing a child before its parent, or a violated
        running intersection property.
    """
    cliques, edges, roots, order, fill = _parse_tree(obj, domain, name)
    _check_structure(cliques, edges, roots, order, name)
    attr = cut_attribute(cliques, edges)
    if attr is not None:
        raise ValueError(f"field {name!r} violates the running intersection property: the cliques "
                         f"holding {attr!r} are not connected in the tree; expected a junction tree")
    return build(cliques, edges, roots, fill, order)


def cut_attribute(cliques: list[tuple[str, ...]], edges: list[tuple[int, int]]) -> str | None:
    """First attribute whose cliques are not connected by ``edges`` (None: running intersection holds)."""
    t = nx.Graph()
    t.add_nodes_from(range(len(cliques)))
    t.add_edges_from(edges)
    for a in dict.fromkeys(a for c in cliques for a in c):
        if not nx.is_connected(t.subgraph([i for i, c in enumerate(cliques) if a in c])):
            return a
    return None


def bad_field(field_name: str, value: Any, problem: str, expected: str) -> ValueError:
    """``ValueError("field 'x' (value) problem; expected ...")``, the value cut to 60 characters."""
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return ValueError(f"field {field_name!r} ({text}) {problem}; expected {expected}")


def _is_index(x: Any, k: int) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < k


def _parse_tree(obj: Any, domain: Domain | None, name: str):
    """Types, keys and ranges of a junction-tree dict (see :func:`tree_from_dict`)."""
    if not isinstance(obj, dict):
        raise bad_field(name, type(obj).__name__, "is not an object", "a JSON object")
    for key in ("cliques", "edges", "roots", "order"):
        if key not in obj:
            raise ValueError(f"missing field '{name}.{key}'")
    raw = _parse_cliques(obj["cliques"], domain, name)
    k = len(raw)
    edges = obj["edges"]
    if not isinstance(edges, list):
        raise bad_field(f"{name}.edges", edges, "is not a list", "a list of [parent, child] pairs")
    for i, e in enumerate(edges):
        pair = isinstance(e, list) and len(e) == 2 and all(type(x) is int for x in e)
        if not (pair and all(_is_index(x, k) for x in e) and e[0] != e[1]):
            what = ("is not a pair of clique indices" if not pair else "joins a clique to itself"
                    if e[0] == e[1] else "points to a clique that does not exist")
            raise bad_field(f"{name}.edges[{i}]", e, what,
                            f"[parent, child] with clique indices in 0..{k - 1}")
    for key in ("roots", "order"):
        v = obj[key]
        if not isinstance(v, list) or not all(_is_index(x, k) for x in v) or len(set(v)) != len(v):
            raise bad_field(f"{name}.{key}", v, "is not a list of distinct clique indices",
                            f"distinct integers in 0..{k - 1}")
    if sorted(obj["order"]) != list(range(k)):
        raise bad_field(f"{name}.order", obj["order"], "does not list every clique once",
                        f"a permutation of 0..{k - 1}")
    fill = obj.get("fill_edges", [])
    if not isinstance(fill, list) or not all(
            isinstance(e, list) and len(e) == 2 and all(isinstance(a, str) for a in e) for e in fill):
        raise bad_field(f"{name}.fill_edges", fill, "is not a list of attribute pairs", "[[a, b], ...]")
    return ([tuple(c) for c in raw], [tuple(e) for e in edges], list(obj["roots"]),
            list(obj["order"]), [tuple(e) for e in fill])


def _parse_cliques(raw: Any, domain: Domain | None, name: str) -> list:
    if not isinstance(raw, list) or not raw:
        raise bad_field(f"{name}.cliques", raw, "is not a non-empty list", "a list of attribute lists")
    for i, c in enumerate(raw):
        ok = isinstance(c, list) and c and all(isinstance(a, str) for a in c) and len(set(c)) == len(c)
        if not ok:
            raise bad_field(f"{name}.cliques[{i}]", c, "is not a list of distinct attribute names",
                            "a non-empty list of distinct strings")
        unknown = [a for a in c if domain is not None and a not in domain]
        if unknown:
            raise bad_field(f"{name}.cliques[{i}]", c, f"names unknown attribute {unknown[0]!r}",
                            f"attributes of the domain {list(domain.attrs) if domain else []}")
    return raw


def _check_structure(cliques, edges, roots, order, name: str) -> None:
    """Forest, one parent per clique, one root per component, parents first in ``order``."""
    k = len(cliques)
    t = nx.Graph()
    t.add_nodes_from(range(k))
    t.add_edges_from(edges)
    listed = [list(e) for e in edges]
    if t.number_of_edges() != len(edges) or not nx.is_forest(t):
        raise bad_field(f"{name}.edges", listed, "contain a cycle", "a tree (forest) over the cliques")
    children = [c for _, c in edges]
    twice = sorted({c for c in children if children.count(c) > 1})
    if twice:
        raise bad_field(f"{name}.edges", listed, f"give clique {twice[0]} two parents",
                        "one parent per non-root clique")
    orphans = sorted(set(range(k)) - set(children) - set(roots))
    wrong = sorted(set(roots) & set(children))
    if orphans or wrong:
        what = (f"misses clique {orphans[0]}, which has no parent" if orphans
                else f"lists clique {wrong[0]}, which has a parent")
        raise bad_field(f"{name}.roots", roots, what, "one root per connected component of the tree")
    pos = {c: i for i, c in enumerate(order)}
    late = [(p, c) for p, c in edges if pos[p] > pos[c]]
    if late:
        raise bad_field(f"{name}.order", order, f"puts clique {late[0][1]} before its parent {late[0][0]}",
                        "parents before children")
