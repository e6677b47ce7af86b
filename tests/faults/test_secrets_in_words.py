"""Secrets said in words ("我的邮箱密码改成了 MyNewPa55 了", "pw: …", "password was changed to …",
"口令是 芝麻开门123", `mysql -uroot -pPASS`) never reach history, its index or a later prompt, and a
request to remember one is refused; ordinary talk about passwords ("我忘了密码怎么办", "password
reset link expired") is left alone. Measured over tests/data/secrets_corpus.jsonl by
scripts/eval_secrets.py (docs/secrets.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nahida.i18n import t
from nahida.memory import Viewer
from nahida.memory.core.safety import find_secrets, redact
from nahida.memory.core.secret_patterns import MAYBE
from tests.fakes.llm_server import FakeOpenAIServer
from tests.helpers import History, chat_through_console, config, openai_provider, script

ev = script("eval_secrets")
CORPUS = ev.load(chat=None)
WITH = [line for line in CORPUS if line.secret is not None and not line.known_miss]
WITHOUT = [line for line in CORPUS if line.secret is None]


def test_the_corpus_is_well_formed() -> None:
    assert len(WITH) >= 40 and len(WITHOUT) >= 40
    assert len({line.text for line in CORPUS}) == len(CORPUS), "a text appears twice"
    assert {line.lang for line in WITH} == {line.lang for line in WITHOUT} == {"zh", "en"}
    assert all(line.secret in line.text for line in WITH)


@pytest.mark.parametrize("line", WITH, ids=lambda line: f"line{line.number}")
def test_a_secret_said_in_words_is_taken_out(line: ev.Line) -> None:
    redacted = redact(line.text)
    assert line.secret not in redacted, redacted
    assert "[REDACTED:" in redacted
    assert find_secrets(redacted) == []  # and redacting again changes nothing


@pytest.mark.parametrize("line", WITHOUT, ids=lambda line: f"line{line.number}")
def test_talk_about_passwords_is_left_alone(line: ev.Line) -> None:
    assert find_secrets(line.text) == []


def test_precision_and_recall_over_the_corpus_and_ordinary_chat() -> None:
    """No false alarm anywhere; the only misses are those the corpus says it keeps."""
    groups, wrong = ev.evaluate(ev.load())
    assert [(line.text, got) for line, got in wrong if not line.known_miss] == []
    known = [line for line in CORPUS if line.known_miss]
    assert [line for line, _ in wrong] == known
    assert groups["all"].precision == 1.0 and groups["all"].recall >= 0.95
    assert groups["chat"].fp == 0 and groups["chat"].tn >= 400


def test_the_held_out_lines_miss_only_what_they_say() -> None:
    """Lines written after the patterns were settled (docs/secrets.md gives their figures)."""
    groups, wrong = ev.evaluate(ev.load(ev.HELDOUT, chat=None))
    assert [line.text for line, _ in wrong] == [
        line.text for line in ev.load(ev.HELDOUT, chat=None) if line.known_miss
    ]
    assert groups["all"].precision == 1.0 and groups["all"].tp + groups["all"].fn >= 10


def test_the_screen_still_passes_few_ordinary_lines() -> None:
    """Every message is screened before any detector runs: the new labels and commands must not
    let ordinary chat through (its URLs, keys and code talk pass already)."""
    lines = [line.text for line in ev.load() if line.source == "chat"]
    through = [text for text in lines if MAYBE.search(text)]
    assert len(through) <= len(lines) // 4, through


REPORTED = [
    ("我的邮箱密码改成了 MyNewPa55 了", "MyNewPa55"),
    ("pw: hunter2x", "hunter2x"),
    ("password was changed to Winter2025", "Winter2025"),
    ("口令是 芝麻开门123", "芝麻开门123"),
    ("mysql -uroot -pPASS", "-pPASS"),
]


async def test_the_reported_phrasings_never_reach_history_its_index_or_a_later_prompt(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    cfg = config(**openai_provider(openai_server.url))
    lines = [text for text, _ in REPORTED]
    lines += [
        "/memory remember " + REPORTED[0][0],
        "记住 " + REPORTED[3][0],
        "/new",
        "密码是什么来着？",
    ]
    out, _ = await chat_through_console(tmp_path, lines, cfg)
    replies = out.splitlines()
    assert replies[len(REPORTED)] == t("memory_secret_refused", "zh")  # /memory remember
    assert replies[len(REPORTED) + 1] == t("memory_secret_refused", "zh")  # "记住 …" in words
    last = json.dumps(openai_server.chat_requests[-1].body, ensure_ascii=False)
    with History(tmp_path / "data" / "nahida.db") as db:
        tables = [r[0] for r in db.sql("SELECT name FROM sqlite_master WHERE type = 'table'")]
        stored = "\n".join(
            str(v) for name in tables for row in db.sql(f'SELECT * FROM "{name}"') for v in row
        )
        assert db.items(Viewer(scopes=("user:console:local",))) == []
    for _, secret in REPORTED:
        assert secret not in stored  # turns, their index, titles, candidates, items
        assert secret not in last  # the prompt after /new: hot window, recall, summary
    assert stored.count("[REDACTED:password]") >= len(REPORTED)
