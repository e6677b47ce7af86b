"""OneBot v11 events, parsed from JSON into typed, frozen objects.

    Event
     ├── MessageEvent       private and group messages (and NapCat's `message_sent`, the bot's own)
     ├── NoticeEvent        every notice; recall, poke and member changes have their own types
     │    ├── RecallNotice        group_recall / friend_recall
     │    ├── PokeNotice          notify/poke
     │    └── MemberNotice        group_increase / group_decrease / group_admin
     ├── RequestEvent       friend and group requests
     ├── LifecycleEvent     meta_event/lifecycle (connect, enable, disable)
     ├── HeartbeatEvent     meta_event/heartbeat (`interval` in ms, optional)
     └── UnknownEvent       any other post_type, kept raw

Implementations differ: ids arrive as numbers or strings (NapCat sends negative message ids),
`sender` fields may be missing, `anonymous` is often `null`. Ids become strings here. A payload
that cannot be an event at all (no `post_type` or `self_id`, a message without ids or with an
unreadable `message`) raises `EventError`. v11 has no event id, so `dedup_key` builds one:
`(self_id, chat, message_id, time)` for messages (implementations reuse message ids: per chat,
or from the start after a restart), a tuple of identifying fields for notices and requests.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nahida.adapters.onebot.message import MessageFormatError, MessageSegment, parse_message
from nahida.errors import AdapterError


class EventError(AdapterError):
    """A payload that is not a usable OneBot event."""


def id_of(value: Any) -> str | None:
    """An id as a string: numbers and numeric strings normalised (`"-05"` → `"-5"`)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            return str(int(text))
        except ValueError:
            return text
    return None


def _required_id(data: Mapping[str, Any], key: str) -> str:
    value = id_of(data.get(key))
    if value is None:
        raise EventError(f"{data.get('post_type')} event without a usable {key}")
    return value


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _time(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


@dataclass(frozen=True, slots=True)
class Event:
    self_id: str
    post_type: str
    time: float | None
    raw: dict[str, Any] = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class EventSender:
    user_id: str | None = None
    nickname: str = ""
    card: str = ""
    role: str | None = None  # owner / admin / member when the implementation says

    @property
    def display_name(self) -> str:
        return self.card or self.nickname


@dataclass(frozen=True, slots=True)
class MessageEvent(Event):
    message_type: str  # private | group
    sub_type: str
    message_id: str
    user_id: str
    group_id: str | None
    message: tuple[MessageSegment, ...]
    raw_message: str
    sender: EventSender
    anonymous: dict[str, Any] | None

    @property
    def is_group(self) -> bool:
        return self.message_type == "group"

    @property
    def from_self(self) -> bool:
        """The bot's own message (echoed by some implementations); never answered."""
        return self.post_type == "message_sent" or self.user_id == self.self_id


@dataclass(frozen=True, slots=True)
class NoticeEvent(Event):
    notice_type: str
    sub_type: str
    group_id: str | None
    user_id: str | None


@dataclass(frozen=True, slots=True)
class RecallNotice(NoticeEvent):
    message_id: str
    operator_id: str | None


@dataclass(frozen=True, slots=True)
class PokeNotice(NoticeEvent):
    target_id: str | None


@dataclass(frozen=True, slots=True)
class MemberNotice(NoticeEvent):
    """Someone joined, left or was kicked (`group_increase/decrease`), or admin changed."""

    operator_id: str | None


@dataclass(frozen=True, slots=True)
class RequestEvent(Event):
    request_type: str
    user_id: str | None
    group_id: str | None
    flag: str


@dataclass(frozen=True, slots=True)
class LifecycleEvent(Event):
    sub_type: str


@dataclass(frozen=True, slots=True)
class HeartbeatEvent(Event):
    interval_ms: int | None  # None: the implementation did not say


@dataclass(frozen=True, slots=True)
class UnknownEvent(Event):
    pass


def parse_event(data: Any) -> Event:
    """Parse one event payload; raises `EventError` when it cannot be an event."""
    if not isinstance(data, dict):
        raise EventError(f"an event is a JSON object, not {type(data).__name__}")
    post_type = data.get("post_type")
    if not isinstance(post_type, str):
        raise EventError("payload without post_type")
    self_id = _required_id(data, "self_id")
    time = _time(data.get("time"))
    if post_type in ("message", "message_sent"):
        return _message(data, self_id, post_type, time)
    if post_type == "notice":
        return _notice(data, self_id, time)
    if post_type == "request":
        return RequestEvent(
            self_id,
            post_type,
            time,
            data,
            _str(data.get("request_type")),
            id_of(data.get("user_id")),
            id_of(data.get("group_id")),
            _str(data.get("flag")),
        )
    if post_type == "meta_event":
        kind = data.get("meta_event_type")
        if kind == "heartbeat":
            interval = data.get("interval")
            ms = None
            if (
                isinstance(interval, int | float)
                and not isinstance(interval, bool)
                and interval > 0
            ):
                ms = int(interval)
            return HeartbeatEvent(self_id, post_type, time, data, ms)
        if kind == "lifecycle":
            return LifecycleEvent(self_id, post_type, time, data, _str(data.get("sub_type")))
    return UnknownEvent(self_id, post_type, time, data)


def _sender(value: Any) -> EventSender:
    if not isinstance(value, dict):
        return EventSender()
    role = value.get("role")
    return EventSender(
        id_of(value.get("user_id")),
        _str(value.get("nickname")),
        _str(value.get("card")),
        role if role in ("owner", "admin", "member") else None,
    )


def _message(data: dict[str, Any], self_id: str, post_type: str, time: float | None) -> Event:
    message_type = data.get("message_type")
    if message_type not in ("private", "group"):
        return UnknownEvent(self_id, post_type, time, data)  # e.g. go-cqhttp guild messages
    group_id = id_of(data.get("group_id")) if message_type == "group" else None
    if message_type == "group" and group_id is None:
        raise EventError("group message without a usable group_id")
    try:
        message = parse_message(data.get("message", ""))
    except MessageFormatError as exc:
        raise EventError(str(exc)) from None
    anonymous = data.get("anonymous")
    return MessageEvent(
        self_id,
        post_type,
        time,
        data,
        message_type,
        _str(data.get("sub_type")),
        _required_id(data, "message_id"),
        _required_id(data, "user_id"),
        group_id,
        tuple(message),
        _str(data.get("raw_message")),
        _sender(data.get("sender")),
        anonymous if isinstance(anonymous, dict) else None,
    )


def _notice(data: dict[str, Any], self_id: str, time: float | None) -> NoticeEvent:
    notice_type = _str(data.get("notice_type"))
    sub_type = _str(data.get("sub_type"))
    group_id = id_of(data.get("group_id"))
    user_id = id_of(data.get("user_id"))
    head = (self_id, "notice", time, data, notice_type, sub_type, group_id, user_id)
    if notice_type in ("group_recall", "friend_recall"):
        return RecallNotice(*head, _required_id(data, "message_id"), id_of(data.get("operator_id")))
    if notice_type == "notify" and sub_type == "poke":
        return PokeNotice(*head, id_of(data.get("target_id")))
    if notice_type in ("group_increase", "group_decrease", "group_admin"):
        return MemberNotice(*head, id_of(data.get("operator_id")))
    return NoticeEvent(*head)


_NOTICE_KEY_FIELDS = (
    "notice_type",
    "sub_type",
    "group_id",
    "user_id",
    "operator_id",
    "target_id",
    "message_id",
    "file",
    "duration",
    "time",
)


def dedup_key(event: Event) -> Hashable | None:
    """A key equal for the same event delivered twice; None for events never deduplicated."""
    if isinstance(event, MessageEvent):
        chat = event.group_id if event.is_group else event.user_id
        return ("message", event.self_id, event.message_type, chat, event.message_id, event.time)
    if isinstance(event, NoticeEvent):
        raw = event.raw
        fields = tuple(_hashable(raw.get(k)) for k in _NOTICE_KEY_FIELDS)
        return ("notice", event.self_id, fields)
    if isinstance(event, RequestEvent):
        return ("request", event.self_id, event.request_type, event.flag or event.time)
    return None


def _hashable(value: Any) -> Hashable:
    if isinstance(value, int | str) and not isinstance(value, bool):
        return id_of(value)
    if value is None or isinstance(value, float | bool):
        return value
    return repr(value)


class Deduplicator:
    """Remembers the last `size` keys; `seen(key)` is True for a key it already remembers."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._keys: OrderedDict[Hashable, None] = OrderedDict()

    def seen(self, key: Hashable) -> bool:
        if key in self._keys:
            self._keys.move_to_end(key)
            return True
        self._keys[key] = None
        if len(self._keys) > self.size:
            self._keys.popitem(last=False)
        return False

    def __contains__(self, key: Hashable) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)
