"""The inverse-variance weighted marginal loss and its gradient.

Scale (documented once, used everywhere in :mod:`lopub.model.pgm`): marginals and
measurements are **probabilities** (each table sums to 1) and a measurement's
noise is its mean per-cell variance ``sigma_i^2`` in the same units
(:attr:`lopub.estimate.measurement.Measurement.sigma2`), so

    L(mu) = sum_i ||mu_{C_i} - y_i||^2 / (2 sigma_i^2)

is the negative Gaussian log-likelihood of the measurements (up to a
constant), in nats: a loss change of 1 is one unit of log-likelihood,
whatever the number of reports.  A measurement with ``sigma_i^2 = 0`` (exact
marginals) gets the variance floor :data:`SIGMA2_FLOOR`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from lopub.data.domain import Domain
from lopub.model.pgm.inference import sum_to
from lopub.estimate.measurement import Measurement, MeasurementError, check_measurements

SIGMA2_FLOOR = 1e-12


@dataclass(frozen=True)
class Term:
    """One measurement placed in a model clique."""

    index: int                    # position in the caller's list
    clique: int                   # model clique holding the measurement's attributes
    sum_axes: tuple[int, ...]     # clique axes summed out
    y: np.ndarray                 # estimate in the clique's layout (1 on summed axes)
    weight: float                 # 1 / sigma^2


def place(measurements: Sequence[Measurement], domain: Domain,
          cliques: Sequence[tuple[str, ...]]) -> list[Term]:
    """Check ``measurements`` and put each into the smallest model clique holding it.

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
        sigma2 = max(float(m.sigma2), SIGMA2_FLOOR)
        terms.append(Term(i, j, tuple(k for k, a in enumerate(clique) if a not in m.attrs),
                          np.asarray(y, dtype=float).reshape(shape), 1.0 / sigma2))
    return terms


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
    return float(sum(t.weight for t in terms)) or 1.0
