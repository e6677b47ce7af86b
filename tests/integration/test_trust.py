"""Trust: secrets never outlive the one message, and forgetting really forgets."""

from __future__ import annotations

import json
from pathlib import Path

from nahida.i18n import t
from nahida.memory import Viewer
from tests.fakes.llm_server import FakeOpenAIServer
from tests.helpers import History, chat_through_console, config, memory_block, openai_provider

KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz123456"
PASSWORD = "Hunter2Pass!"


def prompt_of(body: dict[str, object]) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


def everything(db: History) -> str:
    tables = [r[0] for r in db.sql("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return "\n".join(str(v) for t in tables for row in db.sql(f'SELECT * FROM "{t}"') for v in row)


async def test_secrets_are_refused_or_redacted_and_never_come_back(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url))
    lines = [f"记住我的key是 {KEY}", f"我的密码是 {PASSWORD}", "/new", "我的key和密码是什么？"]
    out, _ = await chat_through_console(tmp_path, lines, cfg)
    replies = out.splitlines()
    assert replies[0] == t("memory_secret_refused", "zh")  # as `/memory remember` answers
    assert replies[1] == f"echo: 我的密码是 {PASSWORD}"  # the model saw it once, in that turn
    assert len(openai_server.chat_requests) == 2  # the refused one never went to the model
    last = prompt_of(openai_server.chat_requests[-1].body)
    assert KEY not in last and PASSWORD not in last
    with History(tmp_path / "data" / "nahida.db") as db:
        stored = everything(db)
        titles = [s.title for s in db.sessions()]
        assert db.items(Viewer(scopes=("user:console:local",))) == []
    for secret in (KEY, PASSWORD, PASSWORD.lower()):
        assert secret not in stored  # turns, titles, FTS rows, candidates, items
    assert "[REDACTED:openai_key]" in stored and "[REDACTED:password]" in stored
    assert all(KEY not in title for title in titles)


async def test_forgotten_and_replaced_memories_stay_out_of_later_prompts(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url))
    await chat_through_console(tmp_path, ["I like hiking", "我喜欢乌龙茶"], cfg)
    with History(tmp_path / "data" / "nahida.db") as db:
        (hiking,) = [
            i for i in db.items(Viewer(scopes=("user:console:local",))) if "hik" in i.content
        ]
    lines = [
        f"/memory forget {hiking.id}",
        "我不喜欢乌龙茶了",
        "/new",
        "do I like hiking? 乌龙茶呢？",
    ]
    await chat_through_console(tmp_path, lines, cfg)
    last = prompt_of(openai_server.chat_requests[-1].body)
    assert "hiking" not in last.replace("do I like hiking?", "")  # neither the item nor the turn
    assert "不喜欢乌龙茶" in last  # the new value is there
    block = memory_block(openai_server.chat_requests[-1].body) or ""
    old = [line for line in block.splitlines() if "我喜欢乌龙茶" in line and "episode" not in line]
    assert old and all("earlier, since changed" in line for line in old)  # "以前…, 现在…"
    why, _ = await chat_through_console(tmp_path, [f"/memory why {hiking.id}"], cfg)
    assert t("memory_why_hidden", "zh", n=2) in why  # the turn and the bot's echo of it
    with History(tmp_path / "data" / "nahida.db") as db:
        kept = [t.content for s in db.sessions(None, 10) for t in db.turns(s.id)]
    assert "I like hiking" in kept  # still in the history, for audit and `session show`


async def test_an_over_long_message_gets_a_notice_and_no_model_call(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url), limits={"message_chars": 500})
    out, _ = await chat_through_console(
        tmp_path, ["好" * 100_000, "/memory remember " + "记" * 1200]
    )
    # defaults (4000 / 1000) apply in the run above; now the configured 500:
    out2, _ = await chat_through_console(tmp_path, ["长" * 600, "短消息"], cfg)
    assert out.splitlines()[0] == t("message_too_long", "zh", n=100_000, limit=4000)
    assert out.splitlines()[1] == t("memory_too_long", "zh", n=1200, limit=1000)
    assert out2.splitlines() == [t("message_too_long", "zh", n=600, limit=500), "echo: 短消息"]
    (request,) = openai_server.chat_requests  # only "短消息" went to the model
    assert prompt_of(request.body).count("长") <= 500  # the cut turn in the hot window at most
    with History(tmp_path / "data" / "nahida.db") as db:
        contents = [t.content for s in db.sessions(None, 10) for t in db.turns(s.id)]
        assert db.sql("SELECT count(*) FROM memory_items")[0][0] == 0
    assert "好" * 4000 + "…" in contents and "长" * 500 + "…" in contents  # kept, but bounded
    assert max(map(len, contents)) == 4001


def test_a_huge_import_line_is_skipped_without_reading_it_whole(tmp_path: Path) -> None:
    import tracemalloc

    from nahida.memory.history.importer import import_file
    from nahida.memory.store.sqlite import SqliteStore

    path = tmp_path / "huge.jsonl"
    good = '{"chat": "qq:group:1", "user": "1", "text": "hi", "time": "2024-01-01T00:00:00Z"'
    with path.open("w", encoding="utf-8") as out:
        out.write(good + ', "message_id": "a"}\n')
        out.write('{"chat": "qq:group:1", "text": "' + "x" * 30_000_000 + '"}\n')
        out.write(good + ', "message_id": "b"}\n')
    store = SqliteStore(tmp_path / "db.sqlite")
    tracemalloc.start()
    try:
        report = import_file(store, path, 0.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        store.close()
    assert report.imported == 2 and [b.line for b in report.bad] == [2]
    assert "longer than 1,048,576 bytes" in report.bad[0].error
    assert peak < 8_000_000  # the 30 MB line was never held


async def test_search_answers_only_with_what_is_relevant_and_finds_single_characters(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url))
    await chat_through_console(tmp_path, ["我喜欢乌龙茶", "我叫小明", "今天天气很好"], cfg)

    async def search(query: str) -> str:
        out, _ = await chat_through_console(tmp_path, [f"/memory search {query}"], cfg)
        return out

    def lines(out: str) -> str:  # the session's episode tells all of it, and may be found
        return "\n".join(x for x in out.splitlines() if t("memory_episode", "zh") not in x)

    oolong, tea = lines(await search("乌龙茶")), lines(await search("茶"))
    good = lines(await search("好"))
    assert "乌龙茶" in oolong and "小明" not in oolong  # no padding with the next exchange
    assert "喜欢乌龙茶" in tea and "小明" not in tea  # one character is found inside words
    assert "天气很好" in good
