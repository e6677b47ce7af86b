"""What people are told: a command typed for another bot in a shared group is not ours, and a
review answer says what accepting really did (an archive is no new memory)."""

from __future__ import annotations

from pathlib import Path

from nahida.app import App, Paths
from nahida.commands import memory as memory_commands
from nahida.commands.router import CommandContext, CommandRouter
from nahida.config import Config
from nahida.envelope import ChatKey, UserKey
from nahida.i18n import t
from nahida.memory import Candidate, MemoryService, Viewer
from nahida.providers.echo import EchoProvider
from nahida.providers.router import ModelRouter, resolve_routes
from tests.helpers import Silent, config, envelope

GROUP = "test:group:g1"


def app_in(tmp_path: Path, cfg: Config | None = None) -> tuple[App, Silent]:
    silent = Silent()
    model = ModelRouter({"echo": EchoProvider()}, resolve_routes({}, {"echo": "m"}))
    paths = Paths(None, tmp_path / "d", tmp_path / "w")
    return App(cfg or Config(), paths, adapters=[silent], model=model), silent


async def test_a_command_in_a_group_is_ours_only_when_we_are_addressed(tmp_path: Path) -> None:
    app, silent = app_in(tmp_path)
    viewer = Viewer(ChatKey.parse(GROUP), UserKey.parse("test:u1"))
    try:
        await app.runner.handle(envelope("/new", chat=GROUP, to_me=False))
        await app.runner.handle(envelope("/memory remember 周五交周报", chat=GROUP, to_me=False))
        assert silent.sent == []  # typed for another bot, or for nobody: not answered
        assert await app.memory.sessions.current(GROUP) is not None  # /new did not act
        assert await app.memory.items.latest(viewer) == []  # nor did the remember
        await app.runner.handle(envelope("/memory remember 周五交周报", chat=GROUP, to_me=True))
        assert len(silent.sent) == 1
        assert [i.content for i in await app.memory.items.latest(viewer)] == ["周五交周报"]
    finally:
        app.memory.close()


async def test_a_group_that_always_hears_the_bot_takes_commands_without_a_mention(
    tmp_path: Path,
) -> None:
    app, silent = app_in(tmp_path, config(bot={"group_policy": "always"}))
    try:
        await app.runner.handle(envelope("/help", chat=GROUP, to_me=False))
        assert len(silent.sent) == 1 and "/memory" in silent.sent[0].plain_text
    finally:
        app.memory.close()


async def test_accepting_a_reviewed_archive_says_the_memory_was_archived(
    memory: MemoryService,
) -> None:
    router = CommandRouter()
    memory_commands.register(router)

    async def say(text: str, lang: str = "zh") -> str:
        ctx = CommandContext(envelope(text, chat=GROUP, to_me=True), lang, True, memory)  # type: ignore[arg-type]
        return await router.dispatch(ctx, text)

    scope = f"chat:{GROUP}"
    for lang, text in (("zh", "周五交周报"), ("en", "Standup is at ten")):
        extracted = Candidate(scope, "fact", text, "rule_extract", confidence=0.9)
        item_id = (await memory.items.propose(extracted, "test")).item_id
        assert item_id is not None
        archive = Candidate(
            scope=scope, kind="fact", content=text, source="llm_dream", op="archive", target=item_id
        )
        pending = await memory.items.propose(archive, "dream")
        assert pending.outcome == "pending" and pending.candidate_id is not None
        answer = await say(f"/memory review accept {pending.candidate_id}", lang)
        expected = t("memory_review_archived", lang, id=pending.candidate_id, item=item_id)
        assert answer == expected and "成为记忆" not in answer
        archived = await memory.items.get(item_id)
        assert archived is not None and archived.status == "archived"


async def test_a_day_said_in_english_is_shown_with_an_english_weekday(
    memory: MemoryService,
) -> None:
    router = CommandRouter()
    memory_commands.register(router)
    said_as = {"submit the report next Friday": " Fri", "下周五交周报": " 周五"}
    for text in said_as:
        said = f"/memory remember {text}"
        ctx = CommandContext(envelope(said, chat=GROUP, to_me=True), "en", False, memory)
        await router.dispatch(ctx, said)
    titles = {item.content: item.title for item in await memory.items.latest(None)}
    assert all(titles[text].endswith(weekday) for text, weekday in said_as.items()), titles
