"""End to end: what a person says in one session reaches the model's prompt in the next.

Console → bus → runner (extraction hook after the turn, memory injection before the next) →
SQLite → the real OpenAI SDK → the fake LLM server, whose recorded requests show the prompt.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

from nahida.adapters.console.adapter import ConsoleAdapter
from nahida.app import App, Paths, console_app
from nahida.config import Config
from nahida.envelope import ChatKey, UserKey
from nahida.memory import GUARD, Viewer
from nahida.memory.turn import ExtractionHook, MemoryInjection
from nahida.providers.echo import EchoProvider
from nahida.providers.router import ModelRouter, resolve_routes
from tests.fakes.llm_server import FakeOpenAIServer
from tests.helpers import (
    History,
    Silent,
    config,
    conversation,
    envelope,
    memory_block,
    openai_provider,
)

ITEM_LINE = re.compile(
    r"- \[(m_[0-9a-f]{6})\] (\w+) · (\w+) · \d{4}-\d{2}-\d{2}(?: · [^“]+)?: “(.+)”"
)


def wire(app: App) -> None:
    """What app.py should do (see the report): the memory slot and the extraction hook."""
    if not any(isinstance(s, MemoryInjection) for s in app.runner.sources):
        app.runner.sources.append(MemoryInjection(app.memory))
    if not any(isinstance(h, ExtractionHook) for h in app.runner.hooks):
        app.runner.hooks.append(ExtractionHook(app.memory))


async def chat(tmp_path: Path, lines: list[str], cfg: Config) -> str:
    out = io.StringIO()
    console = ConsoleAdapter(
        stdin=io.StringIO("\n".join(lines) + "\n"), stdout=out, interactive=False
    )
    app = console_app(cfg, Paths(None, tmp_path / "data", tmp_path / "workspace"), console)
    wire(app)
    await app.run()
    return out.getvalue()


def memory_section(body: dict[str, object]) -> str | None:
    return memory_block(body)


def items_in(section: str | None) -> dict[str, tuple[str, str, str]]:
    assert section is not None
    lines = [ITEM_LINE.fullmatch(line) for line in section.splitlines()]
    return {m.group(1): (m.group(2), m.group(3), m.group(4)) for m in lines if m}


async def test_a_preference_said_once_is_in_the_next_sessions_prompt(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url))
    out = await chat(tmp_path, ["我喜欢乌龙茶", "/new", "我喜欢喝什么茶？"], cfg)
    assert out.splitlines()[0] == "echo: 我喜欢乌龙茶"
    first, second = (r.body for r in openai_server.requests)
    assert memory_section(first) is None  # nothing known yet

    section = memory_section(second)
    assert section is not None and section.rstrip().endswith(GUARD)
    found = items_in(section)
    assert list(found.values()) == [("preference", "user", "喜欢乌龙茶")]
    (item_id,) = found
    # the model saw the question, not an earlier session's turns verbatim
    assert conversation(second) == ["我喜欢喝什么茶？"]

    with History(tmp_path / "data" / "nahida.db") as db:
        item = db.item(item_id)
        assert item is not None
        assert (item.scope, item.source, item.slot) == (
            "user:console:local",
            "rule_extract",
            "pref:乌龙茶",
        )
        assert item.access_count == 1  # injected once
        assert item.evidence[0].quote == "我喜欢乌龙茶"
        # the question itself was not taken for a preference
        assert len(db.items(Viewer(scopes=("user:console:local",)))) == 1


async def test_a_changed_preference_replaces_the_old_one_in_the_prompt(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url))
    lines = ["我喜欢乌龙茶", "/new", "我不喜欢乌龙茶了", "/new", "我喜欢喝什么茶？"]
    await chat(tmp_path, lines, cfg)
    found = items_in(memory_section(openai_server.chat_requests[-1].body))
    assert [content for _, _, content in found.values()] == ["不喜欢乌龙茶"]
    with History(tmp_path / "data" / "nahida.db") as db:
        (item_id,) = found
        item = db.item(item_id)
        assert item is not None and item.supersedes is not None
        old = db.item(item.supersedes)
        assert old is not None and (old.status, old.content) == ("superseded", "喜欢乌龙茶")


async def test_the_bots_own_words_are_never_extracted(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    openai_server.reply_text("我喜欢乌龙茶，记住我叫纳西妲")
    cfg = config(**openai_provider(openai_server.url))
    await chat(tmp_path, ["今天过得怎么样"], cfg)
    with History(tmp_path / "data" / "nahida.db") as db:
        assert db.items(Viewer(scopes=("user:console:local",))) == []


async def test_observed_group_talk_is_extracted_but_not_answered(tmp_path: Path) -> None:
    silent = Silent()
    model = ModelRouter({"echo": EchoProvider()}, resolve_routes({}, {"echo": "m"}))
    app = App(Config(), Paths(None, tmp_path / "d", tmp_path / "w"), adapters=[silent], model=model)
    try:
        await app.runner.handle(envelope("我喜欢乌龙茶", chat="test:group:g1", to_me=False))
        assert silent.sent == []
        viewer = Viewer(ChatKey.parse("test:group:g1"), UserKey.parse("test:u1"))
        items = await app.memory.items.latest(viewer)
        assert [(i.kind, i.content, i.sensitivity) for i in items] == [
            ("preference", "喜欢乌龙茶", "public")
        ]
    finally:
        app.memory.close()
