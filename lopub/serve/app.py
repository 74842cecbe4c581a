"""The ASGI application of ``lopub serve`` (Starlette).

Public, read-only: ``GET /api/collections``, ``GET /api/c/NAME`` (schema,
plan or spec, oracle parameters, privacy statement), ``GET /api/c/NAME/count``,
the page ``GET /c/NAME`` and its scripts.  Writing:

``POST /api/c/NAME/enrol``
    A single-use token signed by the server secret, bound to the plan or spec
    served (its id, ``plan_id`` in the answer); for a marginal plan it names
    the subset this device reports (drawn from OS entropy, or from a
    ``{"user_id": ...}`` body with the plan's keyed hash).
``POST /api/c/NAME/report``
    One report; 201 after it is committed, 409 for a used token, 422 for a
    report that does not fit the plan (nothing stored), 413 / 429 for floods,
    503 if the store failed (nothing stored); 429 and 503 carry ``Retry-After``.
``POST /api/c/NAME/batch``
    ``{"reports": [...]}`` from a relay holding the relay key (``Authorization:
    Bearer KEY``); validated per batch with NumPy; answers ``{"stored": n,
    "refused": [{"index": i, "error": ...}]}`` after the commit.

The service never receives a true value (devices randomize before sending)
and logs no request body, token or report.
"""
from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import math
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from lopub.serve import tokens
from lopub.serve.protocol import Collection
from lopub.serve.storage import GroupWriter, Store

log = logging.getLogger("lopub.serve")
STATIC = Path(__file__).with_name("static")
JS_FILES = ("lopub.js", "blake2b.js")
USED = "token was already used (one report per token)"


class RateLimit:
    """Token bucket per client address: ``rate`` requests per second, bursts of ``burst``."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = float(rate), float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}

    def allow(self, who: str, cost: float = 1.0) -> bool:
        if self.rate <= 0:
            return True
        now = time.monotonic()
        level, last = self._buckets.get(who, (self.burst, now))
        level = min(self.burst, level + (now - last) * self.rate)
        if len(self._buckets) > 100_000:  # bounded memory under address floods
            self._buckets.clear()
        if level < cost:
            self._buckets[who] = (level, now)
            return False
        self._buckets[who] = (level - cost, now)
        return True


@dataclass
class ServeConfig:
    """Everything the service needs; see :func:`build_app`."""

    collections: dict[str, Collection]
    store: Store
    secret: bytes
    relay_key: str | None = None
    max_body: int = 64 * 1024
    max_batch_body: int = 64 * 1024 * 1024
    max_batch: int = 100_000
    rate: float = 20.0
    burst: float = 40.0
    token_ttl: float = 86400.0
    js_dir: Path = STATIC  # lopub.js, blake2b.js: links to clients/js (copies in a wheel)


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


async def _read_json(request: Request, limit: int) -> Any:
    """The JSON body, at most ``limit`` bytes; raises ``_Refused`` otherwise."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise _Refused(413, f"request body ({declared} bytes) must be at most {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _Refused(413, f"request body must be at most {limit} bytes")
        chunks.append(chunk)
    try:
        return json.loads(b"".join(chunks) or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise _Refused(400, "request body is not valid JSON") from None


class _Refused(Exception):
    def __init__(self, status: int, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.retry_after = status, message, retry_after


class Service:
    """Request handlers over one :class:`ServeConfig`."""

    def __init__(self, cfg: ServeConfig) -> None:
        self.cfg = cfg
        for name, c in cfg.collections.items():  # refuse another plan than the stored reports'
            cfg.store.expect(name, c.kind, c.params_id)
        self.writer = GroupWriter(cfg.store)
        self.limit = RateLimit(cfg.rate, cfg.burst)
        self.descriptions = {n: c.describe() for n, c in cfg.collections.items()}

    def _collection(self, request: Request) -> Collection:
        name = request.path_params["name"]
        if name not in self.cfg.collections:
            raise _Refused(404, f"collection {name!r} is not served here; "
                                f"collections: {sorted(self.cfg.collections)}")
        return self.cfg.collections[name]

    def _throttle(self, request: Request, cost: float = 1.0) -> None:
        who = request.client.host if request.client else "?"
        if not self.limit.allow(who, cost):
            raise _Refused(429, "too many requests from this address; retry later",
                           retry_after=max(1, math.ceil(cost / self.limit.rate)) if self.limit.rate > 0 else 1)

    async def collections(self, request: Request) -> Response:
        return JSONResponse({"collections": sorted(self.cfg.collections)})

    async def describe(self, request: Request) -> Response:
        return JSONResponse(self.descriptions[self._collection(request).name])

    async def count(self, request: Request) -> Response:
        c = self._collection(request)
        n = await asyncio.to_thread(self.cfg.store.count, c.name)
        return JSONResponse({"collection": c.name, "reports": n})

    async def enrol(self, request: Request) -> Response:
        c = self._collection(request)
        self._throttle(request)
        body = await _read_json(request, 1024)
        subset = None
        if c.kind == "marginal":
            subset = self._assign(c, body)
        token = tokens.issue(self.cfg.secret, c.name, subset, self.cfg.token_ttl, plan=c.params_id)
        return JSONResponse({"token": token, "subset": subset, "plan_id": c.params_id}, status_code=201)

    @staticmethod
    def _assign(c: Collection, body: Any) -> int:
        user_id = body.get("user_id") if isinstance(body, dict) else None
        if user_id is None:
            return secrets.randbelow(c.n_subsets)
        if c.params.key is None:
            raise _Refused(422, "user_id was given but the plan has no key for a stable assignment")
        from lopub.collect import assign_user

        return assign_user(c.params, str(user_id))

    async def report(self, request: Request) -> Response:
        c = self._collection(request)
        self._throttle(request)
        item = await _read_json(request, self.cfg.max_body)
        if not isinstance(item, dict):
            raise _Refused(400, "request body must be a JSON object {token, report}")
        stored, refused = await self._store(c, [item])
        if refused:
            err = refused[0]["error"]
            raise _Refused(409 if "already used" in err else 422, err)
        return JSONResponse({"stored": stored}, status_code=201)

    async def batch(self, request: Request) -> Response:
        c = self._collection(request)
        key = self.cfg.relay_key
        given = request.headers.get("authorization", "").removeprefix("Bearer ")
        if key is None or not hmac.compare_digest(given.encode(), key.encode()):
            raise _Refused(401 if key else 403, "the batch endpoint needs the relay key "
                           "(Authorization: Bearer KEY)" if key else "no relay key is configured; "
                           "start lopub serve with --relay-key-file to accept batches")
        body = await _read_json(request, self.cfg.max_batch_body)
        items = body.get("reports") if isinstance(body, dict) else None
        if not isinstance(items, list) or len(items) > self.cfg.max_batch:
            raise _Refused(400, f"request body must be {{\"reports\": [...]}} with at most "
                                f"{self.cfg.max_batch} reports")
        stored, refused = await self._store(c, items)
        return JSONResponse({"stored": stored, "refused": refused})

    def _check(self, c: Collection, items: list) -> tuple[list, np.ndarray, list, dict[int, str]]:
        """Tokens and reports of a batch checked (vectorized): nonces, subsets, payloads, errors."""
        toks = [it.get("token") if isinstance(it, dict) else None for it in items]
        nonces, subsets, errors = tokens.verify_many(self.cfg.secret, toks, c.name, c.params_id)
        expired = [i for i, e in errors.items() if isinstance(e, tokens.Expired)]
        if expired:  # a stored report's token stays "used" after it expires: a resend is told so
            used = self.cfg.store.used(c.name, [cast(tokens.Expired, errors[i]).nonce for i in expired])
            errors.update({i: USED for i, u in zip(expired, used) if u})
        if c.kind == "bloom":
            subsets = np.where(subsets == -1, 0, subsets)
        payloads, bad = c.validate(items, subsets)
        errors.update({i: m for i, m in bad.items() if i not in errors})
        return nonces, subsets, payloads, errors

    async def _store(self, c: Collection, items: list) -> tuple[int, list[dict]]:
        if len(items) > 64:  # a relay's batch: checked off the event loop, which keeps serving
            nonces, subsets, payloads, errors = await asyncio.to_thread(self._check, c, items)
        else:
            nonces, subsets, payloads, errors = self._check(c, items)
        keep = [i for i in range(len(items)) if i not in errors]
        accepted: list[bool] = []
        if keep:
            fut = self.writer.submit(c.name, [cast(bytes, nonces[i]) for i in keep],  # valid: not None
                                     subsets[keep].tolist(), [cast(bytes, payloads[i]) for i in keep])
            try:
                accepted = await asyncio.wrap_future(fut)
            except Exception as exc:
                log.error("store failed (%s); nothing acknowledged", type(exc).__name__)
                raise _Refused(503, "the report store is unavailable; nothing was stored, retry",
                               retry_after=1) from None
        for i, ok in zip(keep, accepted):
            if not ok:
                errors[i] = USED
        refused = [{"index": i, "error": errors[i]} for i in sorted(errors)]
        return int(sum(accepted)), refused

    async def page(self, request: Request) -> Response:
        c = self._collection(request)
        html = (STATIC / "page.html").read_text(encoding="utf-8").replace("{{NAME}}", c.name)
        return HTMLResponse(html, headers=_PAGE_HEADERS)

    async def index(self, request: Request) -> Response:
        links = "".join(f'<li><a href="/c/{n}">{n}</a></li>' for n in sorted(self.cfg.collections))
        return HTMLResponse(f"<!doctype html><title>lopub</title><h1>Collections</h1><ul>{links}</ul>",
                            headers=_PAGE_HEADERS)

    async def script(self, request: Request) -> Response:
        name = request.path_params["file"]
        if name == "page.js":
            return FileResponse(STATIC / "page.js", media_type="text/javascript")
        if name not in JS_FILES or not (self.cfg.js_dir / name).is_file():
            return _error(404, f"no script {name!r}")
        return FileResponse(self.cfg.js_dir / name, media_type="text/javascript")


_PAGE_HEADERS = {"content-security-policy": "default-src 'self'; style-src 'self' 'unsafe-inline'",
                 "x-content-type-options": "nosniff", "referrer-policy": "no-referrer"}


def _guard(handler):
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except _Refused as r:
            return _error(r.status, r.message,
                          None if r.retry_after is None else {"retry-after": str(r.retry_after)})
    return wrapped


def build_app(cfg: ServeConfig) -> Starlette:
    """The Starlette application serving ``cfg.collections``."""
    svc = Service(cfg)
    routes = [
        Route("/", _guard(svc.index)),
        Route("/c/{name}", _guard(svc.page)),
        Route("/js/{file}", _guard(svc.script)),
        Route("/api/collections", _guard(svc.collections)),
        Route("/api/c/{name}", _guard(svc.describe)),
        Route("/api/c/{name}/count", _guard(svc.count)),
        Route("/api/c/{name}/enrol", _guard(svc.enrol), methods=["POST"]),
        Route("/api/c/{name}/report", _guard(svc.report), methods=["POST"]),
        Route("/api/c/{name}/batch", _guard(svc.batch), methods=["POST"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        yield
        svc.writer.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.service = svc
    return app
