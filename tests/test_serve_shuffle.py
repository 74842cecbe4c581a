"""Amplification by shuffling: the numerical bound against brute force and the closed form."""
from __future__ import annotations

import json
import math
from itertools import product

import numpy as np
import pytest
from scipy import stats

from lopub.cli import main
from lopub.reports.shuffle import closed_form_epsilon, shuffle_delta, shuffle_epsilon


def _brute_delta(n, eps0, eps):
    """D_{e^eps}(P || Q) by enumerating every (c, first count) of the clone distributions."""
    alpha = math.exp(eps0) / (math.exp(eps0) + 1)
    total = 0.0
    for c in range(n):
        pc = stats.binom.pmf(c, n - 1, math.exp(-eps0))
        b = stats.binom.pmf(np.arange(c + 1), c, 0.5)
        shifted = np.concatenate([[0.0], b])  # Pr[A + 1 = k]
        plain = np.concatenate([b, [0.0]])  # Pr[A = k]
        p = alpha * shifted + (1 - alpha) * plain
        q = (1 - alpha) * shifted + alpha * plain
        total += pc * np.maximum(p - math.exp(eps) * q, 0).sum()
    return total


@pytest.mark.parametrize("n, eps0, eps", list(product([2, 7, 60], [0.3, 1.0, 3.0], [0.0, 0.1, 0.5])))
def test_delta_equals_brute_force(n, eps0, eps):
    assert shuffle_delta(n, eps0, eps) == pytest.approx(_brute_delta(n, eps0, eps), abs=3e-15)


@pytest.mark.parametrize("n, eps0, delta", [(10**4, 0.5, 1e-6), (10**4, 1.0, 1e-6), (10**5, 2.0, 1e-8),
                                             (10**6, 1.0, 1e-8), (10**6, 4.0, 1e-8), (10**7, 6.0, 1e-9)])
def test_numerical_below_closed_form_and_local(n, eps0, delta):
    closed = closed_form_epsilon(n, eps0, delta)
    eps = shuffle_epsilon(n, eps0, delta)
    assert closed is not None and 0 < eps <= closed < eps0 + 1
    assert eps < eps0
    assert shuffle_delta(n, eps0, eps) <= delta  # the answer meets its delta
    assert shuffle_delta(n, eps0, eps * 0.98) > delta  # and is tight (bisection)


def test_more_users_more_amplification():
    eps = [shuffle_epsilon(n, 2.0, 1e-6) for n in (10**3, 10**4, 10**5, 10**6)]
    assert all(a > b for a, b in zip(eps, eps[1:]))
    # the rate is about 1/sqrt(n): 100x the users, about a tenth of the epsilon
    assert 0.05 < eps[3] / eps[1] < 0.2


def test_closed_form_outside_its_range_and_errors():
    assert closed_form_epsilon(100, 5.0, 1e-6) is None
    assert shuffle_epsilon(100, 5.0, 1e-6) <= 5.0
    with pytest.raises(ValueError, match=r"n \(1\) must be an integer >= 2"):
        shuffle_delta(1, 1.0, 0.1)
    with pytest.raises(ValueError, match=r"delta \(0\) must be in \(0, 1\)"):
        shuffle_epsilon(10, 1.0, 0)
    with pytest.raises(ValueError, match=r"eps0 \(-1.0\) must be a finite number > 0"):
        shuffle_delta(10, -1.0, 0.1)


def test_privacy_command(capsys):
    assert main(["privacy", "--epsilon", "2", "--d", "3", "--shuffle-n", "100000", "--delta", "1e-6",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["local_epsilon"] == 2 and out["central_epsilon"] == pytest.approx(
        shuffle_epsilon(100000, 2.0, 1e-6))
    assert out["central_epsilon"] < out["closed_form_epsilon"] < 2
    assert main(["privacy", "--f", "0.5", "--shuffle-n", "1"]) == 2
    assert "--shuffle-n (1) must be an integer >= 2" in capsys.readouterr().err
    assert main(["privacy", "--f", "0.5", "--shuffle-n", "10", "--delta", "2"]) == 2
    assert "--delta (2.0) must be in (0, 1)" in capsys.readouterr().err


def test_privacy_command_says_when_shuffling_adds_nothing(capsys):
    """40 shuffled reports at epsilon 2: the central bound is no better than the local epsilon, and the
    command says so (it printed the bound alone before); 100,000 reports amplify and get no such note."""
    assert main(["privacy", "--epsilon", "2", "--shuffle-n", "40"]) == 0
    text = capsys.readouterr().out
    assert "note: no meaningful amplification" in text and "rely on the local guarantee" in text
    assert main(["privacy", "--epsilon", "2", "--shuffle-n", "100000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["central_epsilon"] < 0.9 * 2 and "note" not in out


@pytest.mark.parametrize("protocol", ["marginals", "one-attribute", "grr", "oue", "olh"])
def test_privacy_command_prints_only_the_fields_of_the_protocol(protocol, capsys):
    """A marginal-sampling plan's reports have only their epsilon: no Bloom f, h, d (text or JSON);
    Bloom's own parameters are refused for them; --protocol bloom (the default) keeps its fields."""
    argv = ["privacy", "--protocol", protocol, "--epsilon", "2", "--shuffle-n", "100000"]
    assert main(argv + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"protocol", "epsilon_per_record", "shuffle_n", "delta", "local_epsilon",
                        "central_epsilon", "closed_form_epsilon"} and out["protocol"] == protocol
    assert out["central_epsilon"] == pytest.approx(shuffle_epsilon(100000, 2.0, 1e-8))
    assert main(argv) == 0
    keys = {line.split(":")[0] for line in capsys.readouterr().out.splitlines()}
    assert keys == set(out)
    for extra in (["--h", "4"], ["--d", "3"], ["--f", "0.5"]):
        assert main(argv + extra) == 2
        assert f"--protocol {protocol} takes --epsilon only" in capsys.readouterr().err
    assert main(["privacy", "--protocol", protocol, "--epsilon", "0"]) == 2
    assert "--epsilon (0) must be a finite number > 0" in capsys.readouterr().err
    assert main(["privacy", "--protocol", "bloom", "--epsilon", "2", "--shuffle-n", "100000", "--json"]) == 0
    assert {"f", "h", "d"} <= set(json.loads(capsys.readouterr().out))


def test_report_states_the_shuffle_amplification_for_its_reports():
    """The HTML report's privacy statement gives the central epsilon for the model's N reports."""
    from lopub.publish.report.notes import SHUFFLE_DELTA, privacy_statement, shuffle_note

    coll = {"protocol": "marginals", "epsilon_per_record": 2.0, "subsets": [["a"]], "oracles": ["grr"]}
    text = shuffle_note(coll, 100_000)
    central = shuffle_epsilon(100_000, 2.0, SHUFFLE_DELTA)
    assert central < 2.0 and f"central ({central:.3g}, {SHUFFLE_DELTA:g})" in text
    assert any(p == text for p in privacy_statement(coll, real_shown=False, n=100_000))
    assert shuffle_note(None, 100_000) is None and shuffle_note(coll, None) is None
    assert not any("shuffl" in p for p in privacy_statement(coll, real_shown=False))
