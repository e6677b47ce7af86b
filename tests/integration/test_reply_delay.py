"""`bot.max_reply_delay`: a message that waited too long gets an apology, not a stale answer (on
virtual time: the runner reads its clock)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from nahida.app import App, Paths
from nahida.clock import VirtualClock
from nahida.config import Config
from nahida.i18n import t
from nahida.providers.echo import EchoProvider
from nahida.providers.router import ModelRouter, resolve_routes
from tests.helpers import History, Recorder, envelope


def make_app(tmp_path: Path, **bot: object) -> tuple[App, Recorder, EchoProvider, VirtualClock]:
    recorder, echo = Recorder(), EchoProvider()
    model = ModelRouter({"echo": echo}, resolve_routes({}, {"echo": "m"}))
    cfg = Config.model_validate({"bot": bot})
    app = App(cfg, Paths(None, tmp_path / "d", tmp_path / "w"), adapters=[recorder], model=model)
    app.runner.clock = clock = VirtualClock(epoch=datetime.now(UTC).timestamp())
    return app, recorder, echo, clock


def now(clock: VirtualClock) -> datetime:
    return datetime.fromtimestamp(clock.time(), UTC)


@pytest.mark.parametrize("language", ["zh", "en"])
async def test_an_old_message_gets_the_apology_no_model_call_and_is_recorded(
    tmp_path: Path, language: str
) -> None:
    app, recorder, echo, clock = make_app(tmp_path, language=language, max_reply_delay=60)
    chat = "test:group:g1"
    old = now(clock)
    await clock.advance(60)
    try:
        await app.runner.handle(envelope("刚好", chat=chat, to_me=True, received=old))
        assert recorder.sent == ["echo: Alice: 刚好"]  # 60 s is not too late
        recorder.sent.clear()
        await clock.advance(1)  # received 61 s ago, answered only now
        await app.runner.handle(envelope("还在吗", chat=chat, to_me=True, received=old))
        assert recorder.sent == [t("reply_too_late", language)]  # type: ignore[arg-type]
        assert echo.calls == 1
        await app.runner.handle(envelope("/help", chat=chat, to_me=True, received=old))
        assert len(recorder.sent) == 2 and recorder.sent[1] != recorder.sent[0]  # commands answer
        await app.runner.handle(envelope("现在呢", chat=chat, to_me=True, received=now(clock)))
        assert recorder.sent[2] == "echo: Alice: 现在呢" and echo.calls == 2
        history = History(app.memory.store)
        session = history.sessions(chat, 1)[0]
        users = [(x.content, x.addressed) for x in history.turns(session.id) if x.role == "user"]
        assert users == [
            ("刚好", True),
            ("还在吗", True),
            ("现在呢", True),
        ]  # the late one stored as usual
    finally:
        app.memory.close()


async def test_zero_turns_the_apology_off(tmp_path: Path) -> None:
    app, recorder, echo, clock = make_app(tmp_path, max_reply_delay=0)
    old = now(clock)
    await clock.advance(2 * 3600)
    try:
        await app.runner.handle(envelope("hi", to_me=True, received=old))
        assert recorder.sent == ["echo: hi"] and echo.calls == 1
    finally:
        app.memory.close()
