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
root holding a query attribute, ``einsum`` per clique, see
:mod:`lopub.dependency.inference`), refusing any intermediate table above
``query_budget`` cells.  A condition (``where``) of estimated probability 0
raises :class:`~lopub.data.marginal.ZeroProbabilityError`.

File format (``"format": "lopub-model"``, ``"version": 1``, JSON, optionally
gzip): :meth:`Model.save` / :meth:`Model.load` call :mod:`lopub.model.format`,
which documents it and validates every field on reading (raising
:class:`ModelFormatError` naming the file and the field); JSON Schema in
``lopub/formats/jsonschema/model.schema.json``.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Sec. V-B (junction tree), Alg. 6
(sampling along the tree); Lauritzen & Spiegelhalter (1988), junction-tree
inference.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, cast

import numpy as np

from lopub.dependency.graph import DependencyGraph
from lopub.dependency.inference import conditional_table, infer
from lopub.dependency.junction import JunctionTree
from lopub.data.domain import Domain
from lopub.errors import DomainError
from lopub.formats import MODEL_FORMAT, MODEL_VERSION  # noqa: F401  (re-exported)
from lopub.model.format import ModelFormatError  # noqa: F401  (re-exported)
from lopub.model.format import load_model, model_from_dict, model_to_dict, save_model
from lopub.data.marginal import Marginal

DEFAULT_QUERY_BUDGET = 20_000_000


@dataclass
class Model:
    """Junction tree plus calibrated clique marginals (see the module docstring).

    Build with :meth:`from_marginals` (calibrates) or :func:`lopub.pipeline.steps.fit`.

    Attributes
    ----------
    domain : Domain
    tree : JunctionTree
    cliques : list of Marginal
        One per ``tree.cliques`` entry, axes in that clique's order.
    n : int or None
        Number of reports the model was fitted on.  :attr:`users` (the default synthesis size
        of ``lopub synthesize``) is this unless a detection screen's users took part too.
    graph : DependencyGraph or None
    meta : dict
    query_budget : int
        Largest table (cells) inference may build.
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
        self._home: dict[str, int] = {}
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
                ps = np.clip(cal[cast(int, parent[i])].project(sep).values.reshape(-1), 0.0, None)
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
    def project(self, attrs: Sequence[str], *, regions: bool = True) -> Marginal:
        """Joint of ``attrs`` (axes in the given order), labels attached.

        Inside one clique: projection of the smallest clique holding them.
        Otherwise: the smallest relaxed region table holding them (measured
        sets in no clique, ``meta["regions"]``; ``regions=False`` skips them),
        else exact inference over the Steiner subtree.

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
        region = self._region(attrs) if regions else None
        if region is not None:
            return region
        values = self._infer(attrs)
        return Marginal(self.domain.project(attrs), values, self.n,
                        {"method": "model", "answer": "inference"})

    def _region(self, attrs: list[str]) -> Marginal | None:
        """Answer from a fitted region table (``meta["regions"]``: measured sets in no clique).

        The smallest region holding ``attrs`` answers (its table pools the
        measurements of every larger region holding it, :func:`lopub.model.pgm.relaxed.regions`).
        """
        holders = [r for r in self.meta.get("regions", ()) if set(attrs) <= set(r["attrs"])]
        if not holders:
            return None
        r = min(holders, key=lambda r: self.domain.cells(list(r["attrs"])))  # first of the smallest
        sub = self.domain.project(list(r["attrs"]))
        table = Marginal(sub, np.asarray(r["p"], dtype=float).reshape(sub.sizes), self.n)
        out = table.project(attrs)
        return Marginal(out.domain, out.values, self.n,
                        {"method": "model", "answer": "region", "region": list(r["attrs"])})

    marginal = project

    def query(self, attrs: str | Sequence[str], where: Mapping[str, Any] | None = None) -> Marginal:
        """Joint of ``attrs`` (one attribute's name or a list of names), optionally conditioned on
        ``where = {attr: value}``: a category label, or a value as the data held it (a number
        of a binned attribute, a boolean, a date, None for the missing category;
        :func:`condition_label`).

        A conditional answer's ``n`` is the estimated number of records that
        match ``where`` (``n * P(where)``), so ``counts`` stay counts;
        ``meta['condition_mass']`` is the estimated ``P(where)``.

        Raises
        ------
        ZeroProbabilityError
            (a ``ValueError``) when the model gives ``where`` probability 0:
            the conditional distribution is undefined, so no table is
            returned (a statistician would otherwise read a made-up uniform
            answer as data).
        """
        attrs = [attrs] if isinstance(attrs, str) else list(attrs)  # one name, not its letters
        where = condition_labels(self.domain, where or {})
        both = [a for a in where if a in attrs]
        if both:
            raise ValueError(f"attributes {both} are both queried (attrs) and conditioned on (where)")
        if not where:
            return self.project(attrs)
        return self.project(attrs + list(where)).condition(where)

    def _infer(self, attrs: list[str]) -> np.ndarray:
        return infer(self.tree, self.cliques, self.domain, attrs, home=self._home,
                     budget=self.query_budget)

    # I/O -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The ``lopub-model`` JSON object (see :mod:`lopub.model.format`)."""
        return model_to_dict(self)

    @classmethod
    def from_dict(cls, obj: Any, *, source: str = "model") -> "Model":
        """Rebuild a model from :meth:`to_dict`, validating every field.

        Raises
        ------
        ModelFormatError
            (a ``ValueError``) naming ``source``, the field and what was
            expected (see :func:`lopub.model.format.model_from_dict`).
        """
        return model_from_dict(cls, obj, source=source)

    def save(self, path: str | os.PathLike) -> None:
        """Write the documented JSON format atomically (gzip when ``path`` ends in .gz)."""
        save_model(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Model":
        """Read a model file written by :meth:`save` (gzip detected by content, not name).

        Raises
        ------
        FileNotFoundError
            No such file.
        ModelFormatError
            (a ``ValueError``) the file is truncated, not JSON, or any field
            is invalid; the message names the file and the field.
        """
        return load_model(cls, path)

    @property
    def collection(self) -> dict[str, Any] | None:
        """f, h, m, epsilon per attribute and per record of the reports fitted (None if unknown)."""
        fit = self.meta.get("fit")
        return fit.get("collection") if isinstance(fit, dict) else None

    @property
    def users(self) -> int | None:
        """How many users took part: the collection's ``users`` (:attr:`collection`; the reports
        fitted plus those of a detection screen that only chose the plan), else :attr:`n`.

        The default size of a release (``lopub synthesize``).  A recorded count that is no
        integer, or below :attr:`n`, is not one: :attr:`n`.
        """
        coll = self.collection
        users = coll.get("users") if isinstance(coll, dict) else None
        if isinstance(users, int) and not isinstance(users, bool) and users >= (self.n or 1):
            return users
        return self.n

    def summary(self) -> dict[str, Any]:
        cells = [self.domain.cells(list(c)) for c in self.tree.cliques]
        return {"n": self.n, "attributes": len(self.domain), "cliques": len(cells),
                "max_clique_cells": max(cells), "components": len(self.tree.roots),
                "edges": None if self.graph is None else len(self.graph.edges)}


def condition_label(domain: Domain, attr: str, value: Any) -> str | None:
    """The category label of ``attr`` that a condition ``attr = value`` names, or None if none.

    ``value`` is a label as written, or a value as a data column holds it,
    coded the way :meth:`Dataset.from_pandas <lopub.data.dataset.Dataset.from_pandas>`
    codes a cell: a number of a binned attribute falls in its bin, ``True``
    and ``2`` match the labels ``"True"`` and ``"2"``, a date its bin, a
    missing value (``None``, ``NaN``, ``pd.NA``) the missing category.
    """
    import pandas as pd

    from lopub.data.dataset import Dataset

    labels = domain.labels(attr)
    if isinstance(value, str) and value in labels:
        return value
    if not (value is None or pd.api.types.is_scalar(value)):
        return None
    try:
        one = Dataset.from_pandas(pd.DataFrame({attr: pd.Series([value], dtype=object).infer_objects()}),
                                  domain.project([attr]))
    except (DomainError, ValueError, TypeError):
        return None
    return labels[int(one.codes[0, 0])]


def condition_labels(domain: Domain, where: Mapping[str, Any]) -> dict[str, Any]:
    """``where`` with each value replaced by the label it names (:func:`condition_label`); a value
    naming no category, or of an unknown attribute, is kept as given (for the caller's error)."""
    out = {}
    for attr, value in where.items():
        label = condition_label(domain, attr, value) if attr in domain.attrs else None
        out[attr] = value if label is None else label
    return out
