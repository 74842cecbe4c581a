"""Rebuild a protocol object from its ``params()`` dict: :func:`from_params`.

``params()`` is a public format that stays as it is: devices' memo keys and sealed states hash
it (:mod:`lopub.oracles.memo`, :class:`~lopub.oracles.allomfree.AllomfreeDevice`), so a
changed dict would change the memoized responses of deployed devices.  It holds
``"protocol"`` and, for the dataclass oracles, ``"name"`` (a class variable), neither of which
is a constructor argument, so ``GRR(**params)`` fails; :func:`from_params` reads the dict
instead.  :data:`PROTOCOLS` names every class that has ``params()``.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from lopub.oracles.allomfree import Allomfree
from lopub.oracles.lip import RRLIP, BinaryBoundedLIP, ChannelLIP
from lopub.oracles.lip_encoded import LHLIP, UELIP
from lopub.oracles.longitudinal import LONGITUDINAL
from lopub.oracles.multidim import SMP, SPL
from lopub.oracles.oneshot import ONESHOT

__all__ = ["PROTOCOLS", "from_params"]

#: ``params()["protocol"]`` -> the class whose ``params()`` writes it
PROTOCOLS: dict[str, type] = {**ONESHOT, **LONGITUDINAL,
                              **{c.name: c for c in (RRLIP, ChannelLIP, BinaryBoundedLIP, UELIP,
                                                     LHLIP, SPL, SMP, Allomfree)}}


def _dataclass_kwargs(cls: type, params: dict) -> dict:
    fields = [f for f in dataclasses.fields(cls) if f.init]
    kwargs = {f.name: params[f.name] for f in fields if f.name in params}
    if isinstance(kwargs.get("sizes"), list):
        kwargs["sizes"] = tuple(kwargs["sizes"])
    return kwargs


def _lip_kwargs(params: dict, names: tuple) -> dict:
    return {key: params[key] for key in names if key in params}


def _rr_lip_kwargs(params: dict) -> dict:
    """RR-LIP's fallback (``on_invalid="lp"``) where the stored channel came from it."""
    return {**_lip_kwargs(params, ("prior", "epsilon", "estimator", "on_invalid")),
            **({"on_invalid": "lp"} if params.get("mechanism") == "lp" else {})}


def _binary_lip_kwargs(params: dict) -> dict:
    if "lower" not in params or "upper" not in params:
        raise ValueError("params of protocol 'binary-lip' needs 'lower' and 'upper' (the interval "
                         "of priors, which BinaryBoundedLIP.params() holds since they were added; an "
                         "older dict lists the channel only): add them, or rebuild the channel itself "
                         "with ChannelLIP(prior, epsilon, matrix)")
    kwargs = _lip_kwargs(params, ("lower", "upper", "epsilon", "estimator", "on_invalid"))
    prior = params.get("prior")
    if prior is not None:  # params holds (P(X = 0), P(X = 1)); the constructor takes P(X = 1)
        if not (isinstance(prior, (list, tuple)) and len(prior) == 2):
            raise ValueError(f"params 'prior' ({prior!r}) must be [P(X = 0), P(X = 1)] for "
                             f"protocol 'binary-lip'")
        kwargs["prior"] = prior[1]
    if params.get("mechanism") == "lp":
        kwargs["on_invalid"] = "lp"
    return kwargs


#: constructor arguments beyond the dataclass fields, and how each class reads its params
_READERS: dict[type, tuple[tuple, Callable[[dict], dict]]] = {
    RRLIP: (("prior", "epsilon", "on_invalid", "estimator"), _rr_lip_kwargs),
    ChannelLIP: (("prior", "epsilon", "matrix", "rtol", "estimator"),
                 lambda p: _lip_kwargs(p, ("prior", "epsilon", "matrix", "rtol", "estimator"))),
    BinaryBoundedLIP: (("lower", "upper", "epsilon", "prior", "on_invalid", "estimator"),
                       _binary_lip_kwargs),
    UELIP: (("prior", "epsilon", "estimator"), lambda p: _lip_kwargs(p, ("prior", "epsilon",
                                                                          "estimator"))),
    LHLIP: (("prior", "epsilon", "g", "max_redraws"),
            lambda p: _lip_kwargs(p, ("prior", "epsilon", "g", "max_redraws"))),
}

_REQUIRED = {RRLIP: ("prior", "epsilon"), ChannelLIP: ("prior", "epsilon", "matrix"),
             BinaryBoundedLIP: ("lower", "upper", "epsilon"), UELIP: ("prior", "epsilon"),
             LHLIP: ("prior", "epsilon")}


def _arguments(cls: type) -> tuple[tuple, tuple]:
    """``(constructor arguments, required ones)`` of ``cls``."""
    if cls in _READERS:
        return _READERS[cls][0], _REQUIRED[cls]
    fields = [f for f in dataclasses.fields(cls) if f.init]
    required = tuple(f.name for f in fields if f.default is dataclasses.MISSING
                     and f.default_factory is dataclasses.MISSING)
    return tuple(f.name for f in fields), required


def _same(given: Any, built: Any) -> bool:
    """Equal values: exactly, or numbers (nested lists) within 1e-12 relative."""
    if isinstance(given, str) or isinstance(built, str) or given is None or built is None:
        return bool(given == built)
    try:
        a, b = np.asarray(given, dtype=float), np.asarray(built, dtype=float)
    except (TypeError, ValueError):
        return bool(given == built)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-12, atol=1e-15))


def _check_derived(cls: type, params: dict, obj: Any, args: tuple) -> None:
    """Every key of ``params`` that is no constructor argument must equal the rebuilt object's."""
    built = obj.params()
    for key, value in params.items():  # loop over the dict's keys
        if key == "protocol" or key in args:
            if key in built and key != "protocol" and not _same(value, built[key]):
                raise ValueError(f"params {key!r} ({value!r}) disagrees with the {cls.__name__} "
                                 f"that the other parameters build ({built[key]!r})")
            continue
        if key not in built:
            raise ValueError(f"params key {key!r} ({value!r}) is not a parameter of "
                             f"{cls.__name__} (protocol {params['protocol']!r}); its keys: "
                             f"{sorted(set(args) | set(built) - {'protocol'})}")
        if key == "name" and value != built[key]:
            raise ValueError(f"params 'name' ({value!r}) disagrees with 'protocol' "
                             f"({params['protocol']!r})")
        if not _same(value, built[key]):
            hint = ("; the clients' channel is not the one RRLIP builds here (an LP fallback "
                    "solved elsewhere): rebuild it with ChannelLIP(prior, epsilon, matrix)"
                    if cls is RRLIP and key == "matrix" else "")
            raise ValueError(f"params {key!r} ({value!r}) disagrees with the {cls.__name__} "
                             f"that the other parameters build ({built[key]!r}){hint}")


def from_params(params: Mapping) -> Any:
    """The protocol object whose ``params()`` is ``params``.

    Rebuilds any one-shot oracle (GRR, SUE, OUE, OLH, BLH), longitudinal protocol (L-GRR,
    L-SUE, L-OSUE, L-OUE), LIP mechanism (RR-LIP, UE-LIP, LH-LIP, a given channel, the bounded
    binary channel) or multi-attribute scheme (SPL, SMP, ALLOMFREE) from the dict its
    ``params()`` returns (also after a JSON round trip), so that
    ``from_params(p.params()).params() == p.params()``.

    Parameters
    ----------
    params : mapping
        ``{"protocol": name, ...}``: the constructor's arguments plus keys that ``params()``
        adds (``"name"``, a LIP channel's ``"matrix"`` and ``"mechanism"``); each of those
        must equal the rebuilt object's value.  An RR-LIP channel from the LP fallback
        (``"mechanism": "lp"``) is re-solved and must match the stored ``"matrix"``.  The
        bounded binary channel's dict must hold its interval, ``"lower"`` and ``"upper"``
        (its ``params()`` does; a dict written before they were added needs them added).

    Returns
    -------
    object
        An instance of ``PROTOCOLS[params["protocol"]]``.

    Raises
    ------
    TypeError
        ``params`` is not a mapping.
    ValueError
        No or an unknown ``"protocol"``; a key that is not a parameter of that protocol;
        a missing constructor argument; a ``"name"`` that disagrees with ``"protocol"`` or
        another derived key that disagrees with the rebuilt object; and every error of the
        protocol's constructor (a bad epsilon, domain size, prior, ...).

    Examples
    --------
    >>> from lopub.oracles import GRR, from_params
    >>> grr = GRR(k=5, epsilon=1.0)
    >>> grr.params()
    {'protocol': 'grr', 'epsilon': 1.0, 'k': 5, 'name': 'grr'}
    >>> from_params(grr.params()) == grr
    True
    """
    if not isinstance(params, Mapping):
        raise TypeError(f"params ({type(params).__name__}) must be a dict such as a protocol's "
                        f"params() returns")
    params = dict(params)
    if "protocol" not in params:
        raise ValueError(f"params has no 'protocol' (keys: {sorted(map(str, params))}); expected "
                         f"the dict a protocol's params() returns")
    protocol = params["protocol"]
    if not isinstance(protocol, str) or protocol not in PROTOCOLS:
        raise ValueError(f"params protocol ({protocol!r}) is not one of {sorted(PROTOCOLS)}")
    cls = PROTOCOLS[protocol]
    args, required = _arguments(cls)
    kwargs = _READERS[cls][1](params) if cls in _READERS else _dataclass_kwargs(cls, params)
    missing = [key for key in required if key not in params]
    if missing:
        raise ValueError(f"params of protocol {protocol!r}: {cls.__name__} needs "
                         f"{', '.join(map(repr, missing))} (missing)")
    obj = cls(**kwargs)
    _check_derived(cls, params, obj, args)
    return obj
