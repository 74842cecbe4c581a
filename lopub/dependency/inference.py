"""Exact inference over a junction tree of clique tables.

* :func:`conditional_table` -- a clique's conditional ``P_C(C \\ S | S)`` with
  the documented fallback for zero-probability separator rows.
* :func:`infer` -- the joint of any attribute set: messages from the leaves to
  a root holding a query attribute over the Steiner subtree joining the
  cliques that hold the attributes (``einsum`` per clique), components of the
  forest multiplied as independent; any intermediate table above ``budget``
  cells is refused.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Sec. V-B and Alg. 6; Lauritzen &
Spiegelhalter (1988), junction-tree inference.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import networkx as nx
import numpy as np

from lopub.data.domain import Domain
from lopub.errors import BudgetError
from lopub.data.marginal import Marginal
from lopub.dependency.junction import JunctionTree

Factor = tuple[np.ndarray, list[str]]


def conditional_table(table: np.ndarray, n_sep_cells: int) -> np.ndarray:
    """Rows of ``table.reshape(n_sep_cells, -1)`` normalized; zero rows use the fallback.

    Fallback for a zero-probability separator row: the column marginal of the
    table (new attributes ignoring the separator), or uniform if it is zero.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Alg. 6 (conditional sampling on the separator).
    """
    t = np.clip(np.asarray(table, dtype=float), 0.0, None).reshape(n_sep_cells, -1)
    rows = t.sum(axis=1, keepdims=True)
    col = t.sum(axis=0)
    fallback = col / col.sum() if col.sum() > 0 else np.full(t.shape[1], 1.0 / t.shape[1])
    safe = np.where(rows > 0, rows, 1.0)
    return np.where(rows > 0, t / safe, fallback[None, :])


def infer(tree: JunctionTree, tables: Sequence[Marginal], domain: Domain, attrs: list[str], *,
          home: Mapping[str, int], budget: int) -> np.ndarray:
    """Normalized joint of ``attrs`` (axes in that order) by message passing.

    Parameters
    ----------
    tree : JunctionTree
    tables : sequence of Marginal
        Calibrated clique tables, one per ``tree.cliques`` entry.
    domain : Domain
    attrs : list of str
    home : mapping attr -> clique index
        The clique each attribute is first found in (in ``tree.order``).
    budget : int
        Largest intermediate table in cells.

    Raises
    ------
    BudgetError
        An intermediate table would exceed ``budget`` cells.

    References
    ----------
    Lauritzen & Spiegelhalter (1988); Ren et al., IEEE TIFS 2018, Sec. V-B.
    """
    t = tree.to_nx()
    q = set(attrs)
    factors: list[Factor] = []
    for comp in nx.connected_components(t):
        terms = sorted({home[a] for a in attrs if home[a] in comp})
        if not terms:
            continue
        steiner = set(terms)
        for x in terms[1:]:
            steiner.update(nx.shortest_path(t, terms[0], x))
        factors.append(_collect(tree, tables, domain, t.subgraph(steiner), terms[0], q, budget))
    values = _einsum(factors, attrs) if factors else np.ones(())
    values = np.clip(values, 0.0, None)
    return values / values.sum()


def _collect(tree: JunctionTree, tables: Sequence[Marginal], domain: Domain, sub: nx.Graph,
             root: int, q: set[str], budget: int) -> Factor:
    """Messages leaves -> ``root`` over the Steiner subtree; returns (table, vars)."""
    msgs: dict[int, Factor] = {}
    parent = dict(nx.bfs_predecessors(sub, root))
    order = [root] + [c for _, c in nx.bfs_edges(sub, root)]
    below: dict[int, set[str]] = {}
    for c in reversed(order):
        clique = list(tree.cliques[c])
        p = parent.get(c)
        sep = [a for a in clique if p is not None and a in tree.cliques[p]]
        new = [a for a in clique if a not in sep]
        cond = conditional_table(tables[c].project(sep + new).values, domain.cells(sep) if sep else 1)
        factors = [(cond.reshape(domain.project(sep + new).sizes), sep + new)]
        below[c] = (q & set(clique)).union(*(below[k] for k in sub.neighbors(c) if k != p))
        factors += [msgs.pop(k) for k in sub.neighbors(c) if k != p]
        out = sep + sorted(below[c] - set(sep), key=domain.index)
        union = set().union(*(set(v) for _, v in factors))
        if domain.cells(list(union)) > budget:
            raise BudgetError(
                f"query over {sorted(q)} needs a {domain.cells(list(union))}-cell table "
                f"at clique {clique}; query_budget is {budget} cells")
        msgs[c] = (_einsum(factors, out), out)
    return msgs[root]


def _einsum(factors: list[Factor], out: list[str]) -> np.ndarray:
    letters: dict[str, str] = {}
    for _, vs in factors:
        for v in vs:
            letters.setdefault(v, chr(ord("a") + len(letters)) if len(letters) < 26
                               else chr(ord("A") + len(letters) - 26))
    expr = ",".join("".join(letters[v] for v in vs) for _, vs in factors)
    expr += "->" + "".join(letters[v] for v in out)
    return np.einsum(expr, *(t for t, _ in factors), optimize=True)
