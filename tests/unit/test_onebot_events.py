"""Event parsing: golden events checked against nonebot's models, edge cases, deduplication keys."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from nonebot.adapters.onebot.v11 import Adapter as NbAdapter

from nahida.adapters.onebot.adapter import _when
from nahida.adapters.onebot.events import (
    Deduplicator,
    EventError,
    HeartbeatEvent,
    LifecycleEvent,
    MemberNotice,
    MessageEvent,
    NoticeEvent,
    PokeNotice,
    RecallNotice,
    RequestEvent,
    UnknownEvent,
    dedup_key,
    id_of,
    parse_event,
)

GOLDEN = json.loads(
    (Path(__file__).parents[1] / "data" / "onebot" / "events.json").read_text(encoding="utf-8")
)
OURS = {
    "PrivateMessageEvent": MessageEvent,
    "GroupMessageEvent": MessageEvent,
    "GroupRecallNoticeEvent": RecallNotice,
    "FriendRecallNoticeEvent": RecallNotice,
    "PokeNotifyEvent": PokeNotice,
    "GroupIncreaseNoticeEvent": MemberNotice,
    "GroupDecreaseNoticeEvent": MemberNotice,
    "GroupAdminNoticeEvent": MemberNotice,
    "FriendRequestEvent": RequestEvent,
    "LifecycleMetaEvent": LifecycleEvent,
    "HeartbeatMetaEvent": HeartbeatEvent,
}


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


@pytest.mark.parametrize("golden", GOLDEN, ids=[g["name"] for g in GOLDEN])
def test_golden_event_parses_like_nonebot(golden: dict[str, Any]) -> None:
    theirs = NbAdapter.json_to_event(golden["event"])
    ours = parse_event(golden["event"])
    assert type(theirs).__name__ == golden["model"]
    assert type(ours) is OURS[golden["model"]]
    assert ours.self_id == str(theirs.self_id)
    if isinstance(ours, MessageEvent):
        assert ours.message_id == str(theirs.message_id)
        assert ours.user_id == str(theirs.user_id)
        assert ours.group_id == _str(getattr(theirs, "group_id", None))
        assert ours.sender.role == theirs.sender.role
        assert ours.sender.nickname == (theirs.sender.nickname or "")
        assert ours.sender.card == (theirs.sender.card or "")
        assert (ours.anonymous is None) == (getattr(theirs, "anonymous", None) is None)
        mine = [(s.type, {k: str(v) for k, v in s.data.items()}) for s in ours.message]
        nb = [(s.type, {k: str(v) for k, v in s.data.items()}) for s in theirs.message]
        assert mine == nb
    elif isinstance(ours, NoticeEvent):
        assert ours.notice_type == theirs.notice_type
        assert ours.user_id == _str(getattr(theirs, "user_id", None))
        assert ours.group_id == _str(getattr(theirs, "group_id", None))
        if isinstance(ours, RecallNotice):
            assert ours.message_id == str(theirs.message_id)
        if isinstance(ours, PokeNotice):
            assert ours.target_id == str(theirs.target_id)
    elif isinstance(ours, HeartbeatEvent):
        assert ours.interval_ms == theirs.interval
    elif isinstance(ours, LifecycleEvent):
        assert ours.sub_type == theirs.sub_type
    elif isinstance(ours, RequestEvent):
        assert ours.flag == theirs.flag


def _group(**extra: Any) -> dict[str, Any]:
    return {
        "time": 1,
        "self_id": 10001,
        "post_type": "message",
        "message_type": "group",
        "message_id": 5,
        "group_id": 20001,
        "user_id": 30001,
        "message": "hi",
        **extra,
    }


def test_ids_normalise() -> None:
    assert [id_of(v) for v in (5, -5, "5", " -05 ", "abc", 5.0, None, True, "")] == [
        "5",
        "-5",
        "5",
        "-5",
        "abc",
        "5",
        None,
        None,
        None,
    ]


def test_message_edge_cases() -> None:
    event = parse_event(_group(message_id="msg-abc", sender=None, anonymous=None))
    assert isinstance(event, MessageEvent)
    assert event.message_id == "msg-abc"
    assert event.sender.role is None and event.sender.display_name == ""
    assert event.anonymous is None
    weird_role = parse_event(_group(sender={"role": "superuser", "card": 5}))
    assert isinstance(weird_role, MessageEvent)
    assert weird_role.sender.role is None and weird_role.sender.card == ""


def test_own_messages_are_recognised() -> None:
    sent = parse_event(_group(post_type="message_sent", user_id=10001))
    echoed = parse_event(_group(user_id="10001"))
    assert isinstance(sent, MessageEvent) and sent.from_self
    assert isinstance(echoed, MessageEvent) and echoed.from_self
    other = parse_event(_group())
    assert isinstance(other, MessageEvent) and not other.from_self


@pytest.mark.parametrize(
    "payload",
    [
        [1, 2],
        {"self_id": 1},
        {"post_type": "message"},
        _group(message_id=None),
        _group(group_id=None),
        _group(message=42),
        {"post_type": "notice", "notice_type": "group_recall", "self_id": 1},
    ],
)
def test_unusable_payloads_raise(payload: Any) -> None:
    with pytest.raises(EventError):
        parse_event(payload)


def test_unknown_kinds_are_kept_raw() -> None:
    guild = parse_event(_group(message_type="guild"))
    custom = parse_event({"post_type": "message_reactions", "self_id": 1, "x": 1})
    assert isinstance(guild, UnknownEvent) and isinstance(custom, UnknownEvent)
    assert custom.raw["x"] == 1
    notice = parse_event({"post_type": "notice", "self_id": 1, "notice_type": "essence"})
    assert type(notice) is NoticeEvent


def test_heartbeat_without_interval() -> None:
    beat = parse_event({"post_type": "meta_event", "self_id": 1, "meta_event_type": "heartbeat"})
    assert isinstance(beat, HeartbeatEvent) and beat.interval_ms is None


def test_dedup_keys() -> None:
    first = parse_event(_group())
    again = parse_event(_group(message_id="5", time="1"))  # same message, redelivered
    other_bot = parse_event(_group(self_id=10002))
    assert dedup_key(first) == dedup_key(again) != dedup_key(other_bot)
    # implementations reuse ids: per chat, or from the start after a restart
    other_group = parse_event(_group(group_id=20002))
    other_time = parse_event(_group(time=99))
    private = parse_event(_group(message_type="private", group_id=None))
    keys = [dedup_key(e) for e in (first, other_group, other_time, private)]
    assert len(set(keys)) == 4
    poke = {"post_type": "notice", "self_id": 1, "notice_type": "notify", "sub_type": "poke"}
    a = parse_event({**poke, "user_id": 2, "target_id": 1, "time": 10})
    b = parse_event({**poke, "user_id": "2", "target_id": 1, "time": 10})
    c = parse_event({**poke, "user_id": 2, "target_id": 1, "time": 11})
    assert dedup_key(a) == dedup_key(b) != dedup_key(c)
    beat = parse_event({"post_type": "meta_event", "self_id": 1, "meta_event_type": "heartbeat"})
    assert dedup_key(beat) is None


def test_deduplicator_is_bounded() -> None:
    seen = Deduplicator(size=3)
    assert [seen.seen(k) for k in (1, 2, 1, 3, 4)] == [False, False, True, False, False]
    assert len(seen) == 3
    assert 2 not in seen  # 1 was seen again after 2, so 2 is the one forgotten
    assert 1 in seen and 3 in seen and 4 in seen


ARRIVED = datetime(2026, 12, 1, 20, 0, tzinfo=UTC)  # when the event arrived, by the bot's clock


@pytest.mark.parametrize(
    "epoch", [None, 0, 1, 978_307_200, 10**12, 10**20, float("nan")]
)  # missing, 1970, 2001, milliseconds taken for seconds, overflow, nonsense
def test_a_missing_or_absurd_event_time_is_the_time_it_arrived(epoch: float | None) -> None:
    assert _when(epoch, ARRIVED) == ARRIVED


@pytest.mark.parametrize("lag", [90, 600, 86_400])  # behind the bot's clock: kept, as it is
def test_a_plausible_event_time_is_kept(lag: int) -> None:
    epoch = ARRIVED.timestamp() - lag
    assert _when(epoch, ARRIVED) == datetime.fromtimestamp(epoch, UTC)
