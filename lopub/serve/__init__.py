"""Real collection: the ingestion service, its stores, the device protocol and shuffle accounting.

* :mod:`.app`: the ASGI service of ``lopub serve`` (Starlette);
  :class:`ServeConfig`, :func:`build_app`; :mod:`.config`: options -> config,
  the app factory of ``--workers``.
* :mod:`.storage`: SQLite (WAL) and PostgreSQL stores, group commit.
* :mod:`.export`: shuffled export to the files ``lopub fit`` reads.
* :mod:`.tokens`: single-use HMAC-signed enrolment tokens.
* :mod:`.protocol`: a served :class:`Collection`, the wire format, batch validation.
* :mod:`.device`: the device randomizers from 32-bit random words (the
  reference of the JavaScript client ``clients/js/lopub.js``).
* :mod:`.client`: the Python device client (:class:`DeviceClient`), relay batches.
* :mod:`lopub.reports.shuffle`: central (epsilon, delta) of the shuffled reports.

Starlette, uvicorn and psycopg are the optional extra ``lopub[serve]``; only
:mod:`.app` and the PostgreSQL store import them.
"""
from lopub.serve.protocol import Collection

__all__ = ["Collection"]
