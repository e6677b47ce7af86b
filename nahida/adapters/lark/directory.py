"""Who is who: a sender's display name and role in a group, looked up and cached.

Lark events carry only the sender's open_id. The role comes from the group's info (`owner_id`,
`user_manager_id_list`; permission `im:chat:readonly`), the name from the contact API (permission
`contact:user.base:readonly`) or, for free, from mentions seen in other messages. Both are cached
for `ttl` seconds in bounded LRU maps; a failed lookup is cached too (as "member" / no name) so a
missing permission costs one warning per chat or user and `ttl`, not one call per message. A lookup
gives up after `timeout` seconds, since events wait for it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Generic, TypeVar

import structlog

from nahida.adapters.lark.api import LarkApi
from nahida.adapters.lark.message import Mention
from nahida.clock import SYSTEM, Clock
from nahida.envelope import Role
from nahida.errors import AdapterError

log = structlog.get_logger(__name__)

V = TypeVar("V")


class _TTLCache(Generic[V]):
    def __init__(self, ttl: float, size: int, clock: Clock) -> None:
        self._ttl = ttl
        self._size = size
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, V]] = OrderedDict()

    def get(self, key: str) -> V | None:
        item = self._items.get(key)
        if item is None or item[0] <= self._clock.monotonic():
            return None
        self._items.move_to_end(key)
        return item[1]

    def put(self, key: str, value: V) -> None:
        self._items[key] = (self._clock.monotonic() + self._ttl, value)
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


class Directory:
    def __init__(
        self,
        api: LarkApi,
        *,
        ttl: float = 600.0,
        size: int = 1024,
        timeout: float = 3.0,
        clock: Clock = SYSTEM,
    ) -> None:
        self._api = api
        self._timeout = timeout
        self._clock = clock
        self._admins: _TTLCache[tuple[str, frozenset[str]]] = _TTLCache(ttl, size, clock)
        self._names: _TTLCache[str] = _TTLCache(ttl, size, clock)

    async def role(self, chat_id: str, open_id: str) -> Role:
        admins = self._admins.get(chat_id)
        if admins is None:
            admins = await self._fetch_admins(chat_id)
            self._admins.put(chat_id, admins)
        owner, managers = admins
        if open_id == owner:
            return Role.OWNER
        return Role.ADMIN if open_id in managers else Role.MEMBER

    async def name(self, open_id: str) -> str:
        name = self._names.get(open_id)
        if name is None:
            name = await self._fetch_name(open_id)
            self._names.put(open_id, name)
        return name

    def learn(self, mentions: Iterable[Mention]) -> None:
        """Names shown in mentions are the display names: keep them."""
        for mention in mentions:
            if mention.open_id and mention.name:
                self._names.put(mention.open_id, mention.name)

    async def _fetch_admins(self, chat_id: str) -> tuple[str, frozenset[str]]:
        try:
            async with self._clock.timeout(self._timeout):
                info = await self._api.chat(chat_id)
        except (AdapterError, TimeoutError) as exc:
            log.warning("lark_chat_info_failed", chat_id=chat_id, error=repr(exc))
            return "", frozenset()
        managers = info.get("user_manager_id_list") or []
        return str(info.get("owner_id") or ""), frozenset(str(m) for m in managers)

    async def _fetch_name(self, open_id: str) -> str:
        try:
            async with self._clock.timeout(self._timeout):
                user = await self._api.user(open_id)
        except (AdapterError, TimeoutError) as exc:
            log.info("lark_user_name_unavailable", open_id=open_id, error=repr(exc))
            return ""
        return str(user.get("name") or "")
