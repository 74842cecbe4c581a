"""Export stored reports to the files that ``lopub fit`` reads, shuffled and without identities.

A marginal plan's reports become a ``lopub-marginal-reports`` ``.npz``
(:meth:`lopub.collect.MarginalReports.save`); Bloom reports a Parquet
reports file or dataset folder (:meth:`lopub.Reports.save`).  The order of
storage (which follows arrival) is destroyed by a uniformly random
permutation drawn from OS entropy; tokens and arrival times are not in the
store's report rows to begin with.  The shuffle is what the shuffle-model
accounting (:mod:`lopub.reports.shuffle`) assumes.
"""
from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from lopub.serve.protocol import Collection
from lopub.serve.storage import ID_LABEL, PlanMismatchError, Store, mismatch_message


def decode_group(c: Collection, i: int, blobs: list[bytes]) -> np.ndarray:
    """The oracle-format reports of subset ``i`` from their stored payloads."""
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    if c.kind == "bloom":
        return raw.reshape(-1, c.params.packed_bytes).copy()
    oracle = c.params.oracles[i]
    if oracle == "grr":
        return raw.view("<i8").astype(np.int64)
    if oracle == "olh":
        return raw.view("<i8").astype(np.int64).reshape(-1, 3)
    k = max(2, c.params.cells(i))
    return np.unpackbits(raw.reshape(-1, (k + 7) // 8), axis=1, count=k).astype(bool)


def check_recorded(store: Store, c: Collection) -> bool:
    """Whether the store recorded ``c``'s plan or spec id (``False``: a store from before ids were
    recorded, which cannot be checked; a warning says so).

    Raises :class:`~lopub.serve.storage.PlanMismatchError` if it recorded another id: the
    reports were made under another plan or spec and would be relabelled.
    """
    rec = store.recorded(c.name)
    if rec is not None and rec[1] != c.params_id:
        raise PlanMismatchError(mismatch_message(c.name, store.where, rec[0], rec[1], c.params_id))
    if rec is None and store.count(c.name) > 0:
        warnings.warn(f"store {store.where!r} has no plan record for collection {c.name!r} (its "
                      f"reports were stored before stores recorded plans): it cannot check they "
                      f"were collected under the {'plan' if c.kind == 'marginal' else 'spec'} given "
                      f"({ID_LABEL[c.kind]} {c.params_id!r})", stacklevel=2)
    return rec is not None


def shuffled_reports(store: Store, c: Collection, *, rng: np.random.Generator | int | None = None) -> Any:
    """``MarginalReports`` or ``Reports`` of everything stored for ``c``, in random order.

    Refuses (:class:`~lopub.serve.storage.PlanMismatchError`) a ``c`` whose plan or spec
    is not the one the store recorded for its reports.
    """
    check_recorded(store, c)
    subsets, payloads = store.fetch(c.name)
    perm = np.random.default_rng(rng).permutation(subsets.shape[0])  # rng=None: OS entropy
    subsets = subsets[perm]
    if c.kind == "bloom":
        from lopub import Reports

        return Reports(c.params, decode_group(c, 0, [payloads[j] for j in perm.tolist()]))
    from lopub.collect import MarginalReports

    order = np.argsort(subsets, kind="stable")  # grouped by subset, random within a group
    groups = []
    for i in range(c.n_subsets):  # one decode per subset
        rows = perm[order[subsets[order] == i]]
        groups.append(decode_group(c, i, [payloads[j] for j in rows.tolist()]))
    return MarginalReports(c.params, subsets[order].astype(np.int32), tuple(groups))


def check_target(c: Collection, out: str | os.PathLike) -> None:
    """Refuse an output path of the wrong kind: a marginal plan's reports go to a ``.npz`` file,
    a Bloom spec's to a ``.parquet`` file or a dataset folder (see :meth:`lopub.Reports.save`)."""
    from lopub.reports.folder import is_dataset_path

    path = os.fspath(out)
    suffix = os.path.splitext(path.rstrip("/" + os.sep))[1] or "(a folder)"
    if c.kind == "marginal" and (is_dataset_path(path) or not path.lower().endswith(".npz")):
        raise ValueError(f"OUT ({path}) must be a .npz file for collection {c.name!r} (a marginal "
                         f"plan's reports), not {suffix}; .parquet files and folders are for Bloom specs")
    if c.kind == "bloom" and not (is_dataset_path(path) or path.lower().endswith(".parquet")):
        raise ValueError(f"OUT ({path}) must be a .parquet file or a dataset folder for collection "
                         f"{c.name!r} (a Bloom spec's reports), not {suffix}; .npz files are for "
                         "marginal plans")


def export(store: Store, c: Collection, out: str | os.PathLike, *,
           rng: np.random.Generator | int | None = None) -> dict[str, Any]:
    """Write the shuffled reports of ``c`` to ``out``; returns a summary (no report content).

    Refuses, before reading anything, an ``out`` of the wrong kind (:func:`check_target`);
    then a ``c`` whose plan or spec is not the one its reports were stored under, or one
    without stored reports (naming the store searched and what it holds).
    """
    check_target(c, out)
    reports = shuffled_reports(store, c, rng=rng)
    if reports.n == 0:
        held = store.collections()
        raise ValueError(f"collection {c.name!r} has no stored reports in store {store.where!r} "
                         f"({'it holds reports of ' + repr(held) if held else 'it holds no reports'}); "
                         "name the store lopub serve used with --store")
    reports.save(out)
    return {"collection": c.name, "kind": c.kind, "n": int(reports.n), "out": str(out)}
