"""Declared interfaces of the frequency oracles.

:class:`FrequencyOracle` is what every single-attribute mechanism of
:mod:`lopub.oracles` provides: the one-shot oracles (GRR, SUE, OUE, OLH,
BLH), the longitudinal protocols (L-GRR, L-SUE, L-OSUE, L-OUE) and the LIP
mechanisms (RR-LIP, UE-LIP, LH-LIP, the bounded binary channel and a given
channel).  One frozen-parameter object serves both sides:

* client: ``perturb(values, rng=...)`` -> reports;
* server: ``aggregate(reports)`` -> the sufficient statistic of the estimator
  (support counts for the support-count oracles, output counts or summed
  posteriors for LIP), ``estimate_from_counts(statistic, n)`` -> frequencies,
  ``estimate(reports)`` = both in one call, ``measure(reports)`` -> a
  :class:`~lopub.estimate.measurement.Measurement`;
* analysis: ``variance(n, f=None)`` (analytic, per value; ``f`` the true
  frequencies where the variance depends on them), ``transition_matrix()``
  (the channel ``P(y | x)``), ``params()`` (JSON-serializable parameters,
  ``"protocol"`` key first; :func:`lopub.oracles.from_params` rebuilds the object from
  them) and the attributes ``name``, ``epsilon`` (the
  privacy of one report), ``k``, ``estimator`` and ``privacy`` (``"ldp"``:
  ``max P(y|x) / P(y|x') <= e^epsilon``; ``"lip"``: eps-LIP under the
  public ``prior``).

:class:`MultiAttributeProtocol` is the interface of the schemes that
collect several attributes at once (SPL, SMP, ALLOMFREE): ``perturb(codes)``
on ``(n, d)`` records, ``estimate`` and ``variance`` per attribute, and
``measure`` -> one measurement per attribute.

Both are ``runtime_checkable`` (``isinstance`` checks that the members
exist); ``tests/oracles/test_oracles_conformance.py`` checks that every
class exported by :mod:`lopub.oracles` satisfies one of them and behaves
accordingly (unbiasedness within the analytic variance, exact privacy
ratio of the channel).
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from lopub.estimate.measurement import Measurement


@runtime_checkable
class FrequencyOracle(Protocol):
    """A single-attribute local mechanism with its server-side estimator."""

    name: str
    epsilon: float
    k: int
    estimator: str
    privacy: str

    def params(self) -> dict:
        """Public parameters (JSON-serializable), ``{"protocol": name, ...}``; rebuilt into
        the object by :func:`lopub.oracles.from_params`."""

    def perturb(self, values: Any, *, rng: np.random.Generator | int | None = None) -> Any:
        """Client: randomize the codes (``(n,)`` ints in ``[0, k)``) of ``n`` users."""

    def aggregate(self, reports: Any) -> np.ndarray:
        """Server: the estimator's sufficient statistic of the reports (length ``k``
        for support counts; the channel's output counts for matrix LIP)."""

    def n_reports(self, reports: Any) -> int:
        """Number of users behind ``reports``."""

    def estimate_from_counts(self, counts: Any, n: int) -> np.ndarray:
        """Server: frequencies (length ``k``, not post-processed) from ``aggregate``'s output."""

    def estimate(self, reports: Any) -> np.ndarray:
        """``estimate_from_counts(aggregate(reports), n_reports(reports))``."""

    def variance(self, n: int, f: Any = None) -> Any:
        """Analytic variance of each estimated frequency from ``n`` reports."""

    def transition_matrix(self) -> np.ndarray:
        """The channel ``P(y | x)`` (rows: inputs)."""

    def measure(self, reports: Any, *, domain: Any = None,
                postprocess: str = "norm-sub") -> Measurement:
        """Server: the estimate as a :class:`~lopub.estimate.measurement.Measurement`."""

    def measure_counts(self, counts: Any, n: int, *, domain: Any = None,
                       postprocess: str = "norm-sub") -> Measurement:
        """Like :meth:`measure`, from ``aggregate``'s output and ``n``."""


@runtime_checkable
class MultiAttributeProtocol(Protocol):
    """A scheme collecting ``d`` attributes per user (SPL, SMP, ALLOMFREE)."""

    name: str
    sizes: tuple

    @property
    def oracles(self) -> tuple:
        """The per-attribute :class:`FrequencyOracle` objects."""

    def params(self) -> dict:
        """Public parameters (JSON-serializable), ``{"protocol": name, ...}``; rebuilt into
        the object by :func:`lopub.oracles.from_params`."""

    def perturb(self, codes: Any, *, rng: np.random.Generator | int | None = None) -> Any:
        """Client: reports of ``n`` users with ``(n, d)`` integer codes."""

    def estimate(self, reports: Any) -> list:
        """Server: one frequency array (not post-processed) per attribute."""

    def variance(self, n: int, f: Any = None) -> list:
        """Analytic variance per attribute from ``n`` users."""

    def measure(self, reports: Any, *, domain: Any = None,
                postprocess: str = "norm-sub") -> list:
        """Server: one :class:`~lopub.estimate.measurement.Measurement` per attribute."""
