"""FIMI retail loader: 16 binary attributes, one per most frequent item.

``retail.dat`` holds one transaction a line, items as space-separated integer
ids.  The packaged schema (``lopub/datasets/schemas/retail.json``) fixes the 16 items
with the largest support in the full file (88,162 transactions); attribute
``item_<id>`` is ``"1"`` when the transaction contains the item.  Every
transaction becomes one record, including those holding none of the 16 items.

The LoPub paper reports 27,522 records for Retail after a selection it does
not specify; this loader does not try to reproduce it.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Sec. VII-A; Brijs et al., "Using
association rules for product assortment decisions", KDD 1999.
"""
from __future__ import annotations

import os

import numpy as np

from lopub.data.dataset import Dataset
from lopub.data.domain import Domain
from lopub.datasets._fetch import data_path, schema_dict


def retail_domain() -> Domain:
    """The packaged 16-attribute binary domain."""
    return Domain.from_dict(schema_dict("retail"))


def retail_items() -> tuple[int, ...]:
    """Item ids of the 16 attributes, in attribute order (decreasing support)."""
    return tuple(int(i) for i in schema_dict("retail")["source"]["items"])


def parse_transactions(raw: bytes) -> tuple[np.ndarray, np.ndarray, int]:
    """Vectorized parse of a FIMI file.

    Returns
    -------
    txn : ndarray of int64
        Transaction (line) index of every item token.
    item : ndarray of int64
        Item id of every token.
    n : int
        Number of transactions (lines).
    """
    b = np.frombuffer(raw, dtype=np.uint8)
    nl = np.flatnonzero(b == ord("\n"))
    n = int(nl.size + (1 if b.size and b[-1] != ord("\n") else 0))
    digit = (b >= ord("0")) & (b <= ord("9"))
    starts = np.flatnonzero(digit & ~np.concatenate(([False], digit[:-1])))
    tokens = raw.split()
    if len(tokens) != starts.size:
        raise ValueError("retail data holds tokens that are not non-negative integer item ids")
    item = np.array(tokens, dtype=np.int64)
    txn = np.searchsorted(nl, starts, side="left")
    return txn, item, n


def load_retail(path: str | os.PathLike | None = None, *, download: bool = True) -> Dataset:
    """Load FIMI retail as 16 binary attributes ``item_<id>`` (all 88,162 transactions).

    Parameters
    ----------
    path : path-like, optional
        ``retail.dat`` or a folder holding it (directly or under ``retail/``).
        Default: ``$LOPUB_DATA_DIR``, the cache, or a download.
    download : bool, default True
        Allow downloading into the user cache when no local copy exists.

    Returns
    -------
    Dataset
        Codes 0/1 of shape (n_transactions, 16).
    """
    file = data_path("retail", "retail.dat", path, download=download)
    with open(file, "rb") as fh:
        raw = fh.read()
    txn, item, n = parse_transactions(raw)
    if n == 0:
        raise ValueError(f"retail file ({str(file)!r}) holds no transactions")
    items = np.asarray(retail_items(), dtype=np.int64)
    order = np.argsort(items)
    pos = np.searchsorted(items[order], item)
    pos = np.minimum(pos, items.size - 1)
    hit = items[order][pos] == item
    codes = np.zeros((n, items.size), dtype=np.uint8)
    codes[txn[hit], order[pos[hit]]] = 1
    return Dataset(codes, retail_domain())
