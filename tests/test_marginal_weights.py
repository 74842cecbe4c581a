"""Pooled tables of marginal sampling are unbiased: group variances do not follow the groups' own estimates.

A variance read off a group's own table is smaller where the group happened to see a rare value less
often, so inverse-variance pooling leaned towards "rarer" (lopub/collect/server.py's docstring).
"""
import itertools

import numpy as np
import pytest

from lopub.collect import MarginalPlan, collect_records, measure_marginals
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain


def rare_items(n: int, d: int, p: float, seed: int) -> Dataset:
    """``d`` independent binary items, each present with probability ``p``."""
    dom = Domain.from_categories({f"i{j}": ["0", "1"] for j in range(d)})
    rng = np.random.default_rng(seed)
    return Dataset((rng.random((n, d)) < p).astype(int), dom)


@pytest.mark.parametrize("seed", [0, 1])
def test_pooled_one_way_tables_of_small_groups_are_unbiased(seed):
    # 1,140 triples, about 53 users each, every item in 171 of them; at epsilon 16 the sampling of the
    # groups dominates.  Plug-in variances gave a bias of about -4 standard errors per item here.
    d, n, p = 20, 60_000, 0.05
    data = rare_items(n, d, p, seed)
    plan = MarginalPlan(data.domain, list(itertools.combinations(data.domain.attrs, 3)), 16.0)
    source = measure_marginals(collect_records(data, plan, rng=seed + 10))
    z = []
    for a in data.domain.attrs:
        m = source.marginal([a])
        truth = data.project([a]).values
        z.append((m.values[1] - truth[1]) / np.sqrt(m.variance[1]))
    z = np.array(z)
    # independent items: the z's are independent, each about N(0, 1) (the reported variance of the
    # rare cell is its sampling variance plus the oracle's)
    assert np.all(np.abs(z) < 5), z
    assert abs(z.sum()) / np.sqrt(d) < 4, z

