"""Item 3 (resource limits checked before allocation) and item 7 of issue 15."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lopub.limits import ResourceLimitError, check_memory, format_bytes, memory_limit
from lopub.reports import privacy

from .conftest import run_cli

HUGE = 10**14


def one_clear_line(code, err, *words):
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, (w, err)


@pytest.mark.parametrize("argv, words", [
    (["synthesize", "{m.json}", "--n", HUGE, "--out", "{tmp}/s.csv"], ["n (100000000000000)", "PiB"]),
    (["demo", "--n", HUGE, "--out", "{tmp}/demo"], ["n (100000000000000)", "PiB"]),
    (["compare-protocols", "--n", HUGE], ["n (100000000000000)", "PiB"]),
    (["encode", "{d.csv}", "--domain", "{dom.json}", "--f", "0.3", "--m", 10**12,
      "--out", "{tmp}/r.parquet"], ["m_j (1000000000000)", "Bloom matrix of attribute 'a'"]),
    (["encode", "{d.csv}", "--domain", "{dom.json}", "--f", "0.3", "--m", 10**8,
      "--out", "{tmp}/r.parquet"], ["m ([100000000, 100000000, 100000000])", "GiB"]),
    (["schema", "{num.csv}", "--bins", 10**9], ["bins (1000000000)", "GiB", "column 'x'"]),
])
def test_huge_sizes_refused_before_allocation(files, tmp_path, capsys, argv, words):
    num = tmp_path / "num.csv"
    num.write_text("x\n" + "\n".join(str(v) for v in np.linspace(0, 1, 300)) + "\n")
    names = {**{k: v for k, v in files.items()}, "tmp": str(tmp_path), "num.csv": str(num)}
    for key, value in names.items():
        argv = [str(x).replace("{" + key + "}", value) for x in argv]
    with memory_limit(2**30):  # as if only 1 GiB were available (the check names the limit)
        code, err = run_cli(argv, capsys)
    one_clear_line(code, err, *words, "would need about")


def test_max_memory_mb_option(files, tmp_path, capsys):
    code, err = run_cli(["synthesize", files["m.json"], "--n", 10**6, "--out", tmp_path / "s.csv",
                         "--max-memory-mb", "10"], capsys)
    one_clear_line(code, err, "n (1000000)", "limit set by --max-memory-mb (10 MiB)")
    assert not (tmp_path / "s.csv").exists()
    code, _ = run_cli(["synthesize", files["m.json"], "--n", 100, "--out", tmp_path / "s.csv",
                       "--max-memory-mb", "10"], capsys)
    assert code == 0


@pytest.mark.parametrize("bad", ["nan", "0", "-5", "inf", "abc"])
def test_max_memory_mb_must_be_positive(files, capsys, bad):
    code, err = run_cli(["privacy", "--f", "0.5", "--max-memory-mb", bad], capsys)
    one_clear_line(code, err, f"argument --max-memory-mb: ('{bad}') must be")


def test_privacy_with_huge_d_needs_no_memory(capsys):
    code, err = run_cli(["privacy", "--f", "0.3", "--d", 10**12, "--max-memory-mb", "1"], capsys)
    assert code == 0, err
    assert privacy.epsilon_per_record(0.3, 4, 10**12) == pytest.approx(
        10**12 * privacy.epsilon_per_attribute(0.3, 4), rel=1e-12)


def test_check_memory_message():
    with memory_limit(1000):
        with pytest.raises(ResourceLimitError, match=r"n \(7\) would need about 1.95 KiB for x"):
            check_memory(2000, "n", 7, "x")
        check_memory(999, "n", 7, "x")
    assert format_bytes(1536) == "1.5 KiB" and issubclass(ResourceLimitError, ValueError)


# item 7: an epsilon so small that f rounds to 1 is an error naming epsilon
@pytest.mark.parametrize("cmd", ["privacy", "encode"])
def test_tiny_epsilon_blames_epsilon(files, tmp_path, capsys, cmd):
    argv = (["privacy"] if cmd == "privacy" else
            ["encode", files["d.csv"], "--domain", files["dom.json"], "--out", tmp_path / "r.parquet"])
    code, err = run_cli(argv + ["--epsilon", "1e-17"], capsys)
    one_clear_line(code, err, "epsilon (1e-17) is too small")
    assert "f (1" not in err


@settings(max_examples=300, deadline=None)
@given(eps=st.floats(min_value=0, max_value=1e308, exclude_min=True, allow_subnormal=True),
       h=st.integers(1, 64), d=st.integers(1, 10**6))
def test_f_for_epsilon_is_a_probability_or_an_error_naming_epsilon(eps, h, d):
    try:
        f = privacy.f_for_epsilon(eps, h, d)
    except ValueError as exc:
        assert str(exc).startswith(f"epsilon ({eps:g}) is too")
        return
    assert 0.0 < f < 1.0
    back = privacy.epsilon_per_record(f, h, d)
    assert math.isfinite(back) and back > 0
    x = eps / (2 * h * d)
    if 1e-8 < x < 100:  # away from the ends (1 - f or f tiny) the round trip is accurate
        assert back == pytest.approx(eps, rel=1e-6)
