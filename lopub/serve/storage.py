"""Durable report stores: SQLite (embedded default) and PostgreSQL (by URL).

Two tables, deliberately unlinked: ``used_tokens (collection, nonce)`` makes
every token single-use, ``reports (id, collection, subset, payload)`` holds
the randomized reports.  A report row has no token, no arrival time and no
address; both rows of a report are written in one transaction, committed
(SQLite: WAL with ``synchronous=FULL``; PostgreSQL: synchronous commit)
before the service acknowledges.

:class:`GroupWriter` commits the writes of many concurrent requests in one
transaction (group commit): one fsync for many reports, each request
answered only after the commit that holds its report.
"""
from __future__ import annotations

import concurrent.futures
import os
import queue
import sqlite3
import threading
from typing import Sequence

import numpy as np

Submission = tuple[str, Sequence[bytes], Sequence[int], Sequence[bytes]]
_CHUNK = 5000  # rows per multi-row statement (SQLite allows 32766 variables)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS used_tokens (collection TEXT NOT NULL, nonce {blob} NOT NULL, "
    "PRIMARY KEY (collection, nonce))",
    "CREATE TABLE IF NOT EXISTS reports (id {serial} PRIMARY KEY, collection TEXT NOT NULL, "
    "subset INTEGER NOT NULL, payload {blob} NOT NULL)",
    "CREATE INDEX IF NOT EXISTS reports_collection ON reports (collection)",
)


class Store:
    """Common logic; subclasses give the connection and the SQL dialect."""

    param = "?"

    def _execute(self, sql: str, args: Sequence = ()) -> list:
        raise NotImplementedError

    def _executemany(self, sql: str, rows: list) -> None:
        raise NotImplementedError

    def _begin(self) -> None:
        raise NotImplementedError

    def _commit(self) -> None:
        raise NotImplementedError

    def _rollback(self) -> None:
        raise NotImplementedError

    def write(self, submissions: list[Submission]) -> list[list[bool]]:
        """Store many submissions in ONE transaction; per report, ``False`` if its token was used.

        Nothing is stored for a report whose nonce is already known (replay).
        Returns after the commit; raises (storing nothing) if it fails.
        """
        self._begin()
        try:
            out = [self._write_one(*s) for s in submissions]  # a few per transaction
            self._commit()
        except BaseException:
            self._rollback()
            raise
        return out

    def _write_one(self, collection: str, nonces: Sequence[bytes], subsets: Sequence[int],
                   payloads: Sequence[bytes]) -> list[bool]:
        fresh: set[bytes] = set()
        ph = self.param
        for start in range(0, len(nonces), _CHUNK):
            part = nonces[start:start + _CHUNK]
            values = ",".join([f"({ph},{ph})"] * len(part))
            args = [x for n in part for x in (collection, n)]
            rows = self._execute(f"INSERT INTO used_tokens (collection, nonce) VALUES {values} "
                                 "ON CONFLICT DO NOTHING RETURNING nonce", args)
            fresh.update(bytes(r[0]) for r in rows)
        accepted = []
        for n in nonces:  # a nonce twice in one batch: only its first report counts
            accepted.append(n in fresh)
            fresh.discard(n)
        rows = [(collection, int(s), p) for s, p, a in zip(subsets, payloads, accepted) if a]
        if rows:
            self._executemany(f"INSERT INTO reports (collection, subset, payload) VALUES ({ph},{ph},{ph})",
                              rows)
        return accepted

    def count(self, collection: str) -> int:
        """Reports stored for ``collection``."""
        return int(self._execute(f"SELECT COUNT(*) FROM reports WHERE collection = {self.param}",
                                 [collection])[0][0])

    def fetch(self, collection: str) -> tuple[np.ndarray, list[bytes]]:
        """Subset ids and payloads of every stored report of ``collection`` (storage order)."""
        rows = self._execute(f"SELECT subset, payload FROM reports WHERE collection = {self.param}",
                             [collection])
        return (np.array([r[0] for r in rows], dtype=np.int64).reshape(-1),
                [bytes(r[1]) for r in rows])

    def close(self) -> None:
        raise NotImplementedError


class SQLiteStore(Store):
    """SQLite file in WAL mode with ``synchronous=FULL`` (durable at commit)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = str(path)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                   timeout=30.0)
        self._lock = threading.Lock()
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        for sql in _SCHEMA:
            self._db.execute(sql.format(blob="BLOB", serial="INTEGER"))

    def _execute(self, sql: str, args: Sequence = ()) -> list:
        return self._db.execute(sql, list(args)).fetchall()

    def _executemany(self, sql: str, rows: list) -> None:
        self._db.executemany(sql, rows)

    def _begin(self) -> None:
        self._lock.acquire()
        self._db.execute("BEGIN IMMEDIATE")  # the write lock first: no other writer in between

    def _commit(self) -> None:
        try:
            self._db.execute("COMMIT")
        finally:
            self._lock.release()

    def _rollback(self) -> None:
        try:
            self._db.execute("ROLLBACK")
        finally:
            self._lock.release()

    def count(self, collection: str) -> int:
        with self._lock:
            return super().count(collection)

    def fetch(self, collection: str) -> tuple[np.ndarray, list[bytes]]:
        with self._lock:
            return super().fetch(collection)

    def close(self) -> None:
        self._db.close()


class PostgresStore(Store):
    """PostgreSQL through psycopg 3 (``postgresql://...`` URL); commit is synchronous."""

    param = "%s"

    def __init__(self, url: str) -> None:
        import psycopg

        self.url = url
        self._db = psycopg.connect(url, autocommit=False)
        self._lock = threading.Lock()
        with self._lock:
            for sql in _SCHEMA:
                self._db.execute(sql.format(blob="BYTEA", serial="BIGSERIAL"))
            self._db.commit()

    def _execute(self, sql: str, args: Sequence = ()) -> list:
        cur = self._db.execute(sql, list(args))
        return cur.fetchall() if cur.description else []

    def _executemany(self, sql: str, rows: list) -> None:
        with self._db.cursor() as cur:
            cur.executemany(sql, rows)

    def _begin(self) -> None:
        self._lock.acquire()

    def _commit(self) -> None:
        try:
            self._db.commit()
        finally:
            self._lock.release()

    def _rollback(self) -> None:
        try:
            self._db.rollback()
        finally:
            self._lock.release()

    def count(self, collection: str) -> int:
        with self._lock:
            out = super().count(collection)
            self._db.commit()
            return out

    def fetch(self, collection: str) -> tuple[np.ndarray, list[bytes]]:
        with self._lock:
            out = super().fetch(collection)
            self._db.commit()
            return out

    def close(self) -> None:
        self._db.close()


def open_store(where: str | os.PathLike) -> Store:
    """A PostgreSQL store for a ``postgresql://`` or ``postgres://`` URL, else a SQLite file."""
    text = str(where)
    if text.startswith(("postgresql://", "postgres://")):
        return PostgresStore(text)
    return SQLiteStore(text)


class GroupWriter:
    """One writer thread committing the pending submissions of all requests together."""

    def __init__(self, store: Store, max_group: int = 256) -> None:
        self.store = store
        self.max_group = max_group
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="lopub-writer", daemon=True)
        self._thread.start()

    def submit(self, collection: str, nonces: Sequence[bytes], subsets: Sequence[int],
               payloads: Sequence[bytes]) -> concurrent.futures.Future:
        """Queue one request's reports; the future gives the accepted flags after the commit."""
        fut: concurrent.futures.Future = concurrent.futures.Future()
        self._queue.put(((collection, nonces, subsets, payloads), fut))
        return fut

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            group = [first]
            while len(group) < self.max_group:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._queue.put(None)
                    break
                group.append(nxt)
            self._commit(group)

    def _commit(self, group: list[tuple[Submission, concurrent.futures.Future]]) -> None:
        try:
            results = self.store.write([s for s, _ in group])
        except Exception as exc:  # nothing stored: every waiting request gets the error
            for _, fut in group:
                fut.set_exception(exc)
            return
        for (_, fut), res in zip(group, results):
            fut.set_result(res)

    def close(self) -> None:
        """Finish the queued writes and stop the thread."""
        self._queue.put(None)
        self._thread.join()
