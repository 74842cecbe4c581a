"""lopub: publish high-dimensional categorical data under local differential privacy.

Client side: :class:`~lopub.reports.spec.CollectionSpec`, :func:`~lopub.client.encode`.
Python users: :class:`~lopub.pipeline.synthesizer.Synthesizer` (fit, sample, query, report).
Server side: :class:`~lopub.reports.bloom.Reports` (and :class:`~lopub.reports.dataset.ReportsDataset`,
a folder of Parquet parts), estimators in :mod:`lopub.estimate`, dependency graph /
junction tree / synthesis in the pipeline modules.

The public names below are imported on first use (PEP 562), so ``import lopub``
and the command line start without loading pandas, pyarrow or scipy.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from lopub._version import __version__

#: public name -> submodule that defines it (imported on first access)
_LAZY = {
    "Attribute": "data.domain", "Binning": "data.domain", "Domain": "data.domain",
    "CollectionSpec": "reports.spec",
    "Dataset": "data.dataset", "infer_domain": "data.schema", "infer_schema": "data.schema",
    "SchemaReport": "data.schema",
    "Marginal": "data.marginal",
    "Reports": "reports.bloom", "ReportsDataset": "reports.dataset",
    "Synthesizer": "pipeline.synthesizer",
}

__all__ = ["Attribute", "Binning", "CollectionSpec", "Dataset", "Domain", "Marginal", "Reports",
           "ReportsDataset", "SchemaReport", "Synthesizer", "infer_domain", "infer_schema", "__version__"]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from lopub.data.dataset import Dataset
    from lopub.data.schema import SchemaReport, infer_domain, infer_schema
    from lopub.data.domain import Attribute, Binning, Domain
    from lopub.data.marginal import Marginal
    from lopub.reports.bloom import Reports
    from lopub.reports.dataset import ReportsDataset
    from lopub.reports.spec import CollectionSpec
    from lopub.pipeline.synthesizer import Synthesizer


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lopub' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
