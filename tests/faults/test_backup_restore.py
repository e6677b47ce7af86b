"""A backup holds the whole memory and gives it back: `nahida backup FILE`, `nahida restore FILE`.

Before, `memory export` / `import` carried items only: after a round trip a person "has no
profile", and rules, episodes and history were gone. Here a data dir holding every kind of memory
(history with its sessions, items of every scope with their audit trail, a replaced and a
forgotten one, rules, profiles, episodes, candidates waiting for review, a dream run, job runs,
vectors) is backed up and restored into a fresh data dir through the command line, and the
restored one answers every question the original did: the same hits for each query, viewer and
search mode, the same profiles and the same system prompt. Restoring twice changes nothing; over
other memory it is refused unless `--replace`, which keeps the old file; a file that is no
usable backup is refused before anything is touched. And a `memory import` whose every line is
bad exits 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import shutil
import time
import zipfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nahida.app import App, Paths, build_model_router, memory_for
from nahida.config import Config
from nahida.memory import Actor, MemoryService, Query, Viewer
from nahida.memory.history.importer import import_lines
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.store.sqlite.check import counts, digest, opened
from nahida.memory.write import candidates
from tests.fakes.llm_server import FakeOpenAIServer
from tests.faults.entry import Ran, nahida
from tests.helpers import Recorder, envelope, system_of

G1, G2, DM = "onebot:group:1", "onebot:group:2", "onebot:private:42"
ALICE, BOB, CAROL = "onebot:42", "onebot:43", "onebot:44"
DAY = "2024-04-0{}T{}:00Z"


def said(chat: str, user: str, text: str, when: str, mid: str) -> str:
    return json.dumps(
        {"chat": chat, "user": user.split(":")[1], "text": text, "time": when, "message_id": mid},
        ensure_ascii=False,
    )


HISTORY = [
    said(G1, ALICE, "我养了一只叫 Biscuit 的柯基", DAY.format(1, "10:00"), "a1"),
    said(G1, BOB, "Biscuit 真可爱，它喜欢去海边吗", DAY.format(1, "10:01"), "a2"),
    said(G1, ALICE, "我喜欢乌龙茶，每天下午都喝", DAY.format(1, "10:02"), "a3"),
    said(G1, BOB, "本群周五下午发周报", DAY.format(2, "09:00"), "a4"),
    said(G2, CAROL, "我住在北京，周末去爬香山", DAY.format(2, "11:00"), "b1"),
    said(G2, CAROL, "下周一的会议改到十点", DAY.format(3, "11:00"), "b2"),
    said(DM, ALICE, "我的生日是五月三号", DAY.format(3, "12:00"), "c1"),
    said(DM, ALICE, "提醒我明天交报告", DAY.format(4, "12:00"), "c2"),
]
REMEMBERED = [  # (text, kind, scope)
    ("机器人的名字叫纳西妲", "fact", "global"),
    ("本群每周五发周报", "fact", f"chat:{G1}"),
    ("以后回答都用英文", "procedure", f"chat:{G1}"),
    ("回答我的时候简短一点", "procedure", f"user:{ALICE}"),
    ("Alice 住在北京", "fact", f"user:{ALICE}"),
    ("Alice 住在上海", "fact", f"user:{ALICE}"),  # replaces the one before
    ("Carol 喜欢爬山", "fact", f"user:{CAROL}"),
    ("这件事只是暂时的", "fact", f"chat:{G2}"),  # forgotten below
]
QUERIES = ["乌龙茶", "Biscuit 柯基", "住在哪里", "周报", "会议", "生日", "英文", "上次我们聊到哪了"]
VIEWERS = {
    "alice-in-g1": Viewer.parse(G1, ALICE),
    "bob-in-g1": Viewer.parse(G1, BOB),
    "carol-in-g2": Viewer.parse(G2, CAROL),
    "alice-alone": Viewer.parse(DM),
    "admin": Viewer.admin(["global", f"user:{ALICE}", f"chat:{G2}"]),
}
MODES = ("lexical", "vector", "hybrid")
KINDS = (  # what a backup must carry, by table: each holds rows in the original
    "memory_items",
    "memory_events",
    "profile_entries",
    "episodes",
    "sessions",
    "turns",
    "memory_candidates",
    "dream_runs",
    "job_runs",
    "embeddings",
)


def settings(server: FakeOpenAIServer) -> dict[str, Any]:
    return {
        "providers": {
            "main": {"type": "openai", "base_url": server.url, "api_key": "sk-test", "model": "m1"}
        },
        "models": {"chat": "main/m1", "embed": "main/bigram-64"},
        "memory": {"embedding": {"backend": "provider"}},
    }


@dataclass
class Dir:
    """A data dir and its workspace, with the config both are used with."""

    root: Path
    config: Config

    @property
    def paths(self) -> Paths:
        return Paths(None, self.root / "data", self.root / "workspace")

    @property
    def database(self) -> Path:
        return self.paths.database


async def populate(memory: MemoryService, server: FakeOpenAIServer) -> None:
    """Every kind of memory, each written the way the bot writes it."""
    await asyncio.to_thread(  # history; its statements wait for review as candidates
        import_lines, memory.store, HISTORY, 3600.0, mode="manual_review", extract=True
    )
    ids = []
    for text, kind, scope in REMEMBERED:
        edit = candidates.admin_edit(text, kind=kind, scope=scope)
        ids.append((await memory.items.propose(edit, Actor.cli().label)).item_id)
    assert ids[-1] is not None
    await memory.items.forget(ids[-1], Actor.cli(), "no longer true")
    await memory.profiles.update(
        ALICE, "身份与背景", "在上海做设计", actor="t", sensitivity="public"
    )
    await memory.profiles.update(ALICE, "工作与沟通方式", "喜欢先看结论", actor="t")
    await memory.profiles.update(CAROL, "目标与方向", "想跑完一场马拉松", actor="t")
    for chat, summary, words in (
        (G1, "Alice 介绍了她的柯基 Biscuit，大家约定周五发周报", ["柯基", "周报"]),
        (G2, "Carol 说了周末爬香山和会议改时间", ["香山", "会议"]),
    ):
        session = (await memory.sessions.latest(chat))[-1]  # a finished one
        await memory.episodes.add(
            session_id=session.id,
            chat=chat,
            summary=summary,
            keywords=words,
            started_at=session.created_at.timestamp(),
            ended_at=session.updated_at.timestamp(),
            turn_count=session.turn_count,
        )
    server.reply_text('{"ops": []}')  # the dream model proposes nothing this time
    assert await memory.dreams.run(G1) is not None
    run = await memory.runs.start("embedding_upkeep", "test")
    await memory.runs.finish(run, "ok", {"embedded": 3})
    report = await memory.embeddings.catch_up()
    assert report.embedded > 0


@contextlib.asynccontextmanager
async def memory_of(where: Dir) -> AsyncIterator[MemoryService]:
    """Memory as the bot opens it, with the models of its config; closed after."""
    model = build_model_router(where.config)
    memory = memory_for(where.config, where.paths, model)
    try:
        yield memory
    finally:
        await memory.embeddings.aclose()
        await model.aclose()
        memory.close()


@pytest.fixture
async def original(tmp_path: Path, openai_server: FakeOpenAIServer) -> Dir:
    made = Dir(tmp_path / "original", Config.model_validate(settings(openai_server)))
    async with memory_of(made) as memory:
        await populate(memory, openai_server)
    return made


def restored_beside(original: Dir, tmp_path: Path) -> Dir:
    return Dir(tmp_path / "restored", original.config)


def cli(where: Dir, *args: str) -> Ran:
    return nahida(where.root.parent, "--data-dir", str(where.paths.data_dir), *args)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def answers(where: Dir, at: float) -> dict[str, Any]:
    """Every question asked of a data dir at the moment `at`, with its answer."""
    found: dict[str, Any] = {}
    async with memory_of(where) as memory:
        for name, viewer in VIEWERS.items():
            for text in QUERIES:
                for mode in MODES:
                    query = Query(text, viewer, at=at, mode=mode)  # type: ignore[arg-type]
                    found[f"{name} {text} {mode}"] = await memory.recall.search(query)
            found[f"{name} profile"] = await memory.profiles.card(viewer)
            found[f"{name} rules"] = await memory.items.latest(viewer, kind="procedure")
        for person in (ALICE, BOB, CAROL):
            found[f"{person} bullets"] = await memory.profiles.entries(person, public_only=False)
        found["pending"] = await memory.items.pending(Actor.cli(), 100)
        found["dream runs"] = await memory.dreams.runs(limit=10)
        found["job runs"] = await memory.runs.latest()
    return found


async def prompt(where: Dir, server: FakeOpenAIServer) -> str:
    """The system prompt the bot builds for Alice in the first group, the time line left out."""
    chat = Recorder()
    chat.platform = "onebot"
    app = App(where.config, where.paths, adapters=[chat])
    try:
        asked = len(server.requests)
        message = envelope("我住在哪里？喝什么茶？", chat=G1, user=ALICE, message_id="p1")
        await app.runner.handle(message)
        answering = [r for r in server.requests[asked:] if r.path.endswith("/chat/completions")]
        request = answering[0]  # the answer's (background work may follow)
    finally:
        await app.model.aclose()
        await app.memory.embeddings.aclose()
        app.memory.close()
    return "\n".join(x for x in system_of(request.body).splitlines() if "Now:" not in x)


async def test_a_restored_data_dir_answers_every_query_the_original_did(
    original: Dir, tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    backup = tmp_path / "nahida-backup.zip"
    made = cli(original, "backup", str(backup), "--json")
    assert made.code == 0, made
    manifest = json.loads(made.out)
    assert (manifest["format"], manifest["version"]) == ("nahida-backup", 1)
    assert all(manifest["counts"][kind] > 0 for kind in KINDS), manifest["counts"]
    assert backup.stat().st_mode & 0o077 == 0  # for its owner's eyes only
    restored = restored_beside(original, tmp_path)
    done = cli(restored, "restore", str(backup))
    assert done.code == 0, done
    assert done.out.startswith(f"restored {backup} (made ")
    with opened(original.database) as one, opened(restored.database) as other:
        assert counts(one) == counts(other) == manifest["counts"]
        assert digest(one) == digest(other)
    at = time.time() + 3600  # one moment for both: recency is scored from it
    before, after = await answers(original, at), await answers(restored, at)
    assert after == before
    hits = [hit for key, found in before.items() if key.endswith(MODES) for hit in found]
    assert {hit.kind for hit in hits} == {"item", "turn", "episode"}
    assert any(before[f"alice-in-g1 乌龙茶 {mode}"] for mode in MODES)
    assert before["alice-in-g1 乌龙茶 vector"]  # vectors came along: no re-embedding
    assert before["alice-in-g1 rules"] and before[f"{ALICE} bullets"] and before["pending"]
    shown = cli(restored, "profile", "show", ALICE)
    assert shown.code == 0 and "在上海做设计" in shown.out, shown  # not "has no profile"
    # the workspace is plain files, copied as they are (docs/backup.md): the same persona
    shutil.copytree(original.paths.workspace, restored.paths.workspace)
    assert await prompt(restored, openai_server) == await prompt(original, openai_server)


async def test_restoring_twice_changes_nothing(original: Dir, tmp_path: Path) -> None:
    backup = tmp_path / "b.zip"
    assert cli(original, "backup", str(backup)).code == 0
    restored = restored_beside(original, tmp_path)
    assert cli(restored, "restore", str(backup)).code == 0
    was = sha(restored.database)
    again = cli(restored, "restore", str(backup))
    assert again.code == 0, again
    assert again.out.endswith("nothing changed\n")
    assert sha(restored.database) == was
    assert sorted(p.name for p in restored.paths.data_dir.iterdir()) == ["nahida.db"]


async def test_restoring_over_other_memory_is_refused_unless_replace_which_keeps_it(
    original: Dir, tmp_path: Path
) -> None:
    backup = tmp_path / "b.zip"
    assert cli(original, "backup", str(backup)).code == 0
    other = restored_beside(original, tmp_path)
    assert cli(other, "memory", "remember", "另一份记忆", "--scope", "global").code == 0
    theirs = sha(other.database)
    refused = cli(other, "restore", str(backup))
    assert refused.code == 1, refused
    (line,) = refused.error_lines
    assert line.startswith(f"error: {other.database} holds other memory (sessions 0, ")
    assert f"nahida restore {backup} --replace" in line
    assert sha(other.database) == theirs
    replaced = cli(other, "restore", str(backup), "--replace")
    assert replaced.code == 0, replaced
    (kept,) = [p for p in other.paths.data_dir.iterdir() if ".replaced-" in p.name]
    assert replaced.out.splitlines()[-1] == f"the database it replaced is kept as {kept}"
    assert sha(kept) == theirs
    with opened(original.database) as one, opened(other.database) as two:
        assert digest(one) == digest(two)


async def test_a_damaged_data_dir_is_restored_with_replace(original: Dir, tmp_path: Path) -> None:
    backup = tmp_path / "b.zip"
    assert cli(original, "backup", str(backup)).code == 0
    broken = restored_beside(original, tmp_path)
    broken.paths.data_dir.mkdir(parents=True)
    broken.database.write_bytes(b"this is no database at all" * 200)
    refused = cli(broken, "restore", str(backup))
    assert refused.code == 1 and f"{broken.database} is damaged (" in refused.err, refused
    assert cli(broken, "restore", str(backup), "--replace").code == 0
    assert cli(broken, "session", "list").code == 0


def _rezip(source: Path, target: Path, change: Callable[[dict[str, bytes]], None]) -> Path:
    with zipfile.ZipFile(source) as zipped:
        members = {name: zipped.read(name) for name in zipped.namelist()}
    change(members)
    with zipfile.ZipFile(target, "w") as zipped:
        for name, data in members.items():
            zipped.writestr(name, data)
    return target


def _manifest(**changes: Any) -> Callable[[dict[str, bytes]], None]:
    def change(members: dict[str, bytes]) -> None:
        manifest = json.loads(members["manifest.json"])
        manifest.update(changes)
        members["manifest.json"] = json.dumps(manifest).encode()

    return change


def _written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _flip(members: dict[str, bytes]) -> None:
    data = bytearray(members["nahida.db"])
    data[len(data) // 2] ^= 0xFF
    members["nahida.db"] = bytes(data)


NO_BACKUP: dict[str, tuple[Callable[[Path, Path], Path], str]] = {
    "not-a-zip": (
        lambda good, p: _written(p, b"hello"),
        "is not a Nahida backup (not a zip",
    ),
    "no-manifest": (
        lambda good, p: _rezip(good, p, lambda m: m.pop("manifest.json")),
        "is not a Nahida backup (no manifest.json)",
    ),
    "other-format": (
        lambda good, p: _rezip(good, p, _manifest(format="something-else")),
        "is not a Nahida backup (manifest.json names no 'nahida-backup')",
    ),
    "newer-version": (
        lambda good, p: _rezip(good, p, _manifest(version=2)),
        "was made by a newer Nahida (backup format 2; this one reads 1)",
    ),
    "newer-schema": (
        lambda good, p: _rezip(good, p, _manifest(schema=["0001_sessions_and_turns", "9999_x"])),
        "holds a database of a newer Nahida (schema steps unknown here: 9999_x)",
    ),
    "flipped-byte": (
        lambda good, p: _rezip(good, p, _flip),
        "is damaged: its database does not match its checksum",
    ),
}


@pytest.mark.parametrize("kind", list(NO_BACKUP))
async def test_a_file_that_is_no_usable_backup_is_refused_and_nothing_is_touched(
    original: Dir, tmp_path: Path, kind: str
) -> None:
    good = tmp_path / "good.zip"
    assert cli(original, "backup", str(good)).code == 0
    make, words = NO_BACKUP[kind]
    bad = make(good, tmp_path / "bad.zip")
    target = restored_beside(original, tmp_path)
    ran = cli(target, "restore", str(bad))
    assert ran.code == 1 and "Traceback" not in ran.err, ran
    (line,) = ran.error_lines
    assert line.startswith(f"error: {bad}") and words in line, line
    assert not target.database.exists()


async def test_restore_waits_for_the_bot_to_stop(original: Dir, tmp_path: Path) -> None:
    backup = tmp_path / "b.zip"
    assert cli(original, "backup", str(backup)).code == 0
    target = restored_beside(original, tmp_path)
    store = SqliteStore(target.database)  # as a running bot holds it
    try:
        ran = cli(target, "restore", str(backup))
    finally:
        store.close()
    assert ran.code == 1
    assert ran.error_lines == [
        f"error: {target.database} is open in another process (a running bot?): stop it,"
        " then restore"
    ]
    assert cli(target, "restore", str(backup)).code == 0


def test_backing_up_a_damaged_database_writes_no_backup(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = SqliteStore(data / "nahida.db")
    import_lines(store, HISTORY * 1, 3600.0)
    store.close()
    with (data / "nahida.db").open("r+b") as handle:
        handle.seek(4096 * 3)
        handle.write(b"\xff" * 4096)
    ran = nahida(tmp_path, "--data-dir", "data", "backup", "b.zip")
    assert ran.code == 3 and "no backup was written" in ran.err, ran
    assert not (tmp_path / "b.zip").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]  # no scratch left behind


# `nahida memory import` ---------------------------------------------------------------------


def test_an_import_whose_every_line_is_bad_exits_1_and_says_where(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'not json\n{"id": "m_1"}\n\xff\xfe broken bytes\n')
    ran = nahida(tmp_path, "memory", "import", str(bad))
    assert ran.code == 1, ran
    assert ran.error_lines == [
        f"{bad}:1: not JSON: Expecting value (column 1)",
        f"{bad}:2: scope must be a non-empty string",
        f"{bad}:3: not UTF-8 (byte 1 of the line)",
        f"error: nothing imported: every line of {bad} was bad (see above)",
    ]
    assert ran.out == "imported 0, already present 0, bad 3\n"
    as_json = nahida(tmp_path, "memory", "import", str(bad), "--json")
    assert as_json.code == 1 and json.loads(as_json.out)["bad"] == 3


def test_a_partly_bad_import_exits_0_and_lists_its_bad_lines(tmp_path: Path) -> None:
    assert nahida(tmp_path, "memory", "remember", "爱喝乌龙茶", "--scope", "global").code == 0
    exported = nahida(tmp_path, "memory", "export").out
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(exported + "not json\n", encoding="utf-8")
    ran = nahida(tmp_path, "--data-dir", "other", "memory", "import", str(mixed))
    assert ran.code == 0, ran
    assert ran.out == "imported 1, already present 0, bad 1\n"
    assert [x.split(": ")[0] for x in ran.error_lines] == [f"{mixed}:2"]


def test_history_import_with_every_line_bad_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"chat": "qq:group:1"}\nnope\n', encoding="utf-8")
    ran = nahida(tmp_path, "history", "import", str(bad))
    assert ran.code == 1, ran
    assert (
        ran.error_lines[-1] == f"error: nothing imported: every line of {bad} was bad (see above)"
    )


async def test_manifest_and_database_members_come_in_that_order(
    original: Dir, tmp_path: Path
) -> None:
    backup = tmp_path / "b.zip"
    assert cli(original, "backup", str(backup)).code == 0
    with zipfile.ZipFile(backup) as zipped:
        assert zipped.namelist() == ["manifest.json", "nahida.db"]
        manifest = json.loads(zipped.read("manifest.json"))
    assert (
        manifest["database"]["sha256"]
        == hashlib.sha256(zipfile.ZipFile(backup).read("nahida.db")).hexdigest()
    )
    shutil.rmtree(original.paths.data_dir)  # a fresh machine: only the backup is left
    assert cli(original, "restore", str(backup)).code == 0
