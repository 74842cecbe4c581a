"""Probe (not a benchmark target run): hybrid EM stopped on EM's own standard errors.

The shipped ``stop_se`` option scales the stopping rule by the moment estimate's
standard errors, which are large at high f (the moment estimator is inefficient
there), so the stop is loose exactly where EM needs many steps.  This probe scales
it instead by ``1 / sqrt(diag I)``, the diagonal of EM's observed information at the
start point (a lower bound on the MLE's per-cell standard error, so a stricter
stop), and compares the hybrid with converged EM (tol 1e-6) on 25 seeded Adult
pairs.  It subclasses :class:`lopub.estimate.hybrid_estimator.HybridEstimator` and uses its internals.

    LOPUB_DATA_DIR=../shared/datasets python pipelines/probe_hybrid_stop.py F C info

F: flip probability; C: stop when the estimated remaining distance to the fixed
point is below C such standard errors in every cell.  Figures: docs/bench_estimators.md,
"Hybrid speed".
"""
import itertools
import time

import numpy as np
from lopub.datasets import load_adult
from lopub import CollectionSpec
from lopub.client import encode
from lopub.estimate import Estimator
from lopub.estimate import hybrid as _hybrid
from lopub.estimate.hybrid_estimator import HybridEstimator
from lopub.estimate.postprocess import postprocess as _post

def info_se(data, p):
    q = data.to_internal(p)
    I = np.zeros_like(q)
    for z, last in data.blocks():
        denom = np.maximum(np.einsum("us,us->u", z @ q, last), 1e-300)
        w = z / denom[:, None]
        I += (w * w).T @ (last * last)
    return data.from_internal(1.0 / np.sqrt(np.maximum(I, 1e-300)))

import argparse

_p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
_p.add_argument("f", type=float, help="flip probability")
_p.add_argument("c", type=float, help="stop below this many standard errors")
_p.add_argument("mode", choices=("info", "moment"), help="whose standard errors scale the stop")
ARGS = _p.parse_args()
C, MODE = ARGS.c, ARGS.mode
class H(HybridEstimator):
    def _fit(self, attrs):
        attrs = tuple(attrs)
        p_ols, var = self.moment_variance(attrs, self.options.design)
        se = np.sqrt(var)
        keep = p_ols > -2.0 * se
        fast, _ = self._fast(attrs, p_ols)
        fast = _post(fast, "clip").values
        mask, start = _hybrid.support_start(fast, threshold=0.0, mix=0.05, keep=keep)
        if MODE == "info":
            data = self._kway([self.cache.likelihood(a).values for a in attrs], attrs)
            scale = info_se(data, start)
        else:
            scale = np.maximum(se, 1e-12)
        p, meta, data = self._em(attrs, start, tol=C, scale=scale)
        return p, meta, self._variance(attrs, p, data, meta)

f = ARGS.f
ds = load_adult()
spec = CollectionSpec.from_domain(ds.domain, f=f)
rep = encode(ds, spec, rng=0)
truth = {}
pairs = list(itertools.combinations(ds.domain.attrs, 2))
rng = np.random.default_rng(0); idx = rng.choice(len(pairs), 25, replace=False)
pairs = [pairs[i] for i in idx]
em = Estimator(rep, "em", information_cells=0); hy = H(rep, information_cells=0)
for a in ds.domain.attrs: em.cache.likelihood(a); hy.cache.likelihood(a); hy.cache.projected(a)
res = {"em": [], "hy": []}
for pr in pairs:
    t = ds.project(list(pr)).values if hasattr(ds.project(list(pr)), "values") else None
    for name, est in (("em", em), ("hy", hy)):
        c0 = time.process_time(); m = est.marginal(list(pr)); c1 = time.process_time()
        res[name].append((0.5 * np.abs(m.values - t).sum(), c1 - c0, m.meta["iterations"]))
for name in res:
    a = np.array(res[name]); print(f"f={f} {name} {MODE} c={C}: AVD {a[:,0].mean():.5f} medCPU {np.median(a[:,1]):.4f} medIt {np.median(a[:,2]):.0f}")
r = np.array(res["hy"])[:,1] ; e = np.array(res["em"])[:,1]
print("  ratio median EM/hy", np.median(e)/np.median(r), " AVD ratio", np.array(res["hy"])[:,0].mean()/np.array(res["em"])[:,0].mean())
