"""A collection served by ``lopub serve``: its public description and report validation.

A collection is either a marginal-sampling plan (:class:`lopub.collect.MarginalPlan`,
each person reports one assigned subset through its oracle) or a LoPub Bloom
spec (:class:`lopub.CollectionSpec`, each person reports their whole record).

Wire format of one report (JSON, see :mod:`lopub.client.device`):

* marginal plan: ``{"token": T, "subset": i, "report": R}`` with ``R`` an
  integer code (GRR), the hex of ``ceil(k/8)`` packed bytes (OUE) or
  ``[a, b, y]`` (OLH); ``i`` must be the subset the token assigns.
* Bloom spec: ``{"token": T, "report": H}`` with ``H`` the hex of the
  packed report (``spec.packed_bytes`` bytes, padding bits zero).

Stored payloads (bytes): GRR int64 little-endian; OUE and Bloom the packed
bytes; OLH three int64.  :meth:`Collection.validate` checks a whole batch
with NumPy and returns the payloads of the valid reports and a message for
every invalid one.  Nothing of an invalid report is stored.
"""
from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from lopub.client.device import HASH_PRIME, oracle_params


#: probability that an honest unary or Bloom report is refused for having too many ones
HONEST_TAIL = 1e-9


@dataclass(frozen=True)
class Collection:
    """One collection: a name and a MarginalPlan or a CollectionSpec."""

    name: str
    params: Any

    @property
    def kind(self) -> str:
        """``"marginal"`` or ``"bloom"``."""
        from lopub.collect import MarginalPlan

        return "marginal" if isinstance(self.params, MarginalPlan) else "bloom"

    @property
    def n_subsets(self) -> int:
        return self.params.n_subsets if self.kind == "marginal" else 1

    @property
    def epsilon(self) -> float:
        p = self.params
        return float(p.epsilon if self.kind == "marginal" else p.summary()["epsilon_per_record"])

    @property
    def params_id(self) -> str:
        """The plan's ``plan_id``, or for a Bloom spec the first 16 hex digits of the SHA-256
        of its canonical JSON (sorted keys, no spaces): what the store records."""
        if self.kind == "marginal":
            return str(self.params.plan_id)
        import hashlib

        text = json.dumps(self.params.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    @classmethod
    def load(cls, name: str, path: str | os.PathLike) -> "Collection":
        """Read a plan or spec JSON file (``lopub-marginal-plan`` or ``lopub-spec``)."""
        from lopub import CollectionSpec
        from lopub.collect import MarginalPlan
        from lopub.formats._io import parse_json

        expected = "; expected a plan (lopub serve-plan) or spec JSON file"
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except UnicodeDecodeError:
            raise ValueError(f"collection file {str(path)!r}: not UTF-8 text{expected}") from None
        obj = parse_json(text, ValueError, f"collection file {str(path)!r}", expected)
        fmt = obj.get("format") if isinstance(obj, dict) else None
        if fmt == "lopub-marginal-plan":
            return cls(name, MarginalPlan.from_dict(obj))
        if fmt == "lopub-spec":
            return cls(name, CollectionSpec.from_dict(obj))
        raise ValueError(f"collection file {str(path)!r} has format {fmt!r}; expected "
                         "'lopub-marginal-plan' or 'lopub-spec'")

    def describe(self) -> dict[str, Any]:
        """The public description: everything a device needs, nothing private."""
        from lopub.collect import privacy_statement

        dom = self.params.domain
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "plan_id": self.params_id,
                               "epsilon": self.epsilon,
                               "privacy": privacy_statement(self.epsilon)[0],
                               "questions": {a: list(dom.labels(a)) for a in dom.attrs}}
        if self.kind == "marginal":
            out["plan"] = self.params.to_dict()
            out["subset_oracles"] = [oracle_params(self.params, i) for i in range(self.n_subsets)]
        else:
            out["spec"] = self.params.to_dict()
        return out

    def payload_size(self, i: int) -> int:
        """Bytes of one stored payload of subset ``i``."""
        if self.kind == "bloom":
            return int(self.params.packed_bytes)
        oracle = self.params.oracles[i]
        return {"grr": 8, "olh": 24}.get(oracle, (self.params.cells(i) + 7) // 8)

    def max_ones(self, i: int) -> int:
        """Most ones an honest OUE or Bloom report of subset ``i`` has, but with probability
        below :data:`HONEST_TAIL` (refusing more bounds what one fake report can push).

        OUE: ``1 + Bin(k - 1, q)`` (own bit plus the others).  Bloom: every one of the
        ``sum h`` set bits plus ``Bin(sum m, f/2)`` flipped up (an upper bound).
        """
        if self.kind == "bloom":
            spec = self.params
            return sum(spec.h) + _binom_tail(spec.total_bits, spec.f / 2)
        o = self.params.oracle(i)
        return 1 + _binom_tail(o.k - 1, o.q)

    def validate(self, items: list, subsets: np.ndarray) -> tuple[list[bytes | None], dict[int, str]]:
        """Check the reports ``items`` (parsed JSON objects) whose tokens assign ``subsets``.

        Returns one payload per item (``None`` where invalid) and, per invalid
        item index, a message naming what is wrong.
        """
        payloads: list[bytes | None] = [None] * len(items)
        errors: dict[int, str] = {}
        reports = [it.get("report") if isinstance(it, dict) else None for it in items]
        if self.kind == "marginal":
            claimed = [it.get("subset") if isinstance(it, dict) else None for it in items]
            arr = np.array([c if type(c) is int and 0 <= c < 2**31 else -3 for c in claimed], dtype=np.int64)
            for j in np.flatnonzero((arr != subsets) & (subsets >= 0)).tolist():  # the refused ones only
                errors[j] = f"subset ({claimed[j]!r}) must be the subset assigned by the token ({subsets[j]})"
        for i in np.unique(subsets[subsets >= 0]).tolist():  # one vectorized check per subset present
            rows = [j for j in np.flatnonzero(subsets == i).tolist() if j not in errors]
            if rows:
                kind = "bloom" if self.kind == "bloom" else self.params.oracles[i]
                self._check_group(kind, i, rows, [reports[j] for j in rows], payloads, errors)
        return payloads, errors

    def _check_group(self, kind: str, i: int, rows: list[int], reps: list, payloads: list,
                     errors: dict[int, str]) -> None:
        if kind == "grr":
            ok, vals = _ints(reps, 0, max(2, self.params.cells(i)) - 1, 1)
            what = f"an integer code in [0, {max(2, self.params.cells(i)) - 1}]"
            blobs = vals.astype("<i8").tobytes() if vals.size else b""
            size = 8
        elif kind == "olh":
            g = int(self.params.oracle(i).g)
            ok, vals = _olh(reps, g)
            what = f"[a, b, y] with a in [1, {HASH_PRIME - 1}], b in [0, {HASH_PRIME - 1}], y in [0, {g - 1}]"
            blobs = vals.astype("<i8").tobytes() if vals.size else b""
            size = 24
        else:
            bits = self.params.total_bits if kind == "bloom" else max(2, self.params.cells(i))
            ok, packed = _hex_bits(reps, bits)
            cap = self.max_ones(i)
            heavy = np.unpackbits(packed, axis=1).sum(axis=1) > cap  # implausibly many ones
            ok[np.flatnonzero(ok)[heavy]] = False
            packed = packed[~heavy]
            what = (f"hex of {(bits + 7) // 8} bytes of {bits} packed bits (padding bits zero) "
                    f"with at most {cap} ones")
            blobs = packed.tobytes() if packed.size else b""
            size = (bits + 7) // 8
        good = np.flatnonzero(ok)
        for pos, j in enumerate(rows):
            if not ok[pos]:
                errors[j] = f"report ({_short(reps[pos])}) must be {what}"
        for pos, k in enumerate(good.tolist()):
            payloads[rows[k]] = blobs[pos * size:(pos + 1) * size]


@functools.lru_cache(maxsize=1024)
def _binom_tail(n: int, p: float) -> int:
    """Smallest c with Pr[Bin(n, p) > c] <= HONEST_TAIL."""
    from scipy import stats

    return int(stats.binom.isf(HONEST_TAIL, n, p))


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _ints(reps: list, lo: int, hi: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Which reports are integers in ``[lo, hi]`` (JSON booleans refused); the valid ones."""
    ok = np.fromiter((type(r) is int and lo <= r <= hi for r in reps), dtype=bool, count=len(reps))
    return ok, np.array([r for r, k in zip(reps, ok.tolist()) if k], dtype=np.int64)


def _olh(reps: list, g: int) -> tuple[np.ndarray, np.ndarray]:
    """Which reports are ``[a, b, y]`` rows in range; the valid rows (int64 ``(n, 3)``)."""
    shaped = np.fromiter((type(r) is list and len(r) == 3
                          and all(type(x) is int and 0 <= x < HASH_PRIME for x in r)
                          for r in reps), dtype=bool, count=len(reps))
    arr = np.array([r if s else [0, 0, 0] for r, s in zip(reps, shaped.tolist())],
                   dtype=np.int64).reshape(-1, 3)
    ok = shaped & (arr[:, 0] >= 1) & (arr[:, 2] < g)
    return ok, arr[ok]


def _hex_bits(reps: list, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Which reports are hex strings of ``bits`` packed bits with zero padding; their bytes."""
    width = (bits + 7) // 8
    shaped = np.fromiter((type(r) is str and len(r) == 2 * width for r in reps), dtype=bool,
                         count=len(reps))
    raw = np.zeros((len(reps), width), dtype=np.uint8)
    rows = np.flatnonzero(shaped)
    try:  # one parse of the whole batch; only a batch with bad hex is parsed report by report
        raw[rows] = np.frombuffer(bytes.fromhex("".join([reps[p] for p in rows.tolist()])),
                                  dtype=np.uint8).reshape(rows.size, width)
    except ValueError:
        for pos in rows.tolist():
            try:
                raw[pos] = np.frombuffer(bytes.fromhex(reps[pos]), dtype=np.uint8)
            except ValueError:
                shaped[pos] = False
    ok = shaped.copy()
    if bits % 8 and width:
        ok &= (raw[:, -1] & np.uint8(0xFF >> (bits % 8))) == 0
    return ok, raw[ok]
