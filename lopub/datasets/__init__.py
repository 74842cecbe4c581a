"""Datasets: UCI Adult, FIMI retail, and an embedded census-like Bayesian network.

``load_adult`` and ``load_retail`` read the original public files from an
explicit path, ``$LOPUB_DATA_DIR``, the user cache ``~/.cache/lopub`` (or
``$LOPUB_CACHE``), or download them with a sha256 check (see
:func:`data_path`).  ``embedded`` samples records from a fixed Bayesian network
whose exact joint and dependency graph are known (:func:`embedded_model`).
"""
from lopub.datasets._fetch import ChecksumError, DatasetUnavailableError, cache_dir, data_path
from lopub.datasets.adult import adult_domain, load_adult
from lopub.datasets.embedded import EmbeddedModel, embedded, embedded_model
from lopub.datasets.retail import load_retail, retail_domain, retail_items

__all__ = [
    "load_adult",
    "load_retail",
    "embedded",
    "embedded_model",
    "EmbeddedModel",
    "data_path",
    "cache_dir",
    "adult_domain",
    "retail_domain",
    "retail_items",
    "ChecksumError",
    "DatasetUnavailableError",
]
