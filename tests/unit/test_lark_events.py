"""Lark events → envelopes (golden payloads), dedup keys, and the `channels.lark` config."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nahida.adapters.base import Adapter
from nahida.adapters.lark.adapter import LarkAdapter
from nahida.adapters.lark.config import LarkConfig, load
from nahida.adapters.lark.events import (
    BotIdentity,
    RecentIds,
    event_key,
    parse_message_event,
    to_envelope,
)
from nahida.app import platform_adapters
from nahida.config import Config
from nahida.envelope import Role
from nahida.errors import ConfigError

CASES = json.loads(
    (Path(__file__).parents[1] / "data" / "lark" / "message_events.json").read_text("utf-8")
)
BOT = BotIdentity(app_id="cli_test", open_id="ou_bot", name="Nahida")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_golden_events(case: dict[str, Any]) -> None:
    event = parse_message_event(case["event"])
    assert event is not None
    envelope = to_envelope(event, BOT, name="Alice", role=Role.ADMIN)
    expect = case["expect"]
    got = {
        "chat": str(envelope.chat),
        "sender": str(envelope.sender.user),
        "text": envelope.text,
        "to_me": envelope.to_me,
        "segments": [s.type for s in envelope.segments],
        "mentions": list(envelope.mentions),
        "reply_to": envelope.reply_to,
        "message_id": envelope.message_id,
    }
    assert got == expect
    assert envelope.platform == "lark" and envelope.self_id == "cli_test"
    assert envelope.sender.name == "Alice" and envelope.sender.role is Role.ADMIN
    assert envelope.time == datetime(2025, 1, 1, tzinfo=UTC)
    assert envelope.raw is case["event"]


def test_a_reply_to_the_bots_own_message_is_to_me() -> None:
    raw = next(c["event"] for c in CASES if c["name"] == "group reply to an earlier message")
    event = parse_message_event(raw)
    assert event is not None
    assert not to_envelope(event, BOT).to_me
    assert to_envelope(event, BOT, replies_to_bot=True).to_me


def test_event_key_prefers_the_event_id_then_the_message_id() -> None:
    raw = CASES[0]["event"]
    assert event_key(raw) == "event:ev_p1"
    no_header = {"event": raw["event"]}
    assert event_key(no_header) == "message:om_p1"
    assert event_key({}) is None


def test_other_events_and_malformed_messages_are_not_message_events() -> None:
    read = {"schema": "2.0", "header": {"event_type": "im.message.message_read_v1"}, "event": {}}
    assert parse_message_event(read) is None
    broken = json.loads(json.dumps(CASES[0]["event"]))
    del broken["event"]["message"]["chat_id"]
    assert parse_message_event(broken) is None


def test_recent_ids_are_bounded_and_forget_the_oldest() -> None:
    recent = RecentIds(3)
    assert [recent.add(k) for k in "abca"] == [True, True, True, False]
    recent.add("d")  # evicts "b", the least recently seen
    assert len(recent) == 3 and "b" not in recent and "a" in recent
    assert recent.add("b") is True


# -- config -----------------------------------------------------------------------------------


def section(**overrides: Any) -> dict[str, Any]:
    return {"enabled": True, "app_id": "cli_x", "app_secret": "s3cret", **overrides}


def test_defaults_are_feishu_long_connection() -> None:
    settings = load(section())
    assert settings.mode == "long_connection"
    assert settings.domain == "https://open.feishu.cn"
    assert settings.path == "/lark/events"


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"app_id": ""}, "channels.lark.app_id"),
        ({"app_secret": " "}, "channels.lark.app_secret"),
        ({"mode": "polling"}, "channels.lark.mode"),
        ({"domain": "open.feishu.cn"}, "channels.lark.domain"),
        ({"domain": "http://open.larksuite.com"}, "channels.lark.domain"),
        ({"path": "lark"}, "channels.lark.path"),
        ({"mode": "webhook"}, "channels.lark.verification_token"),
        ({"secret": "typo"}, "channels.lark.secret"),
    ],
)
def test_bad_settings_name_the_key(overrides: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(section(**overrides))
    assert caught.value.key == key


def test_loopback_http_and_a_trailing_slash_are_fine() -> None:
    assert load(section(domain="http://127.0.0.1:8123/")).domain == "http://127.0.0.1:8123"
    assert load(section(domain="https://open.larksuite.com")).domain == "https://open.larksuite.com"


def test_the_app_registry_builds_the_adapter_and_secrets_are_masked() -> None:
    config = Config.model_validate(
        {"channels": {"lark": section(mode="webhook", verification_token="vt-1234")}}
    )
    [adapter] = platform_adapters(config)
    assert isinstance(adapter, LarkAdapter) and adapter.platform == "lark"
    assert isinstance(adapter, Adapter)  # the protocol every channel implements
    assert isinstance(adapter.settings, LarkConfig) and adapter.settings.webhook
    assert {"s3cret", "vt-1234"} <= set(config.secrets())
    assert "s3cret" not in repr(adapter.settings)
