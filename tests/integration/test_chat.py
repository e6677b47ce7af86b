"""End to end: console adapter → bus → runner → SQLite → real SDK → fake LLM server."""

from __future__ import annotations

from pathlib import Path

from nahida.i18n import t
from tests.fakes.llm_server import FakeAnthropicServer, FakeOpenAIServer
from tests.helpers import History, chat_through_console, config, openai_provider


def _db(tmp_path: Path) -> History:
    return History(tmp_path / "data" / "nahida.db")


async def test_no_model_still_answers_commands_and_says_what_to_set(tmp_path: Path) -> None:
    out, _ = await chat_through_console(tmp_path, ["你好", "/help"])
    lines = out.splitlines()
    assert lines[0] == t("no_model", "zh")
    assert "OPENAI_API_KEY" in lines[0]
    assert any(line.startswith("/new") for line in lines)
    assert any(line.startswith("/resume") for line in lines)


async def test_no_model_in_english(tmp_path: Path) -> None:
    out, _ = await chat_through_console(tmp_path, ["hello"], config(bot={"language": "en"}))
    assert out.strip() == t("no_model", "en")


async def test_reply_comes_from_the_model_with_persona_and_history(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url))
    out, _ = await chat_through_console(tmp_path, ["我叫小明", "我叫什么？"], cfg)
    assert out.splitlines() == ["echo: 我叫小明", "echo: 我叫什么？"]
    second = openai_server.requests[1].body
    roles = [m["role"] for m in second["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert "Nahida" in second["messages"][0]["content"]
    assert second["messages"][1]["content"] == "我叫小明"
    assert second["model"] == "m1"
    with _db(tmp_path) as db:
        sessions = db.sessions(None, 10)
        assert len(sessions) == 1
        assert sessions[0].title == "我叫小明"
        turns = db.turns(sessions[0].id)
        assert [(x.role, x.content) for x in turns] == [
            ("user", "我叫小明"),
            ("assistant", "echo: 我叫小明"),
            ("user", "我叫什么？"),
            ("assistant", "echo: 我叫什么？"),
        ]


async def test_provider_failure_apologises_records_and_keeps_going(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    openai_server.fail(500, times=10)
    cfg = config(**openai_provider(openai_server.url, max_retries=0))
    out, _ = await chat_through_console(tmp_path, ["第一句", "/sessions"], cfg)
    lines = out.splitlines()
    assert lines[0] == t("provider_failed", "zh")
    assert "第一句" in out  # /sessions still answered, listing the session
    with _db(tmp_path) as db:
        session = db.sessions(None, 1)[0]
        turns = db.turns(session.id)
        assert len(turns) == 1
        assert turns[0].error is not None and "ProviderServerError" in turns[0].error


async def test_new_and_resume_switch_sessions(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url))
    out, _ = await chat_through_console(
        tmp_path, ["第一个话题", "/new", "第二个话题", "/resume last", "回到第一个"], cfg
    )
    assert t("new_session", "zh") in out
    with _db(tmp_path) as db:
        sessions = db.sessions(None, 10)
        titles = sorted(s.title for s in sessions)
        assert titles == ["第一个话题", "第二个话题"]
        first = next(s for s in sessions if s.title == "第一个话题")
        contents = [x.content for x in db.turns(first.id)]
        assert contents[-2:] == ["回到第一个", "echo: 回到第一个"]
    # the model saw the first session's history after /resume
    last = openai_server.chat_requests[-1].body["messages"]
    assert [m["content"] for m in last[1:]] == ["第一个话题", "echo: 第一个话题", "回到第一个"]


async def test_anthropic_provider_from_yaml(
    tmp_path: Path, anthropic_server: FakeAnthropicServer
) -> None:
    cfg = config(
        providers={
            "claude": {
                "type": "anthropic",
                "base_url": anthropic_server.url,
                "api_key": "sk-ant-test",
                "model": "claude-test",
            }
        }
    )
    out, _ = await chat_through_console(tmp_path, ["hi there"], cfg)
    assert out.strip() == "echo: hi there"
    body = anthropic_server.requests[0].body
    assert body["model"] == "claude-test"
    assert "Nahida" in body["system"]


async def test_memory_works_without_a_model(tmp_path: Path) -> None:
    out, _ = await chat_through_console(tmp_path, ["我喜欢乌龙茶", "/memory list"])
    lines = out.splitlines()
    assert lines[0] == t("no_model", "zh")
    assert any(line.endswith("喜欢乌龙茶") and " · preference · " in line for line in lines[1:])


async def test_interactive_console_prompts_and_waits_for_each_reply(tmp_path: Path) -> None:
    import io

    from nahida.adapters.console.adapter import ConsoleAdapter
    from nahida.app import Paths, console_app
    from nahida.config import Config

    out = io.StringIO()
    console = ConsoleAdapter(
        stdin=io.StringIO("你好\n/new\n"), stdout=out, interactive=True, user_name="你"
    )
    app = console_app(Config(), Paths(None, tmp_path / "d", tmp_path / "w"), console)
    await app.run()
    assert out.getvalue() == (
        f"你 > Nahida > {t('no_model', 'zh')}\n你 > Nahida > {t('new_session', 'zh')}\n你 > \n"
    )


async def test_memory_is_kept_and_recalled(tmp_path: Path, openai_server: FakeOpenAIServer) -> None:
    cfg = config(**openai_provider(openai_server.url))
    lines = ["我喜欢乌龙茶", "/memory search 乌龙茶", "我喜欢喝什么？"]
    out, _ = await chat_through_console(tmp_path, lines, cfg)
    replies = out.splitlines()
    assert replies[0] == "echo: 我喜欢乌龙茶"
    assert "乌龙茶" in replies[1]  # the extracted preference, found by the store's search
    injected = openai_server.requests[1].body["messages"][1]["content"]
    assert "喜欢乌龙茶" in injected and "[m_" in injected  # recalled as a memory item
    with _db(tmp_path) as db:
        (session,) = db.sessions(None, 10)
        assert [t.content for t in db.turns(session.id)][::2] == ["我喜欢乌龙茶", "我喜欢喝什么？"]
