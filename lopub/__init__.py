"""lopub: publish high-dimensional categorical data under local differential privacy.

Client side: :class:`~lopub.spec.CollectionSpec`, :func:`~lopub.client.encode`.
Server side: :class:`~lopub.reports.Reports`, estimators in :mod:`lopub.estimate`,
dependency graph / junction tree / synthesis in the pipeline modules.
"""
__version__ = "0.1.0"

from .dataset import Dataset, infer_domain  # noqa: E402
from .domain import Attribute, Binning, Domain  # noqa: E402
from .marginal import Marginal  # noqa: E402
from .reports import Reports  # noqa: E402
from .spec import CollectionSpec  # noqa: E402

__all__ = ["Attribute", "Binning", "CollectionSpec", "Dataset", "Domain", "Marginal", "Reports", "infer_domain", "__version__"]
