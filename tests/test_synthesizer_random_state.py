"""Synthesizer(random_state=...): scikit-learn's name for the seed of the simulated clients.

``rng=`` keeps working; both given with different values is refused naming both;
get_params / set_params / sklearn.base.clone stay consistent.
"""
import numpy as np
import pandas as pd
import pytest

from lopub.datasets import embedded
from lopub.pipeline.synthesizer import Synthesizer

SMALL = ["sex", "race", "income"]


@pytest.fixture(scope="module")
def frame():
    return embedded(1500, rng=3).to_pandas()[SMALL]


def _sample(s, frame):
    return s.fit(frame).sample(200, seed=1)


def test_random_state_seeds_the_clients_like_rng(frame):
    by_state = _sample(Synthesizer(epsilon=4, protocol="marginals", random_state=7), frame)
    by_rng = _sample(Synthesizer(epsilon=4, protocol="marginals", rng=7), frame)
    pd.testing.assert_frame_equal(by_state, by_rng)
    gen = _sample(Synthesizer(epsilon=4, protocol="marginals", random_state=np.random.default_rng(7)), frame)
    pd.testing.assert_frame_equal(gen, by_rng)  # a Generator seeded alike draws alike


def test_get_params_lists_random_state_and_set_params_takes_it():
    s = Synthesizer(epsilon=2, random_state=3)
    assert s.get_params()["random_state"] == 3 and s.get_params()["rng"] is None
    assert "random_state=3" in repr(s)
    assert s.set_params(random_state=5) is s and s.random_state == 5
    assert Synthesizer(**s.get_params()).get_params() == s.get_params()


def test_both_given_with_different_values_is_refused_naming_both():
    with pytest.raises(ValueError, match=r"rng \(1\) and random_state \(2\).*one of them"):
        Synthesizer(epsilon=1, rng=1, random_state=2)
    with pytest.raises(ValueError, match=r"rng .*random_state"):
        Synthesizer(epsilon=1, rng=np.random.default_rng(1), random_state=np.random.default_rng(1))
    s = Synthesizer(epsilon=1, rng=1)
    with pytest.raises(ValueError, match=r"rng \(1\) and random_state \(2\)"):
        s.set_params(random_state=2)
    assert s.random_state is None  # a refused set_params changes nothing
    g = np.random.default_rng(0)
    assert Synthesizer(epsilon=1, rng=4, random_state=4).random_state == 4  # the same seed twice: fine
    assert Synthesizer(epsilon=1, rng=g, random_state=g).rng is g


@pytest.mark.parametrize("bad, err, match", [
    (-1, ValueError, r"random_state \(-1\) must be a non-negative integer seed"),
    ("0", TypeError, r"random_state \('0'\) must be a numpy.random.Generator, a non-negative int seed or None"),
    (np.random.RandomState(0), TypeError, r"random_state \(RandomState"),
])
def test_bad_random_state_named(bad, err, match):
    with pytest.raises(err, match=match):
        Synthesizer(epsilon=1, random_state=bad)


def test_sklearn_clone_round_trip(frame):
    base = pytest.importorskip("sklearn.base")
    for kwargs in ({"random_state": 7}, {"rng": 7}, {"random_state": np.random.default_rng(7)}, {}):
        s = Synthesizer(epsilon=4, protocol="marginals", bins=3, **kwargs)
        c = base.clone(s)
        assert type(c) is Synthesizer and c is not s
        assert set(c.get_params()) == set(s.get_params())
        for k, v in s.get_params().items():
            if isinstance(v, np.random.Generator):  # clone deep-copies a Generator: same state
                assert c.get_params()[k].bit_generator.state == v.bit_generator.state
            else:
                assert c.get_params()[k] == v, k
    fitted = Synthesizer(epsilon=4, protocol="marginals", random_state=7).fit(frame)
    again = base.clone(fitted)
    assert not hasattr(again, "model_")  # a clone is unfitted
    pd.testing.assert_frame_equal(again.fit(frame).sample(100, seed=2), fitted.sample(100, seed=2))


def test_saved_random_state_loads_and_old_files_without_it_load(frame, tmp_path):
    s = Synthesizer(epsilon=4, protocol="marginals", random_state=7).fit(frame)
    s.save(tmp_path / "s.json")
    back = Synthesizer.load(tmp_path / "s.json")
    assert back.random_state == 7 and back.rng is None
    r = Synthesizer(epsilon=4, protocol="marginals", rng=7).fit(frame)
    r.save(tmp_path / "r.json")
    from lopub.model.graphical import Model
    assert "random_state" not in Model.load(tmp_path / "r.json").meta["synthesizer"]["params"]  # as before
    assert Synthesizer.load(tmp_path / "r.json").get_params()["random_state"] is None
