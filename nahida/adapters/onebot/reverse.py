"""The routes implementations connect to: reverse WebSocket and HTTP POST events.

Reverse WebSocket (`path`): the implementation connects with `X-Self-ID`, `X-Client-Role`
(`Universal`, or split `API` + `Event` sockets) and its token as `Authorization: Bearer <t>`,
the older `Token <t>`, or `?access_token=<t>`. A missing token is refused with 401 and a wrong
one with 403, both before the upgrade; the log line names the peer and the reason, never the
token. Any number of accounts may connect; each socket is served by the adapter.

HTTP POST (`http_path`): each event is one POST. With a `secret`, `X-Signature: sha1=<hex>` must
be the HMAC-SHA1 of the raw body (401 missing, 403 wrong); without one, a configured
`access_token` is checked as above. The answer is 204 at once; replies go through the HTTP API.
A body that holds no usable JSON (not JSON, nested too deeply, not an object) gets a 400 naming
why; strings in the rest are cleaned as on the sockets (`payload.py`).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from aiohttp import web

from nahida.adapters.onebot.config import OneBotConfig
from nahida.adapters.onebot.connection import ClientRole, Counters, WsConnection
from nahida.adapters.onebot.events import id_of
from nahida.adapters.onebot.payload import PayloadError, decode

log = structlog.get_logger(__name__)

Accept = Callable[[WsConnection | None, dict[str, Any]], None]
Serve = Callable[[WsConnection], Awaitable[None]]
_ROLES: dict[str, ClientRole] = {"universal": "Universal", "api": "API", "event": "Event"}
MAX_FRAME = 16 * 1024 * 1024  # forwarded chat records can be large
# asyncio's socket transport reads up to 256 KiB at a time, and Python allocates all of it for
# every read, above glibc's mmap threshold, so each small frame paid for a fresh mapping; 64 KiB
# reads stay below it. A larger frame takes a few reads.
READ_BYTES = 1 << 16


def presented_token(request: web.Request) -> str | None:
    """The token a client presented: Bearer or Token header, else `access_token` query."""
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() in ("bearer", "token") and value.strip():
        return value.strip()
    query = request.query.get("access_token")
    return query or None


def token_problem(request: web.Request, expected: str) -> tuple[int, str] | None:
    """None when access is allowed; otherwise the HTTP status and a reason safe to log."""
    if not expected:
        return None
    given = presented_token(request)
    if given is None:
        return 401, "missing access token"
    if not hmac.compare_digest(given.encode(), expected.encode()):
        return 403, "wrong access token"
    return None


def signature_problem(body: bytes, header: str | None, secret: str) -> tuple[int, str] | None:
    if not header:
        return 401, "missing X-Signature"
    want = "sha1=" + hmac.new(secret.encode(), body, hashlib.sha1).hexdigest()
    if not hmac.compare_digest(header.strip().lower().encode(), want.encode()):
        return 403, "wrong X-Signature"
    return None


def _refuse(request: web.Request, status: int, reason: str, what: str) -> web.Response:
    log.warning(
        "onebot_refused",
        endpoint=what,
        status=status,
        reason=reason,
        peer=request.remote,
        path=request.path,  # never the query: it may hold the token
        self_id=request.headers.get("X-Self-ID"),
    )
    return web.Response(status=status, text=reason)


class ReverseEndpoints:
    def __init__(
        self, settings: OneBotConfig, counters: Counters, accept: Accept, serve: Serve
    ) -> None:
        self.settings = settings
        self.counters = counters
        self._accept = accept
        self._serve = serve

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        problem = token_problem(request, self.settings.token)
        if problem is not None:
            return _refuse(request, *problem, "reverse_ws")
        self_id = id_of(request.headers.get("X-Self-ID"))
        if self_id is None:
            return _refuse(request, 400, "missing X-Self-ID", "reverse_ws")
        role = _ROLES.get(request.headers.get("X-Client-Role", "Universal").strip().lower())
        if role is None:
            return _refuse(request, 400, "unknown X-Client-Role", "reverse_ws")
        socket = web.WebSocketResponse(
            heartbeat=self.settings.ping_interval or None,
            timeout=2.0,
            compress=self.settings.compress,
            max_msg_size=MAX_FRAME,
        )
        if not socket.can_prepare(request).ok:
            return _refuse(request, 400, "not a WebSocket upgrade", "reverse_ws")
        await socket.prepare(request)
        _read_small(request.transport)
        conn = WsConnection(
            socket,
            role=role,
            self_id=self_id,
            on_event=self._accept,
            counters=self.counters,
            timeout=self.settings.api_timeout,
            heartbeat_grace=self.settings.heartbeat_grace,
            peer=request.remote or "",
        )
        await self._serve(conn)
        return socket

    async def http_events(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        secret = self.settings.secret.get_secret_value()
        if secret:
            problem = signature_problem(body, request.headers.get("X-Signature"), secret)
        else:
            problem = token_problem(request, self.settings.token)
        if problem is not None:
            return _refuse(request, *problem, "http_post")
        try:
            data = decode(body)
        except PayloadError as exc:
            return self._malformed(request, body, f"body is {exc.reason}")
        if not isinstance(data, dict):
            return self._malformed(request, body, "body is not a JSON object")
        self.counters.frames += 1
        self._accept(None, data)
        return web.Response(status=204)

    def _malformed(self, request: web.Request, body: bytes, reason: str) -> web.Response:
        self.counters.malformed += 1
        log.warning("malformed_post_dropped", peer=request.remote, reason=reason, body=body[:200])
        return web.Response(status=400, text=reason)


def _read_small(transport: Any) -> None:
    """A socket's reads `READ_BYTES` at a time, where its transport says how much it reads (the
    standard event loop's does; another loop's is left as it is)."""
    if transport is not None and isinstance(getattr(transport, "max_size", None), int):
        transport.max_size = READ_BYTES
