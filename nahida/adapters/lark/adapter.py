"""The Lark/Feishu adapter: events in (long connection or webhook), replies out (open platform API).

    long connection ─┐                           ┌─ role, name (Directory, cached)
                     ├─ offer() ─ inbox ─ run() ─┤                          ─ submit(envelope)
    webhook ─────────┘  (dedup)                  └─ to_envelope (events, message)

`offer` runs on our loop, drops events already seen (`header.event_id`, else the message id; a
bounded memory) and queues the rest, answering at once; `run` learns the bot's open_id
(`GET /open-apis/bot/v3/info`), then turns queued events into envelopes and submits them to the bus,
so a slow lookup or a full bus never delays an acknowledgement. `send` renders a reply (text, or a
`post` for Markdown; long ones split), waits for the chat's send limit and replies to the quoted
message or sends to the chat, each message with its own `uuid`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import structlog

from nahida.adapters.base import Routes, Submit
from nahida.adapters.lark.api import LarkApi
from nahida.adapters.lark.config import LarkConfig, load
from nahida.adapters.lark.directory import Directory
from nahida.adapters.lark.events import (
    MESSAGE_RECEIVED,
    PLATFORM,
    BotIdentity,
    RecentIds,
    event_key,
    event_type,
    parse_message_event,
    to_envelope,
)
from nahida.adapters.lark.limiter import SendLimiter
from nahida.adapters.lark.longconn import LongConnection
from nahida.adapters.lark.message import render
from nahida.adapters.lark.webhook import WebhookReceiver
from nahida.config import Config
from nahida.envelope import ChatKey, Envelope, Reply, Role
from nahida.errors import ActionFailedError, AdapterError

log = structlog.get_logger(__name__)

# Subscribed often enough that answering "no processor" (HTTP 500, pushed again) would be noise.
IGNORED_EVENTS = (
    "im.message.message_read_v1",
    "im.message.recalled_v1",
    "im.message.reaction.created_v1",
    "im.message.reaction.deleted_v1",
    "im.chat.member.bot.added_v1",
    "im.chat.member.bot.deleted_v1",
)
INBOX_SIZE = 1000
SEEN_EVENTS = 4096
SENT_MESSAGES = 1024
IDENTITY_RETRY = (1.0, 60.0)  # first and longest wait between attempts to learn the bot's open_id


class LarkAdapter:
    platform = PLATFORM

    def __init__(
        self, settings: LarkConfig, *, api: LarkApi | None = None, inbox_size: int = INBOX_SIZE
    ) -> None:
        self.settings = settings
        self.api = api or LarkApi(
            settings.domain, settings.app_id, settings.app_secret.get_secret_value()
        )
        self.directory = Directory(self.api)
        self.limiter = SendLimiter(rate=5, period=1.0)
        self.identity: BotIdentity | None = None
        self.webhook: WebhookReceiver | None = None
        self.connection: LongConnection | None = None
        self.duplicates = 0
        # events with the time they arrived (the wait before an answer is measured from it)
        self._inbox: asyncio.Queue[tuple[float, dict[str, Any]]] = asyncio.Queue(inbox_size)
        self._seen = RecentIds(SEEN_EVENTS)
        self._sent = RecentIds(SENT_MESSAGES)

    # -- receiving ---------------------------------------------------------------------------

    def mount(self, server: Routes) -> None:
        if not self.settings.webhook:
            return
        self.webhook = WebhookReceiver(
            encrypt_key=self.settings.encrypt_key.get_secret_value(),
            verification_token=self.settings.verification_token.get_secret_value(),
            offer=self.offer,
        )
        server.add_route("POST", self.settings.path, self.webhook.handle)

    def offer(self, raw: dict[str, Any]) -> bool:
        """Take one event, on our loop. False only when the inbox is full (push it again)."""
        kind = event_type(raw)
        if kind != MESSAGE_RECEIVED:
            log.debug("lark_event_ignored", event_type=kind)
            return True
        key = event_key(raw)
        if key is None:
            log.warning("lark_event_without_id")
            return True
        if key in self._seen:
            self.duplicates += 1
            log.info("lark_duplicate_event_dropped", key=key)
            return True
        try:
            self._inbox.put_nowait((time.time(), raw))
        except asyncio.QueueFull:
            log.warning("lark_inbox_full", size=self._inbox.maxsize)
            return False
        self._seen.add(key)
        return True

    async def run(self, submit: Submit) -> None:
        try:
            self.identity = await self._learn_identity()
            log.info("lark_ready", open_id=self.identity.open_id, mode=self.settings.mode)
            async with asyncio.TaskGroup() as group:
                if not self.settings.webhook:
                    self.connection = LongConnection(
                        app_id=self.settings.app_id,
                        app_secret=self.settings.app_secret.get_secret_value(),
                        domain=self.settings.domain,
                        offer=self.offer,
                        event_types=(MESSAGE_RECEIVED, *IGNORED_EVENTS),
                    )
                    group.create_task(self.connection.run())
                group.create_task(self._consume(self.identity, submit))
        except ExceptionGroup as group_error:  # one failing child: raise it, not the group
            if len(group_error.exceptions) == 1:
                raise group_error.exceptions[0] from None
            raise
        finally:
            await self.api.aclose()

    async def _learn_identity(self) -> BotIdentity:
        """The bot's open_id. Outages are waited out; refused credentials end the adapter."""
        wait, longest = IDENTITY_RETRY
        while True:
            try:
                bot = await self.api.bot_info()
                return BotIdentity(
                    self.settings.app_id, str(bot["open_id"]), str(bot.get("app_name") or "")
                )
            except ActionFailedError as exc:
                if exc.action == "tenant_access_token":  # wrong app_id / app_secret
                    raise AdapterError(f"Lark refused the app credentials: {exc}") from exc
                error: AdapterError = exc
            except AdapterError as exc:
                error = exc
            log.warning("lark_bot_info_failed", error=str(error), retry_in=wait)
            await asyncio.sleep(wait)
            wait = min(wait * 2, longest)

    async def _consume(self, identity: BotIdentity, submit: Submit) -> None:
        while True:
            received, raw = await self._inbox.get()
            try:
                envelope = await self._envelope(identity, raw, received)
            except Exception:
                log.exception("lark_event_unusable", key=event_key(raw))
                continue
            if envelope is not None:
                await submit(envelope)

    async def _envelope(
        self, identity: BotIdentity, raw: dict[str, Any], received: float
    ) -> Envelope | None:
        event = parse_message_event(raw)
        if event is None:
            log.warning("lark_message_event_malformed", key=event_key(raw))
            return None
        self.directory.learn(event.mentions)
        role = Role.MEMBER
        if event.is_group:
            role = await self.directory.role(event.chat_id, event.sender_open_id)
        return to_envelope(
            event,
            identity,
            name=await self.directory.name(event.sender_open_id),
            role=role,
            replies_to_bot=event.parent_id is not None and event.parent_id in self._sent,
            received=datetime.fromtimestamp(received, UTC),
        )

    # -- sending -----------------------------------------------------------------------------

    async def send(self, reply: Reply) -> str | None:
        if reply.chat.platform != PLATFORM:
            raise AdapterError(f"not a Lark chat: {reply.chat}")
        first: str | None = None
        for out in render(reply):
            await self.limiter.acquire(str(reply.chat))
            request_id = uuid.uuid4().hex  # kept across retries: Lark drops a repeated uuid
            if reply.quote:
                message_id = await self.api.reply(reply.quote, out, request_id)
            else:
                message_id = await self.api.send(*_receiver(reply.chat), out, request_id)
            if message_id:
                self._sent.add(message_id)
            first = first or message_id or None
        return first


def _receiver(chat: ChatKey) -> tuple[str, str]:
    """`receive_id_type` and `receive_id` of a chat key."""
    return ("chat_id", chat.id) if chat.is_group else ("open_id", chat.id)


def build(section: dict[str, Any], config: Config) -> LarkAdapter:
    """The `channels.lark` entry point used by `nahida.app` (group policy lives in `bot.*`)."""
    return LarkAdapter(load(section))
