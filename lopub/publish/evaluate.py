"""Utility of a release: TVD/AVD over k-way marginals, correlation identification, classifiers
trained on the release and tested on real records.

Every source answers ``project(attrs)`` (or ``marginal(attrs)``): a
:class:`~lopub.data.dataset.Dataset` of real or synthetic records, a fitted
:class:`~lopub.model.graphical.Model`, an estimator, an exact model.  So the same code
compares real data with a release, with a model, or with the truth.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Eq. 32 (AVD = 1/2 sum |P - Q|, i.e. the
total variation distance) averaged over random k-subsets of attributes, and
Sec. VII-C (correlation identification: accuracy, added and lost edges), Sec. VI-D (SVM and
random forest trained on the release, tested on real records).
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from lopub._util import check_int, resolve_rng
from lopub.dependency.cache import query_source
from lopub.data.marginal import Marginal
from lopub.data.pairs import pair_source
from lopub.errors import DomainError


def tvd(p: Marginal, q: Marginal) -> float:
    """Total variation distance 1/2 sum |P - Q| over the cells of ``p`` (Eq. 32).

    References
    ----------
    Ren et al., IEEE TIFS 2018, Eq. 32.
    """
    return p.avd(q)


def _domain_of(source: Any):
    dom = getattr(source, "domain", None)
    if dom is None:
        raise TypeError(f"source ({type(source).__name__}) has no domain")
    return dom


def k_subsets(attrs: Sequence[str], k: int, subsets: int | None = None, *,
              rng: np.random.Generator | int | None = None) -> list[tuple[str, ...]]:
    """All k-subsets of ``attrs``, or ``subsets`` of them drawn without replacement.
    """
    k = check_int("k", k, 1)
    if k > len(attrs):
        raise ValueError(f"k ({k}) must be at most the number of attributes ({len(attrs)})")
    total = math.comb(len(attrs), k)
    if subsets is None or subsets >= total:
        return list(itertools.combinations(attrs, k))
    subsets = check_int("subsets", subsets, 1)
    gen = resolve_rng(rng)
    if total <= 1_000_000:
        every = list(itertools.combinations(attrs, k))
        return [every[i] for i in sorted(gen.choice(total, size=subsets, replace=False))]
    seen: set[tuple[str, ...]] = set()
    while len(seen) < subsets:  # loop over subsets, not records
        pick = tuple(sorted(gen.choice(len(attrs), size=k, replace=False)))
        seen.add(tuple(attrs[i] for i in pick))
    return sorted(seen)


def average_tvd(real: Any, synthetic: Any, k: int = 2, *, subsets: int | None = None,
                attrs: Sequence[str] | None = None,
                rng: np.random.Generator | int | None = None) -> dict[str, Any]:
    """Average TVD between ``real`` and ``synthetic`` over k-way marginals.

    Parameters
    ----------
    real, synthetic : projectable
        Objects with ``project(attrs)``/``marginal(attrs)`` over the same domain.
    k : int
        Marginal order.
    subsets : int, optional
        Sample this many k-subsets (the paper uses 100); all when None.
    attrs : sequence of str, optional
        Restrict to these attributes (default: the real source's domain).
    rng : Generator, int or None
        For the subset sample.

    Returns
    -------
    dict with ``k``, ``subsets`` (count), ``mean``, ``max``, ``per_subset``.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Eq. 32 and Sec. VII.
    """
    attrs = list(_domain_of(real).attrs if attrs is None else attrs)
    sets = k_subsets(attrs, k, subsets, rng=rng)
    real, synthetic = pair_source(real, sets), pair_source(synthetic, sets)  # all pairs at once
    per = [(s, tvd(query_source(real, list(s)), query_source(synthetic, list(s)))) for s in sets]
    vals = np.array([v for _, v in per])
    return {"k": k, "subsets": len(per), "mean": float(vals.mean()), "max": float(vals.max()),
            "per_subset": [{"attrs": list(s), "tvd": float(v)} for s, v in per]}


def per_attribute_tvd(real: Any, synthetic: Any,
                      attrs: Sequence[str] | None = None) -> dict[str, float]:
    """TVD of every one-way marginal, by attribute name.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Eq. 32.
    """
    attrs = list(_domain_of(real).attrs if attrs is None else attrs)
    return {a: tvd(query_source(real, [a]), query_source(synthetic, [a])) for a in attrs}


def _norm(edges: Iterable[Sequence[str]]) -> set[frozenset]:
    return {frozenset(e) for e in edges}


def correlation_identification(found: Iterable[Sequence[str]], truth: Iterable[Sequence[str]],
                               attrs: Sequence[str]) -> dict[str, Any]:
    """Compare an estimated dependency graph with a reference graph.

    Parameters
    ----------
    found, truth : iterables of attribute pairs (edges)
    attrs : sequence of str
        All attributes; every unordered pair is one decision.

    Returns
    -------
    dict with ``accuracy`` (share of pairs whose edge/no-edge decision
    matches), ``added`` (edges in ``found`` only, false positives), ``lost``
    (edges in ``truth`` only), ``recall`` (share of true edges found),
    ``pairs``, ``true_edges``, ``found_edges`` and the edge lists.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Sec. VII-C (Tables IV-VI).
    """
    attrs = list(attrs)
    pos = {a: i for i, a in enumerate(attrs)}
    f, t = _norm(found), _norm(truth)
    for e in f | t:
        bad = [a for a in e if a not in pos]
        if bad or len(e) != 2:
            raise ValueError(f"edge {sorted(e)} must join two distinct attributes of {attrs}")
    pairs = math.comb(len(attrs), 2)
    added, lost = f - t, t - f
    order = lambda es: sorted((sorted(e, key=pos.__getitem__) for e in es),  # noqa: E731
                              key=lambda e: (pos[e[0]], pos[e[1]]))
    return {
        "pairs": pairs, "true_edges": len(t), "found_edges": len(f),
        "accuracy": (pairs - len(added) - len(lost)) / pairs if pairs else 1.0,
        "added": len(added), "lost": len(lost),
        "recall": (len(t & f) / len(t)) if t else 1.0,
        "added_edges": order(added), "lost_edges": order(lost),
    }


def evaluate_release(real: Any, synthetic: Any, *, k: int = 2, subsets: int | None = None,
                     rng: np.random.Generator | int | None = None) -> dict[str, Any]:
    """Average k-way TVD plus per-attribute TVD (the ``lopub evaluate`` report).
    """
    out = average_tvd(real, synthetic, k, subsets=subsets, rng=rng)
    out["per_attribute"] = per_attribute_tvd(real, synthetic)
    return out


def _onehot(codes: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """One-hot encode integer codes (n, c) with per-column sizes -> float32 (n, sum sizes)."""
    off = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    out = np.zeros((codes.shape[0], int(np.sum(sizes))), dtype=np.float32)
    out[np.arange(codes.shape[0])[:, None], codes.astype(np.int64) + off] = 1.0
    return out


def _same_domain(train: Any, test: Any, what: str) -> None:
    """Codes of two domains do not mean the same values: refuse them (the accuracies would be silently wrong)."""
    if train.domain != test.domain:
        raise DomainError(f"{what}: train (attributes {list(train.domain.attrs)[:8]}) and test (attributes "
                          f"{list(test.domain.attrs)[:8]}) must be coded against the same domain")


def classification_accuracy(train: Any, test: Any, *, trees: int = 50, max_train: int | None = None,
                            random_state: int | Mapping[str, int] | None = None,
                            rng: np.random.Generator | int | None = None) -> dict[str, dict[str, float]]:
    """Test accuracy of classifiers trained on ``train`` (e.g. a synthetic release) and tested on ``test``.

    Every attribute in turn is the target, predicted from all the others: a random forest
    (``trees`` trees, at least 5 records per leaf, on the integer codes) and, for binary
    targets, a linear SVM (on one-hot codes). Nothing is tuned. A training set whose target
    takes one value predicts that value.

    Parameters
    ----------
    train, test : Dataset
        Integer-coded records over the same domain (``test``: real records held out).
    trees : int
        Random forest size.
    max_train : int, optional
        Train on at most this many records of ``train`` (a sample drawn with ``rng``).
    random_state : int or mapping attribute -> int, optional
        The forests' seed, one for all targets or one per target.
    rng : Generator, int or None
        For the training sample.

    Returns
    -------
    dict ``{"rf": {attribute: accuracy}, "svm": {binary attribute: accuracy}}``.

    Raises
    ------
    DomainError
        ``train`` and ``test`` are coded against different domains.

    References
    ----------
    Ren et al., IEEE TIFS 2018, Sec. VI-D.
    """
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.svm import LinearSVC

    _same_domain(train, test, "classification_accuracy")
    sizes = np.asarray(train.domain.sizes)
    tr, te = train.codes, test.codes
    if max_train is not None and tr.shape[0] > max_train:
        tr = tr[np.sort(resolve_rng(rng).choice(tr.shape[0], max_train, replace=False))]
    out: dict[str, dict[str, float]] = {"svm": {}, "rf": {}}
    for j, a in enumerate(train.domain.attrs):
        rest = [i for i in range(len(sizes)) if i != j]
        y, yt = tr[:, j], te[:, j]
        if np.unique(y).size < 2:  # one label: predict it
            out["rf"][a] = float(np.mean(yt == y[0]))
            if sizes[j] == 2:
                out["svm"][a] = out["rf"][a]
            continue
        seed = random_state.get(a) if isinstance(random_state, Mapping) else random_state
        rf = RandomForestClassifier(n_estimators=trees, min_samples_leaf=5, n_jobs=1, random_state=seed)
        out["rf"][a] = float(np.mean(rf.fit(tr[:, rest], y).predict(te[:, rest]) == yt))
        if sizes[j] == 2:
            svm = LinearSVC(C=1.0, dual="auto", max_iter=2000).fit(_onehot(tr[:, rest], sizes[rest]), y)
            out["svm"][a] = float(np.mean(svm.predict(_onehot(te[:, rest], sizes[rest])) == yt))
    return out


def baseline_accuracy(train: Any, test: Any) -> dict[str, dict[str, float]]:
    """What :func:`classification_accuracy` compares with, per target attribute: ``"majority"`` (the most
    frequent value of ``train`` predicted for every record of ``test``) and ``"random"`` (1 / its values).
    """
    _same_domain(train, test, "baseline_accuracy")
    maj, rnd = {}, {}
    for j, (a, size) in enumerate(zip(train.domain.attrs, train.domain.sizes)):
        maj[a] = float(np.mean(test.codes[:, j] == np.bincount(train.codes[:, j], minlength=size).argmax()))
        rnd[a] = 1.0 / size
    return {"majority": maj, "random": rnd}
