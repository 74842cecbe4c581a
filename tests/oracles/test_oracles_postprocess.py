"""Post-processing of raw estimates."""
import numpy as np
import pytest

from lopub.estimate.postprocess import POSTPROCESS as METHODS, clip_normalize, norm_sub, postprocess, project_simplex


@pytest.mark.parametrize("method", ["clip", "norm-sub", "simplex"])
def test_result_is_distribution_and_says_method(method):
    raw = np.random.default_rng().normal(0.1, 0.3, 12)
    out = postprocess(raw, method)
    assert out.method == method
    assert np.all(out.freq >= 0)
    assert out.freq.sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(out.raw, raw)


def test_distribution_is_a_fixed_point():
    f = np.array([0.2, 0.3, 0.5])
    for func in (clip_normalize, norm_sub, project_simplex):
        np.testing.assert_allclose(func(f), f, atol=1e-12)


def test_simplex_projection_is_closest_point():
    rng = np.random.default_rng(4)
    raw = rng.normal(0.2, 0.4, 6)
    proj = project_simplex(raw)
    for _ in range(200):
        other = rng.dirichlet(np.ones(6))
        assert np.sum((raw - proj) ** 2) <= np.sum((raw - other) ** 2) + 1e-12


def test_norm_sub_subtracts_common_delta_from_survivors():
    raw = np.array([0.6, 0.5, -0.2, 0.1])
    out = norm_sub(raw)
    kept = out > 0
    deltas = raw[kept] - out[kept]
    np.testing.assert_allclose(deltas, deltas[0])
    assert out.sum() == pytest.approx(1.0)


def test_all_negative_gives_uniform():
    for method in ("clip", "norm-sub"):
        np.testing.assert_allclose(postprocess([-1.0, -2.0], method).freq, [0.5, 0.5])


def test_errors():
    assert "none" in METHODS
    with pytest.raises(ValueError, match="method"):
        postprocess([0.5, 0.5], "bogus")
    with pytest.raises(ValueError, match="NaN"):
        postprocess([np.nan, 0.5], "clip")
