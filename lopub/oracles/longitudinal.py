"""Longitudinal (two-round, memoized) protocols: L-GRR, L-SUE, L-OSUE, L-OUE.

Round 1 (permanent response, privacy ``eps_inf``) is computed once per
(user, value) and memoized; round 2 (instant response) re-randomizes the
memoized response at every report so that one report alone costs at most
``eps_1 < eps_inf``.  Memoization itself lives in :mod:`lopub.oracles.memo`.

Support probabilities of one report (Sec. 4 of the ALLOMFREE paper)::

    Ps = p1 p2 + q2 (1 - p1),    Qs = p2 q1 + q2 (1 - q1)

so the estimator (Eq. 9) and Var* (Eq. 11) are those of
:class:`~lopub.oracles.base.SupportOracle` with ``(p, q) = (Ps, Qs)``.

The round probabilities (formulas, and their exact adjustment to the budgets)
live in :mod:`lopub.oracles.longitudinal_rounds`.

Report formats are those of the one-shot oracles: GRR-based protocols emit
int64 codes ``(n,)``, unary ones bool bits ``(n, k)``.

References
----------
Arcolezi, Couchot, Al Bouna, Xiao, "Improving the utility of locally
differentially private protocols for longitudinal and multidimensional
frequency estimates", Digital Communications and Networks 2022 (ALLOMFREE
paper), Sec. 4, Eq. 9-14; Erlingsson, Pihur, Korolova, "RAPPOR", CCS 2014.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from lopub._util import check_int, resolve_rng
from lopub.client.randomize import bernoulli_select
from lopub.oracles.base import (
    UE_CHUNK_CELLS,
    SupportOracle,
    check_domain_size,
    check_epsilon,
    check_values,
    ue_output_matrix,
)
from lopub.oracles.longitudinal_rounds import (  # noqa: F401  (the formulas; re-exported here)
    grr_report_ratio,
    lgrr_exact_round2,
    lgrr_paper_round2,
    lgrr_rounds,
    loue_max_eps1,
    loue_q2,
    loue_rounds,
    losue_rounds,
    lsue_rounds,
    ue_report_ratio,
)
from lopub.oracles.oneshot import _grr_matrix, _grr_on, aggregate_unary, perturb_unary

LGRR_VARIANTS = ("paper", "exact")


def _check_budgets(eps_inf: float, eps_1: float) -> tuple[float, float]:
    eps_inf = check_epsilon("eps_inf", eps_inf)
    eps_1 = check_epsilon("eps_1", eps_1)
    if not eps_1 < eps_inf:
        raise ValueError(f"eps_1 ({eps_1}) must be < eps_inf ({eps_inf})")
    return eps_inf, eps_1


class Longitudinal(SupportOracle):
    """Common part of the two-round protocols (subclasses set p1, q1, p2, q2)."""

    eps_inf: float
    eps_1: float
    p1: float
    q1: float
    p2: float
    q2: float
    if TYPE_CHECKING:  # the two rounds, implemented by every subclass
        def permanent(self, values: Any, *, rng: Any = None) -> Any: ...
        def instant(self, permanent: Any, *, rng: Any = None) -> Any: ...

    @property
    def epsilon(self) -> float:
        """Privacy budget of one report, ``eps_1`` (the protocol's ``epsilon``)."""
        return self.eps_1

    def _set_rounds(self, p1: float, q1: float, p2: float, q2: float) -> None:
        for key, value in (("p1", p1), ("q1", q1), ("p2", p2), ("q2", q2)):
            object.__setattr__(self, key, float(value))
        object.__setattr__(self, "p", float(p1 * p2 + q2 * (1 - p1)))
        object.__setattr__(self, "q", float(p2 * q1 + q2 * (1 - q1)))

    def perturb(self, values: Any, *, rng: np.random.Generator | int | None = None) -> Any:
        """One report per user with a fresh (not memoized) permanent round.

        Use :class:`lopub.oracles.memo.DeviceClient` or
        :class:`lopub.oracles.memo.MemoFleet` for repeated reports.
        """
        rng = resolve_rng(rng)
        return self.instant(self.permanent(values, rng=rng), rng=rng)

    def single_report_epsilon(self) -> float:
        """Privacy of one report: ``ln(Ps (1 - Qs) / ((1 - Ps) Qs))`` (Eq. 14)."""
        p, q = np.float64(self.p), np.float64(self.q)
        with np.errstate(divide="ignore"):  # inf where a probability is 0 or 1
            return float(np.log(p) + np.log1p(-q) - np.log1p(-p) - np.log(q))

    def epsilon_over_reports(self, t: int, distinct_values: int = 1) -> float:
        """Upper bound on the privacy loss of ``t`` reports of one user.

        Each report costs at most ``eps_1``; every distinct value the user ever
        held costs at most ``eps_inf`` in total (memoized permanent response).

        References
        ----------
        ALLOMFREE paper, Sec. 4 (eps_1 per report, eps_inf over infinitely
        many reports of one value); RAPPOR, Sec. 3.
        """
        t = check_int("t", t, 1)
        distinct_values = check_int("distinct_values", distinct_values, 1)
        if distinct_values > t:
            raise ValueError(f"distinct_values ({distinct_values}) must be <= t ({t})")
        return float(min(t * self.eps_1, distinct_values * self.eps_inf))


@dataclass(frozen=True)
class LGRR(Longitudinal):
    """Longitudinal GRR: GRR at ``eps_inf`` memoized, then GRR with ``(p2, q2)``.

    ``variant="paper"`` uses the paper's p2 (Eq. 13), exact only for k = 2
    (for k > 2 one report is more private than ``eps_1``, so utility is
    wasted).  ``variant="exact"`` chains GRR keep-probabilities
    ``alpha(eps) = (e^eps - 1) / (e^eps + k - 1)`` so that one report is
    exactly ``eps_1``-LDP.

    References
    ----------
    ALLOMFREE paper, Sec. 4.1, Eq. 13 (paper variant); PAPERS.md Sec. 3 for
    the exact variant.
    """

    eps_inf: float
    eps_1: float
    k: int
    variant: str = "paper"
    p: float = field(init=False)
    q: float = field(init=False)
    name: ClassVar[str] = "l-grr"

    def __post_init__(self) -> None:
        eps_inf, eps_1 = _check_budgets(self.eps_inf, self.eps_1)
        k = check_domain_size("k", self.k)
        if self.variant not in LGRR_VARIANTS:
            raise ValueError(f"variant ({self.variant!r}) must be one of {LGRR_VARIANTS}")
        object.__setattr__(self, "eps_inf", eps_inf)
        object.__setattr__(self, "eps_1", eps_1)
        object.__setattr__(self, "k", k)
        self._set_rounds(*lgrr_rounds(eps_inf, eps_1, k, self.variant))
        self._check_representable()

    def permanent(self, values: Any, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Round 1: GRR at ``eps_inf``; int64 ``(n,)``."""
        values = check_values(values, self.k)
        return _grr_on(values, self.k, self.p1, resolve_rng(rng))

    def instant(self, permanent: Any, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Round 2: GRR with ``(p2, q2)`` applied to memoized responses."""
        permanent = check_values(permanent, self.k, "permanent")
        return _grr_on(permanent, self.k, self.p2, resolve_rng(rng))

    def aggregate(self, reports: Any) -> np.ndarray:
        """Support counts: how often each code was reported."""
        reports = check_values(reports, self.k, "reports")
        return np.bincount(reports, minlength=self.k).astype(float)

    def transition_matrix(self) -> np.ndarray:
        """``k x k`` channel of one report (both rounds)."""
        return _grr_matrix(self.k, self.p1, self.q1) @ _grr_matrix(self.k, self.p2, self.q2)

    def single_report_epsilon(self) -> float:
        """Privacy of one report: ``ln(Ps / Qs)``."""
        with np.errstate(divide="ignore"):  # inf where q is 0
            return float(np.log(np.float64(self.p)) - np.log(np.float64(self.q)))


@dataclass(frozen=True)
class LongitudinalUE(Longitudinal):
    """Two rounds of unary encoding; subclasses give ``(p1, q1, p2, q2)``."""

    eps_inf: float
    eps_1: float
    k: int
    p: float = field(init=False)
    q: float = field(init=False)
    name: ClassVar[str] = "l-ue"

    def _rounds(self, eps_inf: float, eps_1: float) -> tuple[float, float, float, float]:
        raise NotImplementedError

    def __post_init__(self) -> None:
        eps_inf, eps_1 = _check_budgets(self.eps_inf, self.eps_1)
        object.__setattr__(self, "eps_inf", eps_inf)
        object.__setattr__(self, "eps_1", eps_1)
        object.__setattr__(self, "k", check_domain_size("k", self.k))
        self._set_rounds(*self._rounds(eps_inf, eps_1))
        self._check_representable()

    def permanent(self, values: Any, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Round 1: unary encoding with ``(p1, q1)``; bool ``(n, k)``."""
        values = check_values(values, self.k)
        return perturb_unary(values, self.k, self.p1, self.q1, resolve_rng(rng))

    def instant(self, permanent: Any, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Round 2: a 1-bit stays 1 w.p. ``p2``, a 0-bit becomes 1 w.p. ``q2``.

        Chunked over users with exact integer thresholds (see
        :func:`~lopub.client.randomize.bernoulli_select`): besides the bool
        ``(n, k)`` result, memory stays at a few MiB.
        """
        bits = np.asarray(permanent)
        if bits.ndim != 2 or bits.shape[1] != self.k:
            raise ValueError(f"permanent (shape {bits.shape}) must have shape (n, {self.k})")
        rng = resolve_rng(rng)
        out = np.empty(bits.shape, dtype=bool)
        step = max(1, UE_CHUNK_CELLS // self.k)
        for start in range(0, bits.shape[0], step):  # chunks over users bound memory
            bernoulli_select(bits[start:start + step], self.p2, self.q2, rng,
                             out[start:start + step])
        return out

    def perturb(self, values: Any, *, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """One report per user with a fresh (not memoized) permanent round.

        Both rounds are drawn block by block of users, so the permanent
        responses of all users are never held at once (same distribution as
        ``instant(permanent(values))``).  Use
        :class:`lopub.oracles.memo.DeviceClient` or
        :class:`lopub.oracles.memo.MemoFleet` for repeated reports.
        """
        values = check_values(values, self.k)
        rng = resolve_rng(rng)
        n, k = values.shape[0], self.k
        out = np.empty((n, k), dtype=bool)
        step = max(1, UE_CHUNK_CELLS // k)
        for start in range(0, n, step):  # chunks over users bound memory
            perm = perturb_unary(values[start:start + step], k, self.p1, self.q1, rng)
            bernoulli_select(perm, self.p2, self.q2, rng, out[start:start + step])
        return out

    def aggregate(self, reports: Any) -> np.ndarray:
        """Support counts: number of reports with bit ``v`` set."""
        return aggregate_unary(reports, self.k)

    def transition_matrix(self) -> np.ndarray:
        """``k x 2^k`` channel of one report (bits independent with Ps, Qs).

        The probabilities of a 0 bit are summed from the rounds' own
        complements (exact for probabilities >= 1/2), not taken as ``1 - Ps``.
        """
        p1, q1, p2, q2 = self.p1, self.q1, self.p2, self.q2
        zero_own = (1 - p1) * (1 - q2) + p1 * (1 - p2)
        zero_other = (1 - q1) * (1 - q2) + q1 * (1 - p2)
        return ue_output_matrix(self.k, self.p, self.q, zero_own, zero_other)


@dataclass(frozen=True)
class LSUE(LongitudinalUE):
    """L-SUE (basic RAPPOR): SUE at ``eps_inf``, then symmetric round 2.

    References
    ----------
    ALLOMFREE paper, Sec. 4.2 (p2 = (sqrt(ab) - 1) / ((sqrt(b) + 1)(sqrt(a) - 1))).
    """

    name: ClassVar[str] = "l-sue"

    def _rounds(self, eps_inf: float, eps_1: float) -> tuple[float, float, float, float]:
        return lsue_rounds(eps_inf, eps_1)


@dataclass(frozen=True)
class LOSUE(LongitudinalUE):
    """L-OSUE: OUE at ``eps_inf``, then SUE with ``p2 = (ab - 1)/(ab + a - b - 1)``.

    References
    ----------
    ALLOMFREE paper, Sec. 4.3 (proposed protocol; Var* equals OUE at eps_1).
    """

    name: ClassVar[str] = "l-osue"

    def _rounds(self, eps_inf: float, eps_1: float) -> tuple[float, float, float, float]:
        return losue_rounds(eps_inf, eps_1)


@dataclass(frozen=True)
class LOUE(LongitudinalUE):
    """L-OUE: OUE in both rounds (``p1 = p2 = 1/2``), ``q2`` solving Eq. 14.

    Feasible only when ``eps_1 < ln((2 e^eps_inf + 1) / 3)``; otherwise a
    ``ValueError`` says so.

    References
    ----------
    ALLOMFREE paper, Sec. 4.2, Eq. 14 (solved in closed form, :func:`loue_q2`).
    """

    name: ClassVar[str] = "l-oue"

    def _rounds(self, eps_inf: float, eps_1: float) -> tuple[float, float, float, float]:
        limit = loue_max_eps1(eps_inf)
        if not eps_1 < limit:
            raise ValueError(
                f"eps_1 ({eps_1:.6g}) must be < ln((2 e^eps_inf + 1)/3) = {limit:.6g} "
                f"for L-OUE at eps_inf ({eps_inf:.6g}); use L-OSUE or a larger eps_inf")
        return loue_rounds(eps_inf, eps_1)


LONGITUDINAL = {cls.name: cls for cls in (LGRR, LSUE, LOSUE, LOUE)}


def make_longitudinal(name: str, eps_inf: float, eps_1: float, k: int, **kw: Any) -> Longitudinal:
    """Build a longitudinal protocol by name (``l-grr``, ``l-sue``, ``l-osue``, ``l-oue``)."""
    if not isinstance(name, str):
        raise TypeError(f"name ({name!r}) must be a string")
    key = name.lower()
    if key not in LONGITUDINAL:
        raise ValueError(f"name ({name!r}) must be one of {sorted(LONGITUDINAL)}")
    return LONGITUDINAL[key](eps_inf, eps_1, k, **kw)
