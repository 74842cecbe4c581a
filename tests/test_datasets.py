"""Dataset schemas, path resolution, download with checksum, Adult and retail loaders."""
from __future__ import annotations

import hashlib
import io
import json
import os
import urllib.error
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from lopub.datasets import (
    ChecksumError,
    DatasetUnavailableError,
    adult_domain,
    data_path,
    load_adult,
    load_retail,
    retail_domain,
)
from lopub.datasets import _fetch
from lopub.data.domain import Domain

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ("adult", "retail")


def _data_dir() -> Path:
    env = os.environ.get("LOPUB_DATA_DIR")
    if not env:
        pytest.skip("LOPUB_DATA_DIR is not set; point it at a folder holding adult/ and retail/ (e.g. ../shared/datasets)")
    return Path(env)


def _need(rel: str) -> Path:
    p = _data_dir() / rel
    if not p.is_file():
        pytest.skip(f"{p} not found (LOPUB_DATA_DIR={os.environ.get('LOPUB_DATA_DIR')!r})")
    return p


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No data dir, an empty cache, and a urlopen that fails."""
    monkeypatch.delenv("LOPUB_DATA_DIR", raising=False)
    monkeypatch.setenv("LOPUB_CACHE", str(tmp_path / "cache"))

    def fail(url, timeout=None):
        raise urllib.error.URLError("network is unreachable")

    monkeypatch.setattr(_fetch.urllib.request, "urlopen", fail)
    return tmp_path / "cache"


def _serve(monkeypatch, payload: bytes) -> list[str]:
    calls: list[str] = []

    def fake(url, timeout=None):
        calls.append(url)
        return io.BytesIO(payload)

    monkeypatch.setattr(_fetch.urllib.request, "urlopen", fake)
    return calls


# schemas ------------------------------------------------------------------
@pytest.mark.parametrize("name", SCHEMAS)
def test_schema_json_round_trip(name, tmp_path):
    dom = Domain.from_json(ROOT / "datasets" / f"{name}.json")
    dom.to_json(tmp_path / "d.json")
    assert Domain.from_json(tmp_path / "d.json") == dom


@pytest.mark.parametrize("name", SCHEMAS)
def test_packaged_schema_is_the_datasets_file(name):
    link = ROOT / "lopub" / "datasets" / "schemas" / f"{name}.json"
    assert link.is_symlink() and os.readlink(link) == f"../../../datasets/{name}.json"
    assert _fetch.schema_dict(name) == json.loads((ROOT / "datasets" / f"{name}.json").read_text())


def test_adult_domain_shape_and_total_cells():
    dom = adult_domain()
    assert len(dom) == 15
    assert dom.attrs[0] == "age" and dom.attrs[-1] == "income"
    assert dom.labels("income") == ("<=50K", ">50K")
    assert 2**40 <= dom.cells() <= 2**52
    assert _fetch.schema_dict("adult")["source"]["total_cells"] == dom.cells()
    with_missing = adult_domain(with_missing=True)
    assert with_missing.labels("occupation")[-1] == "?" and with_missing.size("age") == dom.size("age")


def test_retail_domain_binary():
    dom = retail_domain()
    assert len(dom) == 16 and all(dom.labels(a) == ("0", "1") for a in dom.attrs)
    assert all(a.startswith("item_") for a in dom.attrs)


# path resolution and download ----------------------------------------------------
def test_offline_missing_error_names_env_var_and_folder(offline):
    with pytest.raises(DatasetUnavailableError, match="LOPUB_DATA_DIR") as exc:
        data_path("adult", "adult.data")
    msg = str(exc.value)
    assert "adult/adult.data" in msg and str(offline / "adult" / "adult.data") in msg
    assert isinstance(exc.value, FileNotFoundError)
    assert not (offline / "adult" / "adult.data").exists()


def test_offline_loader_error(offline):
    with pytest.raises(FileNotFoundError, match="LOPUB_DATA_DIR"):
        load_retail()


def test_download_disabled(offline):
    with pytest.raises(DatasetUnavailableError, match="downloads are disabled"):
        data_path("retail", "retail.dat", download=False)


def test_download_good_checksum_is_cached(monkeypatch, offline):
    payload = b"1 2 3\n4 5\n"
    src = {"url": "https://example.invalid/retail.dat", "sha256": hashlib.sha256(payload).hexdigest()}
    monkeypatch.setattr(_fetch, "file_source", lambda name, filename: src)
    calls = _serve(monkeypatch, payload)
    p = data_path("retail", "retail.dat")
    assert p == offline / "retail" / "retail.dat" and p.read_bytes() == payload
    assert calls == [src["url"]]
    assert data_path("retail", "retail.dat") == p and len(calls) == 1  # served from the cache now


def test_download_normalizes_adult_header_and_blank_lines(monkeypatch, offline):
    canonical = b"25, Private\n38, Private\n"
    src = {"url": "https://example.invalid/adult.test", "sha256": hashlib.sha256(canonical).hexdigest()}
    monkeypatch.setattr(_fetch, "file_source", lambda name, filename: src)
    _serve(monkeypatch, b"|1x3 Cross validator\r\n25, Private\r\n38, Private\r\n\r\n")
    assert data_path("adult", "adult.test").read_bytes() == canonical


def test_download_wrong_checksum_leaves_no_file(monkeypatch, offline):
    _serve(monkeypatch, b"not the retail data\n")
    with pytest.raises(ChecksumError, match="sha256"):
        data_path("retail", "retail.dat")
    folder = offline / "retail"
    assert not folder.exists() or list(folder.iterdir()) == []


def test_env_dir_takes_precedence_over_cache(monkeypatch, tmp_path):
    (tmp_path / "env" / "retail").mkdir(parents=True)
    (tmp_path / "cache" / "retail").mkdir(parents=True)
    (tmp_path / "env" / "retail" / "retail.dat").write_text("1\n")
    (tmp_path / "cache" / "retail" / "retail.dat").write_text("2\n")
    monkeypatch.setenv("LOPUB_DATA_DIR", str(tmp_path / "env"))
    monkeypatch.setenv("LOPUB_CACHE", str(tmp_path / "cache"))
    assert data_path("retail", "retail.dat") == tmp_path / "env" / "retail" / "retail.dat"
    monkeypatch.setenv("LOPUB_DATA_DIR", str(tmp_path / "nowhere"))
    assert data_path("retail", "retail.dat") == tmp_path / "cache" / "retail" / "retail.dat"


def test_explicit_path_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither the file 'retail.dat'"):
        data_path("retail", "retail.dat", tmp_path)
    with pytest.raises(ValueError, match="filename"):
        data_path("retail", "nope.dat")
    with pytest.raises(ValueError, match="split"):
        load_adult(tmp_path, split="validation")


def test_small_retail_file_parsed(tmp_path):
    items = [int(a.split("_")[1]) for a in retail_domain().attrs]
    lines = [f"{items[0]} 7 {items[3]}", "", f"{items[15]}", f"9999 {items[0]} {items[0]}"]
    f = tmp_path / "retail.dat"
    f.write_text(" \n".join(lines) + " \n")
    ds = load_retail(f)
    assert ds.n == 4
    expect = np.zeros((4, 16), dtype=int)
    expect[0, [0, 3]] = 1
    expect[2, 15] = 1
    expect[3, 0] = 1
    np.testing.assert_array_equal(ds.codes, expect)


def test_small_adult_file_parsed(tmp_path):
    rows = [
        "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K.",
        "50, ?, 83311, Bachelors, 13, Married-civ-spouse, ?, Husband, White, Male, 0, 0, 13, United-States, >50K.",
    ]
    f = tmp_path / "adult.test"
    f.write_text("|1x3 Cross validator\n" + "\n".join(rows) + "\n")
    ds = load_adult(f, split="test")
    assert ds.n == 1
    rec = ds.to_pandas().iloc[0]
    assert rec["income"] == "<=50K" and rec["age"] == "[35, 40)" and rec["capital-gain"] == "[1, 5000)"
    full = load_adult(f, split="test", drop_missing=False)
    assert full.n == 2 and full.to_pandas()["workclass"].iloc[1] == "?"
    with pytest.raises(ValueError, match="single file"):
        load_adult(f, split="all")


# real data ----------------------------------------------------------------------
def test_reference_files_match_checksums():
    for name in SCHEMAS:
        for filename, src in _fetch.schema_dict(name)["source"]["files"].items():
            p = _need(f"{name}/{filename}")
            assert _fetch.sha256_file(p) == src["sha256"]
            assert _fetch.normalize(filename, p.read_bytes()) == p.read_bytes()


def test_adult_counts():
    _need("adult/adult.data")
    _need("adult/adult.test")
    ds = load_adult()
    assert ds.n == 45_222 and len(ds.domain) == 15
    train, test = load_adult(split="train"), load_adult(split="test")
    assert (train.n, test.n) == (30_162, 15_060)
    np.testing.assert_array_equal(ds.codes, np.vstack([train.codes, test.codes]))
    # income labels agree across splits: both labels occur in both
    for part in (train, test):
        assert (part.project(["income"]).values > 0.2).all()
    assert load_adult(split="all", drop_missing=False).n == 32_561 + 16_281


def test_adult_explicit_folder_path(monkeypatch):
    folder = _need("adult/adult.data").parent
    monkeypatch.delenv("LOPUB_DATA_DIR", raising=False)
    assert load_adult(folder, split="train").n == 30_162


def test_retail_counts_match_direct_count():
    path = _need("retail/retail.dat")
    ds = load_retail()
    assert ds.n == 88_162 and len(ds.domain) == 16
    support = Counter()
    with open(path) as fh:
        for line in fh:
            support.update(set(line.split()))
    top = [item for item, _ in sorted(support.items(), key=lambda kv: (-kv[1], int(kv[0])))[:16]]
    assert [a.split("_")[1] for a in ds.domain.attrs] == top
    np.testing.assert_array_equal(ds.codes.sum(axis=0), [support[i] for i in top])
