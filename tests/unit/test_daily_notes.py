"""The daily notes (`workspace/memory/YYYY-MM-DD.md`, DESIGN §9): one line per summary, episode,
proposed and later-decided candidate, each with its id, in its own day's file; append-only (a
second run adds nothing, a lost cursor repeats nothing); secrets redacted; the cursor kept in
the database; at most `limit` events per run; the job that runs it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nahida.memory import MemoryService, NewTurn
from nahida.memory.core.access import Actor
from nahida.memory.core.models import Candidate, Episode, WarmSummary
from nahida.memory.jobs import DailyNotesJob
from nahida.memory.markdown.daily import DailyNotes
from nahida.memory.store.base import Tx
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.write import candidates
from nahida.scheduler import JobContext

GROUP = "test:group:g1"
T0 = datetime(2024, 4, 10, 21, 5, tzinfo=UTC).timestamp()
DAY = 86_400.0
DAY1, DAY2 = "2024-04-10", "2024-04-11"
KEY = "sk-proj-4hT9xQ2mL7vR1nB8kW3zY6pD5sF0gJ"  # looks like an API key to the safety filter
ADMIN = Actor("admin", is_bot_admin=True)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path / "workspace"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "daily.db"


@pytest.fixture
def store(db: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(db)
    yield opened
    opened.close()


def notes_of(store: SqliteStore, workspace: Path) -> MemoryService:
    memory = MemoryService(store, mode="manual_review", tz=UTC, workspace=workspace)
    assert memory.daily is not None
    memory.daily.settle = 0.0  # rows written just now count (the tests wait for nothing)
    return memory


def day_file(workspace: Path, day: str) -> Path:
    return workspace / "memory" / f"{day}.md"


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


async def session_of(memory: MemoryService, at: float = T0) -> str:
    turn = NewTurn(GROUP, "user", "你好", at, speaker="test:alice", speaker_name="Alice")
    await memory.sessions.record(turn)
    session_id = await memory.sessions.current(GROUP)
    assert session_id is not None
    return session_id


def fact(content: str, source: str = "rule_extract") -> Candidate:
    return Candidate(scope=f"chat:{GROUP}", kind="fact", content=content, source=source)


async def seed_two_days(memory: MemoryService) -> str:
    """A summary, an episode and an accepted candidate on day 1; a candidate proposed on day 2
    and accepted an hour later. Rows with chosen times, through the store's units."""
    session_id = await session_of(memory)

    def run(tx: Tx) -> None:
        tx.summaries.put(
            WarmSummary(session_id, GROUP, "大家\n聊了   期末考试", rounds=15, updated_at=T0)
        )
        episode = Episode(
            "e_day1", session_id, GROUP, "期末考试的安排", ("考试",), T0, T0 + 50, 4, T0 + 60
        )
        tx.episodes.put(episode, "期末 考试 安排")
        tx.candidates.add(
            "c_day1", fact("小明 喜欢 乌龙茶"), "accepted", "m_one", "created", T0 + 120
        )
        tx.candidates.add("c_day2", fact("周五 开会"), "pending", None, "waiting", T0 + DAY)
        tx.candidates.decide("c_day2", "accepted", "m_two", "admin", T0 + DAY + 3600)

    await memory.store.write(run)
    return session_id


async def test_catch_up_writes_each_event_with_its_id_in_its_days_file(
    store: SqliteStore, workspace: Path
) -> None:
    memory = notes_of(store, workspace)
    session_id = await seed_two_days(memory)
    assert memory.daily is not None

    assert await memory.daily.catch_up() == 5

    assert day_file(workspace, DAY1).read_text(encoding="utf-8") == (
        f"# {DAY1}\n\n"
        f"- 21:05 summary {session_id} ({GROUP}, 15 rounds): 大家 聊了 期末考试\n"
        f"- 21:06 episode e_day1 ({GROUP}, 4 turns): 期末考试的安排 — 考试\n"
        f"- 21:07 candidate c_day1 proposed (rule_extract, fact, chat:{GROUP}): 小明 喜欢 乌龙茶"
        " → accepted m_one\n"
    )
    assert day_file(workspace, DAY2).read_text(encoding="utf-8") == (
        f"# {DAY2}\n\n"
        f"- 21:05 candidate c_day2 proposed (rule_extract, fact, chat:{GROUP}): 周五 开会"
        " → pending\n"
        "- 22:05 candidate c_day2 accepted m_two by admin\n"
    )


async def test_candidates_proposed_through_memory_and_reviewed_later(
    store: SqliteStore, workspace: Path
) -> None:
    memory = notes_of(store, workspace)
    assert memory.daily is not None
    edited = await memory.items.propose(candidates.admin_edit("小红 是 班长", chat=GROUP), "cli")
    waiting = await memory.items.propose(fact("下周 春游"), "test:alice")
    assert edited.outcome == "created" and waiting.outcome == "pending"
    assert edited.candidate_id and waiting.candidate_id and edited.item_id

    assert await memory.daily.catch_up() == 2
    reviewed = await memory.items.review(waiting.candidate_id, True, ADMIN)
    assert reviewed is not None and reviewed.item_id
    assert await memory.daily.catch_up() == 1

    lines = day_file(workspace, today()).read_text(encoding="utf-8").splitlines()
    assert lines[0] == f"# {today()}"
    assert lines[2].endswith(
        f" candidate {edited.candidate_id} proposed (human_edit, fact, chat:{GROUP}): 小红 是 班长"
        f" → accepted {edited.item_id}"
    )
    assert lines[3].endswith(
        f" candidate {waiting.candidate_id} proposed (rule_extract, fact, chat:{GROUP}): 下周 春游"
        " → pending"
    )
    assert lines[4].endswith(
        f" candidate {waiting.candidate_id} accepted {reviewed.item_id} by admin"
    )
    assert len(lines) == 5


async def test_a_second_catch_up_appends_only_what_is_new(
    store: SqliteStore, workspace: Path
) -> None:
    memory = notes_of(store, workspace)
    session_id = await seed_two_days(memory)
    assert memory.daily is not None
    await memory.daily.catch_up()
    before = day_file(workspace, DAY2).read_text(encoding="utf-8")

    assert await memory.daily.catch_up() == 0
    assert day_file(workspace, DAY2).read_text(encoding="utf-8") == before

    summary = WarmSummary(session_id, GROUP, "又聊了 春游", rounds=16, updated_at=T0 + DAY + 7200)
    await store.write(lambda tx: tx.summaries.put(summary))
    assert await memory.daily.catch_up() == 1
    after = day_file(workspace, DAY2).read_text(encoding="utf-8")
    assert after == before + f"- 23:05 summary {session_id} ({GROUP}, 16 rounds): 又聊了 春游\n"


async def test_a_lost_cursor_repeats_no_line(store: SqliteStore, workspace: Path) -> None:
    """As after a crash between writing the lines and advancing the cursor."""
    memory = notes_of(store, workspace)
    await seed_two_days(memory)
    assert memory.daily is not None
    await memory.daily.catch_up()
    files = {day: day_file(workspace, day).read_text(encoding="utf-8") for day in (DAY1, DAY2)}

    await store.write(lambda tx: tx.state.put("daily", "{}", T0))
    assert await memory.daily.catch_up() == 0
    for day, text in files.items():
        assert day_file(workspace, day).read_text(encoding="utf-8") == text


async def test_a_secret_never_reaches_the_notes(store: SqliteStore, workspace: Path) -> None:
    memory = notes_of(store, workspace)
    assert memory.daily is not None
    stored = fact(f"the key is {KEY}")  # as if stored unredacted: the notes redact again
    await store.write(lambda tx: tx.candidates.add("c_raw", stored, "pending", None, "waiting", T0))
    proposed = await memory.items.propose(fact(f"我的 key 是 {KEY}"), "test:alice")
    assert proposed.redacted

    assert await memory.daily.catch_up() == 2
    texts = [p.read_text(encoding="utf-8") for p in (workspace / "memory").glob("*.md")]
    assert len(texts) == 2
    for text in texts:
        assert KEY not in text and "[REDACTED:" in text
    assert "c_raw" in day_file(workspace, DAY1).read_text(encoding="utf-8")


async def test_the_cursor_survives_a_new_memory_service(db: Path, workspace: Path) -> None:
    first = SqliteStore(db)
    memory = notes_of(first, workspace)
    await seed_two_days(memory)
    assert memory.daily is not None
    assert await memory.daily.catch_up() == 5
    memory.close()

    second = SqliteStore(db)
    try:
        again = notes_of(second, workspace)
        assert again.daily is not None
        assert await again.daily.catch_up() == 0
        await second.write(
            lambda tx: tx.candidates.add("c_new", fact("新的"), "pending", None, "w", T0 + DAY + 60)
        )
        assert await again.daily.catch_up() == 1
        text = day_file(workspace, DAY2).read_text(encoding="utf-8")
        assert text.count("c_day2") == 2 and text.count("c_new") == 1
    finally:
        second.close()


async def test_at_most_limit_events_a_run_in_order(store: SqliteStore, workspace: Path) -> None:
    memory = notes_of(store, workspace)
    await seed_two_days(memory)
    daily = DailyNotes(store, workspace, UTC, limit=2, settle=0.0)

    assert [await daily.catch_up() for _ in range(4)] == [2, 2, 1, 0]
    one = day_file(workspace, DAY1).read_text(encoding="utf-8").splitlines()
    two = day_file(workspace, DAY2).read_text(encoding="utf-8").splitlines()
    assert [line.split()[2] for line in one[2:]] == ["summary", "episode", "candidate"]
    assert ["proposed" in line for line in two[2:]] == [True, False]


async def test_events_of_the_last_seconds_wait_for_the_next_run(
    store: SqliteStore, workspace: Path
) -> None:
    memory = notes_of(store, workspace)
    await seed_two_days(memory)
    now = [T0 + 30]
    daily = DailyNotes(store, workspace, UTC, settle=5.0, clock=lambda: now[0])
    assert await daily.catch_up() == 1  # the summary; the episode (T0 + 60) is not settled
    now[0] = T0 + 2 * DAY
    assert await daily.catch_up() == 4


async def test_daily_notes_off_without_a_workspace_or_when_disabled(
    store: SqliteStore, workspace: Path
) -> None:
    assert MemoryService(store).daily is None
    assert MemoryService(store, workspace=workspace, daily_notes=False).daily is None


async def test_the_job_counts_the_lines(store: SqliteStore, workspace: Path) -> None:
    memory = notes_of(store, workspace)
    await seed_two_days(memory)
    ctx = JobContext(asyncio.Event())
    await DailyNotesJob(memory).run(ctx)
    assert ctx.counts == {"lines": 5}
    idle = JobContext(asyncio.Event())
    await DailyNotesJob(memory).run(idle)
    assert idle.counts == {} and DailyNotesJob.quiet  # nothing new: no run record

    off = JobContext(asyncio.Event())
    await DailyNotesJob(MemoryService(store)).run(off)
    assert off.skipped == "daily notes off"
