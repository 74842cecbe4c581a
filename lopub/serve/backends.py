"""The report stores' back ends: SQLite (embedded default) and PostgreSQL (by URL), and :func:`open_store`.

The tables, the single-use tokens and the plan binding they share are
:class:`lopub.serve.storage.Store`'s (module docstring there).
"""
from __future__ import annotations

import os
import sqlite3
import threading
import urllib.parse
from typing import Sequence

import numpy as np

from lopub.serve.storage import _SCHEMA, Store


class SQLiteStore(Store):
    """SQLite file in WAL mode with ``synchronous=FULL`` (durable at commit)."""

    def __init__(self, path: str | os.PathLike, *, readonly: bool = False) -> None:
        """Open (creating it unless ``readonly``) the store ``path``.

        A writable store is checked writable here, with a write transaction
        that is rolled back: a read-only file, folder or file system raises
        ``PermissionError`` and a missing folder ``FileNotFoundError``, before
        anyone is told to send a report.  ``readonly`` opens an existing file
        without changing it (``FileNotFoundError`` if there is none).
        """
        self.path = self.where = str(path)
        self._expected, self._bound = {}, set()
        self._lock = threading.Lock()
        if readonly:
            if not os.path.isfile(self.path):
                raise FileNotFoundError(f"store ({self.path!r}) does not exist")
            uri = "file:" + urllib.parse.quote(os.path.abspath(self.path)) + "?mode=ro"
            self._db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False,
                                       timeout=30.0)
            try:
                self._db.execute("SELECT COUNT(*) FROM sqlite_master").fetchall()
            except sqlite3.DatabaseError as exc:
                self._db.close()
                raise ValueError(f"store ({self.path!r}) is not a SQLite report store: {exc}") from None
            return
        folder = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"the folder of the store, {folder!r}, does not exist")
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                       timeout=30.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            for sql in _SCHEMA:
                self._db.execute(sql.format(blob="BLOB", serial="INTEGER"))
            self._probe_write()
        except sqlite3.Error as exc:
            raise PermissionError(f"store ({self.path!r}) cannot be written: {exc}") from None

    def _probe_write(self) -> None:
        """A write in a transaction that is rolled back: fails on a read-only store."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
            self._db.execute(f"PRAGMA user_version = {version}")
            self._db.execute("CREATE TABLE lopub_write_probe (x INTEGER)")
        finally:
            self._db.execute("ROLLBACK")

    def _has_table(self, name: str) -> bool:
        return bool(self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                     [name]).fetchall())

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

    def used(self, collection: str, nonces: Sequence[bytes]) -> list[bool]:
        with self._lock:
            return super().used(collection, nonces)

    def fetch(self, collection: str) -> tuple[np.ndarray, list[bytes]]:
        with self._lock:
            return super().fetch(collection)

    def recorded(self, collection: str) -> tuple[str, str] | None:
        with self._lock:
            return super().recorded(collection)

    def collections(self) -> list[str]:
        with self._lock:
            return super().collections()

    def close(self) -> None:
        self._db.close()


class PostgresStore(Store):
    """PostgreSQL through psycopg 3 (``postgresql://...`` URL); commit is synchronous."""

    param = "%s"

    def __init__(self, url: str, *, readonly: bool = False) -> None:
        import psycopg

        self.url = url
        self.where = shown(url)
        self._expected, self._bound = {}, set()
        self._db = psycopg.connect(url, autocommit=False)
        self._lock = threading.Lock()
        if readonly:
            return
        with self._lock:
            for sql in _SCHEMA:
                self._db.execute(sql.format(blob="BYTEA", serial="BIGSERIAL"))
            self._db.commit()

    def _has_table(self, name: str) -> bool:
        return bool(self._execute("SELECT to_regclass(%s)", [name])[0][0])

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

    def used(self, collection: str, nonces: Sequence[bytes]) -> list[bool]:
        with self._lock:
            out = super().used(collection, nonces)
            self._db.commit()
            return out

    def fetch(self, collection: str) -> tuple[np.ndarray, list[bytes]]:
        with self._lock:
            out = super().fetch(collection)
            self._db.commit()
            return out

    def recorded(self, collection: str) -> tuple[str, str] | None:
        with self._lock:
            out = super().recorded(collection)
            self._db.commit()
            return out

    def collections(self) -> list[str]:
        with self._lock:
            out = super().collections()
            self._db.commit()
            return out

    def close(self) -> None:
        self._db.close()


def shown(where: str | os.PathLike) -> str:
    """``where`` for messages: a PostgreSQL URL without its password (nor query parameters)."""
    text = str(where)
    if not is_url(text):
        return text
    parts = urllib.parse.urlsplit(text)
    user, _, host = parts.netloc.rpartition("@")
    netloc = f"{user.partition(':')[0]}:***@{host}" if ":" in user else parts.netloc
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=""))


def is_url(where: str | os.PathLike) -> bool:
    """Whether ``where`` names a PostgreSQL store (a ``postgresql://`` or ``postgres://`` URL)."""
    return str(where).startswith(("postgresql://", "postgres://"))


def open_store(where: str | os.PathLike, *, readonly: bool = False) -> Store:
    """A PostgreSQL store for a ``postgresql://`` or ``postgres://`` URL, else a SQLite file.

    ``readonly``: open an existing store to read it (export), never creating or changing it.
    """
    if is_url(where):
        return PostgresStore(str(where), readonly=readonly)
    return SQLiteStore(where, readonly=readonly)
