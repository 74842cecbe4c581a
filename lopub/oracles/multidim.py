"""Multidimensional collection with any oracle: SPL (split) and SMP (sample).

Records are integer codes ``(n, d)`` against domain sizes ``sizes``.

* SPL: every user reports all ``d`` attributes, each at ``epsilon / d``.
* SMP: every user samples ``r`` distinct attributes (``r = 1`` by default,
  the best choice) and reports each at ``epsilon / r``; the report carries
  the sampled attribute indices.  The server estimates attribute ``j`` from
  the ``n_j`` users who sampled it; Var ~= (d / r) Var*(epsilon / r, n).

Both work with the one-shot oracles (``grr``, ``sue``, ``oue``, ``olh``,
``blh``) and with the longitudinal protocols (``l-grr``, ``l-sue``,
``l-osue``, ``l-oue``; pass ``eps_1`` and both budgets are split;
``lgrr_variant`` picks the paper's or the exact L-GRR).

References
----------
ALLOMFREE paper (Arcolezi et al. 2022), Sec. 3 (SPL and SMP solutions);
Wang et al., "Collecting and analyzing multidimensional data with local
differential privacy", ICDE 2019 (sampling one attribute).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from lopub._util import check_int, resolve_rng
from lopub.oracles.base import SupportOracle, check_domain_size, check_epsilon
from lopub.oracles.longitudinal import LGRR_VARIANTS, LONGITUDINAL, make_longitudinal
from lopub.oracles.measure import measure_per_attr
from lopub.oracles.oneshot import ONESHOT, make_oracle


def check_sizes(sizes: Any) -> tuple[int, ...]:
    """Check domain sizes: a non-empty sequence of integers >= 2."""
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
        raise TypeError(f"sizes ({sizes!r}) must be a sequence of integers")
    out = tuple(check_domain_size(f"sizes[{j}]", int(s) if isinstance(s, np.integer) else s)
                for j, s in enumerate(sizes))
    if not out:
        raise ValueError("sizes (empty) must name at least one attribute")
    return out


def check_codes(codes: Any, sizes: tuple[int, ...]) -> np.ndarray:
    """Check an ``(n, d)`` integer code array against ``sizes``."""
    arr = np.asarray(codes)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"codes (dtype {arr.dtype}) must be an integer array")
    if arr.ndim != 2 or arr.shape[1] != len(sizes):
        raise ValueError(f"codes (shape {arr.shape}) must have shape (n, {len(sizes)})")
    bad = (arr < 0) | (arr >= np.asarray(sizes)[None, :])
    if bad.any():
        j = int(np.nonzero(bad.any(axis=0))[0][0])
        raise ValueError(f"codes column {j} has values outside [0, {sizes[j] - 1}]")
    return arr.astype(np.int64, copy=False)


def check_lgrr_variant(variant: Any) -> str:
    """Check an L-GRR variant name (``"paper"`` or ``"exact"``)."""
    if not isinstance(variant, str):
        raise TypeError(f"lgrr_variant ({variant!r}) must be a string")
    if variant not in LGRR_VARIANTS:
        raise ValueError(f"lgrr_variant ({variant!r}) must be one of {LGRR_VARIANTS}")
    return variant


def build_oracle(name: str, k: int, epsilon: float, eps_1: float | None,
                 scale: float, lgrr_variant: str = "paper") -> SupportOracle:
    """One-shot or longitudinal oracle at ``scale`` times the budget(s).

    ``lgrr_variant`` (``"paper"`` or ``"exact"``) selects L-GRR's round-2
    probabilities (see :class:`~lopub.oracles.longitudinal.LGRR`); it is
    checked always and used only for ``l-grr``.
    """
    if not isinstance(name, str):
        raise TypeError(f"oracle ({name!r}) must be a string")
    lgrr_variant = check_lgrr_variant(lgrr_variant)
    if name.lower() in LONGITUDINAL:
        if eps_1 is None:
            raise ValueError(f"eps_1 (None) must be given for the longitudinal oracle {name!r}")
        kw = {"variant": lgrr_variant} if name.lower() == "l-grr" else {}
        return make_longitudinal(name, epsilon * scale, eps_1 * scale, k, **kw)
    if name.lower() not in ONESHOT:
        raise ValueError(f"oracle ({name!r}) must be one of "
                         f"{sorted(ONESHOT) + sorted(LONGITUDINAL)}")
    return make_oracle(name, epsilon * scale, k)


def check_attributes(attributes: Any, n: int, d: int, r: int) -> np.ndarray:
    """Check sampled attribute indices: ``(n, r)`` (or ``(n,)`` when ``r = 1``)
    integers in ``[0, d)``, no index twice in one user's row; int64 ``(n, r)``."""
    arr = np.asarray(attributes)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"attributes (dtype {arr.dtype}) must be an integer array")
    given = arr.shape
    if r == 1 and arr.ndim == 1:
        arr = arr[:, None]
    if arr.shape != (n, r):
        want = f"({n}, {r})" + (f" or ({n},)" if r == 1 else "")
        raise ValueError(f"attributes (shape {given}) must have shape {want}: "
                         f"r sampled attribute indices for each of the n users")
    bad = (arr < 0) | (arr >= d)
    if bad.any():
        raise ValueError(f"attributes contains {arr[bad][0]}; indices must be in [0, {d - 1}]")
    if r > 1:
        srt = np.sort(arr, axis=1)
        dup = np.nonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1))[0]
        if dup.size:
            raise ValueError(f"attributes row {dup[0]} ({arr[dup[0]].tolist()}) names an "
                             f"attribute twice; each user's r indices must be distinct")
    return arr.astype(np.int64, copy=False)


@dataclass(frozen=True)
class SampledReports:
    """Reports of users who each report a sample of the attributes.

    Attributes
    ----------
    attributes : ndarray
        ``(n, r)`` sampled attribute indices of every user (the index is part
        of each user's report).
    per_attr : tuple
        ``per_attr[j]``: the reports about attribute ``j``, from the users with
        ``j`` in their sample, in user order (format of the attribute's oracle).
    """

    attributes: np.ndarray
    per_attr: tuple

    def n_per_attr(self) -> np.ndarray:
        """``n_j``: number of users who reported attribute ``j``."""
        d = len(self.per_attr)
        return np.bincount(self.attributes.ravel(), minlength=d)


def check_per_attr(per_attr: Any, d: int) -> Any:
    """Check that ``per_attr`` holds one report array per attribute (``d`` of them)."""
    if isinstance(per_attr, (str, bytes, SampledReports)) or not hasattr(per_attr, "__len__"):
        raise TypeError(f"reports ({type(per_attr).__name__}) must be a sequence of report "
                        f"arrays, one per attribute ({d})")
    if len(per_attr) != d:
        raise ValueError(f"reports ({len(per_attr)} report array{'s' * (len(per_attr) != 1)}) "
                         f"must hold one report array per attribute ({d})")
    return per_attr


def check_sampled(reports: Any, d: int) -> SampledReports:
    """Check reports of a sampling scheme: :class:`SampledReports` of ``d`` attributes."""
    if not isinstance(reports, SampledReports):
        raise TypeError(f"reports ({type(reports).__name__}) must be SampledReports (what "
                        f"perturb returns: the sampled attributes and the reports about each)")
    check_per_attr(reports.per_attr, d)
    return reports


def check_f_per_attr(f: Any, d: int) -> None:
    """Check frequencies given to a scheme's ``variance``: one array per attribute."""
    if len(f) != d:
        raise ValueError(f"f (length {len(f)}) must give one array per attribute ({d})")


def estimate_per_attr(oracles: tuple, per_attr: Any) -> list[np.ndarray]:
    """Unbiased estimates for every attribute; NaN (with a warning) if ``n_j = 0``."""
    check_per_attr(per_attr, len(oracles))
    out = []
    for j, (oracle, reports) in enumerate(zip(oracles, per_attr)):  # loop over attributes
        if oracle.n_reports(reports) == 0:
            warnings.warn(f"no report for attribute {j}; its estimate is NaN", stacklevel=2)
            out.append(np.full(oracle.k, np.nan))
        else:
            out.append(oracle.estimate(reports))
    return out


@dataclass(frozen=True)
class SPL:
    """Split the budget: each of the ``d`` attributes at ``epsilon / d``.

    References
    ----------
    ALLOMFREE paper, Sec. 3.1 (SPL).
    """

    oracle: str
    epsilon: float
    sizes: tuple
    eps_1: float | None = None
    lgrr_variant: str = "paper"
    oracles: tuple = field(init=False, repr=False)
    name: ClassVar[str] = "spl"

    def __post_init__(self) -> None:
        sizes = check_sizes(self.sizes)
        eps = check_epsilon("epsilon", self.epsilon)
        eps_1 = None if self.eps_1 is None else check_epsilon("eps_1", self.eps_1)
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "eps_1", eps_1)
        oracles = tuple(build_oracle(self.oracle, k, eps, eps_1, 1 / len(sizes),
                                     self.lgrr_variant) for k in sizes)
        object.__setattr__(self, "oracles", oracles)

    def perturb(self, codes: Any, *, rng: np.random.Generator | int | None = None) -> list:
        """Reports of every user on every attribute: ``list`` of per-attribute arrays."""
        codes = check_codes(codes, self.sizes)
        rng = resolve_rng(rng)
        return [o.perturb(codes[:, j], rng=rng) for j, o in enumerate(self.oracles)]

    def estimate(self, reports: Any) -> list[np.ndarray]:
        """Unbiased one-way marginals, one array per attribute."""
        return estimate_per_attr(self.oracles, reports)

    def variance(self, n: int, f: Any = None) -> list:
        """Var* (``f=None``) or exact variance (``f``: one array per attribute)."""
        if f is None:
            return [o.variance(n) for o in self.oracles]
        check_f_per_attr(f, len(self.sizes))
        return [o.variance(n, fj) for o, fj in zip(self.oracles, f)]

    def params(self) -> dict:
        """Public parameters (JSON-serializable); :func:`lopub.oracles.from_params` rebuilds
        the object from them."""
        return _scheme_params(self)

    def measure(self, reports: Any, *, domain: Any = None,
                postprocess: str = "norm-sub") -> list:
        """One :class:`~lopub.estimate.measurement.Measurement` per attribute (see
        :mod:`lopub.oracles.measure`); ``domain`` defaults to ``x0 ... x{d-1}``."""
        n = [o.n_reports(r) for o, r in zip(self.oracles, check_per_attr(reports, len(self.sizes)))]
        return measure_per_attr(self.oracles, self.estimate(reports), n, max(n), domain,
                                postprocess, sampled=False)


def _scheme_params(scheme: Any) -> dict:
    out = {"protocol": scheme.name, "oracle": scheme.oracle, "epsilon": scheme.epsilon,
           "sizes": list(scheme.sizes), "eps_1": scheme.eps_1,
           "lgrr_variant": scheme.lgrr_variant}
    if hasattr(scheme, "r"):
        out["r"] = scheme.r
    return out


def sample_attributes(n: int, d: int, r: int, *, rng: np.random.Generator) -> np.ndarray:
    """``(n, r)`` distinct attribute indices per user, uniformly at random."""
    if r == 1:
        return rng.integers(0, d, size=(n, 1))
    return np.argsort(rng.random((n, d)), axis=1)[:, :r]


def split_by_attribute(attributes: np.ndarray, d: int) -> list[np.ndarray]:
    """For each attribute, the (sorted) users who sampled it."""
    flat_attr = attributes.ravel()
    flat_user = np.repeat(np.arange(attributes.shape[0]), attributes.shape[1])
    order = np.lexsort((flat_user, flat_attr))
    bounds = np.searchsorted(flat_attr[order], np.arange(d + 1))
    return [flat_user[order][bounds[j]:bounds[j + 1]] for j in range(d)]


@dataclass(frozen=True)
class SMP:
    """Sample ``r`` attributes per user, each reported at ``epsilon / r``.

    References
    ----------
    ALLOMFREE paper, Sec. 3.2 (SMP; Var = (d / r) Var*(epsilon / r, n)).
    """

    oracle: str
    epsilon: float
    sizes: tuple
    r: int = 1
    eps_1: float | None = None
    lgrr_variant: str = "paper"
    oracles: tuple = field(init=False, repr=False)
    name: ClassVar[str] = "smp"

    def __post_init__(self) -> None:
        sizes = check_sizes(self.sizes)
        r = check_int("r", self.r, 1)
        if r > len(sizes):
            raise ValueError(f"r ({r}) must be <= the number of attributes ({len(sizes)})")
        eps = check_epsilon("epsilon", self.epsilon)
        eps_1 = None if self.eps_1 is None else check_epsilon("eps_1", self.eps_1)
        for key, value in (("sizes", sizes), ("r", r), ("epsilon", eps), ("eps_1", eps_1)):
            object.__setattr__(self, key, value)
        oracles = tuple(build_oracle(self.oracle, k, eps, eps_1, 1 / r, self.lgrr_variant)
                        for k in sizes)
        object.__setattr__(self, "oracles", oracles)

    def perturb(self, codes: Any, *, rng: np.random.Generator | int | None = None,
                attributes: Any = None) -> SampledReports:
        """Sample attributes (unless given) and perturb the sampled values.

        ``attributes``, if given, are each user's sampled indices: integers,
        shape ``(n, r)`` (or ``(n,)`` for ``r = 1``), in ``[0, d)``, distinct
        within a row; anything else raises (``TypeError``/``ValueError``).
        """
        codes = check_codes(codes, self.sizes)
        rng = resolve_rng(rng)
        d = len(self.sizes)
        if attributes is None:
            attributes = sample_attributes(codes.shape[0], d, self.r, rng=rng)
        attributes = check_attributes(attributes, codes.shape[0], d, self.r)
        groups = split_by_attribute(attributes, d)
        per_attr = tuple(self.oracles[j].perturb(codes[users, j], rng=rng)
                         for j, users in enumerate(groups))
        return SampledReports(attributes=attributes, per_attr=per_attr)

    def estimate(self, reports: SampledReports) -> list[np.ndarray]:
        """Unbiased one-way marginals; attribute ``j`` uses its ``n_j`` users."""
        return estimate_per_attr(self.oracles, check_sampled(reports, len(self.sizes)).per_attr)

    def variance(self, n: int, f: Any = None) -> list:
        """Variance per attribute from ``n`` users (``n_j = n r / d`` expected).

        ``f=None`` gives the paper's approximation ``(d / r) Var*(epsilon / r, n)``,
        which ignores that the ``n_j`` sampled users are a random subset.  With
        true frequencies ``f`` (one array per attribute) it is the oracle's
        exact variance at ``n_j`` plus the sampling term
        ``f (1 - f) (1 / n_j - 1 / n)``.
        """
        n = check_int("n", n, 1)
        d = len(self.sizes)
        n_j = max(1, int(round(n * self.r / d)))
        if f is None:
            return [d / self.r * o.variance(n) for o in self.oracles]
        check_f_per_attr(f, d)
        return [o.variance(n_j, np.asarray(fj)) + np.asarray(fj) * (1 - np.asarray(fj))
                * (1 / n_j - 1 / n) for o, fj in zip(self.oracles, f)]

    def params(self) -> dict:
        """Public parameters (JSON-serializable); :func:`lopub.oracles.from_params` rebuilds
        the object from them."""
        return _scheme_params(self)

    def measure(self, reports: SampledReports, *, domain: Any = None,
                postprocess: str = "norm-sub") -> list:
        """One :class:`~lopub.estimate.measurement.Measurement` per attribute with reports.

        Attribute ``j``'s variance is its oracle's exact variance at ``n_j``
        plus the sampling term ``f (1 - f) (1 / n_j - 1 / n)``, both at the
        post-processed estimate (see :mod:`lopub.oracles.measure`).
        """
        return measure_sampled(self.oracles, reports, domain, postprocess)


def measure_sampled(oracles: tuple, reports: SampledReports, domain: Any,
                    postprocess: str) -> list:
    """Measurements of a sampling scheme (SMP, ALLOMFREE): attribute ``j``
    estimated from its ``n_j`` users."""
    check_sampled(reports, len(oracles))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # empty attributes: measure_per_attr warns instead
        est = estimate_per_attr(oracles, reports.per_attr)
    return measure_per_attr(oracles, est, reports.n_per_attr(), reports.attributes.shape[0],
                            domain, postprocess, sampled=True)
