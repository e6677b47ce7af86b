"""Group roles for permission checks: owner/admin/member of a QQ group → `Role`.

The event's `sender.role` is used when present. When a group message lacks it, `MemberRoles`
asks `get_group_member_info` once (with a timeout) and caches the answer for `ttl` seconds; a
failed lookup counts as member and is cached for a short while, so a broken implementation is
not asked for every message. The cache is bounded (least recently used entries go first) and a
`group_admin` / `group_decrease` notice forgets the member, so a new admin is seen at once.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

import structlog

from nahida.envelope import Role

log = structlog.get_logger(__name__)

MemberInfo = Callable[[str, str, str], Awaitable[dict[str, object]]]  # self_id, group, user
FAILURE_TTL = 60.0


def role_of(value: object) -> Role | None:
    if value == "owner":
        return Role.OWNER
    if value == "admin":
        return Role.ADMIN
    if value == "member":
        return Role.MEMBER
    return None


class MemberRoles:
    def __init__(
        self,
        lookup: MemberInfo,
        *,
        ttl: float = 600.0,
        size: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lookup = lookup
        self.ttl = ttl
        self.size = size
        self._clock = clock
        self._cache: OrderedDict[tuple[str, str, str], tuple[Role, float]] = OrderedDict()
        self.lookups = 0

    def remember(self, self_id: str, group_id: str, user_id: str, role: Role) -> None:
        self._put((self_id, group_id, user_id), role, self.ttl)

    def forget(self, self_id: str, group_id: str, user_id: str) -> None:
        self._cache.pop((self_id, group_id, user_id), None)

    def _put(self, key: tuple[str, str, str], role: Role, ttl: float) -> None:
        if ttl <= 0:
            return
        self._cache[key] = (role, self._clock() + ttl)
        self._cache.move_to_end(key)
        while len(self._cache) > self.size:
            self._cache.popitem(last=False)

    async def role(self, self_id: str, group_id: str, user_id: str, given: str | None) -> Role:
        """The sender's role: `given` when the event had one, else cached or looked up."""
        key = (self_id, group_id, user_id)
        known = role_of(given)
        if known is not None:
            self._put(key, known, self.ttl)
            return known
        cached = self._cache.get(key)
        if cached is not None and cached[1] > self._clock():
            self._cache.move_to_end(key)
            return cached[0]
        self.lookups += 1
        try:
            info = await self._lookup(self_id, group_id, user_id)
        except Exception as exc:
            log.info("member_role_lookup_failed", group=group_id, user=user_id, error=str(exc))
            self._put(key, Role.MEMBER, min(self.ttl, FAILURE_TTL))
            return Role.MEMBER
        found = role_of(info.get("role")) or Role.MEMBER
        self._put(key, found, self.ttl)
        return found
