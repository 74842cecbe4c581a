"""Export a fitted model to other tools: pgmpy objects and the UAI MARKOV file format.

The model's distribution (see :mod:`lopub.model.graphical`) factorizes over its
junction tree as

    P(x) = prod_C P(C) / prod_S P(S),

the calibrated clique marginals divided by the separator marginals.  The
exported *potentials* assign each separator's division to the child clique of
its tree edge: a root clique keeps its marginal ``P(R)`` and every other
clique ``C`` with separator ``S`` gets ``P(C) / P(S) = P(C \\ S | S)`` (0 where
``P(S) = 0``; the parent's marginal is 0 there too, so the product is
unchanged).  The product of the potentials is the model's joint itself, with
partition function 1, so any exact inference engine answers the model's
queries -- except on the measured sets in no clique that the model answers
from relaxed region tables (``meta["regions"]``,
:mod:`lopub.model.pgm.relaxed`): no factor format holds those, so the
exported model gives the junction tree's answer there, and
:func:`export_model` warns when the two differ (:func:`region_gap`).

Formats
-------
``to_pgmpy(model, kind="markov")``
    a pgmpy ``DiscreteMarkovNetwork`` (``MarkovNetwork`` before pgmpy 1.0):
    nodes = attributes, an edge between every two attributes sharing a
    clique, one ``DiscreteFactor`` per clique with the attributes' labels as
    ``state_names``.
``to_pgmpy(model, kind="junction")``
    a pgmpy ``JunctionTree``: one node per clique (a tuple of attribute
    names), the model's tree edges, the same factors.  pgmpy wants one
    connected tree whose edges share an attribute, so the root clique of
    every further component of a forest gets the first root's smallest
    attribute, its factor constant along it, and is joined to the first root
    (the product, hence every answer, is unchanged).
``write_uai(model, path)``
    the UAI inference-competition MARKOV format, plain text::

        MARKOV
        <number of variables>
        <cardinality of each variable, domain order>
        <number of factors>
        <scope size> <variable indices...>     (one line per factor, cliques in model order)

        <number of entries>                    (one block per factor, same order)
         <values, row-major: the last variable of the scope changes fastest>

    Variables are numbered from 0 in domain order and their states in
    category order; UAI has no place for names or labels (take them from the
    model's domain).  A one-attribute factor (an attribute no edge joins)
    is written over two variables -- its own and the smallest other one,
    the table constant along the second (the product is unchanged): readers
    such as pgmpy's ``UAIReader`` build the network from the factors' pairs
    and would otherwise drop an isolated variable.
``export_model(model, path, format)``
    writes ``"uai"`` (above) or ``"pgmpy"`` (a Python pickle of the
    ``DiscreteMarkovNetwork``; load it with ``pickle.load`` -- only from a
    source you trust, as with any pickle).  A model a format cannot hold
    raises ``ValueError`` saying why.

pgmpy is an optional dependency (``pip install lopub[pgmpy]``).

References
----------
Lauritzen & Spiegelhalter (1988), clique-separator factorization of a
decomposable model; UAI 2008-2014 inference competitions, MARKOV file format.
"""
from __future__ import annotations

import os
import pickle
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from lopub.io import atomic_path, atomic_write_text

if TYPE_CHECKING:  # pragma: no cover
    from lopub.model.graphical import Model

PGMPY_KINDS = ("markov", "junction")
EXPORT_FORMATS = ("uai", "pgmpy")
DEFAULT_MAX_EXPORT_CELLS = 50_000_000
NUMPY_MAX_AXES = 64  # numpy (hence a pgmpy factor) holds at most this many axes
REGION_GAP_TVD = 1e-6  # a region table this close to the tree's answer is the same answer


def clique_potentials(model: "Model") -> list[np.ndarray]:
    """One potential per clique (model order, axes in clique order) whose product is the joint.

    Roots keep ``P(R)``; every other clique gets ``P(C) / P(S)`` for its
    separator ``S`` with its parent, 0 where ``P(S) = 0``.

    References
    ----------
    Lauritzen & Spiegelhalter (1988), P(x) = prod_C P(C) / prod_S P(S).
    """
    _check_model(model)
    out = []
    for i, table in enumerate(model.cliques):
        sep = model.tree.separator(i)
        values = np.clip(table.values, 0.0, None)
        if sep:
            attrs = list(table.attrs)
            shape = [model.domain.size(a) if a in sep else 1 for a in attrs]
            ps = table.project([a for a in attrs if a in sep]).values.reshape(shape)
            with np.errstate(divide="ignore", invalid="ignore"):
                values = np.where(ps > 0, values / np.where(ps > 0, ps, 1.0), 0.0)
        out.append(values)
    return out


def to_pgmpy(model: "Model", kind: str = "markov") -> Any:
    """The model as a pgmpy ``DiscreteMarkovNetwork`` (``kind="markov"``) or ``JunctionTree``.

    Factors are :func:`clique_potentials` with the attributes' labels as
    ``state_names``, so pgmpy queries take and return the original labels.
    Their product is the model's joint (partition function 1), so pgmpy's
    unconditional answers are the model's probabilities; on a Markov network
    pgmpy does not normalize answers, so a query with ``evidence`` returns
    ``P(variables, evidence)`` -- call ``.normalize()`` for the conditional
    (a ``JunctionTree`` answer is normalized already).

    Raises
    ------
    ValueError
        ``kind`` is not "markov" or "junction", or a clique has more than 64
        attributes (numpy, hence a pgmpy factor, holds at most 64 axes).
    ImportError
        pgmpy is not installed (``pip install lopub[pgmpy]``).
    """
    if kind not in PGMPY_KINDS:
        raise ValueError(f"kind ({kind!r}) must be one of {list(PGMPY_KINDS)}")
    _check_model(model)
    _check_axes(model, "pgmpy")
    factor_cls, network_cls, tree_cls = _pgmpy_classes()
    scopes = [list(c) for c in model.tree.cliques]
    pots = clique_potentials(model)
    if kind == "markov":
        net = network_cls()
        net.add_nodes_from(model.domain.attrs)
        net.add_edges_from({e for c in scopes for e in _pairs(c)})
    else:
        scopes, pots = _connect_forest(model, scopes, pots)
        net = tree_cls()
        nodes = [tuple(c) for c in scopes]
        net.add_nodes_from(nodes)
        net.add_edges_from((nodes[p], nodes[c]) for p, c in model.tree.edges)
        net.add_edges_from((nodes[model.tree.roots[0]], nodes[r]) for r in model.tree.roots[1:])
    net.add_factors(*(factor_cls(c, list(p.shape), p.ravel(),
                                 state_names={a: list(model.domain.labels(a)) for a in c})
                      for c, p in zip(scopes, pots)))
    net.check_model()
    return net


def _connect_forest(model: "Model", scopes: list[list[str]], pots: list[np.ndarray]
                    ) -> tuple[list[list[str]], list[np.ndarray]]:
    """Give every further root the first root's smallest attribute (factor constant along it).

    pgmpy's ``JunctionTree`` must be one tree whose edges share an attribute;
    a potential repeated along a new axis leaves the product unchanged, and
    the running intersection property holds (the attribute's cliques all
    touch the first root).
    """
    roots = model.tree.roots
    if len(roots) < 2:
        return scopes, pots
    first = list(model.tree.cliques[roots[0]])
    link = min(first, key=lambda a: (model.domain.size(a), first.index(a)))
    scopes, pots = list(scopes), list(pots)
    for r in roots[1:]:
        scopes[r] = scopes[r] + [link]
        pots[r] = np.repeat(pots[r][..., None], model.domain.size(link), axis=-1)
    return scopes, pots


def uai_text(model: "Model", *, max_cells: int = DEFAULT_MAX_EXPORT_CELLS) -> str:
    """The model in the UAI MARKOV format (see the module docstring).

    Raises
    ------
    ValueError
        The factor tables hold more than ``max_cells`` entries in all.
    """
    _check_model(model)
    _check_cells(model, max_cells, "UAI")
    index = {a: i for i, a in enumerate(model.domain.attrs)}
    lines = ["MARKOV", str(len(model.domain)), " ".join(map(str, model.domain.sizes)),
             str(len(model.cliques))]
    scopes, pots = _pair_singletons(model, [list(c) for c in model.tree.cliques], clique_potentials(model))
    lines += [" ".join(map(str, [len(c)] + [index[a] for a in c])) for c in scopes]
    for pot in pots:
        lines += ["", str(pot.size), " " + " ".join(_uai_number(v) for v in pot.ravel())]
    return "\n".join(lines) + "\n"


def _pair_singletons(model: "Model", scopes: list[list[str]], pots: list[np.ndarray]
                     ) -> tuple[list[list[str]], list[np.ndarray]]:
    """Extend every one-attribute scope with the smallest other attribute (table constant along it)."""
    attrs = list(model.domain.attrs)
    if len(attrs) < 2:
        return scopes, pots
    scopes, pots = list(scopes), list(pots)
    for k, scope in enumerate(scopes):
        if len(scope) == 1:
            link = min((a for a in attrs if a != scope[0]), key=lambda a: (model.domain.size(a), attrs.index(a)))
            scopes[k] = scope + [link]
            pots[k] = np.repeat(pots[k][..., None], model.domain.size(link), axis=-1)
    return scopes, pots


def write_uai(model: "Model", path: str | os.PathLike, *,
              max_cells: int = DEFAULT_MAX_EXPORT_CELLS) -> None:
    """Write :func:`uai_text` to ``path`` atomically."""
    atomic_write_text(path, uai_text(model, max_cells=max_cells))


def write_pgmpy(model: "Model", path: str | os.PathLike, kind: str = "markov", *,
                max_cells: int = DEFAULT_MAX_EXPORT_CELLS) -> None:
    """Pickle :func:`to_pgmpy` to ``path`` atomically (load with ``pickle.load``, trusted files only)."""
    _check_model(model)
    _check_cells(model, max_cells, "pgmpy")
    net = to_pgmpy(model, kind)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            pickle.dump(net, fh, protocol=pickle.HIGHEST_PROTOCOL)


def _uai_number(v: float) -> str:
    """Shortest round-trip decimal without an exponent (readers such as pgmpy's expect digits)."""
    return np.format_float_positional(float(v), unique=True, trim="-")


def export_model(model: "Model", path: str | os.PathLike, format: str, *, kind: str = "markov",
                 max_cells: int = DEFAULT_MAX_EXPORT_CELLS) -> None:
    """Write ``model`` to ``path`` as ``format`` ("uai" or "pgmpy"), atomically.

    ``kind`` ("markov" or "junction") picks the pickled pgmpy object; the
    UAI MARKOV format has one kind only.

    Raises
    ------
    ValueError
        Unknown ``format``, or a model the format cannot hold: factor tables
        above ``max_cells`` entries in all, or (pgmpy) a clique of more than
        64 attributes.
    """
    if format not in EXPORT_FORMATS:
        raise ValueError(f"format ({format!r}) must be one of {list(EXPORT_FORMATS)}")
    if kind not in PGMPY_KINDS:
        raise ValueError(f"kind ({kind!r}) must be one of {list(PGMPY_KINDS)}")
    if format == "uai":
        write_uai(model, path, max_cells=max_cells)
    else:
        write_pgmpy(model, path, kind, max_cells=max_cells)
    count, worst, attrs = region_gap(model)
    if worst > REGION_GAP_TVD:
        warnings.warn(f"the model answers {count} measured attribute set(s) in no clique from relaxed region "
                      f"tables, which the {format} file cannot hold: on those sets the exported model gives the "
                      f"junction tree's answer, up to TVD {worst:.3g} from lopub query's (on {attrs}); every "
                      f"other answer is the same", UserWarning, stacklevel=2)


def region_gap(model: "Model") -> tuple[int, float, list[str]]:
    """(number of region tables, largest TVD between a region table and the tree's answer, its set).

    The model's queries on a region's set come from the region table; an
    exported model gives the tree's answer (see the module docstring).
    """
    _check_model(model)
    regions = model.meta.get("regions") or []
    worst, where = 0.0, []
    for r in regions:  # one exact inference per region (a few dozen small sets)
        tree = model.project(r["attrs"], regions=False).values
        gap = 0.5 * float(np.abs(tree - np.asarray(r["p"], dtype=float).reshape(tree.shape)).sum())
        if gap > worst:
            worst, where = gap, list(r["attrs"])
    return len(regions), worst, where


def _pairs(clique) -> list[tuple[str, str]]:
    c = list(clique)
    return [(c[i], c[j]) for i in range(len(c)) for j in range(i + 1, len(c))]


def _check_model(model: Any) -> None:
    from lopub.model.graphical import Model

    if not isinstance(model, Model):
        raise TypeError(f"model ({type(model).__name__}) must be a lopub Model")


def _check_cells(model: "Model", max_cells: int, fmt: str) -> None:
    if isinstance(max_cells, bool) or not isinstance(max_cells, (int, np.integer)) or max_cells < 1:
        raise ValueError(f"max_cells ({max_cells!r}) must be a positive integer")
    total = sum(int(t.values.size) for t in model.cliques)
    if total > max_cells:
        raise ValueError(f"the {fmt} export would hold {total:,} factor-table entries, more than "
                         f"max_cells ({max_cells:,}); expected a model whose clique tables fit "
                         f"(refit with a smaller clique_budget or raise max_cells)")


def _check_axes(model: "Model", fmt: str) -> None:
    for c in model.tree.cliques:
        if len(c) > NUMPY_MAX_AXES:
            raise ValueError(f"clique {list(c)[:5]}... has {len(c)} attributes; a {fmt} factor is a "
                             f"numpy array of at most {NUMPY_MAX_AXES} axes, so {fmt} cannot hold "
                             f"this model")


def _pgmpy_classes() -> tuple[Any, Any, Any]:
    with warnings.catch_warnings():  # pgmpy's own deprecation notices on import are not the user's
        warnings.simplefilter("ignore", FutureWarning)
        try:
            from pgmpy.factors.discrete import DiscreteFactor
            from pgmpy.models import JunctionTree
        except ImportError as exc:
            raise ImportError("pgmpy is not installed; install it with `pip install lopub[pgmpy]` "
                              f"(or `pip install pgmpy`) ({exc})") from None
        try:
            from pgmpy.models import DiscreteMarkovNetwork as network
        except ImportError:  # pgmpy < 1.0
            from pgmpy.models import MarkovNetwork as network
    return DiscreteFactor, network, JunctionTree
