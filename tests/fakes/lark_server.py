"""A loopback Lark/Feishu open platform: the HTTP API Nahida calls and the long-connection socket.

    async with FakeLarkServer() as lark:                  # lark.url is the adapter's `domain`
        ack = await lark.push(message_event("hi"))       # a data frame to the SDK's ws.Client
        [sent] = await lark.wait_messages(1)             # create/reply requests, as received

HTTP: `POST /open-apis/auth/v3/tenant_access_token/internal`, `GET /open-apis/bot/v3/info`,
`POST /open-apis/im/v1/messages`, `POST /open-apis/im/v1/messages/{id}/reply`,
`GET /open-apis/im/v1/chats/{id}`, `GET /open-apis/contact/v3/users/{id}`. Every request is
recorded (`requests`). Tokens are checked on every call: an unknown or revoked one gets HTTP 400
with code 99991663, as Lark answers; `fail_next` scripts other `code != 0` answers (HTTP 200 by
default) and `slow_down` delays answers. Sends are idempotent on `uuid` like Lark's: a repeated
uuid returns the first message id and is not delivered twice (`delivered`).

Long connection: `POST /callback/ws/endpoint` answers the socket URL and a `ClientConfig` (reconnect
at once), then `/ws` speaks lark-oapi's protobuf `Frame`s: it answers pings with pongs, sends
`push()`ed events as data frames and resolves each push with the client's acknowledgement.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web
from lark_oapi.ws.pb.pbbp2_pb2 import Frame

from tests.fakes.loopback import LoopbackServer

INVALID_TOKEN = 99991663
SERVICE_ID = 7
CLIENT_CONFIG = {
    "ReconnectCount": -1,
    "ReconnectInterval": 1,
    "ReconnectNonce": 0,
    "PingInterval": 120,
}


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: dict[str, Any]

    @property
    def token(self) -> str:
        return self.headers.get("authorization", "").removeprefix("Bearer ")

    @property
    def content(self) -> dict[str, Any]:
        """The message content, parsed from its JSON string."""
        parsed: dict[str, Any] = json.loads(self.body["content"])
        return parsed


@dataclass(slots=True)
class Failure:
    path_part: str
    code: int
    msg: str
    status: int


@dataclass(frozen=True, slots=True)
class Ack:
    code: int
    headers: dict[str, str]
    payload: dict[str, Any] = field(default_factory=dict)


class FakeLarkServer(LoopbackServer):
    def __init__(
        self,
        *,
        app_id: str = "cli_test",
        app_secret: str = "app-secret",
        bot_open_id: str = "ou_bot",
        bot_name: str = "Nahida",
        token_lifetime: int = 7200,
    ) -> None:
        self.app_id = app_id
        self.app_secret = app_secret
        self.bot_open_id = bot_open_id
        self.bot_name = bot_name
        self.token_lifetime = token_lifetime
        self.requests: list[RecordedRequest] = []
        self.delivered: list[RecordedRequest] = []  # sends that created a message
        self.sent_ids: list[str] = []  # the message ids given to `delivered`, in order
        self.chats: dict[str, dict[str, Any]] = {}
        self.users: dict[str, str] = {}
        self.acks: list[Ack] = []
        self.connections = 0  # WebSocket connections accepted, ever
        self.pings = 0
        self._valid_tokens: set[str] = set()
        self._failures: list[Failure] = []
        self._delays: dict[str, float] = {}
        self._uuids: dict[str, str] = {}
        self._ids = itertools.count(1)
        self._sockets: list[web.WebSocketResponse] = []
        self._pending_acks: dict[str, asyncio.Future[Ack]] = {}
        self._changed = asyncio.Condition()
        app = web.Application()
        app.router.add_post("/open-apis/auth/v3/tenant_access_token/internal", self._token)
        app.router.add_get("/open-apis/bot/v3/info", self._bot_info)
        app.router.add_post("/open-apis/im/v1/messages", self._create)
        app.router.add_post("/open-apis/im/v1/messages/{message_id}/reply", self._reply)
        app.router.add_get("/open-apis/im/v1/chats/{chat_id}", self._chat)
        app.router.add_get("/open-apis/contact/v3/users/{open_id}", self._user)
        app.router.add_post("/callback/ws/endpoint", self._endpoint)
        app.router.add_get("/ws", self._socket)
        super().__init__(app)

    async def before_close(self) -> None:
        await self.drop_connections()

    @property
    def url(self) -> str:
        return self.base_url

    # -- scripting and inspection -------------------------------------------------------------

    def fail_next(
        self, path_part: str, code: int, *, msg: str = "scripted", status: int = 200
    ) -> None:
        """The next request whose path contains `path_part` gets `code` (after the token check)."""
        self._failures.append(Failure(path_part, code, msg, status))

    def slow_down(self, path_part: str, seconds: float) -> None:
        """Answer requests whose path contains `path_part` only after `seconds`."""
        self._delays[path_part] = seconds

    def revoke_tokens(self) -> None:
        self._valid_tokens.clear()

    def calls(self, path_part: str) -> list[RecordedRequest]:
        return [r for r in self.requests if path_part in r.path]

    @property
    def messages(self) -> list[RecordedRequest]:
        """Every create and reply request, retries included."""
        return [r for r in self.requests if r.path.startswith("/open-apis/im/v1/messages")]

    @property
    def open_connections(self) -> int:
        return len(self._sockets)

    async def wait_messages(self, count: int, seconds: float = 10.0) -> list[RecordedRequest]:
        """Wait until `count` messages were delivered; returns them."""
        async with asyncio.timeout(seconds), self._changed:
            await self._changed.wait_for(lambda: len(self.delivered) >= count)
        return list(self.delivered)

    async def wait_connected(self, count: int = 1, seconds: float = 10.0) -> None:
        """Wait until `count` connections were accepted and one is open."""
        async with asyncio.timeout(seconds), self._changed:
            await self._changed.wait_for(lambda: self.connections >= count and bool(self._sockets))

    async def push(self, event: dict[str, Any], *, seconds: float = 10.0) -> Ack:
        """Send `event` as a data frame on the open connection; returns the client's ack."""
        await self.wait_connected(seconds=seconds)
        socket = self._sockets[-1]
        n = next(self._ids)
        frame_id = f"frame-{n}"
        frame = Frame()
        frame.SeqID, frame.LogID, frame.service, frame.method = n, n, SERVICE_ID, 1
        headers = {"type": "event", "message_id": frame_id, "sum": "1", "seq": "0"}
        for key, value in {**headers, "trace_id": f"trace-{n}"}.items():
            header = frame.headers.add()
            header.key, header.value = key, value
        frame.payload = json.dumps(event, ensure_ascii=False).encode()
        waiter: asyncio.Future[Ack] = asyncio.get_running_loop().create_future()
        self._pending_acks[frame_id] = waiter
        await socket.send_bytes(frame.SerializeToString())
        try:
            async with asyncio.timeout(seconds):
                return await waiter
        finally:
            self._pending_acks.pop(frame_id, None)

    async def drop_connections(self) -> None:
        """Close every open long connection from the server side (the client should reconnect)."""
        for socket in list(self._sockets):
            await socket.close(code=1001, message=b"going away")

    # -- HTTP API ----------------------------------------------------------------------------

    async def _record(self, request: web.Request) -> RecordedRequest:
        body: dict[str, Any] = {}
        if request.can_read_body:
            body = await request.json()
        recorded = RecordedRequest(
            request.method,
            request.path,
            dict(request.query),
            {k.lower(): v for k, v in request.headers.items()},
            body,
        )
        self.requests.append(recorded)
        for part, seconds in self._delays.items():
            if part in recorded.path:
                await asyncio.sleep(seconds)
        return recorded

    def _refusal(self, recorded: RecordedRequest) -> web.Response | None:
        if recorded.token not in self._valid_tokens:
            return web.json_response(
                {"code": INVALID_TOKEN, "msg": "Invalid access token for authorization."},
                status=400,
            )
        for failure in self._failures:
            if failure.path_part in recorded.path:
                self._failures.remove(failure)
                return web.json_response(
                    {"code": failure.code, "msg": failure.msg}, status=failure.status
                )
        return None

    async def _token(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        body = recorded.body
        if body.get("app_id") != self.app_id or body.get("app_secret") != self.app_secret:
            return web.json_response({"code": 10014, "msg": "app secret invalid"})
        token = f"t-{next(self._ids)}"
        self._valid_tokens.add(token)
        return web.json_response(
            {"code": 0, "msg": "ok", "tenant_access_token": token, "expire": self.token_lifetime}
        )

    async def _bot_info(self, request: web.Request) -> web.Response:
        refusal = self._refusal(await self._record(request))
        if refusal is not None:
            return refusal
        bot = {"activate_status": 2, "app_name": self.bot_name, "open_id": self.bot_open_id}
        return web.json_response({"code": 0, "msg": "ok", "bot": bot})

    async def _create(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        return await self._message(recorded, recorded.body.get("receive_id", ""))

    async def _reply(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        return await self._message(recorded, request.match_info["message_id"])

    async def _message(self, recorded: RecordedRequest, target: str) -> web.Response:
        refusal = self._refusal(recorded)
        if refusal is not None:
            return refusal
        uuid = str(recorded.body.get("uuid") or "")
        message_id = self._uuids.get(uuid) if uuid else None
        if message_id is None:
            message_id = f"om_sent_{next(self._ids)}"
            if uuid:
                self._uuids[uuid] = message_id
            async with self._changed:
                self.delivered.append(recorded)
                self.sent_ids.append(message_id)
                self._changed.notify_all()
        data = {
            "message_id": message_id,
            "msg_type": recorded.body.get("msg_type"),
            "create_time": str(int(time.time() * 1000)),
            "sender": {"id": self.app_id, "id_type": "app_id", "sender_type": "app"},
            "body": {"content": recorded.body.get("content")},
            "target": target,
        }
        return web.json_response({"code": 0, "msg": "success", "data": data})

    async def _chat(self, request: web.Request) -> web.Response:
        refusal = self._refusal(await self._record(request))
        if refusal is not None:
            return refusal
        chat = self.chats.get(request.match_info["chat_id"])
        if chat is None:
            return web.json_response({"code": 232011, "msg": "chat not found"}, status=400)
        return web.json_response({"code": 0, "msg": "success", "data": chat})

    async def _user(self, request: web.Request) -> web.Response:
        refusal = self._refusal(await self._record(request))
        if refusal is not None:
            return refusal
        open_id = request.match_info["open_id"]
        if open_id not in self.users:
            return web.json_response({"code": 41050, "msg": "no user authority"}, status=400)
        user = {"open_id": open_id, "name": self.users[open_id]}
        return web.json_response({"code": 0, "msg": "success", "data": {"user": user}})

    # -- long connection ---------------------------------------------------------------------

    async def _endpoint(self, request: web.Request) -> web.Response:
        body = (await self._record(request)).body
        if body.get("AppID") != self.app_id or body.get("AppSecret") != self.app_secret:
            return web.json_response({"code": 1000040351, "msg": "invalid app credentials"})
        device = f"device-{next(self._ids)}"
        url = f"ws://127.0.0.1:{self.port}/ws?device_id={device}&service_id={SERVICE_ID}"
        data = {"URL": url, "ClientConfig": CLIENT_CONFIG}
        return web.json_response({"code": 0, "msg": "ok", "data": data})

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        async with self._changed:
            self._sockets.append(socket)
            self.connections += 1
            self._changed.notify_all()
        try:
            async for message in socket:
                if message.type == WSMsgType.BINARY:
                    await self._frame(socket, message.data)
        finally:
            async with self._changed:
                self._sockets.remove(socket)
                self._changed.notify_all()
        return socket

    async def _frame(self, socket: web.WebSocketResponse, data: bytes) -> None:
        frame = Frame()
        frame.ParseFromString(data)
        headers = {h.key: h.value for h in frame.headers}
        if frame.method == 0 and headers.get("type") == "ping":
            self.pings += 1
            pong = Frame()
            pong.SeqID, pong.LogID, pong.service, pong.method = 0, 0, frame.service, 0
            header = pong.headers.add()
            header.key, header.value = "type", "pong"
            pong.payload = json.dumps(CLIENT_CONFIG).encode()
            await socket.send_bytes(pong.SerializeToString())
        elif frame.method == 1:
            payload = json.loads(frame.payload) if frame.payload else {}
            ack = Ack(int(payload.get("code", 0)), headers, payload)
            self.acks.append(ack)
            waiter = self._pending_acks.get(headers.get("message_id", ""))
            if waiter is not None and not waiter.done():
                waiter.set_result(ack)
