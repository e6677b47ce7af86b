"""Scopes and who may see what (DESIGN §4), as values the SQL of every retrieval path uses.

| context | sees |
|---|---|
| private chat with U | global · user:U · chat:(that chat) |
| group G, speaker U  | global · chat:G · user:U items marked public |
| CLI / admin         | the scopes it names |

Each item row in the FTS index carries one key per way it may be seen: its scope, and for a
public item also `<scope>#public`. A viewer turns into the list of keys it may match, and that list
goes inside the FTS MATCH (and into `WHERE scope IN` for listings), before any ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nahida.envelope import ChatKey, UserKey

GLOBAL = "global"
PUBLIC_SUFFIX = "#public"


def chat_scope(chat: ChatKey | str) -> str:
    return f"chat:{chat}"


def user_scope(user: UserKey | str) -> str:
    return f"user:{user}"


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


def item_scope_keys(scope: str, sensitivity: str) -> list[str]:
    """The visibility keys an item row carries in the FTS `scopes` column."""
    keys = [scope]
    if sensitivity == "public":
        keys.append(scope + PUBLIC_SUFFIX)
    return keys


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is asking, and where: decides the visible scopes."""

    chat: ChatKey | None = None
    user: UserKey | None = None
    scopes: tuple[str, ...] = ()  # explicit scopes (CLI / admin); used when chat is None

    def item_keys(self) -> list[str]:
        if self.chat is None:
            return [*self.scopes, *(s + PUBLIC_SUFFIX for s in self.scopes)]
        keys = [GLOBAL, GLOBAL + PUBLIC_SUFFIX, chat_scope(self.chat)]
        keys.append(chat_scope(self.chat) + PUBLIC_SUFFIX)
        if self.user is not None:
            own = user_scope(self.user)
            keys.append(own + PUBLIC_SUFFIX)
            if not self.chat.is_group:
                keys.append(own)
        return keys

    def turn_scopes(self) -> list[str]:
        """History is visible only in the chat it was said in."""
        if self.chat is None:
            return [s for s in self.scopes if s.startswith("chat:")]
        return [chat_scope(self.chat)]

    def item_filter(self) -> tuple[str, list[str]]:
        """SQL (for `memory_items` rows) equivalent to `item_keys()`, for non-FTS listings."""
        keys = self.item_keys()
        full = [k for k in keys if not k.endswith(PUBLIC_SUFFIX)]
        public_only = [
            k[: -len(PUBLIC_SUFFIX)]
            for k in keys
            if k.endswith(PUBLIC_SUFFIX) and k[: -len(PUBLIC_SUFFIX)] not in full
        ]
        clauses, params = [], []
        if full:
            clauses.append(f"scope IN ({', '.join('?' * len(full))})")
            params.extend(full)
        if public_only:
            clauses.append(
                f"(scope IN ({', '.join('?' * len(public_only))}) AND sensitivity = 'public')"
            )
            params.extend(public_only)
        return ("(" + " OR ".join(clauses) + ")" if clauses else "0"), params


def admin_viewer(scopes: Sequence[str]) -> Viewer:
    return Viewer(scopes=tuple(validate_scope(s) for s in scopes))
