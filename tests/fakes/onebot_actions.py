"""How the fake OneBot implementation answers actions: recorded, scripted, or the default.

Every call is recorded (`calls`, `calls_of`, `wait_calls`, an optional `on_call` hook).
`script(action, ...)` queues behaviours for the next calls of an action — `Fail(retcode, msg,
wording)`, `Async()`, `Hang()` (never answer), or a function of the params returning `data`; after
the script the defaults answer: `send_*` with a fresh message id (stored for `get_msg`), `get_msg`
from every message seen (retcode 100 for unknown ids, like go-cqhttp), `get_login_info`, and
`get_group_member_info` from `members`.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Call:
    action: str
    params: dict[str, Any]
    echo: Any
    via: str  # which socket (or "http") the call came on
    at: float


@dataclass(frozen=True, slots=True)
class Fail:
    retcode: int = 100
    msg: str = "FAILED"
    wording: str = "failed"


@dataclass(frozen=True, slots=True)
class Async:
    pass


@dataclass(frozen=True, slots=True)
class Hang:
    pass


Behaviour = Fail | Async | Hang | Callable[[dict[str, Any]], Any]


class ActionAnswers:
    def __init__(self, self_id: int, nickname: str, *, negative_ids: bool = False) -> None:
        self.self_id = self_id
        self.nickname = nickname
        self.calls: list[Call] = []
        self.messages: dict[str, dict[str, Any]] = {}  # message id -> get_msg data
        self.members: dict[tuple[int, int], str] = {}  # (group, user) -> role
        self.on_call: Callable[[Call], None] | None = None  # sees every call as it arrives
        self._ids = itertools.count(-2_100_000_000 if negative_ids else 1)  # NapCat: negative
        self._script: dict[str, list[Behaviour]] = {}
        self._changed = asyncio.Event()

    def next_id(self) -> int:
        return next(self._ids)

    def script(self, action: str, *behaviours: Behaviour) -> None:
        """The next calls of `action` get these behaviours, in order; then the default again."""
        self._script.setdefault(action, []).extend(behaviours)

    def calls_of(self, action: str) -> list[Call]:
        return [c for c in self.calls if c.action == action]

    async def wait_calls(self, action: str, count: int = 1, within: float = 5.0) -> list[Call]:
        async with asyncio.timeout(within):
            while len(self.calls_of(action)) < count:
                await self._changed.wait()
        return self.calls_of(action)

    def _record(self, call: Call) -> None:
        self.calls.append(call)
        if self.on_call is not None:
            self.on_call(call)
        self._changed.set()
        self._changed = asyncio.Event()

    def answer(self, action: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The answer object (without echo) for one call; None means never answer."""
        queued = self._script.get(action)
        behaviour = queued.pop(0) if queued else None
        if isinstance(behaviour, Hang):
            return None
        if isinstance(behaviour, Fail):
            return {
                "status": "failed",
                "retcode": behaviour.retcode,
                "msg": behaviour.msg,
                "wording": behaviour.wording,
                "data": None,
            }
        if isinstance(behaviour, Async):
            return {"status": "async", "retcode": 1, "data": None}
        if behaviour is not None:
            return {"status": "ok", "retcode": 0, "data": behaviour(params)}
        return self._default(action, params)

    def _default(self, action: str, params: dict[str, Any]) -> dict[str, Any]:
        if action in ("send_msg", "send_group_msg", "send_private_msg"):
            mid = self.next_id()
            self.messages[str(mid)] = {
                "message_id": mid,
                "sender": {"user_id": self.self_id, "nickname": self.nickname},
                "message": params.get("message"),
            }
            return {"status": "ok", "retcode": 0, "data": {"message_id": mid}}
        if action == "get_msg":
            found = self.messages.get(str(params.get("message_id")))
            if found is None:
                return {"status": "failed", "retcode": 100, "msg": "消息不存在", "wording": ""}
            return {"status": "ok", "retcode": 0, "data": found}
        if action == "get_login_info":
            data = {"user_id": self.self_id, "nickname": self.nickname}
            return {"status": "ok", "retcode": 0, "data": data}
        if action == "get_group_member_info":
            key = (int(params["group_id"]), int(params["user_id"]))
            role = self.members.get(key)
            if role is None:
                return {"status": "failed", "retcode": 100, "msg": "no such member"}
            data = {"group_id": key[0], "user_id": key[1], "role": role}
            return {"status": "ok", "retcode": 0, "data": data}
        return {"status": "failed", "retcode": 1404, "msg": "unsupported action"}
