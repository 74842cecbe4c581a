"""Server-side estimation of k-way joint distributions from Bloom reports.

One class per method -- :class:`EMEstimator`, :class:`MomentEstimator`,
:class:`LassoEstimator`, :class:`HybridEstimator` -- with declared options,
registered by name in :mod:`.registry` (``METHODS``); they share
per-attribute work through an :class:`AttributeCache` and return
:class:`~lopub.estimate.measurement.Measurement` objects.  ``Estimator(reports,
method, **options)`` and ``estimate(reports, attrs, method)`` are the facades.
"""
from lopub.estimate.postprocess import POSTPROCESS
from lopub.estimate.api import DEFAULT_BUDGET, Estimator, estimate
from lopub.estimate.base import BloomEstimator
from lopub.estimate.cache import AttributeCache
from lopub.estimate.em_estimator import EMEstimator, EMOptions
from lopub.estimate.hybrid_estimator import HybridEstimator, HybridOptions
from lopub.estimate.lasso_estimator import LassoEstimator, LassoOptions
from lopub.estimate.moment_estimator import MomentEstimator, MomentOptions
from lopub.estimate.options import InvalidOptionError, Options
from lopub.estimate.registry import METHODS, REGISTRY, defaults, describe, register

__all__ = ["METHODS", "POSTPROCESS", "REGISTRY", "DEFAULT_BUDGET", "AttributeCache", "BloomEstimator",
           "EMEstimator", "MomentEstimator", "LassoEstimator", "HybridEstimator", "Options", "EMOptions",
           "MomentOptions", "LassoOptions", "HybridOptions", "Estimator", "InvalidOptionError",
           "defaults", "describe", "estimate", "register"]
