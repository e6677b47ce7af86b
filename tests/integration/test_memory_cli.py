"""`nahida history import` and `nahida memory …`: the CLI contract benchmarks and tools rely on.

Most tests run the typer app in-process (CliRunner) against a real SQLite file; a few run the
installed entry point as a subprocess, the way scripts do.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from nahida.cli import app
from nahida.memory import Candidate, Evidence, MemoryService
from nahida.memory.write import write
from tests.helpers import History

ROOT = str(Path(__file__).resolve().parents[2])
G1, G2, DM = "qq:group:1", "qq:group:2", "qq:private:42"


def message(chat: str, user: str, text: str, time: str, mid: str) -> dict[str, Any]:
    return {"chat": chat, "user": user, "name": user.title(), "text": text, "time": time,
            "message_id": mid, "role": "user"}  # fmt: skip


HISTORY = [
    message(G1, "alice", "I adopted a puppy named Biscuit", "2024-04-01T10:00:00Z", "a1"),
    message(G1, "bob", "Biscuit is a great name! What breed?", "2024-04-01T10:01:00Z", "a2"),
    message(G1, "alice", "A corgi, he loves the beach", "2024-04-01T10:02:00Z", "a3"),
    message(G2, "carol", "my secret puppy plan in another group", "2024-04-01T11:00:00Z", "b1"),
    message(G1, "alice", "Biscuit chewed my shoes today", "2024-04-09T09:00:00Z", "a4"),
]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Runs `nahida --data-dir <tmp>/data ARGS` in-process; returns the typer Result."""
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def run(*args: str, data: str = "data") -> Result:
        return runner.invoke(app, ["--data-dir", str(tmp_path / data), *args])

    yield run


@pytest.fixture
def imported(cli: Any, tmp_path: Path) -> Any:
    result = cli("history", "import", str(write_jsonl(tmp_path / "h.jsonl", HISTORY)), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["imported"] == len(HISTORY)
    return cli


def search(cli: Any, *args: str) -> dict[str, Any]:
    result = cli("memory", "search", *args, "--json")
    assert result.exit_code == 0, result.output
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def test_history_import_reports_counts_and_bad_lines(cli: Any, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "h.jsonl", [*HISTORY, {"chat": G1}])
    with path.open("a", encoding="utf-8") as handle:
        handle.write("not json\n")
    first = cli("history", "import", str(path))
    assert first.exit_code == 0
    assert first.stdout.startswith("imported 5, duplicates 0, bad 2 in ")
    assert "turns/s" in first.stdout
    assert f"{path}:6: text is missing" in first.stderr
    assert f"{path}:7: not JSON" in first.stderr
    again = json.loads(cli("history", "import", str(path), "--json").stdout)
    assert {k: again[k] for k in ("imported", "duplicates", "bad")} == {
        "imported": 0,
        "duplicates": 5,
        "bad": 2,
    }
    assert [e["line"] for e in again["errors"]] == [6, 7]
    assert cli("history", "import", str(tmp_path / "missing.jsonl")).exit_code == 1


def test_search_json_shape(imported: Any) -> None:
    found = search(imported, "What breed is Biscuit?", "--chat", G1, "--user", "alice")
    assert set(found) == {"q", "chat", "user", "at", "mode", "hits", "took_ms"}
    assert found["mode"] == "lexical"  # no embedder in these tests
    assert found["took_ms"] >= 0
    hit = found["hits"][0]
    assert set(hit) == {"kind", "id", "text", "score", "scope", "message_ids", "time", "speaker"}
    assert hit["kind"] == "turn" and hit["scope"] == f"chat:{G1}"
    assert hit["id"].startswith("t_")
    assert all(len(h["message_ids"]) == 1 for h in found["hits"])
    assert {"a2", "a3"} <= {h["message_ids"][0] for h in found["hits"]}
    assert found["hits"][0]["time"].endswith("+00:00")


def test_search_sees_only_that_chat_and_nothing_after_the_moment(imported: Any) -> None:
    from_g1 = search(imported, "secret puppy plan", "--chat", G1)
    assert all(h["scope"] == f"chat:{G1}" for h in from_g1["hits"])
    assert "b1" not in {m for h in from_g1["hits"] for m in h["message_ids"]}
    from_g2 = search(imported, "secret puppy plan", "--chat", G2)
    assert [h["message_ids"] for h in from_g2["hits"]] == [["b1"]]
    before = search(imported, "Biscuit", "--chat", G1, "--at", "2024-04-02T00:00:00+00:00")
    ids = {m for h in before["hits"] for m in h["message_ids"]}
    assert "a4" not in ids and "a1" in ids
    assert before["at"] == "2024-04-02T00:00:00+00:00"
    today = search(imported, "what did Biscuit do today", "--chat", G1, "--at", "2024-04-09T20:00Z")
    assert today["hits"][0]["message_ids"] == ["a4"]


def test_search_finds_items_with_their_evidence(imported: Any, tmp_path: Path) -> None:
    db = History(tmp_path / "data" / "nahida.db")
    evidence = (Evidence(chat=G1, message_id="a3"),)
    fact = Candidate(G1 and f"chat:{G1}", "fact", "Alice's corgi is called Biscuit", "import",
                     confidence=0.9, sensitivity="public", evidence=evidence)  # fmt: skip
    asyncio.run(MemoryService(db.store).items.propose(fact, "test"))
    db.close()
    found = search(imported, "corgi Biscuit", "--chat", G1, "--user", "alice")
    items = [h for h in found["hits"] if h["kind"] == "item"]
    assert [(h["message_ids"], h["scope"]) for h in items] == [(["a3"], f"chat:{G1}")]
    assert search(imported, "corgi Biscuit", "--chat", G2)["hits"] == []


def test_search_finds_an_episode_only_in_its_chat(imported: Any, tmp_path: Path) -> None:
    db = History(tmp_path / "data" / "nahida.db")
    (session,) = db.sessions(G1, 1)
    stored = asyncio.run(
        MemoryService(db.store).episodes.add(
            session_id=session.id,
            chat=G1,
            summary="Alice told the group about her new corgi and his love of the sea",
            keywords=("puppy adoption", "corgi"),
            started_at=session.created_at.timestamp(),
            ended_at=session.updated_at.timestamp(),
            turn_count=session.turn_count,
        )
    )
    db.close()
    found = search(imported, "puppy adoption", "--chat", G1, "--user", "alice")
    episodes = [h for h in found["hits"] if h["kind"] == "episode"]
    assert [(h["id"], h["scope"], h["message_ids"]) for h in episodes] == [
        (stored.id, f"chat:{G1}", [])
    ]
    assert episodes[0]["text"] == stored.summary
    elsewhere = search(imported, "puppy adoption", "--chat", G2)
    assert "episode" not in {h["kind"] for h in elsewhere["hits"]}
    assert elsewhere["hits"]  # G2's own turn is found, not G1's episode
    table = imported("memory", "search", "corgi", "--chat", G1)
    assert table.exit_code == 0
    header, *rows = table.stdout.splitlines()
    assert header.split()[:5] == ["#", "score", "id", "time", "kind"]
    (row,) = [r for r in rows if stored.id in r]
    assert row.split()[5] == "episode" and f"chat:{G1}" in row  # the time is two words
    last = search(imported, "what did we talk about last time", "--chat", G1)
    assert last["hits"][0]["id"] == stored.id


def test_queries_file_gives_one_line_per_input(imported: Any, tmp_path: Path) -> None:
    queries = [
        {"id": "q1", "chat": G1, "user": "alice", "q": "What breed?"},
        {"id": 2, "chat": G2, "q": "puppy", "time": "2024-04-01T12:00:00Z"},
        {"id": "bad", "chat": "not-a-chat", "q": "x"},
        {"id": "early", "chat": G2, "q": "puppy", "time": "2024-04-01T10:59:00Z"},
    ]
    path = write_jsonl(tmp_path / "q.jsonl", queries)
    result = imported("memory", "search", "--queries", str(path), "--limit", "3", "--json")
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in result.stdout.splitlines()]
    assert [x["id"] for x in lines] == ["q1", 2, "bad", "early"]
    assert len(lines[0]["hits"]) <= 3 and lines[0]["took_ms"] >= 0
    assert [h["message_ids"] for h in lines[1]["hits"]] == [["b1"]]
    assert lines[2]["error"].startswith("line 3:")
    assert lines[3]["hits"] == []


def test_search_table_and_usage_errors(imported: Any) -> None:
    table = imported("memory", "search", "beach", "--chat", G1)
    assert table.exit_code == 0
    header, first = table.stdout.splitlines()[:2]
    assert header.split()[:4] == ["#", "score", "id", "time"]
    assert "Alice" in first and "beach" in first
    assert imported("memory", "search", "x").exit_code == 2  # no --chat
    assert imported("memory", "search", "x", "--chat", "qq:bad").exit_code == 2
    assert imported("memory", "search", "x", "--chat", G1, "--at", "soon").exit_code == 2
    assert imported("memory", "search", "--chat", G1).exit_code == 2  # neither query nor file


def test_a_private_chat_names_its_person(cli: Any) -> None:
    """`--chat console:private:local` sees `user:console:local` without `--user` (DESIGN §2)."""
    console = "console:private:local"
    made = cli("memory", "remember", "我最喜欢的茶是乌龙茶", "--chat", console, "--user", "local")
    assert made.exit_code == 0 and "in user:console:local" in made.stdout
    for user in ([], ["--user", "local"], ["--user", "console:local"]):
        found = search(cli, "乌龙茶", "--chat", console, *user)
        assert [h["text"] for h in found["hits"]] == ["我最喜欢的茶是乌龙茶"], user
        listed = json.loads(cli("memory", "list", "--chat", console, *user, "--json").stdout)
        assert [i["content"] for i in listed] == ["我最喜欢的茶是乌龙茶"], user
    assert (
        search(cli, "乌龙茶", "--chat", "console:group:g1", "--user", "console:local")["hits"] == []
    )  # a private item, in a group
    for wrong in (["--user", "someone"], ["--user", "qq:local"]):
        refused = cli("memory", "search", "乌龙茶", "--chat", console, *wrong)
        assert refused.exit_code == 2 and "error:" in refused.stderr, wrong


def test_remember_list_forget_why(cli: Any) -> None:
    made = json.loads(cli("memory", "remember", "爱喝乌龙茶", "--scope", "user:qq:42",
                          "--kind", "preference", "--json").stdout)  # fmt: skip
    assert made["outcome"] == "created" and made["scope"] == "user:qq:42"
    item_id = made["item_id"]
    group = cli("memory", "remember", "群规：周五聚餐", "--chat", G1, "--user", "42")
    assert group.exit_code == 0 and f"in chat:{G1}" in group.stdout
    private = cli("memory", "remember", "likes hiking", "--chat", DM, "--user", "42", "--json")
    assert json.loads(private.stdout)["scope"] == "user:qq:42"
    assert cli("memory", "remember", "x", "--scope", "nowhere").exit_code == 2
    key = "sk-" + "Ab3dEf9hIj2kLm4nOp6qRs8tUv0wXy1z"
    refused = cli("memory", "remember", f"the key is {key}", "--scope", "global")
    assert refused.exit_code == 1 and "not remembered" in refused.stderr

    everything = json.loads(cli("memory", "list", "--json").stdout)
    assert len(everything) == 3
    in_group = json.loads(cli("memory", "list", "--chat", G1, "--user", "42", "--json").stdout)
    assert [i["content"] for i in in_group] == ["群规：周五聚餐"]  # private items of 42 hidden
    mine = json.loads(cli("memory", "list", "--scope", "user:qq:42", "--json").stdout)
    assert {i["content"] for i in mine} == {"爱喝乌龙茶", "likes hiking"}

    assert cli("memory", "forget", item_id, "--reason", "test").stdout == f"archived {item_id}\n"
    assert cli("memory", "forget", item_id).exit_code == 1
    archived = json.loads(cli("memory", "list", "--status", "archived", "--json").stdout)
    assert [i["id"] for i in archived] == [item_id]
    why = json.loads(cli("memory", "why", item_id, "--json").stdout)
    assert why["item"]["status"] == "archived"
    assert [(e["action"], e["actor"]) for e in why["events"]] == [
        ("create", "cli"),
        ("archive", "cli"),
    ]
    assert why["events"][1]["reason"] == "test"
    assert "archive by cli · test" in cli("memory", "why", item_id).stdout
    assert cli("memory", "why", "m_000000").exit_code == 1


def test_review_lists_accepts_and_rejects(cli: Any, tmp_path: Path) -> None:
    db = History(tmp_path / "data" / "nahida.db")
    ids = []
    for text in ("Alice likes jazz", "Alice lives in Hangzhou"):
        candidate = Candidate(f"chat:{G1}", "fact", text, "rule_extract", confidence=0.8)
        prepared = write.prepare(candidate)
        ids.append(
            db.store.write_sync(write.propose, prepared, "manual_review", "rule").candidate_id
        )
    db.close()
    pending = json.loads(cli("memory", "review", "--json").stdout)
    assert [p["id"] for p in pending] == ids
    assert pending[0]["content"] == "Alice likes jazz"
    accepted = json.loads(cli("memory", "review", "accept", ids[0], "--json").stdout)
    assert accepted["outcome"] == "created" and accepted["item_id"].startswith("m_")
    assert cli("memory", "review", "reject", ids[1]).stdout.startswith(f"rejected {ids[1]}")
    assert cli("memory", "review", "accept", ids[1]).exit_code == 1
    assert cli("memory", "review", "maybe", ids[1]).exit_code == 2
    assert cli("memory", "review").stdout == "nothing to review\n"


def test_export_import_round_trip_is_lossless(cli: Any, tmp_path: Path) -> None:
    for text in ("乌龙茶 is the favourite", "meets on fridays", "allergic to peanuts"):
        assert cli("memory", "remember", text, "--scope", "user:qq:42").exit_code == 0
    cli("memory", "remember", "group rule one", "--chat", G1)
    first_id = json.loads(cli("memory", "list", "--json").stdout)[-1]["id"]
    cli("memory", "forget", first_id)
    exported = tmp_path / "e1.jsonl"
    assert cli("memory", "export", "-o", str(exported)).exit_code == 0
    lines = exported.read_text("utf-8").splitlines()
    assert len(lines) == 4 and {json.loads(x)["status"] for x in lines} == {"active", "archived"}

    loaded = json.loads(cli("memory", "import", str(exported), "--json", data="fresh").stdout)
    assert loaded == {"imported": 4, "duplicates": 0, "bad": 0, "errors": []}
    again = json.loads(cli("memory", "import", str(exported), "--json", data="fresh").stdout)
    assert (again["imported"], again["duplicates"]) == (0, 4)
    second = cli("memory", "export", data="fresh")
    assert second.stdout.splitlines() == lines
    scoped = cli("memory", "export", "--scope", f"chat:{G1}", data="fresh")
    assert [json.loads(x)["scope"] for x in scoped.stdout.splitlines()] == [f"chat:{G1}"]
    assert cli("memory", "export", "--scope", "nowhere", data="fresh").exit_code == 2
    found = search(cli, "peanuts", "--chat", DM, "--user", "42")  # imported items are indexed
    assert [h["kind"] for h in found["hits"]] == ["item"]


def test_import_reports_bad_lines(cli: Any, tmp_path: Path) -> None:
    good = {"id": "m_aaaaaa", "scope": "global", "kind": "fact", "content": "ok",
            "created_at": 1.0, "updated_at": 1.0}  # fmt: skip
    rows: list[Any] = [
        good,
        {"id": "m_bbbbbb", "scope": "galaxy", "kind": "fact", "content": "x"},
        {"id": "m_cccccc", "scope": "global", "kind": "fact", "content": "x", "status": "gone"},
        {**good, "id": "m_dddddd", "supersedes": "m_missing", "created_at": 2.0},
        [1, 2],
    ]
    result = cli("memory", "import", str(write_jsonl(tmp_path / "i.jsonl", rows)), "--json")
    report = json.loads(result.stdout)
    assert (report["imported"], report["bad"]) == (1, 4)
    assert [e["line"] for e in report["errors"]] == [2, 3, 4, 5]
    assert "supersedes unknown item m_missing" in report["errors"][2]["error"]


async def _nahida(cwd: Path, *args: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NAHIDA", "OPENAI"))}
    env["PYTHONPATH"] = ROOT
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "nahida", *args, cwd=cwd, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_entry_point_import_then_search(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "h.jsonl", HISTORY)
    code, out, err = await _nahida(tmp_path, "history", "import", str(path), "--json")
    assert code == 0, err
    assert json.loads(out)["imported"] == 5
    queries = write_jsonl(tmp_path / "q.jsonl", [{"id": 1, "chat": G1, "q": "corgi beach"}])
    code, out, err = await _nahida(
        tmp_path, "memory", "search", "--queries", str(queries), "--json"
    )
    assert code == 0, err
    (line,) = out.splitlines()
    assert json.loads(line)["hits"][0]["message_ids"] == ["a3"]


async def test_entry_point_remember_export_import(tmp_path: Path) -> None:
    code, out, err = await _nahida(
        tmp_path, "memory", "remember", "爱喝乌龙茶", "--scope", "user:qq:42"
    )
    assert code == 0, err
    assert out.startswith("created m_")
    code, out, err = await _nahida(tmp_path, "memory", "export", "-o", "items.jsonl")
    assert code == 0, err
    code, out, err = await _nahida(
        tmp_path, "--data-dir", "other", "memory", "import", "items.jsonl", "--json"
    )
    assert code == 0, err
    assert json.loads(out)["imported"] == 1
    code, _, err = await _nahida(tmp_path, "memory", "forget", "m_nothere")
    assert (code, err) == (1, "error: no active item m_nothere\n")


def test_a_large_import_draws_a_progress_bar_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nahida.cli.history import PROGRESS_FROM, Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    small = Progress()
    small(10, 20)  # a small import finishes before a bar would help
    small.close()
    assert screen.getvalue() == ""
    bar = Progress()
    bar(PROGRESS_FROM, 2 * PROGRESS_FROM)
    assert "importing" in screen.getvalue() and "50%" in screen.getvalue()
    bar(2 * PROGRESS_FROM, 2 * PROGRESS_FROM)
    bar.close()
    assert "100%" in screen.getvalue()


def test_cli_remember_reads_like_the_chat_command(cli: Any) -> None:
    """Issue 9: one path for `nahida memory remember` and `/memory remember`."""

    def remember(text: str) -> dict[str, Any]:
        made = cli("memory", "remember", text, "--scope", "user:qq:43", "--json")
        assert made.exit_code == 0, made.output
        result: dict[str, Any] = json.loads(made.stdout)
        return result

    first = remember("我喜欢乌龙茶")
    again = remember("我喜欢乌龙茶")
    changed = remember("我不喜欢乌龙茶了")
    assert (again["outcome"], again["item_id"]) == ("merged", first["item_id"])
    assert (changed["outcome"], changed["replaced"]) == ("superseded", first["item_id"])
    active = json.loads(cli("memory", "list", "--scope", "user:qq:43", "--json").stdout)
    assert [(i["kind"], i["content"]) for i in active] == [("preference", "我不喜欢乌龙茶了")]
    long = cli("memory", "remember", "记" * 1001, "--scope", "global")
    assert long.exit_code == 1 and "limits.item_chars" in long.stderr


def test_restore_and_purge(cli: Any) -> None:
    made = cli("memory", "remember", "暗号是紫藤萝瀑布", "--scope", "user:qq:42", "--json")
    item_id = json.loads(made.stdout)["item_id"]
    assert cli("memory", "restore", item_id).exit_code == 1  # active already
    assert "active already" in cli("memory", "restore", item_id).stderr
    cli("memory", "forget", item_id)
    assert cli("memory", "restore", item_id, "--reason", "by mistake").stdout == (
        f"restored {item_id}\n"
    )
    assert cli("memory", "restore", "m_000000").exit_code == 1

    refused = cli("memory", "purge", item_id)
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    assert cli("memory", "why", item_id).exit_code == 0
    purged = json.loads(cli("memory", "purge", item_id, "--yes", "--json").stdout)
    assert (purged["item_id"], purged["events"], purged["candidates"]) == (item_id, 3, 1)
    assert cli("memory", "why", item_id).exit_code == 1
    assert "紫藤萝" not in cli("memory", "list", "--status", "all").stdout
    assert cli("memory", "purge", item_id, "--yes").exit_code == 1
