"""`bot.max_reply_delay`: a message that waited too long gets an apology, not a stale answer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from nahida.app import App, Paths
from nahida.config import Config
from nahida.i18n import t
from nahida.providers.echo import EchoProvider
from nahida.providers.router import ModelRouter, resolve_routes
from tests.helpers import History, Recorder, envelope


def make_app(tmp_path: Path, **bot: object) -> tuple[App, Recorder, EchoProvider]:
    recorder, echo = Recorder(), EchoProvider()
    model = ModelRouter({"echo": echo}, resolve_routes({}, {"echo": "m"}))
    cfg = Config.model_validate({"bot": bot})
    app = App(cfg, Paths(None, tmp_path / "d", tmp_path / "w"), adapters=[recorder], model=model)
    return app, recorder, echo


@pytest.mark.parametrize("language", ["zh", "en"])
async def test_an_old_message_gets_the_apology_no_model_call_and_is_recorded(
    tmp_path: Path, language: str
) -> None:
    app, recorder, echo = make_app(tmp_path, language=language, max_reply_delay=60)
    chat = "test:group:g1"
    old = datetime.now(UTC) - timedelta(seconds=90)  # received then, answered only now
    try:
        await app.runner.handle(envelope("还在吗", chat=chat, to_me=True, received=old))
        assert recorder.sent == [t("reply_too_late", language)]  # type: ignore[arg-type]
        assert echo.calls == 0
        await app.runner.handle(envelope("/help", chat=chat, to_me=True, received=old))
        assert len(recorder.sent) == 2 and recorder.sent[1] != recorder.sent[0]  # commands answer
        await app.runner.handle(envelope("现在呢", chat=chat, to_me=True))
        assert recorder.sent[2] == "echo: Alice: 现在呢" and echo.calls == 1
        history = History(app.memory.store)
        session = history.sessions(chat, 1)[0]
        users = [(x.content, x.addressed) for x in history.turns(session.id) if x.role == "user"]
        assert users == [("还在吗", True), ("现在呢", True)]  # the late one stored as usual
    finally:
        app.memory.close()


async def test_zero_turns_the_apology_off(tmp_path: Path) -> None:
    app, recorder, echo = make_app(tmp_path, max_reply_delay=0)
    old = datetime.now(UTC) - timedelta(hours=2)
    try:
        await app.runner.handle(envelope("hi", to_me=True, received=old))
        assert recorder.sent == ["echo: hi"] and echo.calls == 1
    finally:
        app.memory.close()
