"""OneBot v11 actions: the echo → future store, result checking, typed calls and the HTTP API.

Over a WebSocket an action is `{"action", "params", "echo"}` and its answer carries the same
`echo`. `ResultStore` maps each echo we sent to a future; answers with unknown echoes are ignored,
each call has its own timeout, and `fail_all` fails every pending call at once when the socket
closes. `check_result` turns an answer into its `data` (`ok` and `async` both succeed) or an
`ActionFailedError` keeping `retcode`, `msg` and `wording`. `OneBotApi` gives the actions the bot
uses names and types over any `Caller` — a WebSocket connection or `HttpApi` (`POST /<action>`).

    AdapterError
     ├── ActionFailedError      (nahida.errors) the implementation answered `failed`
     ├── ActionTimeoutError     no answer within the call's timeout
     └── ConnectionClosedError  the socket closed; `sent` says whether the frame went out
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp

from nahida.adapters.onebot.events import id_of
from nahida.errors import ActionFailedError, AdapterError


class ActionTimeoutError(AdapterError):
    def __init__(self, action: str, timeout: float) -> None:
        self.action = action
        super().__init__(f"{action}: no answer within {timeout:g} s")


class ConnectionClosedError(AdapterError):
    """The connection closed. `sent=False`: the action never left, so a retry is safe."""

    def __init__(self, action: str, *, sent: bool) -> None:
        self.action = action
        self.sent = sent
        when = "before the answer came" if sent else "before the action was sent"
        super().__init__(f"{action}: connection closed {when}")


class Caller(Protocol):
    async def call(
        self, action: str, params: Mapping[str, Any], time_limit: float | None = None
    ) -> Any: ...


def check_result(action: str, result: Any) -> Any:
    """The `data` of an answer; raises `ActionFailedError` for `failed` (or a nonzero retcode)."""
    if not isinstance(result, dict):
        raise ActionFailedError(action, msg=f"answer is not an object: {result!r}"[:200])
    status = result.get("status")
    retcode = result.get("retcode")
    code = retcode if isinstance(retcode, int) and not isinstance(retcode, bool) else None
    if status in ("ok", "async") or (status is None and code == 0):
        return result.get("data")
    return _failed(action, result, code)


def _failed(action: str, result: Mapping[str, Any], code: int | None) -> Any:
    msg = result.get("msg") or result.get("message") or ""
    wording = result.get("wording") or ""
    raise ActionFailedError(action, retcode=code, msg=str(msg), wording=str(wording))


class ResultStore:
    """Pending calls of one connection: echo → (action, future)."""

    def __init__(self) -> None:
        self._pending: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._echoes = itertools.count(1)

    def __len__(self) -> int:
        return len(self._pending)

    def open(self, action: str) -> tuple[int, asyncio.Future[Any]]:
        echo = next(self._echoes)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[echo] = (action, future)
        return echo, future

    def discard(self, echo: int) -> None:
        self._pending.pop(echo, None)

    def resolve(self, frame: Mapping[str, Any]) -> bool:
        """Hand an answer to its caller; False when its echo is not one of ours."""
        echo = frame.get("echo")
        if isinstance(echo, str):
            echo = id_of(echo)  # some implementations stringify the echo
            try:
                echo = int(echo) if echo is not None else None
            except ValueError:
                return False
        if not isinstance(echo, int) or isinstance(echo, bool):
            return False
        entry = self._pending.pop(echo, None)
        if entry is None or entry[1].done():
            return False
        entry[1].set_result(frame)
        return True

    def fail(self, echo: int, make_error: Callable[[str], BaseException]) -> None:
        """Fail one pending call with `make_error(action)`."""
        entry = self._pending.pop(echo, None)
        if entry is not None and not entry[1].done():
            entry[1].set_exception(make_error(entry[0]))

    def fail_all(self, make_error: Callable[[str], BaseException]) -> int:
        """Fail every pending call with `make_error(action)`; returns how many there were."""
        pending, self._pending = self._pending, {}
        for action, future in pending.values():
            if not future.done():
                future.set_exception(make_error(action))
        return len(pending)


@dataclass(frozen=True, slots=True)
class LoginInfo:
    user_id: str
    nickname: str


class OneBotApi:
    """The actions the bot uses, over one caller (a connection or the HTTP API)."""

    def __init__(self, caller: Caller, time_limit: float | None = None) -> None:
        self.caller = caller
        self.time_limit = time_limit  # per call; None: the caller's default

    async def call(self, action: str, params: Mapping[str, Any] | None = None) -> Any:
        return await self.caller.call(action, params or {}, self.time_limit)

    async def send_group_msg(self, group_id: str, message: list[dict[str, Any]]) -> str | None:
        """Returns the new message's id."""
        params = {"group_id": _num(group_id), "message": message}
        return _message_id(await self.call("send_group_msg", params))

    async def send_private_msg(self, user_id: str, message: list[dict[str, Any]]) -> str | None:
        params = {"user_id": _num(user_id), "message": message}
        return _message_id(await self.call("send_private_msg", params))

    async def send_msg(
        self, message_type: str, target: str, message: list[dict[str, Any]]
    ) -> str | None:
        """The generic `send_msg` (`message_type` group or private)."""
        key = "group_id" if message_type == "group" else "user_id"
        params = {"message_type": message_type, key: _num(target), "message": message}
        return _message_id(await self.call("send_msg", params))

    async def get_msg(self, message_id: str) -> dict[str, Any]:
        data = await self.call("get_msg", {"message_id": _num(message_id)})
        if not isinstance(data, dict):
            raise ActionFailedError("get_msg", msg="no message data in the answer")
        return data

    async def get_login_info(self) -> LoginInfo:
        data = await self.call("get_login_info")
        user_id = id_of(data.get("user_id")) if isinstance(data, dict) else None
        if user_id is None or not isinstance(data, dict):
            raise ActionFailedError("get_login_info", msg="no user_id in the answer")
        return LoginInfo(user_id, str(data.get("nickname") or ""))

    async def get_group_member_info(self, group_id: str, user_id: str) -> dict[str, Any]:
        params = {"group_id": _num(group_id), "user_id": _num(user_id), "no_cache": False}
        data = await self.call("get_group_member_info", params)
        if not isinstance(data, dict):
            raise ActionFailedError("get_group_member_info", msg="no member data in the answer")
        return data

    async def get_group_info(self, group_id: str) -> dict[str, Any]:
        data = await self.call("get_group_info", {"group_id": _num(group_id)})
        return data if isinstance(data, dict) else {}

    async def delete_msg(self, message_id: str) -> None:
        await self.call("delete_msg", {"message_id": _num(message_id)})


def _message_id(data: Any) -> str | None:
    return id_of(data.get("message_id")) if isinstance(data, dict) else None


def _num(value: str) -> int | str:
    """Ids go out as numbers where they are numbers (some implementations insist)."""
    try:
        return int(value)
    except ValueError:
        return value


class HttpApi:
    """The implementation's HTTP API: `POST <url>/<action>` with the params as JSON."""

    def __init__(self, url: str, access_token: str = "", time_limit: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.time_limit = time_limit
        self._headers = {"Authorization": f"Bearer {access_token}"} if access_token else {}
        self._session: aiohttp.ClientSession | None = None

    async def call(
        self, action: str, params: Mapping[str, Any], time_limit: float | None = None
    ) -> Any:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(headers=self._headers)
        limit = time_limit or self.time_limit
        body = json.dumps(dict(params), ensure_ascii=False)
        try:
            async with (
                asyncio.timeout(limit),
                self._session.post(
                    f"{self.url}/{action}",
                    data=body,
                    headers={"Content-Type": "application/json"},
                ) as response,
            ):
                if response.status in (401, 403):
                    raise AdapterError(f"{action}: HTTP API refused the access token")
                if response.status == 404:
                    raise ActionFailedError(action, retcode=1404, msg="unsupported action")
                if response.status >= 400:
                    raise AdapterError(f"{action}: HTTP API answered {response.status}")
                result = await response.json(content_type=None)
        except TimeoutError:
            raise ActionTimeoutError(action, limit) from None
        except (aiohttp.ClientError, json.JSONDecodeError, OSError) as exc:
            raise AdapterError(f"{action}: HTTP API call failed: {exc}") from None
        return check_result(action, result)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
