"""Tour 39: the frequency oracles, longitudinal and LIP protocols as a new user meets them."""
import json

import numpy as np
import pandas as pd
import pytest

import lopub.oracles as O
from lopub.cli import main

PRIOR = np.array([0.2, 0.3, 0.5])


def _run(capsys, *argv):
    """Run ``lopub argv``; returns (exit code, stdout, stderr)."""
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code or 0, out.out, out.err


LIP_MECHANISMS = {
    "rr-lip": lambda: O.RRLIP(PRIOR, 2.0),
    "rr-lip-invert": lambda: O.RRLIP(PRIOR, 2.0, estimator="invert"),
    "channel-lip": lambda: O.ChannelLIP(PRIOR, 2.0, O.RRLIP(PRIOR, 2.0).matrix),
    "ue-lip": lambda: O.UELIP(PRIOR, 2.0),
    "ue-lip-invert": lambda: O.UELIP(PRIOR, 2.0, estimator="invert"),
    "lh-lip": lambda: O.LHLIP(PRIOR, 2.0),
}


@pytest.mark.parametrize("case", sorted(LIP_MECHANISMS))
def test_lip_counts_of_another_length_are_refused(case):
    """UE-LIP and LH-LIP estimated 4 frequencies of a 3-value domain from 4 counts (and
    measure_counts built a measurement of them); RR-LIP raised numpy's 'solve1: Input operand 1
    has a mismatch in its core dimension 0'.  Now every LIP mechanism checks the counts and n
    as the support-count oracles do."""
    mech = LIP_MECHANISMS[case]()
    with pytest.raises(ValueError, match=r"counts \(shape \(4,\)\) must have shape \(3,\)"):
        mech.estimate_from_counts([1.0, 2.0, 3.0, 4.0], 10)
    with pytest.raises(ValueError, match=r"counts \(shape \(4,\)\) must have shape \(3,\)"):
        mech.measure_counts([1.0, 2.0, 3.0, 4.0], 10)
    with pytest.raises(TypeError, match=r"n \(2\.5\) must be an integer"):
        mech.estimate_from_counts([1.0, 1.0, 0.5], 2.5)
    with pytest.raises(ValueError, match=r"n \(0\) must be an integer >= 1"):
        mech.estimate_from_counts([0.0, 0.0, 0.0], 0)
    reports = mech.perturb(np.array([0, 1, 2, 2, 1, 2]), rng=0)
    np.testing.assert_allclose(mech.estimate_from_counts(mech.aggregate(reports), 6),
                               mech.estimate(reports))
