"""Frequency oracles, longitudinal protocols, multidimensional collection and LIP.

One-shot: :class:`GRR`, :class:`SUE`, :class:`OUE`, :class:`OLH`, :class:`BLH`.
Longitudinal (memoized two rounds): :class:`LGRR`, :class:`LSUE`,
:class:`LOSUE`, :class:`LOUE`; memoization in :class:`DeviceClient` (keyed
BLAKE2b on a device secret, JSON state) and :class:`MemoFleet` (simulation).
Multidimensional: :class:`SPL`, :class:`SMP`, :class:`Allomfree`.
Local information privacy: :class:`RRLIP`, :class:`UELIP`, :class:`LHLIP`,
:class:`BinaryBoundedLIP`, :class:`ChannelLIP` (a given, checked channel);
channel helpers in :mod:`lopub.oracles.lip_channel`.  Post-processing: :func:`postprocess`.
Rebuilding any of them from its ``params()`` dict: :func:`from_params`
(:mod:`lopub.oracles.rebuild`; ``GRR(**p.params())`` fails: the dict holds ``protocol`` and ``name``).

Interfaces (:mod:`lopub.oracles.protocol`): every single-attribute mechanism
above is a :class:`FrequencyOracle` (perturb, aggregate, estimate, variance,
params, transition_matrix, measure); SPL, SMP and ALLOMFREE are
:class:`MultiAttributeProtocol` schemes.  ``measure`` returns
:class:`lopub.estimate.measurement.Measurement` objects (:mod:`lopub.oracles.measure`).

References
----------
Arcolezi et al., Digital Communications and Networks 2022 (ALLOMFREE paper);
Jiang, Li, Tandon (LIP paper); Wang et al., USENIX Security 2017.
"""
from lopub.oracles.allomfree import Allomfree, AllomfreeDevice, allomfree_choice, lgrr_threshold
from lopub.oracles.lip import (
    LHLIP,
    RRLIP,
    UELIP,
    BinaryBoundedLIP,
    ChannelLIP,
    lip_level,
    optimal_lip_matrix,
)
from lopub.oracles.lip_channel import inversion_variance, lip_fallback_channel
from lopub.oracles.longitudinal import LGRR, LOSUE, LOUE, LSUE, make_longitudinal
from lopub.oracles.memo import DeviceClient, MemoFleet, new_secret
from lopub.oracles.multidim import SMP, SPL, SampledReports
from lopub.oracles.rebuild import PROTOCOLS, from_params
from lopub.oracles.oneshot import BLH, GRR, OLH, OUE, SUE, make_oracle
from lopub.estimate.postprocess import Postprocessed as Estimate, postprocess
from lopub.oracles.protocol import FrequencyOracle, MultiAttributeProtocol

__all__ = [
    "GRR", "SUE", "OUE", "OLH", "BLH", "make_oracle",
    "LGRR", "LSUE", "LOSUE", "LOUE", "make_longitudinal",
    "DeviceClient", "MemoFleet", "new_secret",
    "SPL", "SMP", "SampledReports", "Allomfree", "AllomfreeDevice", "allomfree_choice",
    "lgrr_threshold", "RRLIP", "UELIP", "LHLIP", "BinaryBoundedLIP", "ChannelLIP", "lip_level",
    "optimal_lip_matrix", "lip_fallback_channel", "inversion_variance", "Estimate", "postprocess",
    "FrequencyOracle", "MultiAttributeProtocol", "PROTOCOLS", "from_params",
]
