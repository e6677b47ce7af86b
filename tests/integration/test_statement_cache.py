"""The store keeps every statement a chat runs prepared: the migrations' statements (run once,
they keep their places in sqlean's cache) and the distinct statements of a busy mix of messages
(groups and private chats, answered and observed, statements worth remembering, old history
searched, a command) stay well inside the driver's statement cache. A statement that does not
fit is parsed and planned again at every run, which costs the store much of its CPU a message.
And SQLite keeps them: none of the mix's statements is
prepared again at its runs (a bound LIMIT made SQLite 3.50 do that at every run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nahida.app import App, Paths
from nahida.config import Config
from nahida.memory.store.sqlite import connection as connection_module
from nahida.memory.store.sqlite.connection import STATEMENT_CACHE, connect
from nahida.memory.store.sqlite.migrations import migrate
from nahida.providers.echo import EchoProvider
from nahida.providers.router import ModelRouter, resolve_routes
from tests.helpers import Silent, envelope

LINES = [
    "我喜欢乌龙茶",
    "以后叫我小明",
    "我们周五下午三点开会",
    "今天晚上一起去吃火锅吧",
    "I work at a bakery in Hangzhou",
    "昨天我们聊了什么？",
    "上次说的那家店叫什么",
    "记住我的生日是五月三日",
    "这个周末有什么安排",
    "你好",
]


def _prepared(conn: Any) -> list[tuple[str, int, int]] | None:
    """Each statement the connection holds prepared: its SQL, its runs and how often SQLite
    prepared it again (None: this SQLite has no `sqlite_stmt` table)."""
    try:
        return [tuple(r) for r in conn.execute("SELECT sql, run, reprep FROM sqlite_stmt")]
    except Exception:  # a build without SQLITE_ENABLE_STMTVTAB
        return None


def statements_of_the_migrations(path: Path) -> int:
    conn: Any = connect(path)
    conn.timings = {}  # counted from the first statement on
    try:
        migrate(conn)
        return len(conn.timings)
    finally:
        conn.close()


async def test_a_busy_mix_of_messages_fits_the_statement_cache(tmp_path: Path) -> None:
    once = statements_of_the_migrations(tmp_path / "fresh.db")
    model = ModelRouter({"echo": EchoProvider()}, resolve_routes({}, {"echo": "m"}))
    quiet = Silent()
    config = Config.model_validate({"bot": {"rate_limit": {"per_chat_per_minute": 0}}})
    app = App(config, Paths(None, tmp_path / "d", tmp_path / "w"), adapters=[quiet], model=model)
    db: Any = app.memory.store.db  # type: ignore[attr-defined]  # the SQLite store's
    db.time_statements()
    before = db.call(_prepared, write=False)
    chats = ["test:group:g1", "test:group:g2", "test:private:u1", "test:private:u2"]
    try:
        for round_ in range(4):  # past the hot window: older history is searched too
            for n, line in enumerate(LINES):
                for k, chat in enumerate(chats):
                    user = (
                        f"test:u{1 + (n + k) % 3}"
                        if "group" in chat
                        else chat.replace(":private:", ":")
                    )
                    observed = "group" in chat and (n + round_) % 3 == 0
                    await app.runner.handle(
                        envelope(f"{line} {round_}", chat=chat, user=user, to_me=not observed)
                    )
        await app.runner.handle(envelope("/memory search 火锅", chat=chats[0], user="test:u1"))
        distinct = db.statement_times()
        prepared = db.call(_prepared, write=False)
    finally:
        app.memory.close()
    assert quiet.sent  # answered
    assert once > 20 and len(distinct) > 30  # both counted
    assert once + len(distinct) <= STATEMENT_CACHE // 2, sorted(distinct)
    if before is None or prepared is None:
        pytest.skip("this SQLite build cannot tell which statements it prepared again")
    ran = {sql: (run, reprep) for sql, run, reprep in prepared}
    for sql, run, reprep in before:
        if sql in ran:
            ran[sql] = (ran[sql][0] - run, ran[sql][1] - reprep)
    prepared_again = {
        sql: counts for sql, counts in ran.items() if counts[0] >= 8 and counts[1] > 1
    }
    assert not prepared_again  # e.g. a bound LIMIT: SQLite 3.50 prepares it again at every run


def test_every_store_connection_is_opened_with_that_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[dict[str, Any]] = []
    real = connection_module.driver.connect

    def spy(*args: Any, **kwargs: Any) -> Any:
        opened.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(connection_module.driver, "connect", spy)
    connect(tmp_path / "spied.db").close()
    assert [kwargs.get("cached_statements") for kwargs in opened] == [STATEMENT_CACHE]
