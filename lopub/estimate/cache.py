"""Per-attribute work shared by every estimator over one set of reports.

Every joint that involves attribute j needs the same per-attribute arrays:
the scaled likelihood matrix (EM), the projected bits and their moments
(moment regression), the debiased bit shares (Lasso).  An
:class:`AttributeCache` computes each once and keeps it, least recently used
first out, under a memory budget; hand one cache to several estimators over
the same reports (``EMEstimator(reports, cache=c)``, ``MomentEstimator(reports,
cache=c)``) and they share it.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from lopub.reports.bloom import Reports
from lopub.estimate import lasso as _lasso
from lopub.estimate import moment as _moment
from lopub.estimate.likelihood import AttributeLikelihood, attribute_likelihood


class AttributeCache:
    """LRU cache of per-attribute arrays of one set of reports.

    Parameters
    ----------
    reports : Reports
    memory_budget : int
        Bytes the cached arrays may take; beyond it the least recently used
        entries are dropped (the newest entry is always kept).
    """

    def __init__(self, reports: Reports, memory_budget: int = 1024**3) -> None:
        if not isinstance(reports, Reports):
            raise TypeError(f"reports must be a lopub.reports.bloom.Reports, got {type(reports).__name__}")
        if isinstance(memory_budget, bool) or not isinstance(memory_budget, (int, np.integer)) \
                or memory_budget < 1:
            raise ValueError(f"memory_budget ({memory_budget!r}) must be an integer >= 1 (bytes)")
        self.reports = reports
        self.memory_budget = int(memory_budget)
        self._store: OrderedDict = OrderedDict()
        self._protected: frozenset = frozenset()

    @property
    def nbytes(self) -> int:
        """Bytes held now."""
        return sum(int(getattr(v, "nbytes", 0)) for v in self._store.values())

    def get(self, kind: str, attr: str, build: Callable[[], Any]) -> Any:
        """The cached ``(kind, attr)`` entry, built by ``build()`` on a miss."""
        key = (kind, attr)
        if key in self._store:
            self._store.move_to_end(key)
            return self._store[key]
        value = build()
        self._store[key] = value
        self._evict(self._protected | {attr})
        return value

    def _evict(self, keep, need: int = 0) -> None:
        """Drop least recently used entries of attributes not in ``keep`` while over budget.

        The newest entry is always kept; with nothing else left to drop the
        cache stays over budget (the estimator's rounds size ``keep`` to fit).
        """
        for key in list(self._store)[:-1]:  # oldest first
            if self.nbytes + need <= self.memory_budget:
                break
            if key[1] not in keep:
                del self._store[key]

    def put(self, kind: str, attr: str, value: Any) -> None:
        """Store an entry built elsewhere (e.g. by worker processes)."""
        self.get(kind, attr, lambda: value)

    def has(self, kind: str, attr: str) -> bool:
        return (kind, attr) in self._store

    def holds(self, attr: str) -> bool:
        """Whether some entry of ``attr`` is cached."""
        return any(key[1] == attr for key in self._store)

    def reserve(self, attrs, need: int) -> None:
        """Keep the entries of ``attrs`` until the next call and make room for ``need`` more bytes.

        Used before a round of estimations over ``attrs``: entries of other
        attributes are evicted (least recently used first) to make room, and
        later additions never evict an entry of ``attrs``.
        """
        self._protected = frozenset(attrs)
        self._evict(self._protected, need)

    def release(self) -> None:
        """End a round: no attribute is protected from eviction any more (back under budget)."""
        self._protected = frozenset()
        self._evict(frozenset())

    def likelihood(self, attr: str) -> AttributeLikelihood:
        """Scaled likelihood matrix of ``attr`` (see :mod:`.likelihood`)."""
        return self.get("lik", attr, lambda: attribute_likelihood(self.reports, attr))

    def projected(self, attr: str, design: str = "centered") -> np.ndarray:
        """Projected bits of ``attr`` for moment regression, (n, |O|)."""
        return self.get("z" + design, attr,
                        lambda: _moment.projected_bits(self.reports, attr, design=design))

    def projected_stats(self, attr: str, design: str = "centered") -> dict:
        """Mean, covariance trace and effective dimension of the projected bits."""
        return self.get("zstat" + design, attr,
                        lambda: _moment.attribute_moments(self.projected(attr, design)))

    def centered(self, attr: str, design: str = "centered") -> np.ndarray:
        """Centred projected bits of ``attr`` with a constant row, (|O| + 1, n)."""
        return self.get("zc" + design, attr, lambda: _moment.augmented_central(
            self.projected(attr, design), self.projected_stats(attr, design)["mean"]))

    def bit_shares(self, attr: str) -> np.ndarray:
        """Debiased bit shares of ``attr`` for the Lasso, (m_j,)."""
        return self.get("bits", attr, lambda: _lasso.debiased_bit_shares(self.reports, attr))

    def bit_share_cov(self, attr: str) -> np.ndarray:
        """Covariance of the debiased bit shares of ``attr``, (m_j, m_j)."""
        return self.get("bitcov", attr, lambda: _lasso.debiased_bit_cov(self.reports, attr))
