"""Lark events → Nahida envelopes, and the bounded memory of event ids that drops re-pushes.

Both ways of receiving (long connection and webhook) end here with the same v2 event dict:

    {"schema": "2.0",
     "header": {"event_id": "...", "event_type": "im.message.receive_v1", "token": "...", ...},
     "event": {"sender": {"sender_id": {"open_id": "ou_..."}, "sender_type": "user"},
               "message": {"message_id": "om_...", "chat_id": "oc_...", "chat_type": "p2p|group",
                           "message_type": "text", "content": "{\\"text\\": \\"...\\"}",
                           "mentions": [{"key": "@_user_1", "id": {"open_id": ...}, "name": ...}],
                           "parent_id": "om_...", "create_time": "1700000000000"}}}

A private chat's key is the sender (`lark:private:<open_id>`), a group's is the chat
(`lark:group:<chat_id>`). `to_me` is true in private chats, when the bot's open_id is mentioned, or
when the message replies to one the bot sent.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nahida.adapters.lark.message import Mention, parse_content
from nahida.envelope import ChatKey, Envelope, Role, Sender, UserKey

PLATFORM = "lark"
MESSAGE_RECEIVED = "im.message.receive_v1"


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """Who the bot is, learned at start from `GET /open-apis/bot/v3/info`."""

    app_id: str
    open_id: str
    name: str = ""


@dataclass(frozen=True, slots=True)
class MessageEvent:
    """The fields of `im.message.receive_v1` that Nahida uses."""

    event_id: str
    message_id: str
    chat_id: str
    chat_type: str
    sender_open_id: str
    message_type: str
    content: str
    mentions: tuple[Mention, ...]
    time: datetime
    parent_id: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_group(self) -> bool:
        return self.chat_type != "p2p"

    @property
    def chat(self) -> ChatKey:
        if self.is_group:
            return ChatKey(PLATFORM, "group", self.chat_id)
        return ChatKey(PLATFORM, "private", self.sender_open_id)

    @property
    def sender(self) -> UserKey:
        return UserKey(PLATFORM, self.sender_open_id)

    def mentions_bot(self, identity: BotIdentity) -> bool:
        return bool(identity.open_id) and any(m.open_id == identity.open_id for m in self.mentions)


def event_type(raw: dict[str, Any]) -> str:
    header = raw.get("header")
    if isinstance(header, dict):
        return str(header.get("event_type") or "")
    event = raw.get("event")
    return str(event.get("type") or "") if isinstance(event, dict) else ""  # v1 events


def event_key(raw: dict[str, Any]) -> str | None:
    """The dedup key: `header.event_id`, else the message id."""
    header = raw.get("header")
    if isinstance(header, dict) and header.get("event_id"):
        return f"event:{header['event_id']}"
    message = _dict(_dict(raw.get("event")).get("message"))
    if message.get("message_id"):
        return f"message:{message['message_id']}"
    return None


def parse_message_event(raw: dict[str, Any]) -> MessageEvent | None:
    """The message of an `im.message.receive_v1` event, or None when it is not a usable one."""
    if event_type(raw) != MESSAGE_RECEIVED:
        return None
    event = _dict(raw.get("event"))
    message = _dict(event.get("message"))
    sender = _dict(_dict(event.get("sender")).get("sender_id"))
    message_id = str(message.get("message_id") or "")
    chat_id = str(message.get("chat_id") or "")
    open_id = str(sender.get("open_id") or "")
    if not (message_id and chat_id and open_id):
        return None
    mentions = tuple(
        Mention(str(m.get("key") or ""), str(_dict(m.get("id")).get("open_id") or ""), _name(m))
        for m in message.get("mentions") or []
        if isinstance(m, dict) and m.get("key")
    )
    return MessageEvent(
        event_id=str(_dict(raw.get("header")).get("event_id") or message_id),
        message_id=message_id,
        chat_id=chat_id,
        chat_type=str(message.get("chat_type") or "group"),
        sender_open_id=open_id,
        message_type=str(message.get("message_type") or "text"),
        content=str(message.get("content") or ""),
        mentions=mentions,
        time=_time(message.get("create_time")),
        parent_id=str(message.get("parent_id") or "") or None,
        raw=raw,
    )


def to_envelope(
    event: MessageEvent,
    identity: BotIdentity,
    *,
    name: str = "",
    role: Role = Role.MEMBER,
    replies_to_bot: bool = False,
    received: datetime | None = None,
) -> Envelope:
    """The envelope of a message event that arrived at `received` (None: now)."""
    segments, text = parse_content(
        event.message_type, event.content, event.mentions, identity.open_id
    )
    to_me = not event.is_group or event.mentions_bot(identity) or replies_to_bot
    return Envelope(
        platform=PLATFORM,
        self_id=identity.app_id,
        chat=event.chat,
        sender=Sender(event.sender, name, role),
        message_id=event.message_id,
        time=event.time,
        segments=segments,
        text=text,
        to_me=to_me,
        reply_to=event.parent_id,
        mentions=tuple(str(UserKey(PLATFORM, m.open_id)) for m in event.mentions if m.open_id),
        raw=event.raw,
        received=received or datetime.now(UTC),
    )


class RecentIds:
    """The last `size` keys seen, oldest forgotten first: bounded memory for dedup."""

    def __init__(self, size: int = 4096) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, not {size}")
        self.size = size
        self._keys: OrderedDict[Hashable, None] = OrderedDict()

    def add(self, key: Hashable) -> bool:
        """Remember `key`; True when it was not already remembered."""
        if key in self._keys:
            self._keys.move_to_end(key)
            return False
        self._keys[key] = None
        if len(self._keys) > self.size:
            self._keys.popitem(last=False)
        return True

    def forget(self, key: Hashable) -> None:
        self._keys.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _name(mention: dict[str, Any]) -> str:
    return str(mention.get("name") or mention.get("key") or "").lstrip("@")


def _time(value: Any) -> datetime:
    try:
        return datetime.fromtimestamp(int(str(value)) / 1000, UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return datetime.now(UTC)
