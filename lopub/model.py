"""Model: clique marginals on a junction tree, answering marginal queries.

A :class:`Model` holds the junction tree (forest) of the dependency graph and
one estimated joint per clique.  Building it *calibrates* the tables top-down
(root first): every non-root clique keeps its own conditional
``P_C(C \\ S | S)`` but takes its separator marginal ``P(S)`` from its parent,
so neighbouring cliques agree on what they share and the model is a single
distribution

    P(x) = prod_roots P(R) * prod_{C non-root} P_C(C \\ S_C | S_C),

exactly the distribution the synthesizer samples (Alg. 6).  A separator
configuration to which a clique's own estimate gives zero probability falls
back to the clique's marginal of its new attributes (``P_C(C \\ S)``, i.e. the
new attributes are drawn ignoring the separator), and to uniform if that is
zero too; no NaN is ever produced.

Queries: a set of attributes inside one clique is a projection of that clique;
any other set is computed by exact inference restricted to the Steiner subtree
joining the cliques that hold the attributes (messages from the leaves to a
root holding a query attribute, ``einsum`` per clique), refusing any
intermediate table above ``query_budget`` cells.

File format (``"format": "lopub-model"``, ``"version": 1``), JSON, gzip when
the path ends in ``.gz``, written atomically::

    {"format": "lopub-model", "version": 1, "n": 45222,
     "domain": {...lopub-domain...},
     "junction_tree": {"cliques": [[a, b], ...], "edges": [[parent, child]...],
                       "roots": [...], "order": [...], "fill_edges": [...],
                       "separators": [...]},
     "cliques": [{"attrs": [a, b], "shape": [|a|, |b|], "p": [...row-major...],
                  "meta": {...}}],
     "graph": {...DependencyGraph.to_dict()...} or null,
     "meta": {...fit report...}}

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Sec. V-B (junction tree), Alg. 6
(sampling along the tree); Lauritzen & Spiegelhalter (1988), junction-tree
inference.
"""
from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import networkx as nx
import numpy as np

from .dependency.graph import DependencyGraph
from .dependency.junction import JunctionTree
from .domain import Domain
from .errors import BudgetError, DomainError
from .io import atomic_path
from .marginal import Marginal, _jsonable

MODEL_FORMAT = "lopub-model"
MODEL_VERSION = 1
DEFAULT_QUERY_BUDGET = 20_000_000


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


@dataclass
class Model:
    """Junction tree plus calibrated clique marginals (see the module docstring).

    Build with :meth:`from_marginals` (calibrates) or :func:`lopub.pipeline.fit`.

    Attributes
    ----------
    domain : Domain
    tree : JunctionTree
    cliques : list of Marginal
        One per ``tree.cliques`` entry, axes in that clique's order.
    n : int or None
        Number of reports the model was fitted on (default synthesis size).
    graph : DependencyGraph or None
    meta : dict
    query_budget : int
        Largest table (cells) inference may build.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Sec. V-B and Alg. 6; Lauritzen & Spiegelhalter (1988).
    """

    domain: Domain
    tree: JunctionTree
    cliques: list[Marginal]
    n: int | None = None
    graph: DependencyGraph | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    query_budget: int = DEFAULT_QUERY_BUDGET

    def __post_init__(self) -> None:
        if len(self.cliques) != len(self.tree.cliques):
            raise ValueError(f"cliques ({len(self.cliques)} tables) must match the tree's "
                             f"{len(self.tree.cliques)} cliques")
        for m, c in zip(self.cliques, self.tree.cliques):
            if tuple(m.attrs) != tuple(c):
                raise ValueError(f"clique table over {list(m.attrs)} does not match clique {list(c)}")
        covered = set().union(*map(set, self.tree.cliques)) if self.tree.cliques else set()
        missing = [a for a in self.domain.attrs if a not in covered]
        if missing:
            raise DomainError(f"attributes {missing} are in no clique; every attribute needs one")
        self._home = {}
        for i in self.tree.order:
            for a in self.tree.cliques[i]:
                self._home.setdefault(a, i)

    # construction --------------------------------------------------------
    @classmethod
    def from_marginals(cls, domain: Domain, tree: JunctionTree, marginals: Sequence[Marginal], *,
                       n: int | None = None, graph: DependencyGraph | None = None,
                       meta: Mapping[str, Any] | None = None) -> "Model":
        """Calibrate estimated clique joints top-down and build the model.

        ``meta['calibration_avd']`` records, per clique, the AVD between the
        estimate and the calibrated table (how much the estimates disagreed).

        References
        ----------
        Ren et al., IEEE TIFS 2018, Sec. V-B and Alg. 6.
        """
        raw = [m.project(list(c)) for m, c in zip(marginals, tree.cliques)]
        cal: dict[int, Marginal] = {}
        parent = tree.parent()
        for i in tree.order:
            sep = list(tree.separator(i))
            new = [a for a in tree.cliques[i] if a not in sep]
            sub = domain.project(sep + new)
            cond = conditional_table(raw[i].project(sep + new).values, domain.cells(sep) if sep else 1)
            if sep:
                ps = np.clip(cal[parent[i]].project(sep).values.reshape(-1), 0.0, None)
            else:
                ps = np.ones(1)
            vals = (ps[:, None] * cond).reshape(sub.sizes)
            vals = vals / vals.sum()
            m = Marginal(sub, vals, raw[i].n, dict(raw[i].meta, calibrated=True))
            cal[i] = m.project(list(tree.cliques[i]))
        tables = [cal[i] for i in range(len(tree.cliques))]
        meta = dict(meta or {})
        meta["calibration_avd"] = [round(r.avd(t), 6) for r, t in zip(raw, tables)]
        return cls(domain, tree, tables, n, graph, meta)

    # queries -------------------------------------------------------------
    def project(self, attrs: Sequence[str]) -> Marginal:
        """Joint of ``attrs`` (axes in the given order), labels attached.

        Inside one clique: projection of the smallest clique holding them.
        Otherwise: exact inference over the Steiner subtree.

        Raises
        ------
        DomainError
            Unknown or duplicate attribute names.
        BudgetError
            Inference would build a table larger than ``query_budget`` cells.

        References
        ----------
        Ren et al., IEEE TIFS 2018, Sec. V-B; Lauritzen & Spiegelhalter (1988).
        """
        attrs = list(attrs)
        self.domain.indices(attrs)
        holders = [i for i, c in enumerate(self.tree.cliques) if set(attrs) <= set(c)]
        if holders:
            i = min(holders, key=lambda j: (self.domain.cells(list(self.tree.cliques[j])), j))
            out = self.cliques[i].project(attrs)
            meta = {"method": "model", "answer": "clique", "clique": list(self.tree.cliques[i])}
            return Marginal(out.domain, out.values, self.n, meta)
        values = self._infer(attrs)
        return Marginal(self.domain.project(attrs), values, self.n,
                        {"method": "model", "answer": "inference"})

    marginal = project

    def query(self, attrs: Sequence[str], where: Mapping[str, str] | None = None) -> Marginal:
        """Joint of ``attrs``, optionally conditioned on ``where = {attr: label}``.

        A conditional answer's ``n`` is the estimated number of records that
        match ``where`` (``n * P(where)``), so ``counts`` stay counts.

        References
        ----------
        Ren et al., IEEE TIFS 2018, Sec. V-B.
        """
        attrs = list(attrs)
        where = dict(where or {})
        both = [a for a in where if a in attrs]
        if both:
            raise ValueError(f"attributes {both} are both queried (attrs) and conditioned on (where)")
        if not where:
            return self.project(attrs)
        return self.project(attrs + list(where)).condition(where)

    def _infer(self, attrs: list[str]) -> np.ndarray:
        tree = self.tree.to_nx()
        q = set(attrs)
        factors: list[tuple[np.ndarray, list[str]]] = []
        for comp in nx.connected_components(tree):
            terms = sorted({self._home[a] for a in attrs if self._home[a] in comp})
            if not terms:
                continue
            steiner = set(terms)
            for t in terms[1:]:
                steiner.update(nx.shortest_path(tree, terms[0], t))
            factors.append(self._collect(tree.subgraph(steiner), terms[0], q))
        return _contract(factors, attrs, self.domain)

    def _collect(self, sub: nx.Graph, root: int, q: set[str]) -> tuple[np.ndarray, list[str]]:
        """Messages leaves -> ``root`` over the Steiner subtree; returns (table, vars)."""
        msgs: dict[int, tuple[np.ndarray, list[str]]] = {}
        parent = dict(nx.bfs_predecessors(sub, root))
        order = [root] + [c for _, c in nx.bfs_edges(sub, root)]
        below: dict[int, set[str]] = {}
        for c in reversed(order):
            clique = list(self.tree.cliques[c])
            p = parent.get(c)
            sep = [a for a in clique if p is not None and a in self.tree.cliques[p]]
            new = [a for a in clique if a not in sep]
            cond = conditional_table(self.cliques[c].project(sep + new).values,
                                     self.domain.cells(sep) if sep else 1)
            factors = [(cond.reshape(self.domain.project(sep + new).sizes), sep + new)]
            below[c] = (q & set(clique)).union(*(below[k] for k in sub.neighbors(c) if k != p))
            factors += [msgs.pop(k) for k in sub.neighbors(c) if k != p]
            out = sep + sorted(below[c] - set(sep), key=self.domain.index)
            union = set().union(*(set(v) for _, v in factors))
            if self.domain.cells(list(union)) > self.query_budget:
                raise BudgetError(
                    f"query over {sorted(q)} needs a {self.domain.cells(list(union))}-cell table "
                    f"at clique {clique}; query_budget is {self.query_budget} cells")
            msgs[c] = (_einsum(factors, out), out)
        return msgs[root]

    # I/O -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": MODEL_FORMAT, "version": MODEL_VERSION, "n": self.n,
            "domain": self.domain.to_dict(), "junction_tree": self.tree.to_dict(),
            "cliques": [{"attrs": list(m.attrs), "shape": list(m.values.shape),
                         "p": m.values.ravel().tolist(), "meta": _jsonable(m.meta)}
                        for m in self.cliques],
            "graph": None if self.graph is None else self.graph.to_dict(),
            "meta": _jsonable(self.meta),
        }

    @classmethod
    def from_dict(cls, obj: Any) -> "Model":
        if not isinstance(obj, dict) or obj.get("format") != MODEL_FORMAT:
            raise ValueError(f"not a lopub model (expected \"format\": \"{MODEL_FORMAT}\")")
        if obj.get("version") != MODEL_VERSION:
            raise ValueError(f"model version {obj.get('version')!r} is not supported "
                             f"(this lopub reads version {MODEL_VERSION})")
        domain = Domain.from_dict(obj["domain"])
        tree = JunctionTree.from_dict(obj["junction_tree"])
        tables = []
        for i, c in enumerate(obj["cliques"]):
            sub = domain.project(c["attrs"])
            p = np.asarray(c["p"], dtype=float)
            if p.size != domain.cells(c["attrs"]) or list(sub.sizes) != list(c["shape"]):
                raise ValueError(f"model clique #{i} over {c['attrs']}: {p.size} values, "
                                 f"expected {domain.cells(c['attrs'])}")
            tables.append(Marginal(sub, p.reshape(sub.sizes), obj.get("n"), c.get("meta", {})))
        graph = None if obj.get("graph") is None else DependencyGraph.from_dict(obj["graph"], domain)
        return cls(domain, tree, tables, obj.get("n"), graph, dict(obj.get("meta", {})))

    def save(self, path: str | os.PathLike) -> None:
        """Write the documented JSON format atomically (gzip when ``path`` ends in .gz)."""
        text = json.dumps(self.to_dict(), separators=(",", ":"))
        with atomic_path(path) as tmp:
            if os.fspath(path).endswith(".gz"):
                with gzip.open(tmp, "wt", encoding="utf-8") as fh:
                    fh.write(text)
            else:
                tmp.write_text(text, encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Model":
        """Read a model file written by :meth:`save`."""
        name = os.fspath(path)
        if not os.path.exists(name):
            raise FileNotFoundError(f"model file {name!r} does not exist")
        opener = gzip.open if name.endswith(".gz") else open
        try:
            with opener(name, "rt", encoding="utf-8") as fh:
                obj = json.load(fh)
        except (json.JSONDecodeError, UnicodeDecodeError, OSError) as exc:
            raise ValueError(f"{name}: not a readable lopub model file: {exc}") from None
        return cls.from_dict(obj)

    def summary(self) -> dict[str, Any]:
        cells = [self.domain.cells(list(c)) for c in self.tree.cliques]
        return {"n": self.n, "attributes": len(self.domain), "cliques": len(cells),
                "max_clique_cells": max(cells), "components": len(self.tree.roots),
                "edges": None if self.graph is None else len(self.graph.edges)}


def _einsum(factors: list[tuple[np.ndarray, list[str]]], out: list[str]) -> np.ndarray:
    letters = {}
    for _, vs in factors:
        for v in vs:
            letters.setdefault(v, chr(ord("a") + len(letters)) if len(letters) < 26
                               else chr(ord("A") + len(letters) - 26))
    expr = ",".join("".join(letters[v] for v in vs) for _, vs in factors)
    expr += "->" + "".join(letters[v] for v in out)
    return np.einsum(expr, *(t for t, _ in factors), optimize=True)


def _contract(factors, attrs: list[str], domain: Domain) -> np.ndarray:
    """Outer product of per-component answers, axes reordered to ``attrs``."""
    values = _einsum(factors, attrs) if factors else np.ones(())
    values = np.clip(values, 0.0, None)
    return values / values.sum()
