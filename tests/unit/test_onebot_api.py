"""Action plumbing without a socket: the echo store, result checking, config, the role cache."""

from __future__ import annotations

import asyncio

import pytest

from nahida.adapters.onebot.api import ConnectionClosedError, ResultStore, check_result
from nahida.adapters.onebot.config import load
from nahida.adapters.onebot.roles import MemberRoles
from nahida.envelope import Role
from nahida.errors import ActionFailedError, ConfigError


async def test_result_store_matches_echoes_and_ignores_strangers() -> None:
    store = ResultStore()
    echo, future = store.open("get_msg")
    other, pending = store.open("send_msg")
    assert store.resolve({"echo": "not-ours"}) is False
    assert store.resolve({"echo": 999}) is False
    assert store.resolve({"echo": str(echo), "status": "ok"}) is True  # stringified echo
    assert future.result() == {"echo": str(echo), "status": "ok"}
    assert store.resolve({"echo": echo}) is False  # answered once only
    assert store.fail_all(lambda action: ConnectionClosedError(action, sent=True)) == 1
    with pytest.raises(ConnectionClosedError, match="send_msg"):
        await pending
    assert len(store) == 0 and other != echo


def test_check_result() -> None:
    assert check_result("a", {"status": "ok", "retcode": 0, "data": {"x": 1}}) == {"x": 1}
    assert check_result("a", {"status": "async", "retcode": 1, "data": None}) is None
    assert check_result("a", {"retcode": 0, "data": 5}) == 5
    with pytest.raises(ActionFailedError) as failed:
        check_result(
            "send_group_msg",
            {"status": "failed", "retcode": 1200, "msg": "ERR", "wording": "群已被禁言"},
        )
    assert (failed.value.retcode, failed.value.msg, failed.value.wording) == (
        1200,
        "ERR",
        "群已被禁言",
    )
    assert failed.value.action == "send_group_msg"
    with pytest.raises(ActionFailedError):
        check_result("a", {"retcode": 100})
    with pytest.raises(ActionFailedError):
        check_result("a", "nonsense")


def test_config_defaults_and_errors_name_the_key() -> None:
    settings = load({"enabled": True})
    assert settings.mode == "reverse_ws" and settings.path == "/onebot/v11/ws"
    forward = load({"mode": "forward_ws", "api_url": "ws://h/api", "event_url": "ws://h/event"})
    assert forward.forward_urls() == [("ws://h/api", "API"), ("ws://h/event", "Event")]
    with pytest.raises(ConfigError, match=r"channels\.onebot\.mode"):
        load({"mode": "carrier_pigeon"})
    with pytest.raises(ConfigError, match=r"channels\.onebot\.acess_token"):
        load({"acess_token": "typo"})
    with pytest.raises(ConfigError, match="forward_ws needs"):
        load({"mode": "forward_ws"})
    with pytest.raises(ConfigError, match="ws or wss"):
        load({"mode": "forward_ws", "url": "http://h/"})
    with pytest.raises(ConfigError, match="http mode needs"):
        load({"mode": "http"})
    with pytest.raises(ConfigError, match="start with"):
        load({"path": "onebot"})


def test_secrets_are_masked_in_repr() -> None:
    settings = load({"access_token": "tok-123456", "secret": "sec-123456"})
    assert "tok-123456" not in repr(settings) and "sec-123456" not in repr(settings)
    assert settings.token == "tok-123456"


async def test_member_roles_cache_lookups_and_failures() -> None:
    now = [0.0]
    asked: list[tuple[str, str, str]] = []
    answers: dict[str, object] = {"1": {"role": "admin"}, "2": RuntimeError("down")}

    async def lookup(self_id: str, group: str, user: str) -> dict[str, object]:
        asked.append((self_id, group, user))
        answer = answers[user]
        if isinstance(answer, Exception):
            raise answer
        assert isinstance(answer, dict)
        return answer

    roles = MemberRoles(lookup, ttl=600, clock=lambda: now[0])
    assert await roles.role("b", "g", "1", None) == Role.ADMIN
    assert await roles.role("b", "g", "1", None) == Role.ADMIN
    assert len(asked) == 1  # cached
    assert await roles.role("b", "g", "3", "owner") == Role.OWNER  # the event said so
    assert await roles.role("b", "g", "2", None) == Role.MEMBER  # failure → member
    assert await roles.role("b", "g", "2", None) == Role.MEMBER
    assert len(asked) == 2  # the failure is cached briefly too
    now[0] = 61.0
    assert await roles.role("b", "g", "2", None) == Role.MEMBER
    assert len(asked) == 3
    roles.forget("b", "g", "1")
    answers["1"] = {"role": "member"}
    assert await roles.role("b", "g", "1", None) == Role.MEMBER


async def test_member_roles_cache_is_bounded() -> None:
    async def lookup(self_id: str, group: str, user: str) -> dict[str, object]:
        await asyncio.sleep(0)
        return {"role": "admin"}

    roles = MemberRoles(lookup, size=10)
    for user in range(50):
        await roles.role("b", "g", str(user), None)
    assert len(roles._cache) == 10
