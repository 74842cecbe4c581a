"""The inverse-variance weighted marginal loss and its gradient.

Scale (documented once, used everywhere in :mod:`lopub.model.pgm`): marginals and
measurements are **probabilities** (each table sums to 1) and a measurement's
noise is its mean per-cell variance ``sigma_i^2`` in the same units
(:attr:`lopub.estimate.measurement.Measurement.sigma2`), so

    L(mu) = sum_i ||mu_{C_i} - y_i||^2 / (2 sigma_i^2)

is the negative Gaussian log-likelihood of the measurements (up to a
constant), in nats: a loss change of 1 is one unit of log-likelihood,
whatever the number of reports.

A measurement with ``sigma_i^2 <= SIGMA2_FLOOR`` (zero variance: a
one-category attribute, a total fixed by definition, exact marginals) is not
a term of ``L`` but a **constraint** ``mu_{C_i} = y_i`` (``y_i`` projected to
the probability simplex): weighting it by ``1 / SIGMA2_FLOOR`` would make the
loss's smoothness, hence the mirror-descent step, hostage to one table (a step
near 1e-12 and a fit that never moves).  A constraint over one cell (a
one-category attribute) holds for every distribution and is dropped;
:func:`lopub.model.pgm.fit.fit_mrf` enforces the others exactly by an
I-projection (iterative proportional fitting on the potentials).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from lopub.data.domain import Domain
from lopub.model.pgm.inference import sum_to
from lopub.estimate.measurement import Measurement, MeasurementError, check_measurements
from lopub.estimate.postprocess import project_simplex

SIGMA2_FLOOR = 1e-12


@dataclass(frozen=True)
class Term:
    """One measurement placed in a model clique."""

    index: int                    # position in the caller's list
    clique: int                   # model clique holding the measurement's attributes
    sum_axes: tuple[int, ...]     # clique axes summed out
    y: np.ndarray                 # estimate in the clique's layout (1 on summed axes)
    weight: float                 # 1 / sigma^2 (0.0: an exact constraint)

    @property
    def exact(self) -> bool:
        """A zero-variance measurement: a constraint, not a weighted term."""
        return self.weight == 0.0

    @property
    def cells(self) -> int:
        return int(self.y.size)


def place(measurements: Sequence[Measurement], domain: Domain,
          cliques: Sequence[tuple[str, ...]]) -> list[Term]:
    """Check ``measurements`` and put each into the smallest model clique holding it.

    A zero-variance measurement (``sigma2 <= SIGMA2_FLOOR``) becomes an exact
    term (``weight`` 0, ``y`` projected to the simplex, see the module
    docstring); one over a single cell is left out (it always holds).

    Raises
    ------
    TypeError, DomainError, MeasurementError
        Not a Measurement, unknown attributes / wrong categories, or a
        measurement that lies in no model clique (named, with the remedy).
    """
    check_measurements(measurements, domain)
    terms = []
    for i, m in enumerate(measurements):
        holders = [j for j, c in enumerate(cliques) if set(m.attrs) <= set(c)]
        if not holders:
            raise MeasurementError(
                f"measurements[{i}] over {list(m.attrs)} lies in no model clique "
                f"{[list(c) for c in cliques]}; expected every measured attribute set inside one "
                f"clique: add its pairs to the dependency graph (e.g. a lower phi, or a larger "
                f"clique_budget if edges were dropped for it) or leave the measurement out")
        j = min(holders, key=lambda k: (domain.cells(list(cliques[k])), k))
        clique = cliques[j]
        order = [a for a in clique if a in m.attrs]
        y = m.project(order).estimate if list(m.attrs) != order else m.estimate
        shape = tuple(domain.size(a) if a in m.attrs else 1 for a in clique)
        y = np.asarray(y, dtype=float).reshape(shape)
        sigma2 = float(m.sigma2)
        if sigma2 <= SIGMA2_FLOOR:
            if y.size == 1:
                continue
            y, weight = project_simplex(y), 0.0
        else:
            weight = 1.0 / sigma2
        terms.append(Term(i, j, tuple(k for k, a in enumerate(clique) if a not in m.attrs), y, weight))
    return terms


def chi2_statistic(mu: list[np.ndarray], terms: Sequence[Term]) -> float:
    """Goodness-of-fit statistic of the weighted measurements at the marginals ``mu``.

    A table's estimate sums to 1, so its noise lives in the ``cells - 1``
    directions that sum to zero, with per-direction variance
    ``cells / (cells - 1) sigma^2`` (``sigma^2`` the mean per-cell variance);
    the statistic is ``sum_i (cells_i - 1) / cells_i * ||P r_i||^2 / sigma_i^2``
    with ``r_i = mu_{C_i} - y_i`` and ``P`` removing the mean.  Compare it
    with :func:`chi2_dof`.  A projection of a measurement (e.g. the margins
    of a relaxed region, :mod:`lopub.model.pgm.relaxed`) carries the sum of
    the per-cell variances, which ignores the (negative) covariances between
    a table's cells and overstates its noise: the statistic is then
    conservative (low), never inflated by it.
    """
    out = 0.0
    for t in terms:
        if t.exact or t.cells < 2:
            continue
        r = sum_to(mu[t.clique], t.sum_axes) - t.y
        r = r - r.mean()
        out += t.weight * (t.cells - 1) / t.cells * float(np.vdot(r, r))
    return out


def chi2_dof(terms: Sequence[Term], domain: Domain, cliques: Sequence[tuple[str, ...]]) -> int:
    """Degrees of freedom of :func:`chi2_statistic` at the fit.

    At the true distribution the statistic has expectation
    ``sum_i (cells_i - 1)``; fitting the model removes about one dimension
    per free parameter of the measured marginals, i.e. per interaction of
    every attribute set inside a weighted measurement but inside no exact
    one (``prod_{a in T} (|a| - 1)`` for each such set ``T``).  Approximate:
    the noise is neither isotropic nor Gaussian and the simplex can bind.
    """
    def closure(ts):
        out: set[frozenset[str]] = set()
        for t in ts:
            attrs = [a for k, a in enumerate(cliques[t.clique]) if k not in t.sum_axes]
            for r in range(1, len(attrs) + 1):
                out.update(frozenset(c) for c in itertools.combinations(attrs, r))
        return out

    weighted = [t for t in terms if not t.exact]
    free = closure(weighted) - closure([t for t in terms if t.exact])
    params = sum(math.prod(domain.size(a) - 1 for a in s) for s in free)
    return max(sum(t.cells - 1 for t in weighted) - params, 0)


def loss_and_gradient(mu: list[np.ndarray], terms: Sequence[Term]
                      ) -> tuple[float, list[np.ndarray | None]]:
    """``L(mu)`` and its gradient with respect to each clique marginal (None: no term).

    References
    ----------
    McKenna, Sheldon, Miklau, "Graphical-model based estimation and inference
    for differential privacy", ICML 2019 (the L2 loss on measured marginals,
    here weighted by inverse variance).
    """
    loss = 0.0
    grad: list[np.ndarray | None] = [None] * len(mu)
    for t in terms:
        if t.exact:
            continue
        p = mu[t.clique]
        r = sum_to(p, t.sum_axes) - t.y
        loss += 0.5 * t.weight * float(np.vdot(r, r))
        g = t.weight * r
        grad[t.clique] = g if grad[t.clique] is None else grad[t.clique] + g
    return loss, grad


def smoothness(terms: Sequence[Term]) -> float:
    """Lipschitz constant of the gradient in the l1 norm: ``sum_i 1 / sigma_i^2``.

    With step ``1 / smoothness`` an entropic mirror step never increases the
    loss (Pinsker's inequality).
    """
    return float(sum(t.weight for t in terms if not t.exact)) or 1.0
