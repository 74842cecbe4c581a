"""The declared interfaces: who is a MarginalSource / MarginalEstimator."""
from __future__ import annotations

import numpy as np
import pytest

from lopub.datasets import embedded_model
from lopub.dependency import MarginalCache
from lopub.dependency.cache import as_source
from lopub.estimate.protocols import MarginalEstimator, MarginalSource

from test_model import CHAIN, exact_model, tree_joint


def test_sources_of_every_kind():
    full, graph = tree_joint(*CHAIN)
    model = exact_model(full, graph)
    bn = embedded_model()
    data = bn.sample(500, rng=1)
    for source in (model, bn, data, MarginalCache(data)):
        assert isinstance(source, MarginalSource), type(source).__name__
        assert not isinstance(source, MarginalEstimator), type(source).__name__
        attrs = list(source.domain.attrs[:2])
        assert source.marginal(attrs).attrs == tuple(attrs)
    np.testing.assert_allclose(model.marginal(["B", "A"]).values, full.project(["B", "A"]).values, atol=1e-12)


def test_a_table_is_a_source_of_its_sub_marginals_and_anything_else_is_refused():
    full, _ = tree_joint(*CHAIN)
    src = as_source(full)
    assert isinstance(src, MarginalSource)
    assert np.array_equal(src.marginal(["C"]).values, full.project(["C"]).values)
    with pytest.raises(TypeError, match=r"source \(dict\) must be a MarginalSource"):
        as_source({"marginal": None})
