import math
import subprocess
import sys

import numpy as np
import pytest

from lopub import CollectionSpec, Domain
from lopub.reports import privacy
from lopub.errors import SpecError
from lopub.reports.spec import bloom_positions, optimal_bloom


@pytest.fixture
def domain():
    return Domain.from_categories({"color": ["red", "green", "blue"], "flag": ["0", "1"], "size": [str(i) for i in range(20)]})


def test_json_round_trip(domain, tmp_path):
    s = CollectionSpec.from_domain(domain, f=0.3, key="k1")
    p = tmp_path / "spec.json"
    s.to_json(p)
    s2 = CollectionSpec.from_json(p)
    assert s2 == s
    for a, b in zip(s.bloom, s2.bloom):
        np.testing.assert_array_equal(a, b)


def test_defaults_follow_paper(domain):
    s = CollectionSpec.from_domain(domain, f=0.5)
    assert s.m == (128, 32, 128) and s.h == (4, 4, 4)
    assert s.total_bits == 288 and s.offsets == (0, 128, 160, 288)


def test_epsilon_accounting(domain):
    s = CollectionSpec.from_domain(domain, f=0.5)
    assert s.epsilon_per_attribute[0] == pytest.approx(2 * 4 * math.log(1.5 / 0.5))
    assert s.epsilon == pytest.approx(3 * 8 * math.log(3))
    s2 = CollectionSpec.from_domain(domain, epsilon=6.0)
    assert s2.epsilon == pytest.approx(6.0)
    assert s2.f == pytest.approx(2 / (1 + math.exp(6.0 / (2 * 4 * 3))))
    assert s2.summary()["epsilon_per_record"] == pytest.approx(6.0)


@pytest.mark.parametrize("f", [0.01, 0.3, 0.5, 0.9, 0.999])
def test_privacy_inverse(f):
    eps = privacy.epsilon_per_record(f, 4, 15)
    assert privacy.f_for_epsilon(eps, 4, 15) == pytest.approx(f, rel=1e-10)
    assert privacy.epsilon_per_record(f, [4, 2]) == pytest.approx(2 * (4 + 2) * math.log((2 - f) / f))


def test_fp_rate_derivation(domain):
    m, h = optimal_bloom(20, 0.01)
    assert m == math.ceil(math.log(100) / math.log(2) ** 2 * 20) and h == 7
    s = CollectionSpec.from_domain(domain, f=0.5, fp_rate=0.01)
    assert s.m[2] == m and s.h[2] == 7


@pytest.mark.parametrize("kwargs, err, match", [
    ({"f": 0.0}, ValueError, r"f \(0.0\) must be in \(0, 1\)"),
    ({"f": 1.0}, ValueError, r"f \(1.0\) must be in \(0, 1\)"),
    ({"f": 0.5, "h": 0}, ValueError, r"h \(0\) must be an integer >= 1"),
    ({"f": 0.5, "m": 3, "h": 4}, SpecError, r"m_j \(3\) must be >= h \(4\)"),
    ({"f": 0.5, "epsilon": 1.0}, SpecError, "exactly one of f or epsilon"),
    ({}, SpecError, "exactly one of f or epsilon"),
    ({"epsilon": -1.0}, ValueError, r"epsilon \(-1.0\) must be a finite number > 0"),
])
def test_refuses_bad_specs(domain, kwargs, err, match):
    with pytest.raises(err, match=match):
        CollectionSpec.from_domain(domain, **kwargs)


@pytest.mark.parametrize("salts", [[0, -1, 0], [0, 0.5, 0], {}, "0", [0, True, 0]])
def test_spec_json_refuses_bad_salts(domain, salts):
    obj = CollectionSpec.from_domain(domain, f=0.3).to_dict()
    obj["salts"] = salts
    with pytest.raises(SpecError, match=r"\"salts\" .* must be a list of non-negative integers"):
        CollectionSpec.from_dict(obj)


def test_collision_is_rederived_or_refused():
    d = Domain.from_categories({"a": [str(i) for i in range(6)]})
    s = CollectionSpec.from_domain(d, f=0.5, m=8, h=1)  # 6 values into 8 one-hot slots: salt search
    H = s.bloom[0]
    assert len({r.tobytes() for r in H}) == 6
    assert s.salts[0] >= 0
    with pytest.raises(SpecError, match="attribute 'a'.* cannot separate 6 values"):
        CollectionSpec.from_domain(d, f=0.5, m=4, h=1)
    with pytest.raises(SpecError, match=r"attribute 'a': values '.*' and '.*' have the same Bloom filter"):
        # find a salt that collides and force it
        bad = next(salt for salt in range(1000) if len({tuple(bloom_positions(s.key, "a", salt, str(i), 1, 8)) for i in range(6)}) < 6)
        CollectionSpec(d, (8,), (1,), 0.5, s.key, (bad,))


def _positions_in_subprocess():
    code = ("from lopub.reports.spec import bloom_positions as b;"
            "print(b('lopub-test-key','color',0,'red',4,128), b('lopub-test-key','size',3,'17',2,64))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_bloom_stable_and_pinned():
    here = (bloom_positions("lopub-test-key", "color", 0, "red", 4, 128), bloom_positions("lopub-test-key", "size", 3, "17", 2, 64))
    # pinned values (blake2b keyed, little-endian words mod m); a change here breaks every deployed client
    assert here == ([48, 114, 110, 50], [42, 14])
    assert _positions_in_subprocess().strip() == f"{here[0]} {here[1]}"


def test_many_hashes():
    pos = bloom_positions("k", "a", 0, "v", 12, 1000)
    assert len(pos) == 12 and all(0 <= p < 1000 for p in pos)


def test_bloom_matches_documented_formula():
    import hashlib

    d = hashlib.blake2b(b"color\x000\x00red", key=b"lopub-test-key", digest_size=32).digest()
    expected = [int.from_bytes(d[8 * i:8 * i + 8], "little") % 128 for i in range(4)]
    assert bloom_positions("lopub-test-key", "color", 0, "red", 4, 128) == expected
