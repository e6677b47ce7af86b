"""One OneBot WebSocket connection, and the registry of live connections per bot account.

`WsConnection` wraps an aiohttp socket from either side (reverse: the implementation connected to
us; forward: we connected to it). Its reader loop hands event frames to a callback, resolves action
answers through its `ResultStore`, and drops malformed frames with a log line — a bad frame never
ends the connection. When the reader ends, every pending call fails at once.

Heartbeat watchdog: once a `heartbeat` meta event announces an interval, a connection that
receives nothing for `heartbeat_grace` intervals (default 2.5: two missed heartbeats plus jitter)
is closed. Implementations that send no heartbeat are tolerated: without an announced interval
the watchdog never fires.

Backpressure: with an `inbound` queue attached (`nahida.adapters.onebot.inbound` explains the
design), the reader stops reading while that queue is above its mark and none of this
connection's calls awaits an answer; `call()` and `close()` wake it. The watchdog ignores a
silence the reader itself made.

`ConnectionRegistry` answers "which socket do I call for account X". An implementation that
reconnects with the same `X-Self-ID` while its old socket is half-open replaces the old one at
once; the old one keeps delivering events until it closes (duplicates are dropped upstream) but
no longer receives actions. Unregistering compares the connection object, so the old socket's
cleanup can never remove its successor. Callers that find no live socket wait for one
(`api_for`), so a reply produced during a reconnect goes out on the new socket.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
import structlog
from aiohttp import WSCloseCode, WSMsgType, web

from nahida.adapters.onebot.api import (
    ActionTimeoutError,
    ConnectionClosedError,
    ResultStore,
    check_result,
)
from nahida.adapters.onebot.inbound import Inbound
from nahida.adapters.onebot.payload import PayloadError, decode
from nahida.errors import AdapterError

log = structlog.get_logger(__name__)

ClientRole = Literal["Universal", "API", "Event"]
Socket = web.WebSocketResponse | aiohttp.ClientWebSocketResponse
CLOSE_TIMEOUT = 2.0


@dataclass
class Counters:
    """Per-adapter totals, shared by every connection (for logs, tests and the benchmark)."""

    frames: int = 0  # frames and POSTs received
    malformed: int = 0  # dropped: not JSON, not an object, not a usable event
    unknown_echo: int = 0  # answers to no pending call of ours
    events: int = 0  # parsed events
    duplicates: int = 0  # events dropped as seen before
    own_messages: int = 0  # the bot's own messages, ignored
    notices: int = 0
    pauses: int = 0  # times a reader stopped reading because too many events were waiting
    resent: int = 0  # replies sent again after their socket was lost (adapter.send)


class WsConnection:
    def __init__(
        self,
        socket: Socket,
        *,
        role: ClientRole,
        self_id: str | None,
        on_event: Callable[[WsConnection, dict[str, Any]], None],
        counters: Counters | None = None,
        timeout: float = 30.0,
        heartbeat_grace: float = 2.5,
        peer: str = "",
    ) -> None:
        self.socket = socket
        self.role = role
        self.self_id = self_id
        self.timeout = timeout
        self.heartbeat_grace = heartbeat_grace
        self.heartbeat_interval: float | None = None  # seconds, once announced
        self.results = ResultStore()
        self.counters = counters or Counters()
        self.peer = peer
        self._on_event = on_event
        self._loop = asyncio.get_running_loop()
        self.last_seen = self._loop.time()
        self._heartbeat_on = asyncio.Event()
        self.close_reason = ""
        self.inbound: Inbound | None = None  # set by the adapter: pause reading when it is full
        self.paused = False
        self._wake = asyncio.Event()  # ends a pause: a call opened, or the socket is closing
        self._gave_up: int | None = None  # `inbound.drains` when a pause last ran out

    def __repr__(self) -> str:
        return f"<WsConnection {self.role} self_id={self.self_id} peer={self.peer}>"

    @property
    def closed(self) -> bool:
        return self.socket.closed

    @property
    def can_call(self) -> bool:
        return self.role != "Event"

    async def call(
        self, action: str, params: Mapping[str, Any], time_limit: float | None = None
    ) -> Any:
        if self.closed:
            raise ConnectionClosedError(action, sent=False)
        limit = time_limit or self.timeout
        echo, future = self.results.open(action)
        self._wake.set()  # a paused reader must read on to find the answer
        timer: asyncio.TimerHandle | None = None
        try:
            frame = json.dumps(
                {"action": action, "params": dict(params), "echo": echo}, ensure_ascii=False
            )
            try:
                await self.socket.send_str(frame)
            except (ConnectionError, RuntimeError, aiohttp.ClientError):
                raise ConnectionClosedError(action, sent=False) from None
            # a timer, not `asyncio.timeout()`: a third of the cost, on every reply
            timer = self._loop.call_later(limit, _expire, future)
            answer = await future
        except TimeoutError:
            raise ActionTimeoutError(action, limit) from None
        finally:
            if timer is not None:
                timer.cancel()
            self.results.discard(echo)
            if future.done() and not future.cancelled():
                future.exception()  # failed by a close while we were not awaiting it: retrieved
        return check_result(action, answer)

    async def serve(self) -> None:
        """Read frames until the socket closes; then fail every pending call."""
        try:
            async with asyncio.TaskGroup() as group:
                watchdog = group.create_task(self._watchdog(), name=f"watchdog {self!r}")
                try:
                    await self._read()
                finally:
                    watchdog.cancel()
        finally:
            failed = self.results.fail_all(lambda action: ConnectionClosedError(action, sent=True))
            self._log().info(
                "connection_closed",
                reason=self.close_reason or "peer closed",
                code=self.socket.close_code,
                failed_calls=failed,
            )

    def _log(self) -> Any:
        return log.bind(self_id=self.self_id, role=self.role, peer=self.peer)

    async def _read(self) -> None:
        async for message in self.socket:
            self.last_seen = self._loop.time()
            if message.type == WSMsgType.TEXT:
                self._frame(message.data)
            elif message.type == WSMsgType.BINARY:
                self._frame(message.data.decode("utf-8", "replace"))
            elif message.type == WSMsgType.ERROR:
                self.close_reason = f"socket error: {message.data}"
                return
            if self.inbound is not None and self.inbound.full and not self.results:
                await self._pause(self.inbound)

    async def _pause(self, inbound: Inbound) -> None:
        """Stop reading while `inbound` is full and no call of ours awaits an answer."""
        if self._gave_up == inbound.drains:
            return  # the last pause ran out: read on until the queue next drains
        self.paused = True
        self.counters.pauses += 1
        try:
            async with asyncio.timeout(inbound.max_pause):
                while inbound.full and not self.results and not self.close_reason:
                    self._wake.clear()
                    await inbound.hold(self._wake)
        except TimeoutError:
            self._gave_up = inbound.drains
            self._log().warning(
                "inbound_pause_ran_out", waiting=inbound.qsize(), seconds=inbound.max_pause
            )
        finally:
            self.paused = False
            self.last_seen = self._loop.time()  # the silence was ours

    def _frame(self, text: str) -> None:
        self.counters.frames += 1
        try:
            data = decode(text)
        except PayloadError as exc:
            self._malformed(text, exc.reason)
            return
        if not isinstance(data, dict):
            self._malformed(text, "not a JSON object")
            return
        if "post_type" in data:
            if data.get("meta_event_type") == "heartbeat":
                self._heartbeat(data.get("interval"))
            self._on_event(self, data)
        elif "echo" in data or "status" in data or "retcode" in data:
            if not self.results.resolve(data):
                self.counters.unknown_echo += 1
                self._log().debug("answer_with_unknown_echo", echo=repr(data.get("echo"))[:80])
        else:
            self._malformed(text, "neither an event nor an action answer")

    def _malformed(self, text: str, reason: str) -> None:
        self.counters.malformed += 1
        self._log().warning("malformed_frame_dropped", reason=reason, frame=text[:200])

    def _heartbeat(self, interval: Any) -> None:
        if isinstance(interval, int | float) and not isinstance(interval, bool) and interval > 0:
            self.heartbeat_interval = interval / 1000.0
            self._heartbeat_on.set()

    async def _watchdog(self) -> None:
        await self._heartbeat_on.wait()
        while self.heartbeat_interval is not None:
            silence = self.heartbeat_interval * self.heartbeat_grace
            if self.paused:  # not reading: the peer's heartbeats wait in the socket
                await asyncio.sleep(silence)
                continue
            left = self.last_seen + silence - self._loop.time()
            if left > 0:
                await asyncio.sleep(left)
                continue
            log.warning(
                "heartbeat_missed_closing",
                self_id=self.self_id,
                peer=self.peer,
                interval=self.heartbeat_interval,
                silent_for=round(self._loop.time() - self.last_seen, 3),
            )
            await self.close("heartbeat timeout", WSCloseCode.GOING_AWAY)
            return

    async def close(self, reason: str, code: int = WSCloseCode.OK) -> None:
        """Close the socket; a peer that does not answer the close frame is cut off."""
        if not self.close_reason:
            self.close_reason = reason
        self._wake.set()  # a paused reader sees the close
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await self.socket.close(code=code, message=reason.encode()[:120])
        except (TimeoutError, ConnectionError, RuntimeError, aiohttp.ClientError):
            pass


def _expire(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


class ConnectionRegistry:
    """Live connections by bot account: one for actions and one for events per `self_id`."""

    def __init__(self) -> None:
        self._api: dict[str, WsConnection] = {}
        self._event: dict[str, WsConnection] = {}
        self._live: set[WsConnection] = set()
        self._changed = asyncio.Event()

    def _slots(self, conn: WsConnection) -> list[dict[str, WsConnection]]:
        if conn.role == "API":
            return [self._api]
        if conn.role == "Event":
            return [self._event]
        return [self._api, self._event]

    def attach(self, conn: WsConnection) -> None:
        """Track a serving connection (closed at shutdown), registered or not."""
        self._live.add(conn)

    def register(self, conn: WsConnection) -> list[WsConnection]:
        """Make `conn` the account's connection; returns the connections it replaced."""
        if conn.self_id is None:
            raise AdapterError("cannot register a connection before its self_id is known")
        replaced = []
        for slots in self._slots(conn):
            old = slots.get(conn.self_id)
            slots[conn.self_id] = conn
            if old is not None and old is not conn and old not in replaced:
                replaced.append(old)
        self._notify()
        return replaced

    def detach(self, conn: WsConnection) -> bool:
        """Forget a closed connection; True when it was still registered (not replaced)."""
        self._live.discard(conn)
        removed = False
        if conn.self_id is not None:
            for slots in (self._api, self._event):
                if slots.get(conn.self_id) is conn:  # the object, not the id: see module doc
                    del slots[conn.self_id]
                    removed = True
        self._notify()
        return removed

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    @property
    def accounts(self) -> list[str]:
        return sorted(set(self._api) | set(self._event))

    @property
    def live(self) -> list[WsConnection]:
        return list(self._live)

    def api(self, self_id: str | None) -> WsConnection | None:
        """The connection for actions of `self_id` (None: the only account, if there is one)."""
        if self_id is None:
            conns = [c for c in self._api.values() if not c.closed]
            return conns[0] if len(conns) == 1 else None
        conn = self._api.get(self_id)
        return conn if conn is not None and not conn.closed else None

    async def api_for(self, self_id: str | None, wait: float) -> WsConnection:
        """Wait up to `wait` seconds for a live action connection of `self_id`."""
        conn = self.api(self_id)
        if conn is not None:
            return conn
        try:
            async with asyncio.timeout(wait):
                while (conn := self.api(self_id)) is None:
                    await self._changed.wait()
        except TimeoutError:
            who = f"account {self_id}" if self_id else "a single account"
            raise AdapterError(f"no OneBot connection for {who} within {wait:g} s") from None
        return conn

    async def close_all(self, reason: str) -> None:
        conns = list(self._live)
        if conns:
            await asyncio.gather(*(c.close(reason, WSCloseCode.GOING_AWAY) for c in conns))
