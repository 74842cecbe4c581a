"""Durable report stores: the common logic (:class:`Store`) and the group commit (:class:`GroupWriter`).

The two back ends, SQLite (embedded default) and PostgreSQL (by URL), and
:func:`~lopub.serve.backends.open_store` are in :mod:`lopub.serve.backends`.

Two tables, deliberately unlinked: ``used_tokens (collection, nonce)`` makes
every token single-use, ``reports (id, collection, subset, payload)`` holds
the randomized reports.  A third, ``collections (collection, kind,
params_id)``, records the plan_id (marginal plans) or spec id (Bloom specs)
a collection's reports were made under, written with its first report; a
store refuses to serve or export a collection under another plan or spec
(:class:`PlanMismatchError`).  Stores written before that table existed
are read as they are: their first new report records the plan served,
and until then the plan of their older reports cannot be checked.  A report row has no token, no arrival time and no
address; both rows of a report are written in one transaction, committed
(SQLite: WAL with ``synchronous=FULL``; PostgreSQL: synchronous commit)
before the service acknowledges.

:class:`GroupWriter` commits the writes of many concurrent requests in one
transaction (group commit): one fsync for many reports, each request
answered only after the commit that holds its report.
"""
from __future__ import annotations

import concurrent.futures
import queue
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
    "CREATE TABLE IF NOT EXISTS collections (collection TEXT PRIMARY KEY, kind TEXT NOT NULL, "
    "params_id TEXT NOT NULL)",
)
ID_LABEL = {"marginal": "plan_id", "bloom": "spec id"}


class PlanMismatchError(ValueError):
    """A collection's stored reports were made under another plan or spec than the one given."""


def mismatch_message(name: str, where: str, kind: str, recorded: str, given: str) -> str:
    """The message of :class:`PlanMismatchError` (collection, store, both ids, what to do)."""
    label = ID_LABEL.get(kind, "id")
    what = "plan" if kind == "marginal" else "spec"
    return (f"collection {name!r} in store {where!r} was collected under {label} {recorded!r}, but "
            f"the {what} given has {label} {given!r}: its reports would be relabelled or mixed with "
            f"another {what}'s. Serve or export {name!r} with the {what} it was collected under, "
            f"or collect under the new {what} with another collection name or --store")


class Store:
    """Common logic; subclasses give the connection and the SQL dialect."""

    param = "?"
    where = "?"  # the store for messages (a file path, a URL without its password)
    _expected: dict[str, tuple[str, str]]  # collection -> (kind, id) to record with its first report
    _bound: set[str]  # collections whose record is known to match (records never change)

    def _has_table(self, name: str) -> bool:
        return True

    def recorded(self, collection: str) -> tuple[str, str] | None:
        """``(kind, plan_id or spec id)`` recorded for ``collection``, or ``None`` (none yet,
        or a store written before the record existed)."""
        if not self._has_table("collections"):
            return None
        rows = self._execute(f"SELECT kind, params_id FROM collections WHERE collection = {self.param}",
                             [collection])
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    def collections(self) -> list[str]:
        """Names of the collections with stored reports."""
        if not self._has_table("reports"):
            return []
        return sorted(str(r[0]) for r in self._execute("SELECT DISTINCT collection FROM reports"))

    def expect(self, collection: str, kind: str, params_id: str) -> None:
        """Check ``collection``'s record against ``params_id`` and have its first report record it.

        Raises :class:`PlanMismatchError` if the store recorded another id.
        """
        rec = self.recorded(collection)
        if rec is not None and rec[1] != params_id:
            raise PlanMismatchError(mismatch_message(collection, self.where, rec[0], rec[1], params_id))
        self._expected[collection] = (kind, params_id)
        if rec is not None:
            self._bound.add(collection)

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
            bound = self._record({s[0] for s in submissions})
            out = [self._write_one(*s) for s in submissions]  # a few per transaction
            self._commit()
        except BaseException:
            self._rollback()
            raise
        self._bound.update(bound)
        return out

    def record(self, collection: str) -> None:
        """Record the id :meth:`expect` gave for ``collection`` now (before its next report)."""
        self._begin()
        try:
            bound = self._record({collection})
            self._commit()
        except BaseException:
            self._rollback()
            raise
        self._bound.update(bound)

    def _record(self, names: set[str]) -> set[str]:
        """Inside the write transaction: record (or check) the id of each expected collection."""
        expected = self._expected
        todo = [n for n in names if n in expected and n not in self._bound]
        ph = self.param
        for name in todo:  # once per collection and process: a record never changes
            kind, pid = expected[name]
            self._execute(f"INSERT INTO collections (collection, kind, params_id) VALUES ({ph},{ph},{ph}) "
                          "ON CONFLICT DO NOTHING", [name, kind, pid])
            rows = self._execute(f"SELECT kind, params_id FROM collections WHERE collection = {ph}", [name])
            if str(rows[0][1]) != pid:  # another process recorded another plan meanwhile
                raise PlanMismatchError(mismatch_message(name, self.where, str(rows[0][0]),
                                                         str(rows[0][1]), pid))
        return set(todo)

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

    def used(self, collection: str, nonces: Sequence[bytes]) -> list[bool]:
        """Whether each nonce's token was used (its report stored) in ``collection``."""
        seen: set[bytes] = set()
        ph = self.param
        for start in range(0, len(nonces), _CHUNK):  # chunks of tokens, one statement each
            part = list(nonces[start:start + _CHUNK])
            rows = self._execute(f"SELECT nonce FROM used_tokens WHERE collection = {ph} AND nonce IN "
                                 f"({','.join([ph] * len(part))})", [collection, *part])
            seen.update(bytes(r[0]) for r in rows)
        return [bytes(n) in seen for n in nonces]

    def count(self, collection: str) -> int:
        """Reports stored for ``collection``."""
        if not self._has_table("reports"):
            return 0
        return int(self._execute(f"SELECT COUNT(*) FROM reports WHERE collection = {self.param}",
                                 [collection])[0][0])

    def fetch(self, collection: str) -> tuple[np.ndarray, list[bytes]]:
        """Subset ids and payloads of every stored report of ``collection`` (storage order)."""
        if not self._has_table("reports"):
            return np.zeros(0, dtype=np.int64), []
        rows = self._execute(f"SELECT subset, payload FROM reports WHERE collection = {self.param}",
                             [collection])
        return (np.array([r[0] for r in rows], dtype=np.int64).reshape(-1),
                [bytes(r[1]) for r in rows])

    def close(self) -> None:
        raise NotImplementedError


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
