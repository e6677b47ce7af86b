"""Rule-based extraction: each rule in Chinese and English, what is ignored, scopes, and the write
path behind the post-turn hook (supersede by slot, redaction, never raising)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from nahida.envelope import ChatKey, UserKey
from nahida.hooks import PostTurnHook, TurnContext
from nahida.memory import Candidate, MemoryItem, MemoryService, Turn, Viewer, WriteResult
from nahida.memory.items import Items
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.turn import ExtractionHook
from nahida.memory.write import write
from nahida.memory.write.extract import extract
from nahida.memory.write.statements import slot_for, statements
from tests.helpers import envelope

PRIVATE = ChatKey.parse("qq:private:alice")
GROUP = ChatKey.parse("qq:group:100")
ALICE = UserKey.parse("qq:alice")
KEY = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"


def read(text: str) -> list[tuple[str, str, str | None, float]]:
    return [(s.kind, s.content, s.slot, s.confidence) for s in statements(text)]


# --- each rule ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # explicit
        ("记住：周五的会改到下午三点。", ("fact", "周五的会改到下午三点", None, 0.95)),
        ("帮我记住，项目代号是青鸟", ("fact", "项目代号是青鸟", None, 0.95)),
        (
            "remember that the wifi is on the second floor",
            ("fact", "the wifi is on the second floor", None, 0.95),
        ),
        ("Please remember the meeting is at 3pm.", ("fact", "the meeting is at 3pm", None, 0.95)),
        # explicit, read again for the kind the words imply
        ("请记住我喜欢乌龙茶", ("preference", "喜欢乌龙茶", "pref:乌龙茶", 0.95)),
        ("记住我的生日是3月5日", ("fact", "生日是3月5日", "birthday", 0.95)),
        ("remember that my name is Ethan", ("fact", "name is Ethan", "name", 0.95)),
        # preferences
        ("我喜欢乌龙茶", ("preference", "喜欢乌龙茶", "pref:乌龙茶", 0.8)),
        ("我爱吃火锅！", ("preference", "爱吃火锅", "pref:火锅", 0.8)),
        ("我不喜欢乌龙茶了", ("preference", "不喜欢乌龙茶", "pref:乌龙茶", 0.8)),
        ("讨厌香菜", ("preference", "讨厌香菜", "pref:香菜", 0.8)),
        ("其实我最喜欢喝乌龙茶", ("preference", "最喜欢喝乌龙茶", "pref:乌龙茶", 0.8)),
        ("我最喜欢的颜色是蓝色", ("preference", "最喜欢的颜色是蓝色", "fav:颜色", 0.8)),
        ("I like oolong tea.", ("preference", "likes oolong tea", "pref:oolong tea", 0.8)),
        ("I love drinking coffee", ("preference", "loves drinking coffee", "pref:coffee", 0.8)),
        ("I prefer dark mode", ("preference", "prefers dark mode", "pref:dark mode", 0.8)),
        ("I hate Mondays", ("preference", "hates Mondays", "pref:mondays", 0.8)),
        (
            "I don't like oolong tea anymore",
            ("preference", "doesn't like oolong tea", "pref:oolong tea", 0.8),
        ),
        ("my favorite color is blue", ("preference", "favourite color is blue", "fav:color", 0.8)),
        # decisions
        ("以后我们每周五开会", ("decision", "以后我们每周五开会", None, 0.8)),
        ("从现在起，用英文回答我", ("decision", "从现在起，用英文回答我", None, 0.8)),
        ("我们决定周五去爬山吧", ("decision", "我们决定周五去爬山", None, 0.8)),
        (
            "From now on, answer in English.",
            ("procedure", "answer in English", "reply:language", 0.8),
        ),
        ("we decided to meet on Fridays", ("decision", "we decided to meet on Fridays", None, 0.8)),
        ("let's always use metric units", ("decision", "let's always use metric units", None, 0.8)),
        # tasks
        ("提醒我明天交报告", ("task", "明天交报告", None, 0.7)),
        ("别忘了带伞", ("task", "带伞", None, 0.7)),
        ("待办：买牛奶", ("task", "买牛奶", None, 0.7)),
        ("remind me to call mom tomorrow", ("task", "call mom tomorrow", None, 0.7)),
        ("todo: renew passport", ("task", "renew passport", None, 0.7)),
        ("don't forget to water the plants", ("task", "water the plants", None, 0.7)),
        ("能提醒我明天交报告吗？", ("task", "明天交报告", None, 0.7)),  # a request, not a question
        ("Can you remind me to call mom?", ("task", "call mom", None, 0.7)),
        # identity
        ("我叫小明", ("fact", "名字是小明", "name", 0.85)),
        ("我的名字是李雷。", ("fact", "名字是李雷", "name", 0.85)),
        ("my name is Ethan Hunt", ("fact", "name is Ethan Hunt", "name", 0.85)),
        ("我住在杭州", ("fact", "住在杭州", "home", 0.85)),
        ("I live in Berlin", ("fact", "lives in Berlin", "home", 0.85)),
        ("我的生日是3月5日", ("fact", "生日是3月5日", "birthday", 0.85)),
        ("my birthday is May 5!", ("fact", "birthday is May 5", "birthday", 0.85)),
    ],
)
def test_rule(text: str, expected: tuple[str, str, str | None, float]) -> None:
    assert read(text) == [expected]


def test_several_statements_in_one_message() -> None:
    assert read("我叫小明，我住在杭州。对了，我喜欢乌龙茶") == [
        ("fact", "名字是小明", "name", 0.85),
        ("fact", "住在杭州", "home", 0.85),
        ("preference", "喜欢乌龙茶", "pref:乌龙茶", 0.8),
    ]
    assert read("I live in Berlin and I like tea because it is warm") == [
        ("fact", "lives in Berlin", "home", 0.85),
        ("preference", "likes tea", "pref:tea", 0.8),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "我喜欢什么？",  # questions
        "我喜欢什么",
        "我喜欢喝什么茶？",
        "do I like tea?",
        "What do I like?",
        "remember when we went to Paris?",
        "他说他喜欢乌龙茶",  # someone else's words
        "小明说，我喜欢乌龙茶",
        "“我喜欢乌龙茶”是他的口头禅",
        "she said I like tea",
        "> I like tea",
        "我爱你",  # pronouns and demonstratives are not objects
        "我喜欢这首歌",
        "I like it",
        "我叫你别说话",
        "我叫了外卖",
        "以后再说吧",  # "以后" alone is not a decision
        "好的，记住了",  # too short
        "ok",
        "你好",
        "我" + "喜欢" * 600,  # too long: a paste, not a statement
        "我喜欢" + "乌龙茶" * 30,  # the object is too long
        "```\n# TODO: fix this\nremind me to refactor\n```",  # code
        "I'm tired",
    ],
)
def test_ignored(text: str) -> None:
    assert read(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "I like " + " " * 990 + "x",  # once took minutes: a `(a|a+)+$` trailing-space regex
        "我喜欢" + "哈" * 990 + "x",
        "，a" * 499,
        "我喜欢乌龙茶，" * 140,
        "I like tea and I like tea and " * 33,
        "记住" + "，" * 990 + "a",
        "a. " * 330,
    ],
)
def test_hostile_input_takes_milliseconds(text: str) -> None:
    statements("warm up: 我喜欢乌龙茶")
    started = time.perf_counter()
    statements(text[:1000])
    assert time.perf_counter() - started < 1.0  # milliseconds; a backtracking pattern takes seconds


def test_slot_for_reuses_the_rules() -> None:
    assert slot_for("我喜欢乌龙茶") == slot_for("我不喜欢喝乌龙茶了") == "pref:乌龙茶"
    assert slot_for("I love oolong tea") == slot_for("I don't like drinking oolong tea")
    assert slot_for("我的名字是小明") == slot_for("my name is Ethan") == "name"
    assert slot_for("我住在杭州") == "home"
    assert slot_for("周五开会") is None


# --- scopes and evidence --------------------------------------------------------------------


def one(text: str, chat: ChatKey) -> Candidate:
    found = extract(text, chat=chat, user=ALICE, message_id="m9", turn_id=42, time=1_700_000_000.0)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("text", "chat", "scope", "sensitivity", "subject"),
    [
        ("我喜欢乌龙茶", PRIVATE, "user:qq:alice", "private", "qq:alice"),
        ("以后我们每周五开会", PRIVATE, "user:qq:alice", "private", "qq:alice"),
        ("记住周五的会改到三点", PRIVATE, "user:qq:alice", "private", "qq:alice"),
        ("我喜欢乌龙茶", GROUP, "user:qq:alice", "public", "qq:alice"),
        ("我叫小明", GROUP, "user:qq:alice", "public", "qq:alice"),
        ("提醒我明天交报告", GROUP, "user:qq:alice", "public", "qq:alice"),
        ("我决定以后不喝咖啡了", GROUP, "user:qq:alice", "public", "qq:alice"),
        ("以后我们每周五开会", GROUP, "chat:qq:group:100", "public", None),
        ("we decided to meet on Fridays", GROUP, "chat:qq:group:100", "public", None),
        ("记住周五的会改到三点", GROUP, "chat:qq:group:100", "public", None),
        ("记住我明天请假", GROUP, "user:qq:alice", "public", "qq:alice"),
        ("请记住我喜欢乌龙茶", GROUP, "user:qq:alice", "public", "qq:alice"),
    ],
)
def test_scope_rules(
    text: str, chat: ChatKey, scope: str, sensitivity: str, subject: str | None
) -> None:
    c = one(text, chat)
    assert (c.scope, c.sensitivity, c.subject_user, c.speaker_user) == (
        scope,
        sensitivity,
        subject,
        "qq:alice",
    )
    assert c.source == "rule_extract"


def test_evidence_points_at_the_message() -> None:
    c = one("嗯，我喜欢乌龙茶！", GROUP)
    (evidence,) = c.evidence
    assert evidence.chat == "qq:group:100"
    assert (evidence.message_id, evidence.turn_id, evidence.time) == ("m9", 42, 1_700_000_000.0)
    assert evidence.quote == "嗯，我喜欢乌龙茶！"
    long = one("我喜欢乌龙茶" + "，" * 5 + "真的" * 100, PRIVATE).evidence[0].quote
    assert long is not None and len(long) <= 120


# --- through the write path -----------------------------------------------------------------


def propose_all(store: SqliteStore, text: str, chat: ChatKey = PRIVATE) -> list[WriteResult]:
    return [
        store.write_sync(write.propose, write.prepare(c), "auto_safe", "rule_extract")
        for c in extract(text, chat=chat, user=ALICE)
    ]


def alices(store: SqliteStore) -> list[MemoryItem]:
    visibility = Viewer(scopes=("user:qq:alice",)).visibility()
    return store.read_sync(
        lambda tx: tx.items.listed(visibility, kind=None, status="active", limit=50)
    )


def get(store: SqliteStore, item_id: str | None) -> MemoryItem | None:
    assert item_id is not None
    return store.read_sync(lambda tx: tx.items.get(item_id))


def active(store: SqliteStore) -> list[tuple[str, str]]:
    return sorted((i.kind, i.content) for i in alices(store))


@pytest.mark.parametrize(
    ("first", "second", "now"),
    [
        ("我喜欢乌龙茶", "我不喜欢乌龙茶了", "不喜欢乌龙茶"),
        ("I like oolong tea", "I don't like oolong tea anymore", "doesn't like oolong tea"),
        ("I like oolong tea", "I love drinking oolong tea", "loves drinking oolong tea"),
        ("我住在杭州", "我住在上海浦东", "住在上海浦东"),
        ("我叫小明", "记住我的名字是李雷", "名字是李雷"),
        ("my birthday is May 5", "my birthday is June 1", "birthday is June 1"),
        ("以后回答我都用英文", "以后用中文回答我", "希望用中文回答"),
        ("from now on answer me in English", "以后回答我都用英文", "希望用英文回答"),
        ("我喜欢吃香菜", "我不吃香菜", "不吃香菜"),
        ("I like eating cilantro", "I don't eat cilantro", "doesn't eat cilantro"),
        ("我喜欢吃辣", "我不能吃辣", "不能吃辣"),
        ("我对花生过敏", "我对花生不过敏了", "对花生不过敏"),
        ("我在腾讯工作", "我现在在字节工作", "在字节工作"),
        ("叫我小北就行", "以后叫我老王", "希望被叫作老王"),
    ],
)
def test_a_new_value_supersedes_the_old_one(
    store: SqliteStore, first: str, second: str, now: str
) -> None:
    (created,) = propose_all(store, first)
    (replaced,) = propose_all(store, second)
    assert created.outcome == "created"
    assert (replaced.outcome, replaced.replaced) == ("superseded", created.item_id)
    assert [content for _, content in active(store)] == [now]
    old = get(store, created.item_id)
    assert old is not None and old.status == "superseded"


def test_said_in_a_group_supersedes_what_was_said_in_private(store: SqliteStore) -> None:
    propose_all(store, "我喜欢乌龙茶", PRIVATE)
    (result,) = propose_all(store, "我不喜欢乌龙茶了", GROUP)
    assert result.outcome == "superseded"
    new = get(store, result.item_id)
    assert new is not None and new.sensitivity == "public"


def test_saying_it_again_merges(store: SqliteStore) -> None:
    (first,) = propose_all(store, "我喜欢乌龙茶")
    (again,) = propose_all(store, "其实我喜欢乌龙茶。")
    assert (again.outcome, again.item_id) == ("merged", first.item_id)


def test_negation_of_a_longer_preference_supersedes(store: SqliteStore) -> None:
    propose_all(store, "我喜欢喝乌龙茶")
    (result,) = propose_all(store, "我不喜欢喝乌龙茶了")
    assert result.outcome == "superseded"


def test_not_liking_red_tea_any_more_but_green_tea(store: SqliteStore) -> None:
    (liked,) = propose_all(store, "我喜欢红茶")
    now, green = propose_all(store, "我现在不喜欢红茶，喜欢绿茶")
    assert (now.outcome, now.replaced) == ("superseded", liked.item_id)
    assert green.outcome == "created"
    assert active(store) == [("preference", "不喜欢红茶"), ("preference", "喜欢绿茶")]


def test_an_allergy_is_kept_beside_the_likes(store: SqliteStore) -> None:
    propose_all(store, "我喜欢吃花生")
    (allergy,) = propose_all(store, "我对花生过敏")
    assert allergy.outcome == "created"  # another slot: the like is not replaced
    assert active(store) == [("fact", "对花生过敏"), ("preference", "喜欢吃花生")]


def test_how_to_answer_me_said_in_a_group_is_the_speakers(store: SqliteStore) -> None:
    (reply,) = extract("以后回答我都用英文", chat=GROUP, user=ALICE)
    assert (reply.scope, reply.subject_user, reply.sensitivity) == (
        "user:qq:alice",
        "qq:alice",
        "public",
    )
    (rule,) = extract("以后我们都用英文", chat=GROUP, user=ALICE)
    assert (rule.kind, rule.scope) == ("decision", "chat:qq:group:100")
    (result,) = propose_all(store, "以后回答我都用英文", GROUP)
    assert result.outcome == "created"


# --- the post-turn hook ---------------------------------------------------------------------


def turn_context(text: str, *, chat: str = "qq:private:alice", role: str = "user") -> TurnContext:
    env = envelope(text, chat=chat, user="qq:alice")
    turn = Turn(7, "s_1", chat, role, text, datetime.now(UTC), speaker="qq:alice")
    return TurnContext(env, "s_1", turn, "zh", False, frozenset({7}))


def everything(store: SqliteStore) -> str:
    def run(conn: Any) -> str:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return "\n".join(
            str(v) for t in tables for row in conn.execute(f'SELECT * FROM "{t}"') for v in row
        )

    return store.db.call(run)


async def test_hook_proposes_what_the_user_said(store: SqliteStore) -> None:
    hook: PostTurnHook = ExtractionHook(MemoryService(store))
    assert hook.name == "extract"
    await hook.after_turn(turn_context("我叫小明，我喜欢乌龙茶"), "echo")
    assert active(store) == [("fact", "名字是小明"), ("preference", "喜欢乌龙茶")]
    item = alices(store)[0]
    assert item.source == "rule_extract" and item.evidence[0].turn_id == 7


async def test_hook_never_reads_the_bot(store: SqliteStore) -> None:
    hook = ExtractionHook(MemoryService(store))
    await hook.after_turn(turn_context("今天天气不错呀"), "我喜欢乌龙茶，记住我叫小明")
    await hook.after_turn(turn_context("我喜欢乌龙茶", role="assistant"), None)
    assert active(store) == []


async def test_hook_respects_the_commit_mode(store: SqliteStore) -> None:
    hook = ExtractionHook(MemoryService(store, mode="manual_review"))
    await hook.after_turn(turn_context("我喜欢乌龙茶"), None)
    assert active(store) == []
    pending = store.read_sync(lambda tx: tx.candidates.pending(None, 10))
    assert [c.content for _, c, _ in pending] == ["喜欢乌龙茶"]


async def test_a_secret_said_to_remember_is_never_stored(store: SqliteStore) -> None:
    """Issue 9: no redacted placeholder item either (the chat answers with the refusal)."""
    hook = ExtractionHook(MemoryService(store))
    await hook.after_turn(turn_context(f"记住我的 api key 是 {KEY}"), None)
    await hook.after_turn(turn_context("记住我的 api key 是 [REDACTED:openai_key]"), None)
    await hook.after_turn(turn_context("我喜欢乌龙茶"), None)  # the rest still works
    assert active(store) == [("preference", "喜欢乌龙茶")]
    dumped = everything(store)
    assert KEY not in dumped and KEY.lower() not in dumped and "REDACTED" not in dumped


class BrokenItems(Items):
    def __init__(self, store: SqliteStore) -> None:
        super().__init__(store, "auto_safe")
        self.calls = 0

    async def propose(self, candidate: Candidate, actor: str) -> WriteResult:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("disk on fire")
        return await super().propose(candidate, actor)


async def test_hook_logs_and_continues_when_a_write_fails(store: SqliteStore) -> None:
    memory = MemoryService(store)
    memory.items = broken = BrokenItems(store)
    await ExtractionHook(memory).after_turn(turn_context("我叫小明，我喜欢乌龙茶"), None)
    assert broken.calls == 2
    assert active(store) == [("preference", "喜欢乌龙茶")]  # the second still went through


async def test_hook_never_raises(store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from nahida.memory.turn import post_turn as module

    def explode(*args: object, **kwargs: object) -> list[Candidate]:
        raise ValueError("bad rule")

    monkeypatch.setattr(module, "extract", explode)
    await ExtractionHook(MemoryService(store)).after_turn(turn_context("我喜欢乌龙茶"), None)
    assert active(store) == []
