"""Marginal-sampling reports and their file format.

File format (``lopub-marginal-reports``, version 3): one NumPy ``.npz``
archive (``numpy.savez_compressed``, loaded with ``allow_pickle=False``),
written atomically (temporary file, fsync, rename), with entries

``meta``
    UTF-8 JSON as a uint8 array: ``{"format": "lopub-marginal-reports",
    "version": 3, "plan": <MarginalPlan JSON>, "plan_id": ..., "n": N,
    "group_sizes": [n_0, ...], "report_kinds": ["grr", ...], "screened": S, "checksum": ...}``;
    ``screened`` (public, optional: files written before it have none and read as 0) counts the
    users whose reports only chose the plan, in a detection screen, and are not in the file: ``N +
    S`` users took part (:attr:`MarginalReports.users`);
    ``checksum`` is :func:`lopub.formats._io.npz_checksum` of the metadata
    and of every other entry, verified on reading (any damage, or a value
    edited, is a :class:`~lopub.errors.ReportsFormatError` naming the file).
    Version 1 files have no checksum: refused unless read with ``--no-verify``
    (:func:`lopub.io.unverified_reads`).
``subset``
    ``(N,)``: the subset id of every user, users ordered by subset.
``group_<i>`` (and ``seeds_<i>`` of an OLH group)
    The reports of subset ``i``'s users.  In memory, and in files of versions 1 and 2, they are
    in the oracle's format (``subset`` int32; GRR: int64 ``(n_i,)`` codes; OUE: bool
    ``(n_i, K_i)`` bits; OLH: int64 ``(n_i, 3)`` rows ``(a, b, y)``); version 3 stores every
    integer in the smallest unsigned dtype of its range and bits packed 8 a byte
    (:mod:`lopub.collect.reports_store`; an Adult export 0.68-0.75 of the size of version 2),
    and the reader gives the in-memory format back.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from lopub.collect.plan import MarginalPlan, PlanError
from lopub.collect.reports_store import narrowed, widened
from lopub.errors import ReportsFormatError
from lopub.formats._io import npz_checksum, parse_json
from lopub.io import atomic_write, missing_checksum

REPORTS_FORMAT = "lopub-marginal-reports"
REPORTS_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)


@dataclass(frozen=True)
class MarginalReports:
    """Reports of a marginal-sampling collection, grouped by subset.

    Parameters
    ----------
    plan : MarginalPlan
    subset : ndarray of int
        ``(N,)`` subset id per user, users ordered by subset (group ``i``'s
        users are the run of ``i``).
    groups : tuple of arrays
        ``groups[i]``: the oracle reports of subset ``i``'s users.
    screened : int, default 0
        Users whose reports only chose the plan (a detection screen,
        :class:`~lopub.collect.detect.DetectPlan`) and are not among these:
        public, costs no privacy; :attr:`users` counts them.
    """

    plan: MarginalPlan
    subset: np.ndarray
    groups: tuple
    screened: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.plan, MarginalPlan):
            raise TypeError(f"plan ({type(self.plan).__name__}) must be a MarginalPlan")
        if not isinstance(self.screened, (int, np.integer)) or isinstance(self.screened, bool):
            raise TypeError(f"screened ({self.screened!r}) must be an integer >= 0")
        if self.screened < 0:
            raise ValueError(f"screened ({self.screened}) must be an integer >= 0 (users of a screen)")
        object.__setattr__(self, "screened", int(self.screened))
        subset = np.asarray(self.subset)
        if subset.ndim != 1 or not np.issubdtype(subset.dtype, np.integer):
            raise ReportsFormatError(f"subset (shape {subset.shape}, dtype {subset.dtype}) must be "
                                     "a 1-D integer array")
        g = self.plan.n_subsets
        if len(self.groups) != g:
            raise ReportsFormatError(f"{len(self.groups)} report groups for a plan of {g} subsets")
        sizes = np.bincount(subset, minlength=g) if subset.size else np.zeros(g, dtype=int)
        if sizes.size != g or (subset.size and subset.min() < 0):
            raise ReportsFormatError(f"subset ids must be in [0, {g - 1}]")
        if subset.size > 1 and np.any(np.diff(subset) < 0):
            raise ReportsFormatError("subset must list users ordered by subset id")
        for i, rep in enumerate(self.groups):
            got = int(np.asarray(rep).shape[0])
            if got != sizes[i]:
                raise ReportsFormatError(f"group {i} ({list(self.plan.subsets[i])}) has {got} reports "
                                         f"but {sizes[i]} users are assigned to it")
        object.__setattr__(self, "subset", subset.astype(np.int32, copy=False))
        object.__setattr__(self, "groups", tuple(np.asarray(r) for r in self.groups))

    @property
    def plan_id(self) -> str:
        return self.plan.plan_id

    @property
    def n(self) -> int:
        """Number of reports (the users who report them)."""
        return int(self.subset.shape[0])

    @property
    def users(self) -> int:
        """Users who took part: :attr:`n` plus the :attr:`screened` ones whose reports are not here."""
        return self.n + self.screened

    def group_sizes(self) -> np.ndarray:
        """Users per subset."""
        return np.bincount(self.subset, minlength=self.plan.n_subsets)

    def check_plan(self, plan: MarginalPlan) -> None:
        """Refuse these reports if they were collected under another plan than ``plan``."""
        if not isinstance(plan, MarginalPlan):
            raise TypeError(f"plan ({type(plan).__name__}) must be a MarginalPlan")
        if plan.plan_id != self.plan_id:
            raise PlanError("reports were collected under another plan ("
                            + plan.describe_difference(self.plan_id, self.plan.to_dict())
                            + "); estimate them with their own plan")

    def merge(self, other: "MarginalReports") -> "MarginalReports":
        """Reports of both collections (same plan only; their :attr:`screened` users add up)."""
        if not isinstance(other, MarginalReports):
            raise TypeError(f"other ({type(other).__name__}) must be MarginalReports")
        other.check_plan(self.plan)
        subset = np.concatenate([self.subset, other.subset])
        order = np.argsort(subset, kind="stable")
        groups = tuple(np.concatenate([a, b]) for a, b in zip(self.groups, other.groups))
        return MarginalReports(self.plan, subset[order], groups, self.screened + other.screened)

    # files ---------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the ``.npz`` file of the module docstring atomically."""
        meta = {"format": REPORTS_FORMAT, "version": REPORTS_VERSION, "plan": self.plan.to_dict(),
                "plan_id": self.plan_id, "n": self.n,
                "group_sizes": self.group_sizes().tolist(), "report_kinds": list(self.plan.oracles),
                "screened": self.screened}
        arrays = narrowed(self.plan, self.subset, self.groups, repr(str(path)))
        meta["checksum"] = npz_checksum(meta, arrays)
        blob = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)

        def write(tmp) -> None:
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, meta=blob, **arrays)

        atomic_write(path, write)

    @classmethod
    def load(cls, path: str | os.PathLike, *, plan: MarginalPlan | None = None) -> "MarginalReports":
        """Read a reports file, verifying its checksum; with ``plan``, refuse reports of another plan."""
        meta, arrays = _read_npz(path)
        try:
            stored = MarginalPlan.from_dict(meta["plan"])
            groups = tuple(arrays[f"group_{i}"] for i in range(stored.n_subsets))
            subset = arrays["subset"]
        except KeyError as exc:
            raise ReportsFormatError(f"{str(path)!r} is not a readable marginal-reports file: "
                                     f"it has no {exc}") from None
        if meta.get("plan_id") != stored.plan_id:
            raise PlanError(f"{str(path)!r}: plan_id {meta.get('plan_id')!r} does not match its plan "
                            f"(hash {stored.plan_id!r})")
        if meta["version"] >= 3:  # narrow dtypes, packed bits: back to the in-memory layout
            subset, groups = widened(stored, arrays, repr(str(path)))
        out = cls(stored, subset, groups, _screened(meta, path))
        if plan is not None:
            out.check_plan(plan)
        return out

    @staticmethod
    def read_meta(path: str | os.PathLike) -> dict[str, Any]:
        """The JSON metadata of a reports file (plan, sizes) without loading the reports."""
        try:
            with np.load(path, allow_pickle=False) as npz:
                return parse_json(bytes(npz["meta"]).decode("utf-8"), ReportsFormatError,
                                  f"{str(path)!r} metadata")
        except (ReportsFormatError, FileNotFoundError):
            raise
        except Exception as exc:  # zipfile, zlib, numpy: whatever a damaged archive raises
            raise ReportsFormatError(f"{str(path)!r} is damaged or not a marginal-reports file "
                                     f"({type(exc).__name__}: {' '.join(str(exc).split())[:160]})") from None


def _screened(meta: dict, path: str | os.PathLike) -> int:
    """The ``screened`` users of a file's metadata (0 in files written before the key)."""
    value = meta.get("screened", 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ReportsFormatError(f"{str(path)!r}: metadata 'screened' ({value!r}) must be an integer >= 0 "
                                 f"(users of a screen whose reports are not in the file)")
    return value


def _read_npz(path: str | os.PathLike) -> tuple[dict, dict]:
    """``(meta, arrays)`` of a marginal-reports file, format, version and checksum checked."""
    name = repr(str(path))
    try:
        with np.load(path, allow_pickle=False) as npz:
            meta = parse_json(bytes(npz["meta"]).decode("utf-8"), ReportsFormatError,
                              f"{name} metadata")
            arrays = {k: npz[k] for k in npz.files if k != "meta"}
    except (ReportsFormatError, FileNotFoundError, IsADirectoryError):
        raise
    except Exception as exc:  # zipfile, zlib, numpy, UTF-8: whatever a damaged archive raises
        raise ReportsFormatError(f"{name} is damaged or not a readable marginal-reports file "
                                 f"({type(exc).__name__}: {' '.join(str(exc).split())[:160]})") from None
    if not isinstance(meta, dict) or meta.get("format") != REPORTS_FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise ReportsFormatError(f"{name}: format {got!r} is not {REPORTS_FORMAT!r}")
    if meta.get("version") not in READABLE_VERSIONS:
        raise ReportsFormatError(f"{name}: version {meta.get('version')!r} is not supported "
                                 f"(expected {REPORTS_VERSION})")
    stored = meta.get("checksum")
    if stored is None:
        if meta["version"] >= 2:
            raise ReportsFormatError(f"{name} has no checksum (version {meta['version']} files "
                                     f"must have one): edited or damaged")
        missing_checksum(name, "marginal-reports file (version 1)", ReportsFormatError)
    elif stored != npz_checksum(meta, arrays):
        raise ReportsFormatError(f"{name} fails its checksum: its reports or metadata changed "
                                 f"after it was written (damaged or edited)")
    return meta, arrays
