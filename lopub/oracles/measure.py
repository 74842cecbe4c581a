"""Measurements from the frequency oracles: the estimate, its analytic variance, provenance.

Every :class:`~lopub.oracles.protocol.FrequencyOracle` answers
``measure(reports, domain=None, postprocess="norm-sub")`` and
``measure_counts(counts, n, ...)`` with a one-way
:class:`~lopub.estimate.measurement.Measurement`:

* ``raw``: the oracle's estimate before post-processing (unbiased for the
  support-count and ``"invert"`` estimators);
* ``values``: ``raw`` post-processed (:func:`lopub.estimate.postprocess.postprocess`);
* ``variance``: the oracle's analytic per-value variance of ``raw``,
  ``oracle.variance(n, f)`` evaluated at ``f = values`` (a distribution,
  where the exact fixed-dataset variance is defined); ``provenance
  ["variance"]`` names the formula;
* ``provenance``: ``protocol``, ``estimator``, ``postprocess``, ``variance``.

The multi-attribute schemes (SPL, SMP, ALLOMFREE) return one measurement
per attribute; for the sampling schemes the variance adds the term
``f (1 - f) (1 / n_j - 1 / n)`` of estimating the frequencies of all ``n``
users from the ``n_j`` who reported the attribute.
"""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from lopub.data.domain import Domain
from lopub.estimate.measurement import Measurement
from lopub.estimate.postprocess import postprocess as _postprocess


def one_way_domain(k: int, domain: Any = None, name: str = "x") -> Domain:
    """``domain`` checked to be one attribute of ``k`` categories, or a default one.

    The default is attribute ``name`` with labels ``"0"`` ... ``"k-1"``.
    """
    if domain is None:
        return Domain.from_categories({name: [str(i) for i in range(k)]})
    if not isinstance(domain, Domain):
        raise TypeError(f"domain ({type(domain).__name__}) must be a lopub Domain")
    if domain.sizes != (k,):
        raise ValueError(f"domain (attributes {list(domain.attrs)}, sizes {list(domain.sizes)}) "
                         f"must be one attribute of {k} categories")
    return domain


def build_measurement(oracle: Any, raw: np.ndarray, n: int, domain: Any, method: str,
                      variance_note: str, extra: Any = None, n_users: int | None = None
                      ) -> Measurement:
    """Measurement of ``raw`` (``n`` reports): post-process, evaluate the variance.

    ``extra(f)``, if given, is added to ``oracle.variance(n, f)`` (the
    sampling term of SMP and ALLOMFREE).
    """
    domain = one_way_domain(oracle.k, domain)
    est = _postprocess(raw, method)
    f = np.clip(est.freq, 0.0, 1.0)  # a frequency: "none" keeps negative cells, which would lower it
    var = np.asarray(oracle.variance(n, f), dtype=float)
    if extra is not None:
        var = var + extra(f)
    meta = {} if n_users is None else {"n_users": int(n_users)}
    prov = {"protocol": oracle.name, "estimator": oracle.estimator,
            "postprocess": est.method, "variance": variance_note}
    return Measurement(domain, est.freq, int(n), meta, variance=np.clip(var, 0.0, None),
                       provenance=prov, raw=est.raw)


class MeasureMixin:
    """``measure`` and ``measure_counts`` for a single-attribute oracle.

    Subclasses set ``variance_note`` (how :meth:`variance` is obtained).
    """

    variance_note: str = "exact fixed-dataset variance at the post-processed estimate"
    if TYPE_CHECKING:  # provided by the oracle classes that use this mixin
        def aggregate(self, reports: Any) -> Any: ...
        def n_reports(self, reports: Any) -> int: ...
        def estimate_from_counts(self, counts: Any, n: int) -> Any: ...

    def measure_counts(self, counts: Any, n: int, *, domain: Any = None,
                       postprocess: str = "norm-sub") -> Measurement:
        """Measurement from ``aggregate``'s output of ``n`` reports (see
        :mod:`lopub.oracles.measure`)."""
        raw = self.estimate_from_counts(counts, n)
        return build_measurement(self, raw, n, domain, postprocess, self.variance_note)

    def measure(self, reports: Any, *, domain: Any = None,
                postprocess: str = "norm-sub") -> Measurement:
        """Measurement of ``reports``: estimate, post-processing, analytic variance.

        Parameters
        ----------
        reports : array
            Reports in the oracle's format.
        domain : Domain, optional
            One attribute of ``k`` categories (default ``x`` with labels
            ``"0"`` ... ``"k-1"``).
        postprocess : {"norm-sub", "clip", "simplex", "none"}
            Post-processing of ``values``; ``raw`` keeps the estimate.
        """
        return self.measure_counts(self.aggregate(reports), self.n_reports(reports),
                                   domain=domain, postprocess=postprocess)


def multi_domain(sizes: Sequence[int], domain: Any = None) -> Domain:
    """``domain`` checked against ``sizes``, or attributes ``x0 ... x{d-1}``."""
    if domain is None:
        return Domain.from_categories({f"x{j}": [str(i) for i in range(k)]
                                       for j, k in enumerate(sizes)})
    if not isinstance(domain, Domain):
        raise TypeError(f"domain ({type(domain).__name__}) must be a lopub Domain")
    if tuple(domain.sizes) != tuple(sizes):
        raise ValueError(f"domain (sizes {list(domain.sizes)}) must have the scheme's sizes "
                         f"{list(sizes)}")
    return domain


def measure_per_attr(oracles: Sequence[Any], estimates: Sequence[np.ndarray],
                     n_per_attr: Sequence[int] | np.ndarray, n: int, domain: Any, method: str,
                     sampled: bool) -> list[Measurement]:
    """One measurement per attribute with reports; attributes with none are left
    out with a warning naming them."""
    domain = multi_domain([o.k for o in oracles], domain)
    out, empty = [], []
    for j, (oracle, raw, n_j) in enumerate(zip(oracles, estimates, n_per_attr)):  # attributes
        attr = domain.attrs[j]
        if n_j == 0:
            empty.append(attr)
            continue
        note = oracle.variance_note
        extra = None
        if sampled:
            note += " + sampling term f (1 - f) (1/n_j - 1/n)"
            extra = (lambda f, n_j=n_j: f * (1 - f) * (1 / n_j - 1 / n))
        out.append(build_measurement(oracle, raw, int(n_j), domain.project([attr]), method,
                                     note, extra, n_users=n))
    if empty:
        warnings.warn(f"attributes {empty} got no reports (n_j = 0); no measurement for them",
                      stacklevel=3)
    return out
