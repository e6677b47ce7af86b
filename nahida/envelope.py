"""Core message types shared by adapters, the bus and the runner (DESIGN §2).

`ChatKey` is `platform:kind:id` with kind `private` or `group`; `UserKey` is `platform:user_id`.
An `Envelope` is one inbound platform message, normalised; a `Reply` is one outbound message.
An envelope has two times: `time`, the platform's (what history records), and `received`, when
Nahida took the message in (what `bot.max_reply_delay` measures the wait from: a platform whose
clock is off must not make every message look late).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

ChatKind = Literal["private", "group"]


class Role(StrEnum):
    """A sender's role in the chat the message came from."""

    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"


@dataclass(frozen=True, slots=True)
class ChatKey:
    platform: str
    kind: ChatKind
    id: str

    def __post_init__(self) -> None:
        if not self.platform or ":" in self.platform:
            raise ValueError(f"bad platform in chat key: {self.platform!r}")
        if self.kind not in ("private", "group"):
            raise ValueError(f"chat kind must be private or group, not {self.kind!r}")
        if not self.id:
            raise ValueError("chat key id is empty")

    @classmethod
    def parse(cls, text: str) -> ChatKey:
        parts = text.split(":", 2)
        if len(parts) != 3:
            raise ValueError(f"a chat key looks like platform:private|group:id, not {text!r}")
        platform, kind, ident = parts
        if kind == "private":
            return cls(platform, "private", ident)
        if kind == "group":
            return cls(platform, "group", ident)
        raise ValueError(f"a chat key looks like platform:private|group:id, not {text!r}")

    @property
    def is_group(self) -> bool:
        return self.kind == "group"

    @property
    def person(self) -> UserKey | None:
        """Whom a private chat is with (its key names them, DESIGN §2); None for a group."""
        return None if self.is_group else UserKey(self.platform, self.id)

    def __str__(self) -> str:
        return f"{self.platform}:{self.kind}:{self.id}"


@dataclass(frozen=True, slots=True)
class UserKey:
    platform: str
    id: str

    def __post_init__(self) -> None:
        if not self.platform or ":" in self.platform:
            raise ValueError(f"bad platform in user key: {self.platform!r}")
        if not self.id:
            raise ValueError("user key id is empty")

    @classmethod
    def parse(cls, text: str) -> UserKey:
        platform, sep, ident = text.partition(":")
        if not sep:
            raise ValueError(f"a user key looks like platform:user_id, not {text!r}")
        return cls(platform, ident)

    def __str__(self) -> str:
        return f"{self.platform}:{self.id}"


SegmentType = Literal["text", "mention", "reply", "image", "other"]


@dataclass(frozen=True, slots=True)
class Segment:
    """One piece of a message. `data` keeps the platform's fields (e.g. `qq`, `url`, `id`)."""

    type: SegmentType
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def plain(cls, text: str) -> Segment:
        return cls("text", text)


@dataclass(frozen=True, slots=True)
class Sender:
    user: UserKey
    name: str = ""
    role: Role = Role.MEMBER


@dataclass(frozen=True, slots=True)
class Envelope:
    platform: str
    self_id: str
    chat: ChatKey
    sender: Sender
    message_id: str
    time: datetime
    segments: tuple[Segment, ...]
    text: str
    to_me: bool
    reply_to: str | None = None
    mentions: tuple[str, ...] = ()
    raw: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    received: datetime = field(default_factory=lambda: datetime.now(UTC), compare=False)

    def __post_init__(self) -> None:
        if self.time.tzinfo is None or self.received.tzinfo is None:
            raise ValueError("envelope times must be timezone-aware")

    @property
    def dedup_key(self) -> tuple[str, str, str, str, float]:
        """The same message delivered twice has the same key; platforms reuse message ids (per
        chat, or from the start after a restart), so the chat and the time are part of it."""
        return (self.platform, self.self_id, str(self.chat), self.message_id, self.time.timestamp())


@dataclass(frozen=True, slots=True)
class Reply:
    chat: ChatKey
    segments: tuple[Segment, ...]
    quote: str | None = None
    mention: UserKey | None = None

    @classmethod
    def text(
        cls, chat: ChatKey, text: str, *, quote: str | None = None, mention: UserKey | None = None
    ) -> Reply:
        return cls(chat, (Segment.plain(text),), quote=quote, mention=mention)

    @property
    def plain_text(self) -> str:
        return "".join(s.text for s in self.segments if s.type == "text")
