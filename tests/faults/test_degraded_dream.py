"""A degraded dream never undoes a person's correction (DESIGN §6, §8).

When the dream model answers garbage twice, the run falls back to rule extraction. That fallback
must not replay the turns live extraction already read, and no write path may let a turn older
than an item count as evidence against it, nor let anything but newer evidence replace what a
person stated (`user_explicit`) or edited (`human_edit`).

The chat goes through the real console app (live extraction, `/memory remember`), the CLI
through its typer app, the dream model is the fake OpenAI server over the real SDK, all on one
SQLite file.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from nahida.app import App, Paths, build_model_router
from nahida.cli import app
from nahida.envelope import ChatKey, UserKey
from nahida.memory import Candidate, MemoryItem, Turn, Viewer
from nahida.memory.core.models import moment
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.write import candidates, proposed, write
from nahida.memory.write.extract import extract
from tests.fakes.llm_server import FakeOpenAIServer
from tests.helpers import History, Silent, chat_through_console, config, envelope, openai_provider

CHAT = "console:private:local"
PERSON = "console:local"
GARBAGE = ("I would rather not.", '{"ops": [{"op": "add"')  # no JSON, then cut off


async def cli(tmp_path: Path, server: FakeOpenAIServer, *args: str) -> Result:
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.url}
    argv = ["--data-dir", str(tmp_path / "data"), "--workspace", str(tmp_path / "workspace")]
    return await asyncio.to_thread(CliRunner().invoke, app, [*argv, *args], env=env)


async def chat(tmp_path: Path, server: FakeOpenAIServer, *lines: str) -> None:
    await chat_through_console(tmp_path, list(lines), config(**openai_provider(server.url)))


async def degraded_dream(tmp_path: Path, server: FakeOpenAIServer) -> dict[str, Any]:
    server.dream_script.extend(GARBAGE)
    result = await cli(tmp_path, server, "memory", "dream", "--chat", CHAT, "--json")
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)
    assert run["outcome"] == "degraded" and "rule extraction" in run["error"], run
    return run


def items(tmp_path: Path) -> list[MemoryItem]:
    store = SqliteStore(tmp_path / "data" / "nahida.db")
    try:
        return store.read_sync(lambda tx: tx.items.listed(None, kind=None, status=None, limit=100))
    finally:
        store.close()


def homes(tmp_path: Path) -> list[tuple[str, str, str]]:
    """Where the person lives, as memory holds it: (content, status, source), in order."""
    return sorted((i.content, i.status, i.source) for i in items(tmp_path) if "住在" in i.content)


async def test_a_degraded_dream_keeps_what_the_person_remembered_in_the_chat(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    await chat(tmp_path, openai_server, "我住在北京", "/memory remember 我住在上海")
    assert homes(tmp_path) == [
        ("住在北京", "superseded", "rule_extract"),
        ("我住在上海", "active", "user_explicit"),
    ]
    await degraded_dream(tmp_path, openai_server)
    assert homes(tmp_path) == [
        ("住在北京", "superseded", "rule_extract"),
        ("我住在上海", "active", "user_explicit"),
    ]


async def test_a_degraded_dream_keeps_what_an_admin_remembered_on_the_cli(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    await chat(tmp_path, openai_server, "我住在北京")
    said = await cli(
        tmp_path,
        openai_server,
        "memory",
        "remember",
        "我住在上海",
        "--chat",
        CHAT,
        "--user",
        PERSON,
    )
    assert said.exit_code == 0, said.output
    await degraded_dream(tmp_path, openai_server)
    assert homes(tmp_path) == [
        ("住在北京", "superseded", "rule_extract"),
        ("我住在上海", "active", "human_edit"),
    ]


async def test_the_fallback_does_not_replay_what_live_extraction_read(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    await chat(tmp_path, openai_server, "我住在北京", "我住在上海", "我喜欢乌龙茶")
    before = items(tmp_path)
    run = await degraded_dream(tmp_path, openai_server)
    assert run["turns"] >= 6 and run["report"] == []  # read, and nothing proposed again
    assert items(tmp_path) == before


# -- every other path that replaces a memory ------------------------------------------------------


async def test_an_old_history_import_does_not_replace_what_was_said_since(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    await chat(tmp_path, openai_server, "我住在上海")
    old = {"chat": CHAT, "user": "local", "text": "我住在北京", "time": "2024-04-01T10:00:00Z",
           "message_id": "old-1", "role": "user"}  # fmt: skip
    lines = tmp_path / "old.jsonl"
    lines.write_text(json.dumps(old, ensure_ascii=False) + "\n", encoding="utf-8")
    result = await cli(tmp_path, openai_server, "history", "import", str(lines), "--extract")
    assert result.exit_code == 0, result.output
    assert homes(tmp_path) == [("住在上海", "active", "rule_extract")]


async def test_a_review_accepted_after_a_correction_does_not_undo_it(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url), memory={"commit_mode": "manual_review"})
    await chat_through_console(tmp_path, ["我住在北京", "/memory remember 我住在上海"], cfg)
    listed = await cli(tmp_path, openai_server, "memory", "review", "--json")
    (waiting,) = json.loads(listed.stdout)
    assert waiting["content"] == "住在北京"
    accepted = await cli(tmp_path, openai_server, "memory", "review", "accept", waiting["id"])
    (explicit,) = [i for i in items(tmp_path) if i.source == "user_explicit"]
    assert (
        accepted.stdout == f"rejected {waiting['id']}: {explicit.id} is newer than this evidence\n"
    )
    assert homes(tmp_path) == [("我住在上海", "active", "user_explicit")]


def test_no_model_or_rule_rewrites_or_archives_what_a_person_stated(tmp_path: Path) -> None:
    """The dream's guards refuse this before the write path sees it; the write path refuses it
    too, for every other way a proposal may come (a review, a plugin, a later source)."""
    store = SqliteStore(tmp_path / "nahida.db")
    chat, person = ChatKey.parse(CHAT), UserKey.parse(PERSON)
    said = candidates.remembered("我住在上海", chat=chat, user=person)
    stated = store.write_sync(write.propose, write.prepare(said), "auto_full", PERSON)
    target = store.read_sync(lambda tx: tx.items.get(stated.item_id))
    assert target is not None and target.source == "user_explicit"
    later = Turn(9, "s_1", CHAT, "user", "我住在北京", moment(time.time() + 60), PERSON)
    fates = {}
    for op in ("update", "archive", "supersede"):
        dreamed = proposed.dreamed(
            op=op, kind="fact", content="住在北京", scope=target.scope, sensitivity="private",
            subject=PERSON, turns=[later], run_id="d_1", confidence=0.9, reason="x",
            target=target,
        )  # fmt: skip
        result = store.write_sync(write.propose, write.prepare(dreamed), "auto_full", "dream")
        fates[op] = result.outcome
    store.close()
    assert fates == {"update": "rejected", "archive": "rejected", "supersede": "superseded"}


async def test_a_cold_fact_is_dated_by_the_turns_it_sums_up_not_by_the_compaction(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    session = {"hot_size": 1, "compress_batch": 2, "warm_capacity": 2}
    cfg = config(**openai_provider(openai_server.url), session=session)
    await chat_through_console(tmp_path, ["记住我在青鸟项目组", "话题二", "话题三", "话题四"], cfg)
    assert openai_server.memory_requests("roll")
    with History(tmp_path / "data" / "nahida.db") as db:
        (cold,) = [
            i for i in db.items(Viewer(scopes=(f"user:{PERSON}",))) if i.source == "compress"
        ]
        ((through, said),) = db.sql(
            "SELECT s.through_turn, t.time FROM session_summaries AS s"
            " JOIN turns AS t ON t.id = s.through_turn"
        )
    (evidence,) = cold.evidence
    assert through and evidence.time == pytest.approx(said, abs=1e-5)  # a turn's time: µs


def test_a_platform_clock_running_ahead_does_not_block_a_correction(tmp_path: Path) -> None:
    """Turns carry the platform's time, corrections made now the bot's: a turn dated five
    minutes ahead is still older than what is corrected after it was received."""
    store = SqliteStore(tmp_path / "nahida.db")
    chat, person = ChatKey.parse(CHAT), UserKey.parse(PERSON)

    def propose(candidate: Candidate) -> str:
        result = store.write_sync(write.propose, write.prepare(candidate), "auto_safe", "x")
        return result.outcome

    ahead = time.time() + 300
    (said,) = extract("我住在北京", chat=chat, user=person, message_id="m1", turn_id=1, time=ahead)
    assert propose(said) == "created"
    fixed = candidates.proactive("我住在上海", "correction", chat=chat, user=person)
    assert propose(fixed) == "superseded"  # the model's memory_write, a moment later
    (again,) = extract("我住在广州", chat=chat, user=person, message_id="m2", turn_id=2, time=ahead)
    assert propose(again) == "superseded"
    edit = candidates.admin_edit("我住在深圳", chat=CHAT, user=PERSON)
    assert propose(edit) == "superseded"  # `nahida memory remember`
    store.close()


async def test_a_platform_clock_lagging_behind_does_not_block_a_correction(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    """The model's `memory_write` is dated by the message it answers, as the turns are: a
    correction said after it is newer however far the platform's clock lags the bot's."""
    openai_server.reply_tool_call(
        "memory_write", {"content": "我住在北京", "category": "knowledge"}
    )
    openai_server.reply_text("记下了。")
    router = build_model_router(config(**openai_provider(openai_server.url)))
    cfg = config(bot={"max_reply_delay": 0})  # the lag is not this test's business
    paths = Paths(None, tmp_path / "data", tmp_path / "workspace")
    app = App(cfg, paths, adapters=[Silent()], model=router)
    app.memory.working.schedule = None
    lag = datetime.now(UTC) - timedelta(minutes=5)
    try:
        for n, text in enumerate(["我在北京住了十年", "不对，我住在上海"]):  # the model writes
            said = envelope(text, time=lag + timedelta(seconds=n))  # test:private:u1
            await app.runner.handle(said)
    finally:
        app.memory.close()
        await router.aclose()
    assert homes(tmp_path) == [
        ("住在上海", "active", "rule_extract"),
        ("我住在北京", "superseded", "agent_proactive"),
    ]
