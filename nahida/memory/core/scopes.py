"""Scopes and who may see what (DESIGN §4), as values every retrieval path filters by.

| context | sees |
|---|---|
| private chat with U | global · user:U · chat:(that chat) |
| group G, speaker U  | global · chat:G · user:U items marked public |
| CLI / admin         | the scopes it names |

A `Viewer` (who asks, and where) turns into a `Visibility`: the scopes whose items it sees in full
and the scopes whose public items only it sees. The store applies it inside the query of every
path (its FTS match, its listings), before any ranking. A private chat's key names its person, so
the viewer of `onebot:private:42` is always `onebot:42`, whoever the caller says is asking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from nahida.envelope import ChatKey, UserKey

GLOBAL = "global"


def chat_scope(chat: ChatKey | str) -> str:
    return f"chat:{chat}"


def user_scope(user: UserKey | str) -> str:
    return f"user:{user}"


def scope_family(scope: str) -> str:
    """`global`, `chat` or `user`: the kind of a scope, without what it names."""
    return scope if scope == GLOBAL else scope.partition(":")[0]


def validate_scope(scope: str) -> str:
    """`global`, `chat:<ChatKey>` or `user:<UserKey>`; raises ValueError otherwise."""
    if scope == GLOBAL:
        return scope
    kind, _, rest = scope.partition(":")
    if kind == "chat":
        ChatKey.parse(rest)
        return scope
    if kind == "user":
        UserKey.parse(rest)
        return scope
    raise ValueError(f"a scope is global, chat:<platform:kind:id> or user:<platform:id>: {scope!r}")


@dataclass(frozen=True, slots=True)
class Visibility:
    """Scopes seen in full, and scopes of which only `public` items are seen."""

    full: tuple[str, ...]
    public_only: tuple[str, ...] = ()

    def sees(self, scope: str, sensitivity: str) -> bool:
        return scope in self.full or (scope in self.public_only and sensitivity == "public")


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is asking, and where: decides the visible scopes."""

    chat: ChatKey | None = None
    user: UserKey | None = None
    scopes: tuple[str, ...] = ()  # explicit scopes (CLI / admin); used when chat is None

    @property
    def person(self) -> UserKey | None:
        """The user whose memory this viewer may see: a private chat's own person."""
        if self.chat is not None and not self.chat.is_group:
            return self.chat.person
        return self.user

    def visibility(self) -> Visibility:
        if self.chat is None:
            return Visibility(tuple(dict.fromkeys(self.scopes)))
        here = chat_scope(self.chat)
        person = self.person
        if not self.chat.is_group:
            own = (user_scope(person),) if person is not None else ()
            return Visibility((GLOBAL, here, *own))
        public = (user_scope(person),) if person is not None else ()
        return Visibility((GLOBAL, here), public)

    @classmethod
    def parse(cls, chat: str, user: str | None = None) -> Viewer:
        """The viewer of a question asked in `chat` by `user`: a user id on the chat's platform
        (`42`) or a full UserKey (`onebot:42`). A private chat's user is the one its key names.
        Raises ValueError for keys that do not parse or do not fit together."""
        key = ChatKey.parse(chat)
        person = None
        if user is not None:
            person = user_key(key, user)
            if key.person is not None and person != key.person:
                raise ValueError(f"{key} is the private chat with {key.person}, not {person}")
        return cls(key, person or key.person)

    @classmethod
    def admin(cls, scopes: Sequence[str]) -> Viewer:
        """The viewer of the scopes an admin names; raises ValueError for one that is none."""
        return cls(scopes=tuple(validate_scope(s) for s in scopes))

    def turn_chats(self) -> tuple[str, ...]:
        """History is visible only in the chat it was said in."""
        if self.chat is None:
            return tuple(s[len("chat:") :] for s in self.scopes if s.startswith("chat:"))
        return (str(self.chat),)


def user_key(chat: ChatKey, user: str) -> UserKey:
    """`42` or `onebot:42` as the UserKey of a person in `chat`."""
    text = user.strip()
    if text.startswith(f"{chat.platform}:"):
        return UserKey.parse(text)
    if ":" in text and UserKey.parse(text).platform != chat.platform:
        raise ValueError(f"user {text!r} is not on {chat.platform!r}, the platform of {chat}")
    return UserKey(chat.platform, text)


Reach = Literal["everyone", "group", "private", "person", "nobody"]


@dataclass(frozen=True, slots=True)
class Audience:
    """Who sees an item of a scope and sensitivity in chats, by the table above (the CLI and the
    admin page see everything): `whom` names the group or the person."""

    reach: Reach
    whom: str | None = None

    @classmethod
    def of(cls, scope: str, sensitivity: str) -> Audience:
        """A global item is seen everywhere; a chat's in that chat (a private chat's: by its
        person); a person's in their private chat, and when public also in a group while they
        speak there. A scope that does not parse is seen by no chat."""
        if scope == GLOBAL:
            return cls("everyone")
        family, _, rest = scope.partition(":")
        try:
            if family == "chat":
                chat = ChatKey.parse(rest)
                person = chat.person
                return cls("group", str(chat)) if person is None else cls("private", str(person))
            if family == "user":
                reach: Reach = "person" if sensitivity == "public" else "private"
                return cls(reach, str(UserKey.parse(rest)))
        except ValueError:
            pass
        return cls("nobody")

    @property
    def text(self) -> str:
        """In a few words, for a listing: "everyone", "only qq:42 in private", …"""
        if self.reach == "everyone":
            return "everyone"
        if self.reach == "group":
            return f"this group ({self.whom})"
        if self.reach == "private":
            return f"only {self.whom} in private"
        if self.reach == "person":
            return f"{self.whom} and groups they're in (public)"
        return "no chat (admins only)"

    def to_json(self) -> dict[str, Any]:
        return {"reach": self.reach, "whom": self.whom, "text": self.text}
