"""Datasets of the benchmarks by name, all available offline.

``load(name, n=None, seed=0)`` returns a :class:`lopub.data.dataset.Dataset`.
``n`` is the number of records where the source is a generator (Bayesian
network samples, the embedded network, the synthetic stress shape) or a
resample (``adult-1m``); ``None`` keeps the data as shipped.  Real files come
from ``$LOPUB_DATA_DIR`` (never copied into the repository); network samples
are cached under ``$LOPUB_BENCH_CACHE`` (default ``~/.cache/lopub/bench``).

Domains of binned data (scikit-learn's numeric features) are quantile bins
of the data itself: a benchmark convenience (a deployment takes its domain
from public data).
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: pgmpy's bundled networks used by the suite (all read offline from pgmpy's package data)
NETWORKS = ("asia", "sachs", "survey", "alarm", "child", "insurance", "water", "mildew", "barley",
            "hailfinder", "hepar2", "andes")


@dataclass(frozen=True)
class Source:
    """A named dataset: its loader ``load(n, seed)`` and a one-line shape."""

    name: str
    shape: str
    load: Callable


def _adult(n, seed, *, drop_missing=True):
    from lopub.datasets import load_adult

    data = load_adult(drop_missing=drop_missing)
    if n is None:
        return data
    rows = np.random.default_rng(10_000 + seed).integers(0, data.n, size=n)
    return data.subset(rows)


def _embedded(n, seed):
    from lopub.datasets import embedded

    return embedded(20_000 if n is None else n, rng=seed)


def _retail(n, seed):
    from lopub.datasets import load_retail

    return load_retail()


def _retail_top(k):
    def load(n, seed):
        from lopub.data.dataset import Dataset
        from lopub.data.domain import Domain
        from lopub.datasets import data_path
        from lopub.datasets.retail import parse_transactions

        txn, item, total = parse_transactions(data_path("retail", "retail.dat", None, download=False).read_bytes())
        ids, counts = np.unique(item, return_counts=True)
        top = ids[np.argsort(-counts, kind="stable")[:k]]
        col = {int(i): j for j, i in enumerate(top)}
        hit = np.isin(item, top)
        codes = np.zeros((total, k), dtype=np.uint8)
        codes[txn[hit], [col[int(i)] for i in item[hit]]] = 1
        dom = Domain.from_categories({f"item_{i}": ("0", "1") for i in top})
        return Dataset(codes, dom)
    return load


def _sklearn(name, bins=4):
    def load(n, seed):
        import sklearn.datasets as skd

        from lopub.data.dataset import Dataset
        from lopub.data.schema import infer_domain

        df = getattr(skd, f"load_{name}")(as_frame=True).frame
        if name == "digits":  # 64 pixels, intensity 0-16, binarized at 8 (the digit left out)
            df = (df.drop(columns="target") >= 8).astype(int).astype(str)
        return Dataset.from_pandas(df, infer_domain(df, bins=bins, max_categories=10))
    return load


def _cache() -> Path:
    return Path(os.environ.get("LOPUB_BENCH_CACHE", Path.home() / ".cache" / "lopub" / "bench"))


def _network(name):
    def load(n, seed):
        from lopub.data.dataset import Dataset
        from lopub.data.domain import Domain

        n = 50_000 if n is None else n
        file = _cache() / f"{name}-{n}-{seed}.npz"
        if file.exists():
            z = np.load(file, allow_pickle=False)
            dom = Domain.from_categories({a: tuple(z[f"cat_{j}"]) for j, a in enumerate(z["attrs"])})
            return Dataset(z["codes"], dom)
        import logging

        import pandas as pd
        from pgmpy.sampling import BayesianModelSampling
        from pgmpy.utils import get_example_model

        logging.getLogger("pgmpy").setLevel(logging.ERROR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = get_example_model(name)
        nodes = sorted(model.nodes())
        states = {v: [str(s) for s in model.get_cpds(v).state_names[v]] for v in nodes}
        df = BayesianModelSampling(model).forward_sample(size=n, seed=seed, show_progress=False)
        codes = np.column_stack([pd.Categorical(df[v].astype(str), categories=states[v]).codes for v in nodes])
        if (codes < 0).any():
            raise ValueError(f"network {name!r}: a sampled state is not among the CPDs' state names")
        from lopub.io import OutputLockedError, atomic_write

        def write(tmp):
            with open(tmp, "wb") as fh:  # a handle: savez would add ".npz" to the temporary's name
                np.savez_compressed(fh, codes=codes.astype(np.uint8), attrs=np.array(nodes),
                                    **{f"cat_{j}": np.array(states[v]) for j, v in enumerate(nodes)})

        file.parent.mkdir(parents=True, exist_ok=True)
        try:  # atomic: concurrent loaders (test workers, parallel suite runs) never read half a file
            atomic_write(file, write)
        except OutputLockedError:  # another process is caching the same sample (same name, seed, rows)
            pass
        return Dataset(codes.astype(np.uint8), Domain.from_categories({v: tuple(states[v]) for v in nodes}))
    return load


def _stress(n, seed, d=24):
    """A chain Bayesian network of ``d`` attributes with 2-16 categories and peaked conditionals."""
    from lopub.data.dataset import Dataset
    from lopub.data.domain import Domain

    n = 20_000 if n is None else n
    gen = np.random.default_rng(24_000)  # the network is fixed; ``seed`` draws the records
    sizes = gen.choice([2, 3, 4, 8, 16], size=d)
    rng = np.random.default_rng(seed)
    codes = np.empty((n, d), dtype=np.uint8)
    codes[:, 0] = rng.choice(sizes[0], size=n, p=gen.dirichlet(np.full(sizes[0], 0.5)))
    for j in range(1, d):  # attributes, not users
        cpt = gen.dirichlet(np.full(sizes[j], 0.2), size=sizes[j - 1]).cumsum(axis=1)
        u = rng.random(n)[:, None]
        codes[:, j] = np.minimum((u > cpt[codes[:, j - 1]]).sum(axis=1), sizes[j] - 1)
    dom = Domain.from_categories({f"x{j:02d}": tuple(str(c) for c in range(s)) for j, s in enumerate(sizes)})
    return Dataset(codes, dom)


def _latent20(n, seed):
    """20 binary survey-like answers driven by a 3-class latent variable: every pair dependent."""
    import pandas as pd

    from lopub.data.dataset import Dataset
    from lopub.data.domain import Domain

    n = 20_000 if n is None else n
    g = np.random.default_rng(seed)
    z = g.integers(0, 3, n)
    p = g.beta(0.7, 0.7, size=(3, 20))
    x = (g.random((n, 20)) < p[z]).astype(int)
    cols = [f"q{j:02d}" for j in range(20)]
    dom = Domain.from_categories({c: ["0", "1"] for c in cols})
    return Dataset.from_pandas(pd.DataFrame({c: x[:, j].astype(str) for j, c in enumerate(cols)}), dom)


def _alarm20(n, seed):
    """The first 20 non-constant nodes of pgmpy's ALARM, each binarized as "most frequent value or not"."""
    import pandas as pd
    from pgmpy.sampling import BayesianModelSampling
    from pgmpy.utils import get_example_model

    from lopub.data.dataset import Dataset
    from lopub.data.domain import Domain

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = BayesianModelSampling(get_example_model("alarm")).forward_sample(
            size=20_000 if n is None else n, seed=seed, show_progress=False)
    cols = [c for c in df.columns if df[c].nunique() > 1][:20]
    out = pd.DataFrame({c: np.where(df[c] == df[c].mode()[0], "1", "0") for c in cols})
    return Dataset.from_pandas(out, Domain.from_categories({c: ["0", "1"] for c in cols}))


SOURCES: dict[str, Source] = {s.name: s for s in [
    Source("adult", "Adult, 45,222 records without missing values, 15 attributes", _adult),
    Source("adult-missing", "Adult as shipped, 48,842 records, '?' kept as a category",
           lambda n, seed: _adult(n, seed, drop_missing=False)),
    Source("adult-1m", "Adult resampled to 10^6 records with replacement", lambda n, seed: _adult(n or 10**6, seed)),
    Source("embedded", "lopub's embedded census-like network", _embedded),
    Source("retail", "FIMI retail, 88,162 baskets, lopub's packaged 16 items", _retail),
    Source("retail20", "FIMI retail, 88,162 baskets, top 20 items binary", _retail_top(20)),
    Source("retail100", "FIMI retail, 88,162 baskets, top 100 items binary", _retail_top(100)),
    Source("breast_cancer", "scikit-learn, 569 records, 30 features in 4 quantile bins + class",
           _sklearn("breast_cancer")),
    Source("wine", "scikit-learn, 178 records, 13 features in 4 bins + class", _sklearn("wine")),
    Source("diabetes", "scikit-learn, 442 records, 10 features in 4 bins + target in 4 bins", _sklearn("diabetes")),
    Source("digits", "scikit-learn, 1,797 images, 64 binarized pixels", _sklearn("digits")),
    Source("stress", "synthetic chain network, 24 attributes of 2-16 categories", _stress),
    *(Source(f"bn-{m}", f"pgmpy's {m} network, forward samples", _network(m)) for m in NETWORKS),
    Source("latent20", "20 binary answers of a 3-class latent survey, 20,000 records (seed: the data)", _latent20),
    Source("alarm20", "pgmpy's ALARM, 20 nodes binarized, 20,000 forward samples (seed: the data)", _alarm20),
]}



def load(name: str, n: int | None = None, seed: int = 0):
    """The dataset ``name`` (one of :data:`SOURCES`) with ``n`` records where it is generated."""
    if name not in SOURCES:
        raise ValueError(f"dataset ({name!r}) must be one of {sorted(SOURCES)}")
    return SOURCES[name].load(n, seed)
