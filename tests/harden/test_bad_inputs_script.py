"""The target script of issue 15 (``tests/harden/bad_inputs.py``): >= 400 generated bad inputs
over every subcommand; a sample of them must all be clear errors (the full run is slow)."""
import collections
import contextlib
import io

import pytest

from lopub.cli._commands import COMMANDS
from tests.harden.bad_inputs import (
    _prepare,
    build_cases,
    classify,
    make_fixtures,
    run_in_process,
)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    work = tmp_path_factory.mktemp("bad")
    with contextlib.redirect_stdout(io.StringIO()):
        fx = make_fixtures(work)
    return build_cases(fx, work), work


def test_at_least_400_cases_over_every_subcommand(generated):
    cases, _ = generated
    assert len(cases) >= 400
    assert {c["argv"][0] for c in cases} == set(COMMANDS)


def _run(cases, work):
    outcomes = collections.Counter()
    for case in cases:
        _prepare(case)
        code, err, tb = run_in_process(case["argv"])
        outcome = classify(case, code, err, tb, work)
        outcomes[outcome] += 1
        assert outcome == "clear", (case["argv"], err, tb)
    return outcomes


def test_a_sample_of_the_bad_inputs_are_clear_errors(generated):
    cases, work = generated
    assert _run(cases[::9], work)["clear"] == len(cases[::9])


@pytest.mark.slow
def test_every_bad_input_is_a_clear_error(generated):
    cases, work = generated
    assert _run(cases, work)["clear"] == len(cases)
