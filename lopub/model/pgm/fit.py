"""Fit a Markov random field on a junction tree to noisy marginal measurements.

:func:`fit_mrf` minimises the inverse-variance weighted loss of
:mod:`lopub.model.pgm.loss` over the marginals of the model (the marginal polytope
of the junction tree) by entropic mirror descent on the clique
log-potentials, with exact belief propagation (:mod:`lopub.model.pgm.inference`)
mapping potentials to marginals -- the estimator of Private-PGM.  One step is

    theta_C <- theta_C - alpha * dL/dmu_C        (every clique C),

which is exactly the exponentiated-gradient (KL mirror) step on the joint
distribution.  The step ``alpha`` is chosen by backtracking (Armijo): the new
loss must fall by at least half the first-order decrease
``<grad, mu_old - mu_new>``; this always succeeds once ``alpha <= 1 / (2 S)``
with ``S = sum_i 1 / sigma_i^2`` the l1-smoothness of the loss, so the loss
never increases.  After an accepted step ``alpha`` grows by 1.5 for the next
trial, so the step adapts to the local curvature.  By default the step is
taken from Nesterov-extrapolated potentials, restarting the momentum whenever
it would raise the loss (the accepted losses stay monotone).

A clique without a measurement keeps the maximum-entropy completion of what
is measured: starting from uniform potentials, the gradient only ever moves
the sufficient statistics of measured attribute sets.
"""
from __future__ import annotations

import math

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from lopub._util import check_int, check_positive
from lopub.dependency.junction import JunctionTree
from lopub.data.domain import Domain
from lopub.data.marginal import Marginal
from lopub.estimate.measurement import Measurement
from lopub.model.pgm.inference import CliqueTree
from lopub.model.pgm.inference import sum_to
from lopub.model.pgm.loss import Term, chi2_dof, chi2_statistic, loss_and_gradient, place, smoothness

DEFAULT_TOL = 1e-5
ATOL = 1e-3  # nats: a log-likelihood change far below any statistical meaning
DEFAULT_MAX_ITER = 5000
WINDOW = 10
BYTES_PER_CELL = 8 * 8   # float64 tables per clique cell while fitting (potentials, beliefs, trial, gradient)
DEFAULT_MEMORY_BUDGET = 2 * 1024**3
IPF_SWEEPS = 200         # sweeps of iterative proportional fitting enforcing exact measurements
IPF_ATOL = 1e-10         # ... until every exact marginal is met to this (probability units)
GAP_ATOL = 0.5           # nats: a certified suboptimality below this is statistically nothing
GAP_REL = 1e-3           # ... or below this share of the decrease the fit achieved
TINY = 1e-300


@dataclass
class MRFFit:
    """A fitted Markov random field (see :func:`fit_mrf`).

    Attributes
    ----------
    domain : Domain
    tree : JunctionTree
    potentials : list of ndarray
        Log-potentials, one per clique (axes in clique order).
    marginals : list of Marginal
        Calibrated clique marginals (agree on every separator).
    loss : float
        Final value of the weighted loss (nats, see :mod:`lopub.model.pgm.loss`).
    iterations : int
    converged : bool
        The optimizer reached the minimum: the stopping rule fired (not
        ``max_iter``, not a step that could no longer lower the loss) and
        the certified suboptimality ``gap`` is at most ``GAP_ATOL`` nats, or
        ``tol`` of the loss, or ``GAP_REL`` of the decrease the descent
        achieved (with exact constraints, whose gap need not vanish: the
        stopping rule and a loss that fell by more than ``ATOL``).  A fit that
        did not move is therefore never converged unless it started at the
        minimum (gap at most 0.5 nats).
    seconds : float
    losses : list of float
        Loss after every iteration (starting with the initial one).
    chi2 : float
        Goodness-of-fit statistic of the weighted measurements
        (:func:`lopub.model.pgm.loss.chi2_statistic`, about ``2 * loss``).
    dof : int
        Its approximate degrees of freedom (:func:`lopub.model.pgm.loss.chi2_dof`):
        a model that explains the measurements within their noise has
        ``chi2`` near ``dof`` (``chi2_z = (chi2 - dof) / sqrt(2 dof)`` a
        standard score).
    gap : float or None
        Frank-Wolfe duality gap at the fit (nats): an upper bound on how far
        the loss is above its minimum over the model (None: no weighted
        measurement).  With exact constraints it bounds the unconstrained
        problem's gap, so it may not vanish.
    stop : str
        Why the descent stopped: "tol", "max_iter", "stalled" (no step lowers
        the loss), "no measurements".
    constraints : int
        Zero-variance measurements enforced exactly (one-cell ones are trivial and not counted).
    constraint_violation : float
        Largest absolute difference between an exact measurement and the model.
    """

    domain: Domain
    tree: JunctionTree
    potentials: list[np.ndarray]
    marginals: list[Marginal]
    loss: float
    iterations: int
    converged: bool
    seconds: float
    losses: list[float] = field(default_factory=list, repr=False)
    chi2: float = 0.0
    dof: int = 0
    gap: float | None = None
    stop: str = "tol"
    constraints: int = 0
    constraint_violation: float = 0.0

    @property
    def chi2_z(self) -> float | None:
        """``(chi2 - dof) / sqrt(2 dof)`` (None when ``dof`` is 0)."""
        return None if self.dof <= 0 else (self.chi2 - self.dof) / float(np.sqrt(2.0 * self.dof))

    def summary(self) -> dict[str, Any]:
        """Loss, iterations, converged, seconds and the goodness-of-fit fields (for a fit report).

        Keys: ``loss``, ``iterations``, ``converged``, ``seconds``, ``stop``,
        ``gap``, ``chi2``, ``dof``, ``chi2_z``, ``constraints``,
        ``constraint_violation``, ``inference`` ("exact": junction tree).
        """
        def num(x: Any) -> float | None:  # JSON has no inf/nan: a figure that is not finite is None
            return None if x is None or not math.isfinite(float(x)) else float(x)

        return {"loss": num(self.loss), "iterations": int(self.iterations),
                "converged": bool(self.converged), "seconds": round(float(self.seconds), 3),
                "stop": self.stop, "gap": num(self.gap),
                "chi2": num(self.chi2), "dof": int(self.dof), "chi2_z": num(self.chi2_z),
                "constraints": int(self.constraints),
                "constraint_violation": num(self.constraint_violation), "inference": "exact"}

    def to_model(self, n: int | None = None, graph: Any = None, meta: dict | None = None):
        """A :class:`lopub.model.graphical.Model` over the fitted clique marginals.

        The marginals are already calibrated, so ``Model.from_marginals``
        passes them through unchanged (its ``calibration_avd`` is rounding).
        """
        from lopub.model.graphical import Model

        return Model.from_marginals(self.domain, self.tree, self.marginals, n=n, graph=graph,
                                    meta=meta)


def fit_bytes(domain: Domain, tree: JunctionTree) -> int:
    """Working memory of :func:`fit_mrf` on ``tree`` in bytes (``BYTES_PER_CELL`` per clique cell)."""
    return BYTES_PER_CELL * sum(domain.cells(list(c)) for c in tree.cliques)


def fit_mrf(domain: Domain, tree: JunctionTree, measurements: Sequence[Measurement], *,
            tol: float = DEFAULT_TOL, max_iter: int = DEFAULT_MAX_ITER,
            warm_start: "MRFFit | Sequence[np.ndarray] | None" = None,
            accelerate: bool = True, n: int | None = None,
            priors: Sequence[Measurement] = ()) -> MRFFit:
    """Clique potentials whose marginals best match ``measurements`` (weighted least squares).

    Minimises ``L(mu) = sum_i ||mu_{C_i} - y_i||^2 / (2 sigma_i^2)`` over the
    marginals ``mu`` of a Markov random field on ``tree``'s cliques, with
    ``y_i = measurement.estimate`` and ``sigma_i^2 = measurement.sigma2``
    (probability units; see :mod:`lopub.model.pgm.loss`).  Measurements that
    disagree are reconciled (weighted by inverse variance); what no
    measurement constrains is the maximum-entropy completion.

    Parameters
    ----------
    domain : Domain
    tree : JunctionTree
        The model's cliques; every measurement must lie inside one of them.
    measurements : sequence of Measurement
    tol : float > 0
        Stop when the last ``WINDOW`` (10) iterations lowered the loss by at
        most ``tol * loss + ATOL`` in all.  The loss is a log-likelihood in
        nats, so this is relative for large losses and absolute near zero
        (``ATOL`` = 0.001 nats, far below any statistical meaning).
    max_iter : int >= 1
    warm_start : MRFFit or list of ndarray, optional
        Starting log-potentials (default: uniform).
    accelerate : bool
        Nesterov momentum on the potentials with restart (default); False
        gives plain mirror descent.  Both never increase the loss.
    n : int, optional
        Record count attached to the returned marginals.
    priors : sequence of Measurement
        Prior terms (:mod:`lopub.model.pgm.shrink`) fitted like measurements
        but left out of the goodness-of-fit statistic ``chi2``/``dof``.

    Returns
    -------
    MRFFit

    Raises
    ------
    TypeError, DomainError, MeasurementError
        A measurement that is not a ``Measurement``, over unknown attributes,
        with a non-finite value or negative variance, or in no model clique.

    References
    ----------
    McKenna, Sheldon, Miklau, "Graphical-model based estimation and inference
    for differential privacy", ICML 2019 (mirror descent on the marginal
    polytope with exact inference); Beck & Teboulle, "Mirror descent and
    nonlinear projected subgradient methods" (2003).
    """
    tol = check_positive("tol", tol)
    max_iter = check_int("max_iter", max_iter, 1)
    t0 = time.perf_counter()
    ct = CliqueTree(domain, tree)
    measurements = list(measurements)
    terms = place(measurements + list(priors), domain, ct.cliques)
    measured = [t for t in terms if t.index < len(measurements)]
    theta = _start(warm_start, ct.shapes)
    point, losses, stop = _descend(ct, terms, theta, tol, max_iter, accelerate)
    gap = frank_wolfe_gap(ct, point) if any(not t.exact for t in terms) else None
    exact = [t for t in terms if t.exact]
    moved = losses[0] - point.loss
    certified = gap is None or gap <= max(GAP_ATOL, tol * point.loss, GAP_REL * moved)
    # with exact constraints the gap bounds the unconstrained problem and need not vanish:
    # then the descent must at least have moved
    converged = stop in ("tol", "no measurements") and (certified or (bool(exact) and moved > ATOL))
    marginals = [Marginal(domain.project(list(c)), p, n, {"method": "pgm"})
                 for c, p in zip(ct.cliques, point.mu)]
    return MRFFit(domain, tree, point.theta, marginals, point.loss, len(losses) - 1, converged,
                  time.perf_counter() - t0, losses, chi2=chi2_statistic(point.mu, measured),
                  dof=chi2_dof(measured, domain, ct.cliques), gap=gap, stop=stop, constraints=len(exact),
                  constraint_violation=_violation(point.mu, exact))


def frank_wolfe_gap(ct: CliqueTree, point: "_Point") -> float:
    """``<grad, mu> - min_x sum_C grad_C(x_C)``: bounds ``L(mu) - min L`` (convexity).

    The minimum of the linearized loss over the marginal polytope is at a
    single configuration, found by max-sum on the junction tree.

    References
    ----------
    Jaggi, "Revisiting Frank-Wolfe: projection-free sparse convex
    optimization", ICML 2013 (the duality gap).
    """
    lin = sum(float(np.sum(g * m)) for g, m in zip(point.grad, point.mu) if g is not None)
    best = ct.max_sum([None if g is None else -g for g in point.grad])
    return max(lin + best, 0.0)


def _violation(mu: list[np.ndarray], exact: Sequence[Term]) -> float:
    return max((float(np.abs(sum_to(mu[t.clique], t.sum_axes) - t.y).max()) for t in exact), default=0.0)


def enforce(ct: CliqueTree, exact: Sequence[Term], theta: list[np.ndarray]) -> list[np.ndarray]:
    """Potentials whose model meets every exact measurement (I-projection by IPF).

    Each sweep rescales, one exact measurement at a time, its clique's
    potential by ``y / mu`` on the measured attributes -- after which that
    marginal is met exactly -- until all are met to ``IPF_ATOL``.

    References
    ----------
    Csiszar, "I-divergence geometry of probability distributions and
    minimization problems", Ann. Probab. 1975 (IPF as the I-projection onto
    linear families).
    """
    if not exact:
        return theta
    theta = list(theta)
    for _ in range(IPF_SWEEPS):
        mu, _ = ct.marginals(theta)
        if _violation(mu, exact) <= IPF_ATOL:
            break
        for k, t in enumerate(exact):
            if k:
                mu, _ = ct.marginals(theta)
            cur = sum_to(mu[t.clique], t.sum_axes)
            theta[t.clique] = theta[t.clique] + (np.log(np.maximum(t.y, TINY)) - np.log(np.maximum(cur, TINY)))
    return theta


def _start(warm_start: Any, shapes: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
    if warm_start is None:
        return [np.zeros(s) for s in shapes]
    pots = warm_start.potentials if isinstance(warm_start, MRFFit) else list(warm_start)
    if len(pots) != len(shapes) or any(np.shape(p) != s for p, s in zip(pots, shapes)):
        raise ValueError(f"warm_start has potentials of shapes {[np.shape(p) for p in pots]}; "
                         f"expected one table per clique of shapes {list(shapes)}")
    out = [np.array(p, dtype=float) for p in pots]
    if not all(np.all(np.isfinite(p)) for p in out):
        raise ValueError("warm_start potentials contain a non-finite entry; expected finite log-potentials")
    return out


class _Point:
    """Potentials with their marginals, loss and gradient."""

    def __init__(self, ct: CliqueTree, terms, theta: list[np.ndarray]) -> None:
        self.theta = theta
        self.mu, _ = ct.marginals(theta)
        self.loss, self.grad = loss_and_gradient(self.mu, terms)


def _armijo(ct: CliqueTree, terms, exact, base: _Point, alpha: float, floor: float) -> tuple[_Point, float]:
    """Mirror step from ``base`` (then the exact constraints), halving ``alpha`` until the loss falls enough."""
    while True:
        trial = [t if g is None else t - alpha * g for t, g in zip(base.theta, base.grad)]
        new = _Point(ct, terms, enforce(ct, exact, trial))
        first = sum(float(np.sum(g * (m - nm)))
                    for g, m, nm in zip(base.grad, base.mu, new.mu) if g is not None)
        if base.loss - new.loss >= 0.5 * first or alpha <= floor:
            return new, alpha
        alpha *= 0.5


def _descend(ct: CliqueTree, terms, theta: list[np.ndarray], tol: float, max_iter: int,
             accelerate: bool) -> tuple[_Point, list[float], str]:
    """Backtracked mirror descent, optionally with momentum on the potentials and restart.

    With ``accelerate`` the step is taken from the extrapolated potentials
    ``theta_k + (k - 1) / (k + 2) (theta_k - theta_{k-1})`` (Nesterov); a step
    that would raise the loss is discarded and the momentum restarts from
    ``theta_k``, so the accepted losses never increase.  Exact (zero-variance)
    measurements are enforced after every step (:func:`enforce`); the first
    step is ``1 / S`` with ``S`` the smoothness of the weighted terms alone.
    Returns the last point, the losses and why it stopped ("tol",
    "max_iter", "stalled", "no measurements").
    """
    exact = [t for t in terms if t.exact]
    point = _Point(ct, terms, enforce(ct, exact, theta))
    losses = [point.loss]
    if not any(not t.exact for t in terms):
        return point, losses, "no measurements"
    alpha = 1.0 / smoothness(terms)
    floor = alpha * 2.0 ** -40
    prev, k = point.theta, 1
    for _ in range(max_iter):
        beta = (k - 1) / (k + 2) if accelerate else 0.0
        base = point if beta == 0.0 else _Point(
            ct, terms, enforce(ct, exact, [t + beta * (t - p) for t, p in zip(point.theta, prev)]))
        new, alpha = _armijo(ct, terms, exact, base, alpha, floor)
        if new.loss > point.loss:
            if beta == 0.0:  # even a plain step at the floor fails: no step lowers the loss
                return point, losses, "stalled"
            prev, k = point.theta, 1
            continue
        prev, point, k = point.theta, new, k + 1
        losses.append(point.loss)
        alpha *= 1.5
        if len(losses) > WINDOW and losses[-WINDOW - 1] - point.loss <= tol * point.loss + ATOL:
            return point, losses, "tol"
    return point, losses, "max_iter"


def why_not_converged(stop: str | None, gap: float | None) -> str:
    """Why a fit is not converged, in the words of how it stopped (:attr:`MRFFit.stop`).  Stopping on
    ``tol`` (the loss no longer falls) is not convergence while the certified gap is above its bound;
    then more iterations would not help."""
    gap_text = "" if gap is None else f", certified gap {float(gap):.3g} nats above the bound"
    why = {"tol": "the loss stopped falling", "max_iter": "it reached max_iter",
           "stalled": "no step lowered the loss"}.get(str(stop), f"stopped: {stop}")
    return why + gap_text


def not_converged_note(stop: str, iterations: int, gap: float | None) -> str:
    """The fit's warning when it did not converge: why (:func:`why_not_converged`) and what to do."""
    advice = ("lower tol (in Python, fit(..., fit_options={'tol': ...}))" if stop == "tol" else
              "raise max_iter (lopub fit --max-iter N; in Python, fit(..., fit_options={'max_iter': N}))")
    return (f"model fit did not converge after {iterations} iterations ({why_not_converged(stop, gap)}); "
            f"{advice} or check the measurements' variances")
