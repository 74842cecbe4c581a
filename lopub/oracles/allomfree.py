"""ALLOMFREE: adaptive longitudinal collection of multidimensional frequencies.

Every user samples one attribute once and keeps it forever (SMP with
``r = 1``), picks L-GRR if its Var* is at most L-OSUE's for that attribute's
domain size, else L-OSUE, memoizes the permanent response and sends
``(attribute, response)`` at every report.  The server recomputes the same
choice from the public parameters and estimates attribute ``j`` from the
``n_j`` users who sampled it.

References
----------
Arcolezi, Couchot, Al Bouna, Xiao, "Improving the utility of locally
differentially private protocols for longitudinal and multidimensional
frequency estimates", Digital Communications and Networks 2022, Sec. 5
(ALLOMFREE, Algorithm 1) and Table 2 (L-GRR / L-OSUE thresholds).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from lopub._util import check_int, resolve_rng
from lopub.oracles.longitudinal import LGRR, LGRR_VARIANTS, LOSUE, _check_budgets
from lopub.oracles.memo import (
    DeviceClient,
    MemoFleet,
    _atomic_write_text,
    check_secret,
    keyed_uniforms,
)
from lopub.oracles.memo_state import read_state
from lopub.oracles.multidim import (
    SampledReports,
    check_attributes,
    check_codes,
    check_f_per_attr,
    check_sampled,
    check_sizes,
    estimate_per_attr,
    measure_sampled,
    sample_attributes,
    split_by_attribute,
)


def allomfree_choice(eps_inf: float, eps_1: float, k: int, lgrr_variant: str = "paper") -> str:
    """``"l-grr"`` if Var*(L-GRR) <= Var*(L-OSUE) for domain size ``k``, else ``"l-osue"``.

    References
    ----------
    ALLOMFREE paper, Sec. 5 (adaptive choice by approximate variance, Eq. 11).
    """
    grr = LGRR(eps_inf, eps_1, k, lgrr_variant)
    osue = LOSUE(eps_inf, eps_1, k)
    return "l-grr" if grr.variance(1) <= osue.variance(1) else "l-osue"


def lgrr_threshold(eps_inf: float, eps_1: float, lgrr_variant: str = "paper",
                   k_max: int = 10_000) -> int:
    """Largest ``k`` for which ALLOMFREE picks L-GRR (1 if it never does)."""
    osue = LOSUE(eps_inf, eps_1, 2).variance(1)
    k = 1
    while k < k_max and LGRR(eps_inf, eps_1, k + 1, lgrr_variant).variance(1) <= osue:
        k += 1  # scalar search over domain sizes, not over users
    return k


@dataclass(frozen=True)
class Allomfree:
    """ALLOMFREE parameters for attributes of domain sizes ``sizes``.

    Parameters
    ----------
    eps_inf, eps_1 : float
        Budget of the memoized round and of one report (``eps_1 < eps_inf``).
    sizes : sequence of int
        Domain size of each attribute.
    lgrr_variant : {"paper", "exact"}
        Which L-GRR to use (see :class:`~lopub.oracles.longitudinal.LGRR`).

    References
    ----------
    ALLOMFREE paper, Sec. 5.
    """

    eps_inf: float
    eps_1: float
    sizes: tuple
    lgrr_variant: str = "paper"
    protocols: tuple = field(init=False, repr=False)
    name: ClassVar[str] = "allomfree"

    def __post_init__(self) -> None:
        eps_inf, eps_1 = _check_budgets(self.eps_inf, self.eps_1)
        if self.lgrr_variant not in LGRR_VARIANTS:
            raise ValueError(f"lgrr_variant ({self.lgrr_variant!r}) must be one of {LGRR_VARIANTS}")
        sizes = check_sizes(self.sizes)
        object.__setattr__(self, "eps_inf", eps_inf)
        object.__setattr__(self, "eps_1", eps_1)
        object.__setattr__(self, "sizes", sizes)
        protocols = tuple(
            LGRR(eps_inf, eps_1, k, self.lgrr_variant)
            if allomfree_choice(eps_inf, eps_1, k, self.lgrr_variant) == "l-grr"
            else LOSUE(eps_inf, eps_1, k) for k in sizes)
        object.__setattr__(self, "protocols", protocols)

    def params(self) -> dict:
        """Public parameters (JSON-serializable); :func:`lopub.oracles.from_params` rebuilds
        the object from them."""
        return {"protocol": self.name, "eps_inf": self.eps_inf, "eps_1": self.eps_1,
                "sizes": list(self.sizes), "lgrr_variant": self.lgrr_variant}

    def perturb(self, codes: Any, *, rng: np.random.Generator | int | None = None,
                attributes: Any = None) -> SampledReports:
        """One report per user with a fresh permanent round (one-shot simulation).

        ``attributes``, if given, is each user's sampled attribute: integers
        of shape ``(n,)`` (or ``(n, 1)``) in ``[0, d)``; anything else raises.
        """
        codes = check_codes(codes, self.sizes)
        rng = resolve_rng(rng)
        if attributes is None:
            attributes = sample_attributes(codes.shape[0], len(self.sizes), 1, rng=rng)
        attributes = check_attributes(attributes, codes.shape[0], len(self.sizes), 1)
        groups = split_by_attribute(attributes, len(self.sizes))
        per_attr = tuple(self.protocols[j].perturb(codes[users, j], rng=rng)
                         for j, users in enumerate(groups))
        return SampledReports(attributes=attributes, per_attr=per_attr)

    def estimate(self, reports: SampledReports) -> list[np.ndarray]:
        """Unbiased one-way marginals; attribute ``j`` divides by its ``n_j``."""
        return estimate_per_attr(self.protocols, check_sampled(reports, len(self.sizes)).per_attr)

    def variance(self, n: int, f: Any = None) -> list:
        """Var* at ``n_j = n / d`` per attribute, or the exact variance plus the
        sampling term ``f (1 - f) (1 / n_j - 1 / n)`` when ``f`` is given."""
        n = check_int("n", n, 1)
        d = len(self.sizes)
        n_j = max(1, int(round(n / d)))
        if f is None:
            return [p.variance(n_j) for p in self.protocols]
        check_f_per_attr(f, d)
        return [p.variance(n_j, np.asarray(fj)) + np.asarray(fj) * (1 - np.asarray(fj))
                * (1 / n_j - 1 / n) for p, fj in zip(self.protocols, f)]

    @property
    def oracles(self) -> tuple:
        """The per-attribute protocols (L-GRR or L-OSUE), as ``protocols``."""
        return self.protocols

    def measure(self, reports: SampledReports, *, domain: Any = None,
                postprocess: str = "norm-sub") -> list:
        """One :class:`~lopub.estimate.measurement.Measurement` per attribute with reports
        (exact variance at ``n_j`` plus the sampling term, as for
        :meth:`lopub.oracles.multidim.SMP.measure`)."""
        return measure_sampled(self.protocols, reports, domain, postprocess)

    def fleet(self, n: int, *, rng: np.random.Generator | int | None = None) -> AllomfreeFleet:
        """A simulated population of ``n`` users that sampled their attribute once."""
        return AllomfreeFleet(self, n, rng=rng)


class AllomfreeFleet:
    """``n`` simulated ALLOMFREE users: attribute sampled once, round 1 memoized."""

    def __init__(self, scheme: Allomfree, n: int, *,
                 rng: np.random.Generator | int | None = None) -> None:
        self.scheme = scheme
        self.n = check_int("n", n, 1)
        d = len(scheme.sizes)
        self.attributes = sample_attributes(self.n, d, 1, rng=resolve_rng(rng))
        self.groups = split_by_attribute(self.attributes, d)
        self._fleets = [MemoFleet(p, max(1, g.size)) for p, g in zip(scheme.protocols, self.groups)]

    def report(self, codes: Any, *, rng: np.random.Generator | int | None = None) -> SampledReports:
        """One round of reports of all users for their current records ``codes``."""
        codes = check_codes(codes, self.scheme.sizes)
        if codes.shape[0] != self.n:
            raise ValueError(f"codes (length {codes.shape[0]}) must have n ({self.n}) rows")
        rng = resolve_rng(rng)
        per_attr = []
        for j, (users, fleet) in enumerate(zip(self.groups, self._fleets)):  # attributes
            if users.size == 0:
                per_attr.append(self.scheme.protocols[j].perturb(np.empty(0, np.int64), rng=rng))
            else:
                per_attr.append(fleet.report(codes[users, j], rng=rng))
        return SampledReports(attributes=self.attributes, per_attr=tuple(per_attr))


class AllomfreeDevice:
    """One user's ALLOMFREE client: keyed attribute choice plus memoized responses.

    The sampled attribute is derived from the device secret (keyed BLAKE2b),
    so it never changes, even across restarts; the permanent response is
    memoized by :class:`~lopub.oracles.memo.DeviceClient`.

    References
    ----------
    ALLOMFREE paper, Sec. 5 (Algorithm 1, client side); RAPPOR, Sec. 3.
    """

    def __init__(self, scheme: Allomfree, secret: bytes, *, campaign: str = "default") -> None:
        if not isinstance(scheme, Allomfree):
            raise TypeError(f"scheme ({type(scheme).__name__}) must be an Allomfree")
        secret = check_secret(secret)
        u = keyed_uniforms(secret, {"scheme": scheme.params(), "campaign": campaign,
                                    "round": "attribute"}, 1)[0]
        self.scheme = scheme
        self.attribute = int(u * len(scheme.sizes))
        self.client = DeviceClient(scheme.protocols[self.attribute], secret,
                                   attribute=str(self.attribute), campaign=campaign)

    def report(self, record: Any, *, rng: np.random.Generator | int | None = None) -> tuple:
        """``(attribute, response)`` for the user's current record (``d`` codes)."""
        record = check_codes(np.asarray(record).reshape(1, -1), self.scheme.sizes)[0]
        return self.attribute, self.client.report(int(record[self.attribute]), rng=rng)

    def save(self, path: str | os.PathLike) -> None:
        """Persist the memo (and the attribute) as JSON, atomically."""
        state = self.client.state(extra={"scheme": self.scheme.params()})  # sealed with its MAC
        _atomic_write_text(path, json.dumps(state, indent=1))

    @classmethod
    def load(cls, path: str | os.PathLike, scheme: Allomfree, secret: bytes) -> AllomfreeDevice:
        """Restore a device saved by :meth:`save` (the secret must be the same)."""
        state = read_state(path)
        device = cls(scheme, secret, campaign=state.get("campaign", "default"))
        if str(state.get("attribute")) != str(device.attribute):
            raise ValueError(f"state attribute ({state['attribute']}) does not match the "
                             f"attribute derived from this secret ({device.attribute})")
        device.client = DeviceClient.load(path, scheme.protocols[device.attribute], secret)
        return device
