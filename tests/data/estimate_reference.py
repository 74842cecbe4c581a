"""Reference results of the estimators (``python tests/data/estimate_reference.py`` regenerates).

The values in ``estimate_reference.npz`` were computed by the estimator code of
commit 938281e (one ``Estimator`` class with ``_fit_*`` methods), before the
estimators were split into one class per method; ``test_estimate_reference.py``
checks that today's code reproduces them bit for bit.

Except the moment cases: since the moment estimator computes its statistics
as sums over users in a streaming pass (issue 13), its tables differ from
938281e's by rounding only (at most 1.5e-15, same iterations);
``estimate_reference_moment_stream.npz`` (``python
tests/data/estimate_reference.py --stream`` regenerates) holds the streaming
code's values, checked bit for bit, and the 938281e values are checked to
1e-14.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from lopub.client.encode import encode
from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.reports.spec import CollectionSpec

PATH = Path(__file__).with_name("estimate_reference.npz")
STREAM_PATH = Path(__file__).with_name("estimate_reference_moment_stream.npz")
STREAM_TOLERANCE = 1e-14  # moment (streaming sums) vs the 938281e values
QUERIES = (("a", "c"), ("b", "a"), ("a", "b", "c"))
CASES = {
    "em": ("em", {}),
    "em_paper": ("em", {"stop_rule": "paper", "tol": 1e-4, "accelerate": False}),
    "moment": ("moment", {}),
    "moment_global": ("moment", {"shrink": "global"}),
    "moment_none_ols": ("moment", {"shrink": "none", "solver": "ols", "postprocess": "none"}),
    "moment_raw": ("moment", {"design": "raw", "shrink": "none"}),
    "lasso": ("lasso", {}),
    "hybrid": ("hybrid", {}),
    "hybrid_stop_se": ("hybrid", {"stop_se": 0.05}),
    "hybrid_lasso": ("hybrid-lasso", {}),
    "em_simplex": ("em", {"postprocess": "simplex", "start": "independent"}),
}


def reports():
    """Domain a(3) b(2) c(4); 3000 records from a fixed joint; Bloom reports at f = 0.4."""
    dom = Domain.from_categories({"a": ["a0", "a1", "a2"], "b": ["b0", "b1"],
                                  "c": ["c0", "c1", "c2", "c3"]})
    rng = np.random.default_rng(2024)
    p = rng.dirichlet(np.ones(24)).reshape(3, 2, 4)
    flat = rng.choice(p.size, size=3000, p=p.ravel())
    data = Dataset(np.stack(np.unravel_index(flat, p.shape), axis=1), dom)
    spec = CollectionSpec.from_domain(dom, f=0.4, m=16, h=2)
    return encode(data, spec, rng=5)


def key(case: str, attrs) -> str:
    return case + ":" + ",".join(attrs)


def streaming(case: str) -> bool:
    """Whether ``case`` runs the moment estimator (statistics from streaming sums)."""
    return CASES[case][0] == "moment"


def compute(estimate, cases=None) -> dict[str, np.ndarray]:
    rep = reports()
    out = {}
    for case, (method, opts) in CASES.items():
        if cases is not None and case not in cases:
            continue
        for attrs in QUERIES:
            m = estimate(rep, list(attrs), method, **opts)
            out[key(case, attrs)] = m.values
            out[key(case, attrs) + ":iterations"] = np.array(m.meta["iterations"])
    return out


if __name__ == "__main__":
    import sys

    from lopub.estimate import estimate

    if "--stream" in sys.argv:
        np.savez(STREAM_PATH, **compute(estimate, [c for c in CASES if streaming(c)]))
        print(f"wrote {STREAM_PATH}")
    else:
        np.savez(PATH, **compute(estimate))
        print(f"wrote {PATH}")
