"""``lopub.oracles.from_params``: every protocol object rebuilt from its ``params()``.

``GRR(**GRR(k=5, epsilon=1.0).params())`` raised TypeError (the dict holds ``protocol`` and
``name``).  ``params()`` itself must not change: devices' memo keys and sealed states hash it,
so a changed dict would change the memoized responses of deployed devices."""
import json

import numpy as np
import pytest
from oracle_cases import CLASS_CASES, MULTI, SINGLE

import lopub.oracles as O
from lopub.oracles import from_params

CASES = {**{c: b for c, (b, _) in SINGLE.items()}, **{c: b for c, (b, _) in MULTI.items()},
         "binary-lip-prop2": lambda: O.BinaryBoundedLIP(0.3, 0.6, 3.0, prior=0.4),
         "lh-lip-g3": lambda: O.LHLIP([0.3, 0.3, 0.4], 3.0, g=3),
         "spl-l-grr-exact": lambda: O.SPL("l-grr", 4.0, (4, 3), eps_1=2.4, lgrr_variant="exact")}


def test_every_class_with_params_has_a_case():
    covered = {type(build()).__name__ for build in CASES.values()}
    assert covered == set(CLASS_CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_rebuilt_object_equals_the_original(case):
    """``params()`` alone rebuilds the mechanism (no key added by hand: the bounded binary
    channel's dict lacked its interval): the same channel, variance and reports."""
    obj = CASES[case]()
    params = obj.params()
    again = from_params(json.loads(json.dumps(params)))  # as read back from a JSON file
    assert type(again) is type(obj)
    assert again.params() == params
    if hasattr(obj, "transition_matrix"):
        np.testing.assert_allclose(again.transition_matrix(), obj.transition_matrix(),
                                   rtol=1e-12, atol=0)
    for got, want in zip(np.atleast_1d(again.variance(1000)), np.atleast_1d(obj.variance(1000))):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    if case in SINGLE:  # the same reports from the same randomness
        values = np.random.default_rng(1).integers(0, obj.k, 200)
        np.testing.assert_array_equal(again.perturb(values, rng=3), obj.perturb(values, rng=3))


def test_bounded_binary_channel_keeps_its_interval():
    obj = O.BinaryBoundedLIP(0.2, 0.7, 1.5, prior=0.3, on_invalid="lp", estimator="invert")
    again = from_params(json.loads(json.dumps(obj.params())))
    assert (again.lower, again.upper, again.epsilon, again.estimator) == (0.2, 0.7, 1.5, "invert")
    assert again.prior.tolist() == obj.prior.tolist() and again.mechanism == obj.mechanism
    assert again.worst_case_level() == pytest.approx(obj.worst_case_level(), rel=1e-12)
    other = O.BinaryBoundedLIP(0.1, 0.7, 1.5, prior=0.3, on_invalid="lp", estimator="invert")
    assert other.params() != obj.params()  # another interval, another dict


def test_the_reported_example_works():
    g = O.GRR(k=5, epsilon=1.0)
    again = from_params(g.params())
    assert again == g and again.params() == {"protocol": "grr", "epsilon": 1.0, "k": 5,
                                             "name": "grr"}


#: params() of fixed configurations: a public format (memo keys and device states hash it)
LITERAL = [
    (lambda: O.GRR(k=5, epsilon=1.0), {"protocol": "grr", "epsilon": 1.0, "k": 5, "name": "grr"}),
    (lambda: O.OLH(2.0, 7), {"protocol": "olh", "epsilon": 2.0, "k": 7, "name": "olh"}),
    (lambda: O.LGRR(2.0, 1.0, 4), {"protocol": "l-grr", "eps_inf": 2.0, "eps_1": 1.0, "k": 4,
                                   "variant": "paper", "name": "l-grr"}),
    (lambda: O.LOSUE(2.0, 1.0, 3), {"protocol": "l-osue", "eps_inf": 2.0, "eps_1": 1.0, "k": 3,
                                    "name": "l-osue"}),
    (lambda: O.UELIP([0.25, 0.75], 1.0), {"protocol": "ue-lip", "epsilon": 1.0,
                                          "prior": [0.25, 0.75], "estimator": "bayes"}),
    (lambda: O.LHLIP([0.5, 0.5], 2.0), {"protocol": "lh-lip", "epsilon": 2.0, "prior": [0.5, 0.5],
                                        "g": 2, "estimator": "bayes"}),
    (lambda: O.SMP("oue", 1.5, (4, 3), r=2),
     {"protocol": "smp", "oracle": "oue", "epsilon": 1.5, "sizes": [4, 3], "eps_1": None,
      "lgrr_variant": "paper", "r": 2}),
    (lambda: O.Allomfree(2.0, 1.0, (4, 30)),
     {"protocol": "allomfree", "eps_inf": 2.0, "eps_1": 1.0, "sizes": [4, 30],
      "lgrr_variant": "paper"}),
]


@pytest.mark.parametrize("i", range(len(LITERAL)))
def test_params_format_is_unchanged(i):
    build, want = LITERAL[i]
    got = build().params()
    assert got == want
    assert list(got) == list(want)  # key order too (the JSON written to device states)


def test_rr_lip_params_hold_the_channel():
    params = O.RRLIP([0.4, 0.6], 1.0).params()
    keep = np.exp(-1.0)
    want = ((1 - keep) * np.eye(2) + keep * np.array([[0.4, 0.6]])).tolist()
    assert params == {"protocol": "rr-lip", "epsilon": 1.0, "prior": [0.4, 0.6],
                      "estimator": "bayes", "mechanism": "rr", "matrix": want}


@pytest.mark.parametrize("params, words", [
    ({"protocol": "nosuch", "k": 3}, r"protocol \('nosuch'\) is not one of .*'allomfree'.*'grr'"),
    ({"epsilon": 1.0, "k": 3}, r"params has no 'protocol'"),
    ({"protocol": 7}, r"protocol \(7\) is not one of"),
    ({"protocol": "grr", "epsilon": 1.0, "k": 5, "name": "oue"},
     r"'name' \('oue'\) disagrees with 'protocol' \('grr'\)"),
    ({"protocol": "grr", "epsilon": 1.0, "k": 5, "kk": 3},
     r"key 'kk' .*not a parameter of GRR.*\['epsilon', 'k', 'name'\]"),
    ({"protocol": "grr", "epsilon": 1.0}, r"GRR needs 'k'.*missing"),
    ({"protocol": "l-osue", "eps_inf": 2.0, "eps_1": 1.0, "k": 3, "variant": "exact"},
     r"key 'variant' .*not a parameter of LOSUE"),
    ({"protocol": "ue-lip", "epsilon": 1.0, "prior": [0.5, 0.5], "estimator": "bayes",
      "g": 2}, r"key 'g' .*not a parameter of UELIP"),
    ({"protocol": "lh-lip", "epsilon": 2.0, "prior": [0.5, 0.5], "g": 2, "estimator": "invert"},
     r"'estimator' \('invert'\) disagrees with the LHLIP .* \('bayes'\)"),
    ({"protocol": "rr-lip", "epsilon": 1.0, "prior": [0.4, 0.6], "mechanism": "rr",
      "matrix": [[0.9, 0.1], [0.1, 0.9]]}, r"'matrix' .*disagrees with the RRLIP.*ChannelLIP"),
    ({k: v for k, v in O.BinaryBoundedLIP(0.3, 0.6, 1.0, on_invalid="lp").params().items()
      if k not in ("lower", "upper")}, r"binary-lip.*needs 'lower' and 'upper'"),  # a dict of before
    ({**O.BinaryBoundedLIP(0.3, 0.6, 3.0).params(), "upper": 0.7},
     r"'matrix' .*disagrees with the BinaryBoundedLIP"),
])
def test_bad_params_are_a_clear_error(params, words):
    with pytest.raises(ValueError, match=words):
        from_params(params)


def test_params_must_be_a_mapping():
    with pytest.raises(TypeError, match=r"params \(list\) must be a dict"):
        from_params([("protocol", "grr")])


def test_invalid_values_are_the_constructors_errors():
    with pytest.raises(ValueError, match=r"epsilon \(-1"):
        from_params({"protocol": "grr", "epsilon": -1.0, "k": 5})
