"""Server-side estimation of k-way joint distributions from Bloom reports.

``estimate(reports, attrs, method)`` returns a :class:`~lopub.marginal.Marginal`;
:class:`Estimator` is the caching session behind it (per-attribute likelihoods
and results reused across calls).  Methods: ``METHODS``.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Alg. 1-3.
"""
from .api import METHODS, Estimator, estimate
from .postprocess import POSTPROCESS, postprocess

__all__ = ["METHODS", "POSTPROCESS", "Estimator", "estimate", "postprocess"]
