"""Embedded census-like dataset: a fixed Bayesian network with a known joint.

No download is needed: records are drawn from a fixed Bayesian network of 13
census-like attributes whose conditional probability tables (CPTs) are built
deterministically from an internal seed (``_MODEL_SEED``), so the model -- and
therefore the exact joint distribution and the true dependency graph -- is the
same on every machine.  Tests and the demo compare LoPub's estimates with it.

Structure (each node has at most two parents; the DAG is ``EmbeddedModel.dag``)::

    attribute        size  parents
    age_group           8  -
    sex                 2  -
    race                5  -
    native_region      40  race
    urban               2  native_region
    education          16  age_group, urban
    marital             7  age_group
    relationship        6  marital, sex
    household_size      6  relationship, urban
    occupation         14  education
    workclass           7  occupation
    hours               5  occupation, sex
    income              2  education, hours

CPT rule (a product of experts mixed with noise).  For child ``c`` with
parents ``p_1, p_2``, per-parent softness ``delta_i`` and noise level ``eta``::

    Q(c | p_1, p_2) = prod_i (S_i[p_i, c] + delta_i)          (normalized over c)
    P(c | p_1, p_2) = (1 - eta) * Q(c | p_1, p_2) + eta * N[p_1, p_2, c]

``S_i[v]`` is the structured component of parent ``i`` (max 1): when the
parent has at least as many values as the child, value ``v`` prefers one child
value (a fixed random surjective map); otherwise the child values are split into
one block per parent value and ``S_i[v]`` spreads over block ``v``.  With small
``delta`` the product acts as an AND of the parents' preferences, so the child
depends strongly on each parent separately.  ``N`` is Dirichlet(1) noise, one
draw per parent configuration; roots are Dirichlet(8) draws (balanced).  The
values (``_SPEC``) give every DAG edge a pairwise mutual information between
1.7 and 4.5 times LoPub's threshold tau = min(|O_m|-1, |O_n|-1) phi^2 / 2 at
phi = 0.4 (smallest: relationship-household_size, 0.67 nats vs tau 0.40); the
test suite checks it.

Which graph is "true":

* ``dependency_edges()`` -- the DAG skeleton: pairs joined by a direct edge.
  This is the graph a structure learner should recover.
* ``moral_graph()`` -- skeleton plus an edge between co-parents; the Markov
  network of the joint, i.e. what a junction tree must cover to be exact.
* ``mi_graph(phi)`` -- pairs whose exact MI is >= tau(phi): what LoPub's
  Alg. 4 would output from perfect estimates (also holds indirect pairs).
* ``independent_pairs()`` -- pairs with no common ancestor; exactly
  independent (MI 0), e.g. (age_group, sex), (sex, race), (marital, urban).

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Eq. 24 (mutual information), Eq. 26 (tau).
"""
from __future__ import annotations

import itertools
import string
import types
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping, Sequence

import networkx as nx
import numpy as np

from lopub._util import check_int, resolve_rng
from lopub.data.dataset import Dataset
from lopub.data.domain import Attribute, Domain
from lopub.limits import check_memory
from lopub.data.marginal import Marginal

_MODEL_SEED = 20180402

_EDU = ("Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad",
        "Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate")
_OCC = ("Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial", "Prof-specialty",
        "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical", "Farming-fishing", "Transport-moving",
        "Priv-house-serv", "Protective-serv", "Armed-Forces")

# name, categories, parents, per-parent softness delta, noise eta
_SPEC: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[float, ...], float], ...] = (
    ("age_group", ("17-24", "25-29", "30-34", "35-44", "45-54", "55-64", "65-74", "75+"), (), (), 0.0),
    ("sex", ("Female", "Male"), (), (), 0.0),
    ("race", ("White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"), (), (), 0.0),
    ("native_region", tuple(f"region_{i:02d}" for i in range(1, 41)), ("race",), (0.002,), 0.15),
    ("urban", ("Rural", "Urban"), ("native_region",), (0.05,), 0.15),
    ("education", _EDU, ("age_group", "urban"), (0.005, 0.05), 0.05),
    ("marital", ("Never-married", "Married-civ-spouse", "Divorced", "Separated", "Widowed",
                 "Married-spouse-absent", "Married-AF-spouse"), ("age_group",), (0.005,), 0.2),
    ("relationship", ("Husband", "Wife", "Own-child", "Not-in-family", "Other-relative", "Unmarried"),
     ("marital", "sex"), (0.005, 0.005), 0.05),
    ("household_size", ("1", "2", "3", "4", "5", "6+"), ("relationship", "urban"), (0.005, 0.005), 0.05),
    ("occupation", _OCC, ("education",), (0.002,), 0.1),
    ("workclass", ("Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov",
                   "State-gov", "Without-pay"), ("occupation",), (0.005,), 0.2),
    ("hours", ("<25", "25-39", "40", "41-50", ">50"), ("occupation", "sex"), (0.005, 0.005), 0.05),
    ("income", ("<=50K", ">50K"), ("education", "hours"), (0.005, 0.005), 0.05),
)


@dataclass(frozen=True, eq=False)
class EmbeddedModel:
    """A Bayesian network over a :class:`~lopub.data.domain.Domain` with exact queries.

    Attributes
    ----------
    domain : Domain
        Attributes in topological order.
    parents : Mapping[str, tuple[str, ...]]
        Parents of every attribute (empty for roots).
    cpts : Mapping[str, ndarray]
        ``cpts[a]`` has axes ``parents[a] + (a,)``; the last axis sums to 1.
    """

    domain: Domain
    parents: Mapping[str, tuple[str, ...]]
    cpts: Mapping[str, np.ndarray]

    # structure ---------------------------------------------------------
    @property
    def dag(self) -> list[tuple[str, str]]:
        """Directed edges ``(parent, child)`` in topological order of the child."""
        return [(p, a) for a in self.domain.attrs for p in self.parents[a]]

    def dependency_edges(self) -> list[tuple[str, str]]:
        """The true dependency graph: the DAG skeleton as sorted-by-domain-order pairs."""
        return [self._pair(p, c) for p, c in self.dag]

    def moral_graph(self) -> nx.Graph:
        """Skeleton plus co-parent edges (the Markov network of the joint)."""
        g = nx.Graph()
        g.add_nodes_from(self.domain.attrs)
        g.add_edges_from(self.dependency_edges())
        for a in self.domain.attrs:
            g.add_edges_from(itertools.combinations(self.parents[a], 2))
        return g

    def ancestors(self, attr: str) -> set[str]:
        """Strict ancestors of ``attr`` in the DAG."""
        self.domain.index(attr)
        out, todo = set(), list(self.parents[attr])
        while todo:
            p = todo.pop()
            if p not in out:
                out.add(p)
                todo.extend(self.parents[p])
        return out

    def independent_pairs(self) -> list[tuple[str, str]]:
        """Pairs with no common ancestor (counting the nodes themselves): exactly independent."""
        anc = {a: self.ancestors(a) | {a} for a in self.domain.attrs}
        return [(a, b) for a, b in itertools.combinations(self.domain.attrs, 2) if not anc[a] & anc[b]]

    def tau(self, a: str, b: str, phi: float) -> float:
        """LoPub's threshold min(|O_a|-1, |O_b|-1) phi^2 / 2 (Eq. 26), nats."""
        return min(self.domain.size(a) - 1, self.domain.size(b) - 1) * phi**2 / 2

    def mi_graph(self, phi: float = 0.4) -> nx.Graph:
        """Pairs whose exact MI is >= tau(phi); edge attribute ``mi`` (nats)."""
        if not (isinstance(phi, (int, float)) and 0 < phi <= 1):
            raise ValueError(f"phi ({phi!r}) must be a number in (0, 1]")
        mi = self.mutual_information()
        g = nx.Graph()
        g.add_nodes_from(self.domain.attrs)
        for i, j in itertools.combinations(range(len(self.domain)), 2):
            a, b = self.domain.attrs[i], self.domain.attrs[j]
            if mi[i, j] >= self.tau(a, b, phi):
                g.add_edge(a, b, mi=float(mi[i, j]))
        return g

    # exact queries -------------------------------------------------------
    def marginal(self, attrs: Sequence[str]) -> Marginal:
        """Exact joint of ``attrs`` (axes in the given order) by CPT contraction.

        Only the ancestral set of ``attrs`` is contracted (descendants sum to
        one), with ``np.einsum(..., optimize=True)``; the full joint is never built.
        """
        attrs = list(attrs)
        self.domain.indices(attrs)
        keep = set(attrs).union(*(self.ancestors(a) for a in attrs))
        letter = dict(zip(self.domain.attrs, string.ascii_letters))
        operands, terms = [], []
        for a in self.domain.attrs:
            if a in keep:
                operands.append(self.cpts[a])
                terms.append("".join(letter[x] for x in self.parents[a] + (a,)))
        expr = ",".join(terms) + "->" + "".join(letter[a] for a in attrs)
        values = np.einsum(expr, *operands, optimize=True)
        return Marginal(self.domain.project(attrs), values, None, {"method": "exact-bn"})

    project = marginal

    def mutual_information(self) -> np.ndarray:
        """Exact pairwise mutual information matrix in nats (LoPub Eq. 24); diagonal = entropy."""
        return _mi_matrix(self)

    # sampling -------------------------------------------------------------
    def sample(self, n: int, *, rng: np.random.Generator | int | None = None) -> Dataset:
        """Draw ``n`` records by vectorized ancestral sampling.

        Each attribute is drawn in topological order by inverse CDF: rows of
        the CPT's cumulative table are offset by their configuration index, so
        one ``searchsorted`` draws every record at once.

        Parameters
        ----------
        n : int
            Number of records, >= 1.
        rng : Generator, int or None
            Randomness (keyword-only).
        """
        n = check_int("n", n, 1)
        d = len(self.domain)  # codes plus the per-attribute draws: about 40 bytes a cell
        check_memory(40.0 * n * d, "n", n, f"{n} records of {d} attributes")
        gen = resolve_rng(rng)
        codes = np.empty((n, d), dtype=np.int64)
        for j, a in enumerate(self.domain.attrs):
            pa = [self.domain.index(p) for p in self.parents[a]]
            cpt = self.cpts[a]
            k = cpt.shape[-1]
            cdf = np.cumsum(cpt.reshape(-1, k), axis=1)
            cdf[:, -1] = 1.0
            cfg = (np.ravel_multi_index(tuple(codes[:, i] for i in pa), cpt.shape[:-1])
                   if pa else np.zeros(n, dtype=np.int64))
            flat = (cdf + np.arange(cdf.shape[0])[:, None]).ravel()
            draw = np.searchsorted(flat, cfg + gen.random(n), side="right") - cfg * k
            codes[:, j] = np.clip(draw, 0, k - 1)
        return Dataset(codes, self.domain)

    def _pair(self, a: str, b: str) -> tuple[str, str]:
        return (a, b) if self.domain.index(a) < self.domain.index(b) else (b, a)


def _entropy(p: np.ndarray) -> float:
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


@lru_cache(maxsize=None)
def _mi_cached() -> np.ndarray:
    return _mi_matrix_uncached(embedded_model())


def _mi_matrix(model: EmbeddedModel) -> np.ndarray:
    if model is embedded_model():
        return _mi_cached().copy()
    return _mi_matrix_uncached(model)


def _mi_matrix_uncached(model: EmbeddedModel) -> np.ndarray:
    attrs = model.domain.attrs
    d = len(attrs)
    mi = np.zeros((d, d))
    for i in range(d):
        mi[i, i] = _entropy(model.marginal([attrs[i]]).values)
    for i, j in itertools.combinations(range(d), 2):
        p = model.marginal([attrs[i], attrs[j]]).values
        outer = p.sum(1, keepdims=True) * p.sum(0, keepdims=True)
        nz = p > 0
        mi[i, j] = mi[j, i] = max(float((p[nz] * np.log(p[nz] / outer[nz])).sum()), 0.0)
    return mi


def _structured(n_parent: int, k: int, gen: np.random.Generator) -> np.ndarray:
    """``(n_parent, k)`` rows with max 1: one preferred child value per parent
    value (fixed random surjective map, n_parent >= k) or a block of values."""
    s = np.zeros((n_parent, k))
    if n_parent >= k:
        target = gen.permutation(np.arange(n_parent) % k)
        s[np.arange(n_parent), target] = 1.0
    else:
        blocks = np.array_split(gen.permutation(k), n_parent)
        for v, blk in enumerate(blocks):
            w = gen.dirichlet(np.full(blk.size, 2.0))
            s[v, blk] = w / w.max()
    return s


def _build_cpt(sizes: list[int], k: int, deltas: tuple[float, ...], eta: float,
               gen: np.random.Generator) -> np.ndarray:
    """CPT with axes ``(*parent sizes, k)``: product of experts mixed with noise."""
    if not sizes:
        return gen.dirichlet(np.full(k, 8.0))
    table = np.ones(tuple(sizes) + (k,))
    for i, (size, delta) in enumerate(zip(sizes, deltas)):
        shape = [1] * len(sizes) + [k]
        shape[i] = size
        table = table * (_structured(size, k, gen) + delta).reshape(shape)
    table = table / table.sum(axis=-1, keepdims=True)
    noise = gen.dirichlet(np.ones(k), size=tuple(sizes))
    table = (1 - eta) * table + eta * noise
    return table / table.sum(axis=-1, keepdims=True)


@lru_cache(maxsize=1)
def embedded_model() -> EmbeddedModel:
    """The fixed census-like Bayesian network (identical on every machine).

    Returns
    -------
    EmbeddedModel
        13 attributes, domain sizes 2 to 40; see the module docstring.
    """
    gen = np.random.default_rng(_MODEL_SEED)
    attrs, parents, cpts = [], {}, {}
    size = {}
    for name, cats, pa, deltas, eta in _SPEC:
        attrs.append(Attribute(name, cats))
        size[name] = len(cats)
        parents[name] = tuple(pa)
        cpts[name] = _build_cpt([size[p] for p in pa], len(cats), deltas, eta, gen)
        cpts[name].setflags(write=False)
    return EmbeddedModel(Domain(tuple(attrs)), types.MappingProxyType(parents), types.MappingProxyType(cpts))


def embedded(n: int = 20000, *, rng: np.random.Generator | int | None = 0) -> Dataset:
    """``n`` records sampled from :func:`embedded_model` (no download needed).

    Parameters
    ----------
    n : int, default 20000
        Number of records.
    rng : Generator, int or None, default 0
        Seed 0 by default so the demo and the docs show the same data; pass
        ``None`` for fresh randomness.

    Returns
    -------
    Dataset
    """
    return embedded_model().sample(n, rng=rng)
