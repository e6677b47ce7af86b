"""Per-chat rate limit in the runner: over the limit a chat hears one notice, nothing is lost."""

from __future__ import annotations

from pathlib import Path

from nahida.app import App, Paths
from nahida.config import Config
from nahida.i18n import t
from nahida.providers.echo import EchoProvider
from nahida.providers.router import ModelRouter, resolve_routes
from tests.helpers import History, Recorder, envelope


async def test_over_the_limit_one_notice_then_silence_and_everything_stored(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    model = ModelRouter({"echo": EchoProvider()}, resolve_routes({}, {"echo": "m"}))
    cfg = Config.model_validate(
        {"bot": {"rate_limit": {"per_chat_per_minute": 2}, "admins": ["test:boss"]}}
    )
    app = App(cfg, Paths(None, tmp_path / "d", tmp_path / "w"), adapters=[recorder], model=model)
    group = "test:group:g1"
    try:
        for i in range(5):
            await app.runner.handle(envelope(f"问题{i}", chat=group, to_me=True))
        await app.runner.handle(envelope("老板的问题", chat=group, user="test:boss", to_me=True))
        await app.runner.handle(envelope("别的群", chat="test:group:g2", to_me=True))
        assert recorder.sent == [
            "echo: Alice: 问题0",
            "echo: Alice: 问题1",
            t("rate_limited", "zh"),
            "echo: Alice: 老板的问题",  # bot admins are not limited
            "echo: Alice: 别的群",  # the limit is per chat
        ]
        history = History(app.memory.store)
        session = history.sessions(group, 1)[0]
        users = [x.content for x in history.turns(session.id) if x.role == "user"]
        assert users == ["问题0", "问题1", "问题2", "问题3", "问题4", "老板的问题"]
    finally:
        app.memory.close()
