"""Lasso estimator (Alg. 2, as published) and its documented variance approximation.

Variance (``provenance["variance"]``): the Lasso has no tractable sampling
distribution (the penalty, the positivity constraint and, for k >= 2, a joint
it cannot identify from per-attribute counts).

- k = 1 (``"normalized-least-squares-delta"``): with a vanishing penalty and
  no active positivity constraint the Lasso's coefficients are the least
  squares ``X^+ y`` of the debiased bit shares ``y`` on the Bloom filters,
  normalized to sum 1.  Their variance is the delta-method sandwich
  ``J X^+ Cov(y) X^+^T J^T`` with ``Cov(y)`` the users' sample covariance of
  the report bits (:func:`~.lasso.debiased_bit_cov`) and ``J`` the
  normalization's Jacobian (:func:`~.lasso.normalized_variance`).  The
  centred-design moment estimator's variance is *not* a substitute: the
  normalization removes the noise along the total, which halves some cells'
  variance (measured in ``tests/test_estimate_variance.py``).
- k >= 2 (``"range-bound"``): the regressed counts only fix the one-way
  marginals, so which table with those marginals the Lasso returns is not
  determined by the joint.  Each cell lies in ``[0, min_j q_j(w_j)]`` (``q_j``
  the table's one-way marginals), and a quantity confined to an interval of
  length ``r`` has variance at most ``r^2 / 4`` (Popoviciu's inequality): the
  recorded variance is ``max(sandwich, min_j q_j(w_j)^2 / 4)``, a deliberately
  conservative figure that keeps a model fit from trusting the Lasso's joint.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from lopub.estimate import lasso as _lasso
from lopub.estimate.sandwich import SandwichVariance
from lopub.estimate.options import Options, option, real


@dataclasses.dataclass(frozen=True)
class LassoOptions(Options):
    """Options of :class:`LassoEstimator`."""

    alpha: float = option(_lasso.DEFAULT_ALPHA, real(0.0), "Lasso penalty (scikit-learn scaling)")


def lasso_bytes(cells: int, bits: int) -> int:
    """Working bytes of Alg. 2 on ``cells`` candidates and ``bits`` regressed bit counts."""
    return 8 * cells * (3 * bits + 12)


class LassoEstimator(SandwichVariance):
    """Alg. 2: positive Lasso of debiased bit shares on the cells' Bloom filters.

    For k >= 2 it only sees the one-way marginals, so its joint is a sparse
    table with about the right one-way marginals, not the joint.

    References
    ----------
    Ren et al., "LoPub", IEEE TIFS 2018, Alg. 2.
    """

    method = "lasso"
    Options = LassoOptions
    options: LassoOptions
    variance_method = "normalized-least-squares-delta"

    def _table_bytes(self, sizes: Sequence[int], bits: int) -> int:
        return lasso_bytes(int(np.prod(sizes)), bits)

    def _worst_bytes(self, cells: int) -> int:
        return lasso_bytes(cells, self._max_bits(cells))

    def _warm(self, attrs: Sequence[str], keys: Sequence[tuple[str, ...]], jobs: int = 1,
              progress=None) -> None:
        for a in attrs:
            self.cache.bit_shares(a)
        self._companion().prepare(keys, jobs=jobs)  # the variances' sums over users, once

    def _attr_bytes(self, attr: str, keys: Sequence[tuple[str, ...]]) -> int:
        return 8 * self.reports.spec.m[self.domain.index(attr)]

    def fit_table(self, attrs: tuple[str, ...]) -> tuple[np.ndarray, dict]:
        targets = [self.cache.bit_shares(a) for a in attrs]
        blooms = [self.reports.spec.bloom[self.domain.index(a)] for a in attrs]
        p, meta = _lasso.lasso_joint(targets, blooms, alpha=self.options.alpha,
                                     max_iter=self.options.max_iter)
        return p, {**meta, "loglik": None}

    def _fit(self, attrs: tuple[str, ...]) -> tuple[np.ndarray, dict, np.ndarray]:
        p, meta = self.fit_table(attrs)
        if len(attrs) == 1:
            bloom = self.reports.spec.bloom[self.domain.index(attrs[0])]
            return p, meta, _lasso.normalized_variance(
                [bloom], self.cache.bit_share_cov(attrs[0]), p, meta["raw_mass"])
        var = self.sandwich_variance(attrs)
        k = p.ndim
        bound = np.full(p.shape, np.inf)
        for j in range(k):  # min over attributes of the cell's one-way marginal
            q = p.sum(axis=tuple(i for i in range(k) if i != j))
            bound = np.minimum(bound, q.reshape([-1 if i == j else 1 for i in range(k)]))
        meta["variance_method"] = "range-bound"
        return p, meta, np.maximum(var, bound**2 / 4.0)
