"""A fake OneBot v11 implementation (think NapCat or go-cqhttp) that speaks the real wire protocol.

    async with FakeOneBot(self_id=10001, message_format="string") as impl:
        sock = await impl.connect(f"ws://127.0.0.1:{port}/onebot/v11/ws", token="t")
        await sock.send(impl.group_message(20001, 30001, [at(10001), text(" hi")]))
        call = (await impl.wait_calls("send_group_msg"))[0]   # the bot's reply, as sent
        url = await impl.serve_forward()      # forward WS server (/, /api, /event)
        api = await impl.serve_http_api()     # HTTP API server: POST /<action>
        await impl.post_event(bot_url, event, secret="s")     # HTTP POST events

Events are built as the implementation would send them: the message as a segment array, or as a
CQ string (rendered by nonebot's `Message`, an independent encoder) when
`message_format="string"`. Every action the bot calls is recorded in `impl.calls` with the socket
it came on, and answered: `send_*` with a fresh message id (negative ones with
`negative_ids=True`, like NapCat), `get_msg` from every message seen so far (failing with retcode
100 for unknown ids, like go-cqhttp), `get_login_info`, `get_group_member_info` from
`impl.members`. `impl.script(action, ...)` overrides an action: fail it, answer `async`, or hang.
`sock.hold()` stops a socket from processing the action frames it reads; `sock.release(answer=n)`
lets it process n more and then close the socket as a well-behaved implementation does: every
frame it processed was answered, those behind them (read or not) are never processed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import itertools
import json
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self

import aiohttp
from aiohttp import web

from tests.fakes.onebot_actions import ActionAnswers, Async, Call, Fail, Hang

__all__ = [
    "Async",
    "Call",
    "Fail",
    "FakeOneBot",
    "FakeSocket",
    "Hang",
    "at",
    "face",
    "image",
    "reply",
    "text",
    "to_cq",
]

Segment = dict[str, Any]


def text(value: str) -> Segment:
    return {"type": "text", "data": {"text": value}}


def at(qq: int | str) -> Segment:
    return {"type": "at", "data": {"qq": str(qq)}}


def reply(message_id: int | str) -> Segment:
    return {"type": "reply", "data": {"id": str(message_id)}}


def image(url: str) -> Segment:
    return {"type": "image", "data": {"file": url.rsplit("/", 1)[-1], "url": url}}


def face(face_id: int) -> Segment:
    return {"type": "face", "data": {"id": str(face_id)}}


def to_cq(segments: list[Segment]) -> str:
    """Render segments as a CQ string with nonebot's encoder (not Nahida's)."""
    from nonebot.adapters.onebot.v11 import Message, MessageSegment

    return str(Message([MessageSegment(s["type"], dict(s["data"])) for s in segments]))


def _raw(message: Any) -> str:
    try:
        return to_cq(message)
    except (TypeError, KeyError):
        return ""  # a deliberately broken message


@dataclass(eq=False)
class FakeSocket:
    """One WebSocket of the fake implementation (either direction)."""

    impl: FakeOneBot
    ws: aiohttp.ClientWebSocketResponse | web.WebSocketResponse
    role: str
    label: str
    frozen: bool = False
    reader: asyncio.Task[None] | None = None
    heartbeat: asyncio.Task[None] | None = None
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    processing: asyncio.Event = field(default_factory=asyncio.Event)  # clear: frames wait
    answer_left: int | None = None  # action frames to process before closing (None: no end)

    def __post_init__(self) -> None:
        self.processing.set()

    def hold(self) -> None:
        """Process no more action frames (they wait, read or not) until `release`."""
        self.processing.clear()

    def release(self, *, answer: int | None = None) -> None:
        """Process frames again; with `answer`, that many more, then close the socket: what was
        processed was answered, the frames behind them never are."""
        self.answer_left = answer
        self.processing.set()

    async def send(self, event: dict[str, Any]) -> None:
        await self.ws.send_str(json.dumps(event, ensure_ascii=False))

    async def send_raw(self, frame: str) -> None:
        await self.ws.send_str(frame)

    def start_heartbeat(self, interval_ms: int, beats: int | None = None) -> None:
        """Send a heartbeat every interval (only `beats` of them, then fall silent)."""

        async def beat() -> None:
            for _ in itertools.count() if beats is None else range(beats):
                await self.send(self.impl.heartbeat(interval_ms))
                await asyncio.sleep(interval_ms / 1000)

        self.heartbeat = asyncio.create_task(beat())

    def freeze(self) -> None:
        """Stop reading and answering: the socket looks half-open to the bot."""
        self.frozen = True
        if self.reader is not None:
            self.reader.cancel()
        if self.heartbeat is not None:
            self.heartbeat.cancel()

    async def close(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.cancel()
        await self.ws.close()
        if self.reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self.reader
        self.closed.set()

    async def wait_closed(self, within: float = 5.0) -> None:
        async with asyncio.timeout(within):
            await self.closed.wait()


class FakeOneBot(ActionAnswers):
    def __init__(
        self,
        self_id: int = 10001,
        *,
        message_format: Literal["array", "string"] = "array",
        access_token: str = "",
        negative_ids: bool = False,
        nickname: str = "FakeBot",
        deflate: bool = False,
    ) -> None:
        self.message_format = message_format
        self.deflate = deflate  # offer permessage-deflate when connecting (as NapCat's `ws` does)
        self.access_token = access_token
        super().__init__(self_id, nickname, negative_ids=negative_ids)
        self.sockets: list[FakeSocket] = []
        self.refused: list[int] = []  # statuses we answered to bad tokens (forward/HTTP API)
        self._labels = itertools.count(1)
        self._session: aiohttp.ClientSession | None = None
        self._runners: list[web.AppRunner] = []

    async def __aenter__(self) -> Self:
        self._session = aiohttp.ClientSession()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for sock in self.sockets:
            for task in (sock.reader, sock.heartbeat):
                if task is not None:
                    task.cancel()
            with contextlib.suppress(Exception):
                await sock.ws.close()
        for sock in self.sockets:
            for task in (sock.reader, sock.heartbeat):
                if task is not None:
                    with contextlib.suppress(BaseException):
                        await task
        if self._session is not None:
            await self._session.close()
        for runner in self._runners:
            await runner.cleanup()

    # -- events ---------------------------------------------------------------------------------

    def encode(self, message: list[Segment] | str) -> list[Segment] | str:
        if isinstance(message, str) or self.message_format == "array":
            return message
        return to_cq(message)

    def _base(self, post_type: str) -> dict[str, Any]:
        return {"time": int(time.time()), "self_id": self.self_id, "post_type": post_type}

    def group_message(
        self,
        group_id: int,
        user_id: int,
        message: list[Segment] | str,
        *,
        message_id: int | str | None = None,
        role: str | None = "member",
        nickname: str = "",
        card: str = "",
        anonymous: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        sender: dict[str, Any] = {"user_id": user_id, "nickname": nickname or f"user{user_id}"}
        if card:
            sender["card"] = card
        if role is not None:
            sender["role"] = role
        return self._message("group", user_id, message, message_id, sender, group_id, anonymous)

    def private_message(
        self, user_id: int, message: list[Segment] | str, *, message_id: int | str | None = None
    ) -> dict[str, Any]:
        sender = {"user_id": user_id, "nickname": f"user{user_id}"}
        return self._message("private", user_id, message, message_id, sender, None, None)

    def _message(
        self,
        kind: str,
        user_id: int,
        message: list[Segment] | str,
        message_id: int | str | None,
        sender: dict[str, Any],
        group_id: int | None,
        anonymous: dict[str, Any] | None,
    ) -> dict[str, Any]:
        mid = self.next_id() if message_id is None else message_id
        encoded = self.encode(message)
        event = {
            **self._base("message"),
            "message_type": kind,
            "sub_type": "normal" if kind == "group" else "friend",
            "message_id": mid,
            "user_id": user_id,
            "message": encoded,
            "raw_message": encoded if isinstance(encoded, str) else _raw(encoded),
            "font": 0,
            "sender": sender,
        }
        if kind == "group":
            event["group_id"] = group_id
            event["anonymous"] = anonymous
        self.messages[str(mid)] = {
            "message_id": mid,
            "time": event["time"],
            "message_type": kind,
            "sender": {"user_id": user_id, "nickname": sender.get("nickname", "")},
            "message": encoded,
        }
        return event

    def notice(self, notice_type: str, **fields: Any) -> dict[str, Any]:
        return {**self._base("notice"), "notice_type": notice_type, **fields}

    def heartbeat(self, interval_ms: int) -> dict[str, Any]:
        status = {"online": True, "good": True}
        return {
            **self._base("meta_event"),
            "meta_event_type": "heartbeat",
            "status": status,
            "interval": interval_ms,
        }

    def lifecycle(self, sub_type: str = "connect") -> dict[str, Any]:
        return {**self._base("meta_event"), "meta_event_type": "lifecycle", "sub_type": sub_type}

    async def _serve_socket(self, sock: FakeSocket) -> None:
        async for message in sock.ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            await sock.processing.wait()
            frame = json.loads(message.data)
            action, params = frame["action"], frame.get("params") or {}
            self._record(Call(action, params, frame.get("echo"), sock.label, time.monotonic()))
            answer = self.answer(action, params)
            if answer is not None:
                await sock.ws.send_str(json.dumps({**answer, "echo": frame.get("echo")}))
            if sock.answer_left is not None:
                sock.answer_left -= 1
                if sock.answer_left <= 0:  # the frames behind this one are never processed
                    await sock.ws.close()
                    break
        sock.closed.set()

    def _adopt(self, ws: Any, role: str) -> FakeSocket:
        sock = FakeSocket(self, ws, role, f"{role.lower()}-{next(self._labels)}")
        sock.reader = asyncio.create_task(self._serve_socket(sock))
        self.sockets.append(sock)
        return sock

    # -- reverse WebSocket (we are the client) ------------------------------------------------

    async def connect(
        self,
        url: str,
        *,
        role: str = "Universal",
        token: str | None = None,
        token_style: Literal["bearer", "token", "query"] = "bearer",
        self_id: int | None = None,
        lifecycle: bool = True,
    ) -> FakeSocket:
        """Connect like an implementation; raises `aiohttp.WSServerHandshakeError` if refused."""
        assert self._session is not None, "use `async with FakeOneBot()`"
        headers = {"X-Self-ID": str(self.self_id if self_id is None else self_id)}
        if role:
            headers["X-Client-Role"] = role
        if token is not None and token_style == "bearer":
            headers["Authorization"] = f"Bearer {token}"
        elif token is not None and token_style == "token":
            headers["Authorization"] = f"Token {token}"
        elif token is not None:
            url = f"{url}?access_token={token}"
        ws = await self._session.ws_connect(
            url, headers=headers, autoping=True, compress=15 if self.deflate else 0
        )
        sock = self._adopt(ws, role or "Universal")
        if lifecycle and role != "API":
            await sock.send(self.lifecycle())
        return sock

    # -- forward WebSocket and HTTP API (we are the server) -----------------------------------

    def _authorised(self, request: web.Request) -> bool:
        if not self.access_token:
            return True
        header = request.headers.get("Authorization", "")
        given = header.partition(" ")[2] or request.query.get("access_token", "")
        if given != self.access_token:
            self.refused.append(401)
            return False
        return True

    async def _start(self, app: web.Application) -> str:
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._runners.append(runner)
        server = site._server
        assert server is not None
        port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        return f"127.0.0.1:{port}"

    async def serve_forward(self) -> str:
        """Start the forward WebSocket server; returns its Universal URL (`/api`, `/event` too)."""

        async def handle(request: web.Request) -> web.StreamResponse:
            if not self._authorised(request):
                return web.Response(status=401)
            ws = web.WebSocketResponse()
            await ws.prepare(request)
            role = {"/api": "API", "/event": "Event"}.get(request.path, "Universal")
            sock = self._adopt(ws, role)
            if role != "API":
                await sock.send(self.lifecycle())
            assert sock.reader is not None
            with contextlib.suppress(asyncio.CancelledError):
                await sock.reader
            return ws

        app = web.Application()
        for path in ("/", "/api", "/event"):
            app.router.add_get(path, handle)
        return f"ws://{await self._start(app)}/"

    def forward_sockets(self) -> list[FakeSocket]:
        return [s for s in self.sockets if not s.ws.closed]

    async def wait_forward(self, count: int = 1, within: float = 5.0) -> list[FakeSocket]:
        async with asyncio.timeout(within):
            while len(self.forward_sockets()) < count:  # noqa: ASYNC110 - sockets come and go
                await asyncio.sleep(0.01)
        return self.forward_sockets()

    async def serve_http_api(self) -> str:
        """Start the HTTP API server (`POST /<action>`); returns its base URL."""

        async def handle(request: web.Request) -> web.StreamResponse:
            if not self._authorised(request):
                return web.Response(status=401)
            action = request.match_info["action"]
            params = await request.json() if request.can_read_body else {}
            self._record(Call(action, params, None, "http", time.monotonic()))
            answer = self.answer(action, params)
            if answer is None:
                await asyncio.sleep(3600)
            return web.json_response(answer)

        app = web.Application()
        app.router.add_post("/{action}", handle)
        return f"http://{await self._start(app)}"

    async def post_event(
        self,
        url: str,
        event: dict[str, Any],
        *,
        secret: str = "",
        signature: str | None = None,
        token: str | None = None,
        body: bytes | None = None,
    ) -> int:
        """POST one event like an implementation's HTTP POST mode; returns the HTTP status."""
        assert self._session is not None, "use `async with FakeOneBot()`"
        raw = body if body is not None else json.dumps(event, ensure_ascii=False).encode()
        headers = {"Content-Type": "application/json", "X-Self-ID": str(self.self_id)}
        if secret:
            headers["X-Signature"] = (
                "sha1=" + hmac.new(secret.encode(), raw, hashlib.sha1).hexdigest()
            )
        if signature is not None:
            headers["X-Signature"] = signature
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        async with self._session.post(url, data=raw, headers=headers) as response:
            return response.status
