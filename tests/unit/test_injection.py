"""The `memory` prompt slot: line format, hot-window exclusion, budget, fast/full path, access."""

from __future__ import annotations

import re
import time

import pytest

from nahida.hooks import ContextSource, TurnContext
from nahida.memory import GUARD, Candidate, MemoryItem, MemoryService, NewTurn, Turn
from nahida.memory.core.tokenize import index_text
from nahida.memory.history import sessions
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.turn import MemoryInjection, is_greeting
from nahida.memory.write import write
from nahida.prompt import estimate_tokens
from tests.helpers import envelope

DM = "qq:private:alice"
GROUP = "qq:group:100"
ITEM_LINE = re.compile(
    r"- \[(m_[0-9a-f]{6})\] (fact|preference|decision|task|procedure|warning|summary)"
    r" · (global|chat|user) · \d{4}-\d{2}-\d{2}: \S.*"
)
HISTORY_LINE = re.compile(r"- \[history · \d{4}-\d{2}-\d{2}[^\]]*\] \S.*")


def add(store: SqliteStore, content: str, **fields: object) -> MemoryItem:
    values: dict[str, object] = {
        "scope": "user:qq:alice",
        "kind": "preference",
        "source": "import",
        "confidence": 0.8,
        "subject_user": "qq:alice",
        **fields,
    }
    candidate = Candidate(content=content, **values)  # type: ignore[arg-type]
    return store.write_sync(write.create_item, write.tokens_of(candidate), "test")


def said(store: SqliteStore, text: str, chat: str = DM, at: float | None = None) -> Turn:
    turn = NewTurn(chat, "user", text, at or time.time() - 30, speaker="qq:alice")
    recorded = store.write_sync(sessions.record, turn, index_text(text))
    assert recorded is not None
    return recorded


def context(
    store: SqliteStore, text: str, chat: str = DM, hot: frozenset[int] = frozenset()
) -> TurnContext:
    turn = said(store, text, chat, at=time.time())
    env = envelope(text, chat=chat, user="qq:alice")
    return TurnContext(env, turn.session_id, turn, "zh", False, frozenset({turn.id}) | hot)


def item_ids(block: str | None) -> list[str]:
    assert block is not None
    return [m.group(1) for m in map(ITEM_LINE.fullmatch, block.splitlines()) if m]


async def block_of(source: MemoryInjection, turn: TurnContext) -> str | None:
    """The `memory` slot of what the source gathers (it fills `profile` and `rules` too)."""
    return (await source.gather(turn)).get("memory")


async def test_every_line_names_id_kind_scope_and_date_and_the_guard_ends_it(
    store: SqliteStore,
) -> None:
    tea = add(store, "喜欢乌龙茶")
    rule = add(
        store, "以后我们喝茶只喝乌龙茶", kind="decision", scope=f"chat:{DM}", subject_user=None
    )
    said(store, "上次买的乌龙茶很好喝")
    source: ContextSource = MemoryInjection(MemoryService(store))
    assert source.slot == "memory"
    slots = await source.gather(context(store, "推荐一款乌龙茶给我吧，要适合下午喝的那种"))
    assert isinstance(slots, dict) and set(slots) == {"memory"}  # no profile, no rules here
    block = slots["memory"]
    *lines, last = block.splitlines()
    assert last == GUARD
    assert all(ITEM_LINE.fullmatch(line) or HISTORY_LINE.fullmatch(line) for line in lines), lines
    assert sorted(item_ids(block)) == sorted([tea.id, rule.id])
    assert f"[{tea.id}] preference · user · " in block
    assert f"[{rule.id}] decision · chat · " in block
    assert any(HISTORY_LINE.fullmatch(line) and "上次买的乌龙茶" in line for line in lines)


async def test_hot_window_turns_are_left_out(store: SqliteStore) -> None:
    said(store, "乌龙茶要用九十度的水泡")
    hot = said(store, "乌龙茶第一泡要倒掉")
    slots = await MemoryInjection(MemoryService(store)).gather(
        context(store, "乌龙茶怎么泡", hot=frozenset({hot.id}))
    )
    block = slots["memory"]
    assert "九十度" in block
    assert "第一泡" not in block
    assert "乌龙茶怎么泡" not in block  # the current message is shown as itself


async def test_nothing_to_say_gives_no_section(store: SqliteStore) -> None:
    add(store, "喜欢乌龙茶")
    injection = MemoryInjection(MemoryService(store))
    assert await injection.gather(context(store, "今天的天气怎么样")) == {}
    assert await injection.gather(context(store, "！？")) == {}


async def test_budget_is_respected(store: SqliteStore) -> None:
    for n in range(30):
        add(store, f"乌龙茶笔记第{n}条：冲泡温度和时间都要记录下来，方便以后对比不同批次的口感")
    block = await block_of(
        MemoryInjection(MemoryService(store, budget_tokens=120)),
        context(store, "把乌龙茶笔记都找出来，我想对比一下冲泡温度"),
    )
    assert block is not None
    assert estimate_tokens(block) <= 120
    assert 1 <= len(item_ids(block)) < 15
    assert (
        await block_of(
            MemoryInjection(MemoryService(store, budget_tokens=10)),
            context(store, "把乌龙茶笔记都找出来，我想对比一下冲泡温度"),
        )
        is None
    )


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("乌龙茶", 5),  # short: the fast path
        ("乌龙茶 thanks!", 5),
        ("我想把所有关于乌龙茶的笔记都整理一遍", 15),  # the full path
    ],
)
async def test_fast_path_for_short_messages_full_path_otherwise(
    store: SqliteStore, text: str, lines: int
) -> None:
    for n in range(20):
        add(store, f"乌龙茶 笔记 n{n}")
    block = await block_of(MemoryInjection(MemoryService(store)), context(store, text))
    assert len(item_ids(block)) == lines


def test_greetings_take_the_fast_path() -> None:
    injection = MemoryInjection(MemoryService.__new__(MemoryService), fast_chars=4)
    assert injection.limit_for("good morning everyone!") == 5
    assert injection.limit_for("你好！") == 5
    assert injection.limit_for("good morning, what did we decide") == 15
    assert is_greeting("Hi Nahida!") and not is_greeting("hi, how do I brew oolong")


async def test_injected_items_are_counted_as_accessed(store: SqliteStore) -> None:
    tea = add(store, "喜欢乌龙茶")
    coffee = add(store, "不喝咖啡")
    before = time.time()
    injection = MemoryInjection(MemoryService(store))
    await injection.gather(context(store, "乌龙茶"))
    await injection.gather(context(store, "乌龙茶好喝吗"))

    def fetch(item_id: str) -> MemoryItem:
        found = store.read_sync(lambda tx: tx.items.get(item_id))
        assert found is not None
        return found

    used, unused = fetch(tea.id), fetch(coffee.id)
    assert used.access_count == 2
    assert used.last_accessed is not None and used.last_accessed >= before
    assert (unused.access_count, unused.last_accessed) == (0, None)


async def test_the_viewer_is_the_speaker_where_they_speak(store: SqliteStore) -> None:
    add(store, "喜欢乌龙茶")  # private to Alice
    add(store, "群里统一买乌龙茶", kind="decision", scope=f"chat:{GROUP}", subject_user=None)
    injection = MemoryInjection(MemoryService(store))
    block = await block_of(injection, context(store, "乌龙茶", chat=GROUP))
    assert block is not None and "群里统一买乌龙茶" in block and "喜欢乌龙茶" not in block


async def test_the_profile_and_rules_come_with_the_memory_as_the_viewer_may_see_them(
    store: SqliteStore,
) -> None:
    memory = MemoryService(store)
    await memory.profiles.update("qq:alice", "身份与背景", "是护士", actor="qq:alice")
    await memory.profiles.update(
        "qq:alice", "目标与方向", "想学日语", sensitivity="public", actor="qq:alice", chat=GROUP
    )
    rule = add(store, "回答简短", kind="procedure")  # private to Alice, like her profile
    group_rule = add(
        store, "不要用韩语回答", kind="procedure", scope=f"chat:{GROUP}", subject_user=None
    )
    weak = add(store, "回答都押韵", kind="procedure", confidence=0.2)
    injection = MemoryInjection(memory)
    private = await injection.gather(context(store, "今天的天气怎么样"))
    assert "- 是护士" in private["profile"] and "- 想学日语" in private["profile"]
    assert f"[{rule.id}] rule for qq:alice: “回答简短”" in private["rules"]
    assert group_rule.id not in private["rules"]
    assert weak.id not in private["rules"]  # below 0.3: never injected
    in_group = await injection.gather(context(store, "今天的天气怎么样", chat=GROUP))
    assert "是护士" not in in_group["profile"] and "- 想学日语" in in_group["profile"]
    assert group_rule.id in in_group["rules"] and rule.id not in in_group["rules"]
