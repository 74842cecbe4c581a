"""Stores (SQLite; PostgreSQL started from Debian's package), group commit, replay, and the
shuffled export that `lopub fit` and `Synthesizer.fit_reports` read."""
from __future__ import annotations

import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile

import numpy as np
import pytest

from lopub import Attribute, CollectionSpec, Domain, Reports, Synthesizer
from lopub.collect import MarginalPlan, MarginalReports
from lopub.serve.client import wire_reports
from lopub.serve.export import export, shuffled_reports
from lopub.serve.protocol import Collection
from lopub.serve.backends import SQLiteStore, open_store
from lopub.serve.storage import GroupWriter

DOMAIN = Domain([Attribute("a", ["0", "1", "2"]), Attribute("b", ["x", "y"]),
                 Attribute("c", [f"c{i}" for i in range(10)])])
PLAN = MarginalPlan(DOMAIN, (("a", "b"), ("b", "c"), ("a", "c")), 2.0, oracles=("grr", "oue", "olh"))
SPEC = CollectionSpec.from_domain(DOMAIN, epsilon=4.0)


def _records(n, rng):
    a = rng.integers(0, 3, n)
    b = (a + (rng.random(n) < 0.2)) % 2  # b depends on a
    c = rng.integers(0, 10, n)
    return np.column_stack([a, b, c])


def _fill(store, c, n, rng):
    """Store n simulated devices' reports through the validation path; returns their codes."""
    codes = _records(n, rng)
    subsets = rng.integers(0, c.n_subsets, n) if c.kind == "marginal" else np.zeros(n, int)
    wire = wire_reports(c, codes, subsets, rng=rng)
    items = [{"subset": int(s), "report": w} for s, w in zip(subsets, wire)]
    payloads, errors = c.validate(items, subsets)
    assert errors == {}
    nonces = [secrets.token_bytes(16) for _ in range(n)]
    assert all(store.write([(c.name, nonces, subsets.tolist(), payloads)])[0])
    return codes, subsets, wire


def _rows(arr):
    """The rows of an array as a sorted list of bytes (order-free comparison)."""
    flat = np.ascontiguousarray(arr).reshape(len(arr), -1)
    return sorted(row.tobytes() for row in flat)


def _check_store(store):
    c = Collection("m", PLAN)
    rng = np.random.default_rng(5)
    _, subsets, _ = _fill(store, c, 3000, rng)
    assert store.count("m") == 3000 and store.count("other") == 0
    nonce = secrets.token_bytes(16)
    first = store.write([("m", [nonce, nonce], [0, 0], [b"\0" * 8, b"\1" * 8])])
    assert first == [[True, False]]  # the same token twice in one write: the first counts
    assert store.write([("m", [nonce], [0], [b"\0" * 8])]) == [[False]]
    assert store.count("m") == 3001
    assert store.used("m", [secrets.token_bytes(16), nonce]) == [False, True]  # expired-token resends
    assert store.used("other", [nonce]) == [False] and store.used("m", []) == []
    got_subsets, payloads = store.fetch("m")
    assert np.array_equal(np.bincount(got_subsets, minlength=3), np.bincount(subsets, minlength=3)
                          + np.array([1, 0, 0]))
    writer = GroupWriter(store)
    futs = [writer.submit("m", [secrets.token_bytes(16)], [0], [b"\2" * 8]) for _ in range(200)]
    assert all(f.result(timeout=60) == [True] for f in futs)
    writer.close()
    assert store.count("m") == 3201


def test_sqlite_store_wal_durable(tmp_path):
    store = SQLiteStore(tmp_path / "r.sqlite")
    assert store._execute("PRAGMA journal_mode")[0][0] == "wal"
    assert store._execute("PRAGMA synchronous")[0][0] == 2  # FULL
    _check_store(store)
    store.close()
    assert open_store(str(tmp_path / "r.sqlite")).count("m") == 3201  # reopened: all there


def test_failed_write_stores_nothing(tmp_path):
    store = SQLiteStore(tmp_path / "r.sqlite")
    with pytest.raises(Exception):
        store.write([("m", [b"n1"], [0], [b"\0" * 8]), ("m", [b"n2"], [0], [None])])  # NOT NULL
    assert store.count("m") == 0
    assert store.write([("m", [b"n1"], [0], [b"\0" * 8])]) == [[True]]  # n1 was not consumed


def test_export_marginal_is_shuffled_and_fit_reads_it(tmp_path):
    store = SQLiteStore(tmp_path / "r.sqlite")
    c = Collection("m", PLAN)
    rng = np.random.default_rng(11)
    codes, subsets, wire = _fill(store, c, 6000, rng)
    out = tmp_path / "export.npz"
    summary = export(store, c, out)
    assert summary["n"] == 6000
    reports = MarginalReports.load(out, plan=PLAN)
    for i in range(3):  # the same multiset of reports per subset, in another order
        mine = [w for w, s in zip(wire, subsets) if s == i]
        if PLAN.oracles[i] == "oue":
            raw = np.frombuffer(bytes.fromhex("".join(mine)), np.uint8).reshape(len(mine), -1)
            expect = np.unpackbits(raw, axis=1, count=PLAN.cells(i)).astype(bool)
        else:
            expect = np.asarray(mine, dtype=np.int64)
        got = reports.groups[i]
        assert got.dtype == expect.dtype and got.shape == expect.shape
        assert _rows(got) == _rows(expect)
        assert not np.array_equal(got, expect)  # shuffled
    from lopub.cli import main

    assert main(["fit", str(out), "--out", str(tmp_path / "model.json"), "--quiet"]) == 0
    syn = Synthesizer(epsilon=2.0).fit_reports(reports)
    assert len(syn.sample(100, seed=1)) == 100


def test_export_bloom_parquet_and_folder(tmp_path):
    store = SQLiteStore(tmp_path / "r.sqlite")
    c = Collection("b", SPEC)
    codes, _, wire = _fill(store, c, 2000, np.random.default_rng(3))
    export(store, c, tmp_path / "b.parquet")
    export(store, c, tmp_path / "folder")
    rep = Reports.load(tmp_path / "b.parquet", spec=SPEC)
    assert sorted(bytes(r) for r in rep.packed) == sorted(bytes.fromhex(w) for w in wire)
    assert Reports.load(tmp_path / "folder").n == 2000
    from lopub.cli import main

    assert main(["fit", str(tmp_path / "folder"), "--out", str(tmp_path / "m.json"), "--quiet"]) == 0
    Synthesizer(epsilon=4.0).fit_reports(rep)


def test_export_empty_refused(tmp_path):
    with pytest.raises(ValueError, match="collection 'm' has no stored reports"):
        export(SQLiteStore(tmp_path / "r.sqlite"), Collection("m", PLAN), tmp_path / "x.npz")


def test_shuffle_is_a_uniform_permutation(tmp_path):
    """Where the first stored report lands: uniform over n positions (chi-square, 5 sd)."""
    store = SQLiteStore(tmp_path / "r.sqlite")
    c = Collection("b", SPEC)
    n = 8
    packed = [bytes([i]) + b"\0" * (SPEC.packed_bytes - 1) for i in range(n)]
    store.write([("b", [bytes([i]) for i in range(n)], [0] * n, packed)])
    runs = 4000
    pos = [int(np.flatnonzero(shuffled_reports(store, c).packed[:, 0] == 0)[0]) for _ in range(runs)]
    counts = np.bincount(pos, minlength=n)
    chi2 = float(((counts - runs / n) ** 2 / (runs / n)).sum())
    assert chi2 < (n - 1) + 5 * np.sqrt(2 * (n - 1))


# PostgreSQL ---------------------------------------------------------------------------------
def _pg_bin() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(found[-1]) if found else None


@pytest.fixture(scope="module")
def postgres_url():
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin/initdb); "
                    ".ci/run installs them with apt-get install postgresql")
    base = tempfile.mkdtemp(prefix="lopub-pg-")
    os.chmod(base, 0o777)
    as_user = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root: run it as nobody
        shutil.chown(base, "nobody")
        as_user = ["runuser", "-u", "nobody", "--"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = os.path.join(base, "data")
    subprocess.run(as_user + [f"{bindir}/initdb", "-D", data, "-U", "lopub", "--auth=trust", "-E", "UTF8"],
                   check=True, capture_output=True)
    subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", data, "-l", os.path.join(base, "log"), "-w", "-o",
                              f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=on", "start"],
                   check=True, capture_output=True)
    try:
        yield f"postgresql://lopub@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def test_postgres_store_and_export(postgres_url, tmp_path):
    pytest.importorskip("psycopg")
    store = open_store(postgres_url)
    assert type(store).__name__ == "PostgresStore"
    _check_store(store)
    store.close()
    again = open_store(postgres_url)
    assert again.count("m") == 3201
    c = Collection("b", SPEC)
    _, _, wire = _fill(again, c, 500, np.random.default_rng(1))
    export(again, c, tmp_path / "b.parquet")
    assert sorted(bytes(r) for r in Reports.load(tmp_path / "b.parquet").packed) == \
        sorted(bytes.fromhex(w) for w in wire)
    again.close()
