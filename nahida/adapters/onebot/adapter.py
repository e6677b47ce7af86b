"""QQ through OneBot v11: the adapter that turns events into envelopes and replies into actions.

    implementation ──reverse WS / forward WS / HTTP POST──▶ inbound queue ──▶ _handle ──▶ submit
                   ◀──────── WS action / HTTP API ────────── send(reply)

Every transport (see `reverse.py`, `forward.py`) hands raw event objects to one inbound queue,
which stamps their arrival (`Envelope.received`: the platform's clock may be off); a single task
parses them in arrival order, drops duplicates (`events.dedup_key`, bounded), the
bot's own messages and malformed events, and turns messages into `Envelope`s: addressing
(`addressing.py`), the sender's group role (`roles.py`), mentions and the reply target. Notices
(recall, poke, member changes) are logged, not submitted: they carry no words to answer, and a
member change only invalidates the cached role. Readers never wait for this task, so action
answers keep flowing while it waits on a lookup or on the bus. Nothing is dropped when events
arrive faster than they are handled: the inbound queue (`inbound.py`) makes WebSocket readers
pause at `queue_limit` waiting events, except while an action answer is awaited on their socket.

Replies go to the account that last heard from the chat (several accounts may share a server),
through whatever socket that account has *now*, waiting up to `send_wait` for a reconnect. A
reply whose socket closed before its answer came is sent again on the next one: at least once,
and exactly once with an implementation that answers what it processed before it closes
(`send`; docs/onebot.md, Delivery).
"""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import structlog

from nahida.adapters.base import Routes, Submit
from nahida.adapters.onebot import config as onebot_config
from nahida.adapters.onebot.addressing import address, nickname_pattern
from nahida.adapters.onebot.api import (
    ActionTimeoutError,
    Caller,
    ConnectionClosedError,
    HttpApi,
    OneBotApi,
)
from nahida.adapters.onebot.config import OneBotConfig
from nahida.adapters.onebot.connection import (
    ClientRole,
    ConnectionRegistry,
    Counters,
    WsConnection,
)
from nahida.adapters.onebot.events import (
    Deduplicator,
    EventError,
    HeartbeatEvent,
    LifecycleEvent,
    MemberNotice,
    MessageEvent,
    NoticeEvent,
    dedup_key,
    id_of,
    parse_event,
)
from nahida.adapters.onebot.forward import ForwardClient
from nahida.adapters.onebot.inbound import Inbound
from nahida.adapters.onebot.message import from_reply, to_segments
from nahida.adapters.onebot.reverse import ReverseEndpoints
from nahida.adapters.onebot.roles import MemberRoles
from nahida.config import Config
from nahida.envelope import ChatKey, Envelope, Reply, Role, Sender, UserKey
from nahida.errors import AdapterError, ConfigError

log = structlog.get_logger(__name__)

PLATFORM = "onebot"
TOKEN_KEY = "channels.onebot.access_token"
ROUTES = 10_000  # chats whose answering account is remembered
MAX_PAUSE = 10.0  # seconds a reader may stop reading its socket at a time
SEND_ATTEMPTS = 3  # sends of one reply: the first, and again after each of two lost sockets


class OneBotAdapter:
    platform = PLATFORM

    def __init__(
        self,
        settings: OneBotConfig,
        *,
        nicknames: tuple[str, ...] = (),
        bot_name: str = "",
        server_host: str = "127.0.0.1",
    ) -> None:
        self.access = onebot_config.access(settings, server_host)
        if self.access.level == "error":  # anyone who reaches it would speak for the account
            raise ConfigError(self.access.reason, key=TOKEN_KEY)
        self.settings = settings
        self.bot_name = bot_name
        self.counters = Counters()
        self.registry = ConnectionRegistry()
        self.roles = MemberRoles(self._member_info, ttl=settings.role_cache_seconds)
        self._nicknames: re.Pattern[str] | None = nickname_pattern(nicknames)
        # a pause stays well inside the WebSocket ping/pong window (ping + ping/2)
        pause = min(MAX_PAUSE, settings.ping_interval / 2) if settings.ping_interval else MAX_PAUSE
        self.inbound = Inbound(settings.queue_limit, max_pause=pause)
        self._seen = Deduplicator(settings.dedup_size)
        self._sent = Deduplicator(settings.dedup_size)  # (self_id, chat, message_id) it sent
        self._routes: OrderedDict[str, str] = OrderedDict()  # chat -> self_id that heard it
        self._http = HttpApi(settings.url, settings.token, settings.api_timeout)
        self.endpoints = ReverseEndpoints(settings, self.counters, self._accept, self.serve)

    # -- transports ---------------------------------------------------------------------------

    def mount(self, server: Routes) -> None:
        if self.settings.mode == "reverse_ws":
            server.add_route("GET", self.settings.path, self.endpoints.websocket)
        elif self.settings.mode == "http":
            server.add_route("POST", self.settings.http_path, self.endpoints.http_events)
        server.on_shutdown(self._on_server_shutdown)

    async def _on_server_shutdown(self, app: object) -> None:
        await self.registry.close_all("server shutting down")

    async def run(self, submit: Submit) -> None:
        if self.access.level == "warn":
            log.warning("onebot_access_token_empty", key=TOKEN_KEY, reason=self.access.reason)
        session: aiohttp.ClientSession | None = None
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._process(submit), name="onebot events")
                if self.settings.mode == "forward_ws":
                    timeout = aiohttp.ClientTimeout(total=None, connect=10, sock_connect=10)
                    session = aiohttp.ClientSession(timeout=timeout)
                    client = ForwardClient(self.settings, session, self._connection, self.serve)
                    for url, role in self.settings.forward_urls():
                        group.create_task(client.run(url, role), name=f"onebot forward {role}")
        finally:
            await self.registry.close_all("adapter stopped")
            if session is not None:
                await session.close()
            await self._http.aclose()

    def _connection(
        self, socket: aiohttp.ClientWebSocketResponse, role: ClientRole, peer: str
    ) -> WsConnection:
        return WsConnection(
            socket,
            role=role,
            self_id=None,  # learned from get_login_info or the first event
            on_event=self._accept,
            counters=self.counters,
            timeout=self.settings.api_timeout,
            heartbeat_grace=self.settings.heartbeat_grace,
            peer=peer,
        )

    async def serve(self, conn: WsConnection) -> None:
        """Serve one socket until it closes; registered for actions once its account is known."""
        self.registry.attach(conn)
        conn.inbound = self.inbound
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(conn.serve())
                if conn.self_id is not None:
                    self._register(conn)
                elif conn.can_call:
                    try:
                        async with asyncio.timeout(self.settings.lookup_timeout):
                            info = await OneBotApi(conn).get_login_info()
                    except (AdapterError, TimeoutError) as exc:
                        log.info("login_info_unavailable", peer=conn.peer, error=str(exc))
                    else:
                        if conn.self_id is None:
                            conn.self_id = info.user_id
                            self._register(conn)
        finally:
            if not self.registry.detach(conn) and conn.self_id is not None:
                log.info("replaced_connection_gone", self_id=conn.self_id, role=conn.role)

    def _register(self, conn: WsConnection) -> None:
        for old in self.registry.register(conn):
            log.warning("connection_replaced", self_id=conn.self_id, role=conn.role, old=repr(old))
        log.info("connection_registered", self_id=conn.self_id, role=conn.role, peer=conn.peer)

    def _accept(self, conn: WsConnection | None, data: dict[str, Any]) -> None:
        """Called by readers for every event object; never blocks them."""
        if conn is not None and conn.self_id is None:
            conn.self_id = id_of(data.get("self_id"))
            if conn.self_id is not None:
                self._register(conn)
        if data.get("meta_event_type") == "heartbeat":
            return  # the connection's watchdog already took what it needs
        self.inbound.put(data)  # never dropped: the reader pauses after this frame if need be

    # -- events ---------------------------------------------------------------------------------

    async def _process(self, submit: Submit) -> None:
        while True:
            received, data = await self.inbound.get()
            try:
                await self._handle(data, submit, received)
            except Exception:
                log.exception("onebot_event_failed", post_type=data.get("post_type"))

    async def _handle(self, data: dict[str, Any], submit: Submit, received: float) -> None:
        try:
            event = parse_event(data)
        except EventError as exc:
            self.counters.malformed += 1
            log.warning("malformed_event_dropped", error=str(exc), payload=repr(data)[:200])
            return
        self.counters.events += 1
        key = dedup_key(event)
        if key is not None and self._seen.seen(key):
            self.counters.duplicates += 1
            log.info("duplicate_event_dropped", key=repr(key))
            return
        if isinstance(event, MessageEvent):
            if event.from_self:
                self.counters.own_messages += 1
                return
            envelope = await self.envelope(event, received)
            self._route(str(envelope.chat), event.self_id)
            await submit(envelope)
        elif isinstance(event, NoticeEvent):
            self._notice(event)
        elif isinstance(event, LifecycleEvent):
            log.info("onebot_lifecycle", self_id=event.self_id, sub_type=event.sub_type)
        elif not isinstance(event, HeartbeatEvent):
            log.debug("onebot_event_ignored", post_type=event.post_type, self_id=event.self_id)

    def _notice(self, event: NoticeEvent) -> None:
        self.counters.notices += 1
        if isinstance(event, MemberNotice) and event.group_id and event.user_id:
            self.roles.forget(event.self_id, event.group_id, event.user_id)
        log.info(
            "onebot_notice",
            kind=type(event).__name__,
            notice_type=event.notice_type,
            sub_type=event.sub_type,
            self_id=event.self_id,
            group=event.group_id,
            user=event.user_id,
        )

    async def envelope(self, event: MessageEvent, received: float | None = None) -> Envelope:
        """The envelope for one message event that arrived at `received` (seconds since the
        epoch; None: now); addressing may ask the implementation."""

        chat = _chat(event)

        async def reply_sender(message_id: str) -> str | None:
            return await self._reply_sender(event.self_id, str(chat), message_id)

        found = await address(
            event, nicknames=self._nicknames, reply_sender=reply_sender, bot_name=self.bot_name
        )
        name = event.sender.display_name
        role = Role.MEMBER
        if event.anonymous is not None:
            name = str(event.anonymous.get("name") or "anonymous")
        elif event.group_id is not None:
            role = await self.roles.role(
                event.self_id, event.group_id, event.user_id, event.sender.role
            )
        arrived = datetime.now(UTC) if received is None else datetime.fromtimestamp(received, UTC)
        return Envelope(
            platform=PLATFORM,
            self_id=event.self_id,
            chat=chat,
            sender=Sender(UserKey(PLATFORM, event.user_id), name, role),
            message_id=event.message_id,
            time=_when(event.time, arrived),
            segments=to_segments(found.segments),
            text=found.text,
            to_me=found.to_me,
            reply_to=found.reply_to,
            mentions=tuple(str(UserKey(PLATFORM, m)) for m in found.mentions),
            raw=event.raw,
            received=arrived,
        )

    async def _reply_sender(self, self_id: str, chat: str, message_id: str) -> str | None:
        """Who sent `message_id`: the bot when it is one of ours, else ask `get_msg`."""
        if (self_id, chat, message_id) in self._sent:
            return self_id
        limit = self.settings.lookup_timeout
        try:
            async with asyncio.timeout(limit):
                data = await OneBotApi(await self._caller(self_id, limit)).get_msg(message_id)
        except (AdapterError, TimeoutError) as exc:
            log.info("reply_lookup_failed", self_id=self_id, message=message_id, error=str(exc))
            return None
        sender = data.get("sender")
        return id_of(sender.get("user_id") if isinstance(sender, dict) else data.get("user_id"))

    async def _member_info(self, self_id: str, group_id: str, user_id: str) -> dict[str, object]:
        limit = self.settings.lookup_timeout
        async with asyncio.timeout(limit):
            api = OneBotApi(await self._caller(self_id, limit))
            return await api.get_group_member_info(group_id, user_id)

    # -- actions --------------------------------------------------------------------------------

    def _route(self, chat: str, self_id: str) -> None:
        self._routes[chat] = self_id
        self._routes.move_to_end(chat)
        if len(self._routes) > ROUTES:
            self._routes.popitem(last=False)

    async def _caller(self, self_id: str | None, wait: float) -> Caller:
        if self.settings.mode == "http":
            return self._http
        return await self.registry.api_for(self_id, wait)

    def api(self, caller: Caller) -> OneBotApi:
        return OneBotApi(caller, self.settings.api_timeout)

    async def call(self, action: str, params: dict[str, Any], self_id: str | None = None) -> Any:
        """Any action, on the account's live connection (for plugins and tests)."""
        caller = await self._caller(self_id, self.settings.send_wait)
        return await self.api(caller).call(action, params)

    async def send(self, reply: Reply) -> str | None:
        """Send `reply`; the new message's id once the implementation acknowledged it.

        At least once: a reply whose socket closed before its answer came is sent again on the
        account's next socket (waiting `send_wait` for it each time), at most `SEND_ATTEMPTS`
        times; so is one with no answer within `api_timeout` whose socket was replaced or closed
        meanwhile. A well-behaved implementation answers every frame it processed before it
        closes, so none is sent twice; see docs/onebot.md, Delivery. Raises `AdapterError` when
        the reply was not acknowledged (`ActionFailedError`: the implementation refused it)."""
        if reply.chat.platform != PLATFORM:
            raise AdapterError(f"the OneBot adapter cannot send to {reply.chat}")
        self_id = self._routes.get(str(reply.chat))
        message = from_reply(reply)
        lost: AdapterError | None = None  # why the last send went down with its socket
        for attempt in range(1, SEND_ATTEMPTS + 1):
            try:
                caller = await self._caller(self_id, self.settings.send_wait)
            except AdapterError as exc:
                if lost is None:
                    raise
                raise AdapterError(f"{lost}; {exc}") from None
            api = self.api(caller)
            try:
                if reply.chat.is_group:
                    sent = await api.send_group_msg(reply.chat.id, message)
                else:
                    sent = await api.send_private_msg(reply.chat.id, message)
            except (ConnectionClosedError, ActionTimeoutError) as exc:
                if attempt == SEND_ATTEMPTS or not self._lost(caller, exc):
                    raise
                lost = exc
                self.counters.resent += 1
                log.info("reply_lost_with_its_socket", next_attempt=attempt + 1, error=str(exc))
                continue
            account = caller.self_id if isinstance(caller, WsConnection) else self_id
            if sent is not None:
                self._sent.seen((account or "", str(reply.chat), sent))
            return sent
        return None

    def _lost(self, caller: Caller, error: AdapterError) -> bool:
        """Whether a reply whose call failed with `error` went down with its socket: closed
        before its answer came (the answer can never come now), or unanswered on a socket that
        closed or was replaced meanwhile (an implementation that reconnected)."""
        if isinstance(error, ConnectionClosedError):
            return True
        if not isinstance(caller, WsConnection):
            return False
        return caller.closed or self.registry.api(caller.self_id) is not caller


def _chat(event: MessageEvent) -> ChatKey:
    if event.is_group and event.group_id is not None:
        return ChatKey(PLATFORM, "group", event.group_id)
    return ChatKey(PLATFORM, "private", event.user_id)


EARLIEST = datetime(2010, 1, 1, tzinfo=UTC)  # before this an event time is nonsense
FUTURE = timedelta(minutes=5)  # clock skew tolerated; later than this is nonsense too


def _when(epoch: float | None, now: datetime) -> datetime:
    """The event's time, which history records; `now` (when it arrived) when it is missing or
    nonsense (before 2010, or ms taken for s: far in the future)."""
    if epoch:
        try:
            when = datetime.fromtimestamp(epoch, UTC)
        except (OverflowError, OSError, ValueError):
            return now
        if EARLIEST <= when <= now + FUTURE:
            return when
    return now


def build(section: dict[str, Any], config: Config) -> OneBotAdapter:
    """The adapter for `channels.onebot` (called by `nahida.app`)."""
    settings = onebot_config.load(section)
    return OneBotAdapter(
        settings,
        nicknames=tuple(config.bot.nicknames),
        bot_name=config.bot.name,
        server_host=config.server.host,
    )


def check(section: dict[str, Any], config: Config) -> tuple[str, str]:
    """For `nahida doctor`: the level (ok, warn, error) of the channel's access check, and a
    line saying why."""
    found = onebot_config.access(onebot_config.load(section), config.server.host)
    return found.level, f"{TOKEN_KEY}: {found.reason}"
