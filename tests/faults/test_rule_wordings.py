"""How people ask to be answered, in their own words: "以后还是用中文回答我吧" replaces the English
rule, style rules ("以后回答简短一点", "from now on keep answers short", "别用 emoji") are kept, and
the system prompt never says 默认用简体中文回答 beside a rule that asks for another language.
The wordings are scored over the `rules` family of tests/data/extraction_corpus.jsonl
(scripts/eval_extract.py; docs/rules.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nahida.envelope import ChatKey, UserKey
from nahida.memory import Viewer
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.write import write
from nahida.memory.write.extract import extract
from nahida.memory.write.statements import statements
from nahida.prompt import LANGUAGE_LINE
from tests.fakes.llm_server import FakeOpenAIServer
from tests.helpers import History, chat_through_console, config, openai_provider, system_of
from tests.unit.test_extraction_corpus import ev

ME = Viewer(scopes=("user:console:local",))


def read(text: str) -> list[tuple[str, str, str | None]]:
    return [(s.kind, s.content, s.slot) for s in statements(text)]


def test_the_rules_family_is_scored_on_its_own() -> None:
    lines = [line for line in ev.load() if line.family == "rules"]
    assert len(lines) >= 60
    assert sum(not line.expect for line in lines) >= 20  # lines that must not become rules
    slots = {item.slot for line in lines for item in line.expect}
    assert {"reply:language", "reply:style", "reply:emoji", "reply:tone"} <= slots
    outcomes, groups, _ = ev.evaluate(lines)
    rules = groups["rules"]
    assert rules.precision >= 0.97 and rules.recall >= 0.95, ev.details(outcomes)
    assert all(not o.predicted for o in outcomes if not o.line.expect), ev.details(outcomes)


def test_the_held_out_wordings_give_no_false_rule() -> None:
    """Wordings written after the patterns were settled (docs/rules.md gives their figures)."""
    lines = ev.load(ev.ROOT / "tests" / "data" / "extraction_heldout.jsonl")
    outcomes, _, kinds = ev.evaluate(lines)
    assert kinds["procedure"].fp == 0 and kinds["procedure"].recall >= 0.8, ev.details(outcomes)
    assert all(p.kind != "procedure" for o in outcomes if not o.line.expect for p in o.predicted), (
        ev.details(outcomes)
    )


@pytest.mark.parametrize(
    ("text", "slot"),
    [
        ("以后还是用中文回答我吧", "reply:language"),
        ("换回中文吧", "reply:language"),
        ("switch back to Chinese", "reply:language"),
        ("以后回答简短一点", "reply:style"),
        ("from now on keep answers short", "reply:style"),
        ("别用 emoji", "reply:emoji"),
        ("以后说话正式一点", "reply:tone"),
    ],
)
def test_the_reported_wordings_are_rules(text: str, slot: str) -> None:
    [(kind, _, found)] = read(text)
    assert (kind, found) == ("procedure", slot)


async def test_a_newer_language_rule_replaces_the_older_and_the_prompt_follows_it(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url))
    lines = ["from now on answer me in English", "hi", "以后还是用中文回答我吧", "你好"]
    lines += ["以后回答简短一点", "别用 emoji", "from now on keep answers short", "嗯"]
    await chat_through_console(tmp_path, lines, cfg)
    english, chinese, last = (system_of(openai_server.chat_requests[i].body) for i in (1, 3, -1))
    assert "wants answers in English" in english
    assert LANGUAGE_LINE["zh"] not in english  # no 默认用简体中文回答 beside an English rule
    assert "希望用中文回答" in chinese and "wants answers in English" not in chinese
    assert "keep answers short" in last and "回答简短一点" not in last  # the newer style
    assert "不要用emoji" in last.replace(" ", "")
    with History(tmp_path / "data" / "nahida.db") as db:
        rules = [i for i in db.items(ME) if i.kind == "procedure"]
        superseded = db.sql("SELECT content FROM memory_items WHERE status = 'superseded'")
    assert sorted(r.slot or "" for r in rules) == ["reply:emoji", "reply:language", "reply:style"]
    assert {row[0] for row in superseded} == {"wants answers in English", "回答简短一点"}


async def test_without_a_language_rule_the_default_line_stays(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url))
    await chat_through_console(tmp_path, ["以后回答简短一点", "你好"], cfg)
    system = system_of(openai_server.chat_requests[-1].body)
    assert LANGUAGE_LINE["zh"] in system and "回答简短一点" in system


@pytest.mark.parametrize(
    ("first", "second", "now"),
    [
        ("from now on answer me in English", "以后还是用中文回答我吧", "希望用中文回答"),
        ("以后回答我都用英文", "换回中文吧", "用中文回答"),
        ("以后回答简短一点", "always give me detailed answers", "keep answers detailed"),
        ("别用 emoji", "from now on, use more emoji", "use more emoji"),
    ],
)
def test_a_members_newer_rule_replaces_their_older_one_in_a_group(
    store: SqliteStore, first: str, second: str, now: str
) -> None:
    group, member = ChatKey.parse("qq:group:100"), UserKey.parse("qq:alice")
    for text in (first, second):
        for candidate in extract(text, chat=group, user=member):
            store.write_sync(write.propose, write.prepare(candidate), "auto_safe", "rule_extract")
    visibility = Viewer(scopes=("user:qq:alice", "chat:qq:group:100")).visibility()
    rules = store.read_sync(
        lambda tx: tx.items.listed(visibility, kind="procedure", status="active", limit=10)
    )
    assert [(r.scope, r.content) for r in rules] == [("user:qq:alice", now)]
