"""The Lark/Feishu open platform HTTP API, the few calls Nahida makes, on aiohttp.

Why not `lark.Client`: its async calls (`arequest`) still fetch the tenant token with the blocking
`requests` library on the calling thread, and keep it in a process-wide cache keyed by app id; run
on our loop that blocks it, and run in a thread it costs a thread per call. Five endpoints are
simpler to call directly: the token is cached here until shortly before it expires, refreshed once
when the platform says it is invalid, and every answer's `code` is checked — Lark reports most
errors with HTTP 200 and `code != 0`.

Retries (connection errors, 5xx, rate-limit answers) repeat the same request body, so a message
send keeps its `uuid` and the platform drops the duplicate if the first attempt did arrive.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import structlog

from nahida.adapters.lark.message import Outgoing
from nahida.errors import ActionFailedError, AdapterError

log = structlog.get_logger(__name__)

TOKEN_PATH = "/open-apis/auth/v3/tenant_access_token/internal"
# The tenant token is missing, invalid or expired: fetch a new one and try once more.
TOKEN_INVALID = frozenset({99991661, 99991663, 99991664, 99991665, 99991668})
# Too many requests: wait and try again.
RATE_LIMITED = frozenset({99991400, 230020, 11232, 11233})

Clock = Callable[[], float]


class TenantToken:
    """A tenant access token, fetched on first use and again shortly before it expires."""

    def __init__(
        self,
        fetch: Callable[[], Awaitable[tuple[str, float]]],
        *,
        clock: Clock = time.monotonic,
        margin: float = 300.0,
    ) -> None:
        self._fetch = fetch
        self._clock = clock
        self._margin = margin
        self._value = ""
        self._refresh_at = 0.0
        self._lock = asyncio.Lock()

    async def get(self) -> str:
        if self._value and self._clock() < self._refresh_at:
            return self._value
        async with self._lock:  # one fetch, however many callers need a token at once
            if not self._value or self._clock() >= self._refresh_at:
                value, lifetime = await self._fetch()
                # Refresh `margin` seconds early, or halfway through a lifetime shorter than that.
                early = min(self._margin, lifetime / 2)
                self._value, self._refresh_at = value, self._clock() + lifetime - early
            return self._value

    def invalidate(self, value: str) -> None:
        """Forget `value` (the platform refused it); a newer token already fetched is kept."""
        if self._value == value:
            self._value = ""


class LarkApi:
    def __init__(
        self,
        domain: str,
        app_id: str,
        app_secret: str,
        *,
        timeout: float = 10.0,
        retries: int = 2,
        backoff: float = 0.5,
        clock: Clock = time.monotonic,
    ) -> None:
        self.domain = domain.rstrip("/")
        self._app_id = app_id
        self._app_secret = app_secret
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._retries = retries
        self._backoff = backoff
        self._session: aiohttp.ClientSession | None = None
        self.token = TenantToken(self._fetch_token, clock=clock)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self._session

    # -- endpoints ---------------------------------------------------------------------------

    async def bot_info(self) -> dict[str, Any]:
        """`{"open_id": ..., "app_name": ...}` of this app's bot."""
        data = await self.call("GET", "/open-apis/bot/v3/info", action="bot_info")
        bot = data.get("bot")
        if not isinstance(bot, dict) or not bot.get("open_id"):
            raise AdapterError("bot_info answered without the bot's open_id")
        return bot

    async def send(self, receive_id_type: str, receive_id: str, out: Outgoing, uuid: str) -> str:
        """Send a message to a chat (`chat_id`) or a user (`open_id`); returns its message id."""
        body = {"receive_id": receive_id, "msg_type": out.msg_type, "content": out.content}
        data = await self.call(
            "POST",
            "/open-apis/im/v1/messages",
            params={"receive_id_type": receive_id_type},
            body={**body, "uuid": uuid},
            action="send_message",
        )
        return _message_id(data)

    async def reply(self, message_id: str, out: Outgoing, uuid: str) -> str:
        """Reply to (quote) a message; returns the new message's id."""
        data = await self.call(
            "POST",
            f"/open-apis/im/v1/messages/{message_id}/reply",
            body={"msg_type": out.msg_type, "content": out.content, "uuid": uuid},
            action="reply_message",
        )
        return _message_id(data)

    async def chat(self, chat_id: str) -> dict[str, Any]:
        """A group's info: `owner_id`, `user_manager_id_list` (as open_ids), `name`, ..."""
        data = await self.call(
            "GET",
            f"/open-apis/im/v1/chats/{chat_id}",
            params={"user_id_type": "open_id"},
            action="get_chat",
        )
        return _dict(data.get("data"))

    async def user(self, open_id: str) -> dict[str, Any]:
        """A user's basic info (`name`, ...); needs the contact read permission."""
        data = await self.call(
            "GET",
            f"/open-apis/contact/v3/users/{open_id}",
            params={"user_id_type": "open_id"},
            action="get_user",
        )
        return _dict(_dict(data.get("data")).get("user"))

    # -- transport ---------------------------------------------------------------------------

    async def call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
        action: str,
    ) -> dict[str, Any]:
        """One API call with the tenant token; returns the answer when its `code` is 0."""
        attempt = 0
        refreshed = False
        while True:
            token = await self.token.get()
            status, data = await self._request(method, path, params, body, token, action)
            code = data.get("code")
            if code == 0 and status < 400:
                return data
            if code in TOKEN_INVALID and not refreshed:
                log.info("lark_token_refused", action=action, code=code)
                self.token.invalidate(token)
                refreshed = True
                continue
            retryable = status == 429 or status >= 500 or code in RATE_LIMITED
            if retryable and attempt < self._retries:
                attempt += 1
                await asyncio.sleep(self._backoff * 2 ** (attempt - 1))
                continue
            raise ActionFailedError(
                action, retcode=code if isinstance(code, int) else status, msg=_msg(data, status)
            )

    async def _request(
        self,
        method: str,
        path: str,
        params: dict[str, str] | None,
        body: dict[str, Any] | None,
        token: str | None,
        action: str,
    ) -> tuple[int, dict[str, Any]]:
        """Status and JSON answer; connection errors are retried here, then raised."""
        headers = {"Content-Type": "application/json; charset=utf-8"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        for attempt in range(self._retries + 1):
            try:
                async with self.session.request(
                    method, self.domain + path, params=params, json=body, headers=headers
                ) as response:
                    text = await response.text()
                    return response.status, _parse(text)
            except (aiohttp.ClientError, TimeoutError) as exc:
                if attempt == self._retries:
                    raise AdapterError(f"{action} failed: {type(exc).__name__}: {exc}") from exc
                await asyncio.sleep(self._backoff * 2**attempt)
        raise AssertionError("unreachable")

    async def _fetch_token(self) -> tuple[str, float]:
        status, data = await self._request(
            "POST",
            TOKEN_PATH,
            None,
            {"app_id": self._app_id, "app_secret": self._app_secret},
            None,
            "tenant_access_token",
        )
        token, code = data.get("tenant_access_token"), data.get("code")
        if not isinstance(code, int):  # no answer from the platform itself (a proxy's 502...)
            raise AdapterError(f"tenant_access_token failed: {_msg(data, status)}")
        if code != 0 or not isinstance(token, str) or not token:
            raise ActionFailedError("tenant_access_token", retcode=code, msg=_msg(data, status))
        lifetime = float(data.get("expire") or 0) or 7200.0
        log.debug("lark_token_fetched", lifetime=lifetime)
        return token, lifetime


def _parse(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text) if text else {}
    except json.JSONDecodeError:
        return {"msg": text[:200]}
    return data if isinstance(data, dict) else {}


def _msg(data: dict[str, Any], status: int) -> str:
    return str(data.get("msg") or f"HTTP {status}")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _message_id(data: dict[str, Any]) -> str:
    return str(_dict(data.get("data")).get("message_id") or "")
