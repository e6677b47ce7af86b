"""`/memory dream [pause|resume]` on a real migrated SQLite, without a model: who may, pausing,
and the one-message summary of a run."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from nahida.commands import memory as memory_commands
from nahida.commands.dream import summary
from nahida.commands.router import CommandContext, CommandRouter
from nahida.envelope import Role
from nahida.i18n import Language, t
from nahida.memory import DreamRun, MemoryService, NewTurn, Proposal
from tests.helpers import envelope

ALICE, BOB = "test:alice", "test:bob"
GROUP, DM = "test:group:g1", "test:private:alice"


async def send(
    memory: MemoryService,
    text: str,
    *,
    chat: str = GROUP,
    role: Role = Role.MEMBER,
    admin: bool = False,
    lang: Language = "zh",
) -> str:
    router = CommandRouter()
    memory_commands.register(router)
    ctx = CommandContext(envelope(text, chat=chat, user=ALICE, role=role), lang, admin, memory)
    return await router.dispatch(ctx, text)


@pytest.mark.parametrize("text", ["/memory dream", "/memory dream pause", "/memory dream resume"])
async def test_a_plain_group_member_is_refused(memory: MemoryService, text: str) -> None:
    assert await send(memory, text) == t("memory_dream_denied", "zh")
    assert await send(memory, text, lang="en") == t("memory_dream_denied", "en")
    assert await send(memory, text, chat=DM) == t("memory_dream_denied", "zh")
    assert not await memory.dreams.paused(GROUP)


async def test_without_a_model_an_admin_hears_so_in_one_line(memory: MemoryService) -> None:
    reply = await send(memory, "/memory dream", role=Role.ADMIN)
    assert reply == t("memory_dream_no_model", "zh") and "\n" not in reply
    assert await send(memory, "/memory dream", admin=True, chat=DM, lang="en") == t(
        "memory_dream_no_model", "en"
    )
    assert await memory.dreams.runs() == []


async def test_pause_and_resume_by_a_group_owner(memory: MemoryService) -> None:
    now = time.time()
    for n in range(2):
        await memory.sessions.record(NewTurn(GROUP, "user", f"第{n}句", now + n, speaker=BOB))
    assert [d.chat for d in await memory.dreams.due(min_turns=1)] == [GROUP]
    reply = await send(memory, "/memory dream pause", role=Role.OWNER)
    assert reply == t("memory_dream_paused_now", "zh") and "/memory dream resume" in reply
    assert await memory.dreams.paused(GROUP)
    assert await memory.dreams.due(min_turns=1) == []  # a scheduled run leaves it alone
    assert await send(memory, "/memory dream resume", role=Role.OWNER) == t(
        "memory_dream_resumed", "zh"
    )
    assert not await memory.dreams.paused(GROUP)
    assert [d.chat for d in await memory.dreams.due(min_turns=1)] == [GROUP]
    assert await memory.dreams.due() == []  # fewer than min_new_turns (4) by default


async def test_an_unknown_action_prints_the_usage(memory: MemoryService) -> None:
    assert await send(memory, "/memory dream now", admin=True) == t("memory_dream_usage", "zh")


def test_usage_and_help_name_dream() -> None:
    for lang in ("zh", "en"):
        assert "/memory dream [pause|resume]" in t("memory_usage", lang)  # type: ignore[arg-type]
        assert "dream" in t("cmd_memory", lang)  # type: ignore[arg-type]


def _proposal(fate: str) -> Proposal:
    return Proposal("add", "fact", "x", "chat:test:group:g1", fate=fate)


def test_the_summary_counts_each_fate() -> None:
    fates = ["created", "created", "merged", "superseded", "updated", "archived"]
    fates += ["pending", "rejected", "rejected"]
    run = DreamRun(
        "d_1a2b3c",
        GROUP,
        "command",
        time.time(),
        turns=7,
        applied=6,
        pending=1,
        rejected=2,
        outcome="ok",
        report=tuple(_proposal(f) for f in fates[:1]),  # the report keeps only the first ones
        fates=dict(Counter(fates)),
    )
    text = summary(run, "zh")
    assert text == t(
        "memory_dream_done",
        "zh",
        id="d_1a2b3c",
        turns=7,
        created=2,
        merged=1,
        superseded=2,
        archived=1,
        pending=1,
        rejected=2,
    )
    assert "\n" not in text
    english = summary(run, "en")
    assert "added 2, merged 1, superseded 2, archived 1, left for review 1, rejected 2" in english
    assert "d_1a2b3c" in english


def test_the_summary_of_a_skipped_busy_or_failed_run() -> None:
    now = time.time()
    assert summary(None, "en") == t("memory_dream_busy", "en")
    nothing = DreamRun("", GROUP, "command", now, outcome="skipped", error="no new turns")
    assert summary(nothing, "en") == "Nothing new to dream."
    paused = DreamRun("", GROUP, "command", now, outcome="skipped", error="paused")
    assert summary(paused, "zh") == t("memory_dream_paused", "zh")
    failed = DreamRun("d_9", GROUP, "command", now, outcome="failed", error="timeout")
    assert summary(failed, "en") == t("memory_dream_failed", "en", id="d_9", error="timeout")
