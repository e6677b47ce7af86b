"""A damaged database: every command says what is wrong and what to do, in one line, and exits
non-zero; none hangs; `nahida doctor` checks the whole file; the bot refuses to start.

Three kinds of damage, made to a real database file: a header that is no SQLite header, a file cut
short, and pages of the tables overwritten (what a failing disk or a copy taken mid-write leaves).
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from nahida.app import App, Paths
from nahida.errors import DatabaseDamaged
from nahida.memory.history.importer import import_lines
from nahida.memory.store.sqlite import SqliteStore, problems
from nahida.memory.store.sqlite.connection import driver
from tests.faults.entry import Ran, nahida
from tests.helpers import config

CHAT = "qq:group:1"
PAGE = 4096


def _history() -> list[str]:
    return [
        json.dumps(
            {
                "chat": CHAT,
                "user": str(i % 7),
                "text": f"message {i} about tea, puppies and 乌龙茶 number {i}",
                "time": f"2024-04-01T10:{i % 60:02d}:{i % 59:02d}Z",
                "message_id": f"m{i}",
            }
        )
        for i in range(3000)
    ]


@pytest.fixture(scope="module")
def sound(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with a few thousand turns (a file of a few hundred pages)."""
    path = tmp_path_factory.mktemp("sound") / "nahida.db"
    store = SqliteStore(path)
    try:
        import_lines(store, _history(), idle_split=3600.0)
    finally:
        store.close()
    return path


def garbage_header(db: Path) -> None:
    with db.open("r+b") as handle:
        handle.write(b"this is no database at all. " * 4)


def cut_short(db: Path) -> None:
    with db.open("r+b") as handle:
        handle.truncate(db.stat().st_size // 3)


def pages_overwritten(db: Path) -> None:
    """Every seventh page from the twentieth on gets 2,000 random bytes: the pages of the turns,
    their index and the FTS tables, met by a search (as a failing disk leaves them)."""
    noise = random.Random(7)
    size = db.stat().st_size
    with db.open("r+b") as handle:
        for offset in range(20 * PAGE, size - 10 * PAGE, 7 * PAGE):
            handle.seek(offset + 100)
            handle.write(noise.randbytes(2000))


def roots_overwritten(db: Path) -> None:
    """The first page of every table of sessions and memory: any command reading them meets it."""
    conn = driver.connect(str(db))
    names = ("sessions", "turns", "memory_items", "profile_entries", "turns_fts_data")
    marks = ",".join("?" * len(names))
    roots = [
        row[0]
        for row in conn.execute(
            f"SELECT rootpage FROM sqlite_master WHERE name IN ({marks})", names
        )
    ]
    conn.close()
    noise = random.Random(11)
    with db.open("r+b") as handle:
        for root in roots:
            handle.seek((root - 1) * PAGE)
            handle.write(noise.randbytes(PAGE))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "garbage-header": garbage_header,
    "cut-short": cut_short,
    "pages-overwritten": pages_overwritten,
    "roots-overwritten": roots_overwritten,
}


@pytest.fixture(params=list(DAMAGE))
def damaged(request: pytest.FixtureRequest, sound: Path, tmp_path: Path) -> Path:
    """A copy of the sound database in `tmp_path/data`, damaged one way."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copyfile(sound, data / "nahida.db")
    DAMAGE[request.param](data / "nahida.db")
    return data / "nahida.db"


def _one_clear_line(ran: Ran, db: Path) -> None:
    assert ran.code == 3, ran
    assert "Traceback" not in ran.err, ran.err
    (line,) = ran.error_lines
    assert line.startswith(f"error: the database {db} is damaged ("), line
    assert "nahida doctor" in line and "nahida restore" in line


SEARCH = ("memory", "search", "乌龙茶 tea", "--chat", CHAT)
# each kind of damage with a search that once hung; the commands that list meet the overwritten
# first pages (pages farther in are met only by the commands that read them)
MET = [
    *((name, SEARCH) for name in DAMAGE),
    ("roots-overwritten", ("session", "list")),
    ("roots-overwritten", ("memory", "list", "--json")),
    ("roots-overwritten", ("memory", "remember", "爱喝乌龙茶", "--scope", "global")),
]


@pytest.mark.parametrize(("damage", "command"), MET, ids=[f"{d}:{'-'.join(c[:2])}" for d, c in MET])
def test_a_command_meeting_the_damage_says_so_in_one_line_and_never_hangs(
    sound: Path, tmp_path: Path, damage: str, command: tuple[str, ...]
) -> None:
    """Before, these printed a raw traceback, or (the tables' first pages overwritten) never
    exited: the database thread died on the failed COMMIT of its read batch, and the command
    waited for its answer forever."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copyfile(sound, data / "nahida.db")
    DAMAGE[damage](data / "nahida.db")
    _one_clear_line(nahida(tmp_path, "--data-dir", "data", *command), Path("data/nahida.db"))


def test_doctor_checks_the_whole_file_and_says_what_to_do(damaged: Path, tmp_path: Path) -> None:
    ran = nahida(tmp_path, "--data-dir", str(damaged.parent), "doctor", "--json")
    assert ran.code == 1 and "Traceback" not in ran.err, ran
    report = json.loads(ran.out)["database"]
    assert report["ok"] is False and report["problems"]
    assert report["problems"] == problems(damaged)


def test_doctor_says_it_in_words(sound: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copyfile(sound, data / "nahida.db")
    assert nahida(tmp_path, "--data-dir", "data", "doctor").out.count("ok database data/") == 1
    pages_overwritten(data / "nahida.db")
    ran = nahida(tmp_path, "--data-dir", "data", "doctor")
    assert ran.code == 1 and "Traceback" not in ran.err, ran
    (line,) = [x for x in ran.out.splitlines() if "database data/nahida.db" in x]
    assert line.startswith("-- database data/nahida.db is DAMAGED: ")
    assert line.endswith(
        "restore your latest backup: `nahida restore FILE --replace` (docs/backup.md)"
    )


def test_the_bot_refuses_to_start_on_a_damaged_file(damaged: Path, tmp_path: Path) -> None:
    paths = Paths(None, damaged.parent, tmp_path / "workspace")
    cfg = config()
    with pytest.raises(DatabaseDamaged, match=r"is damaged .*nahida restore"):
        App(cfg, paths)


def test_nahida_run_on_a_damaged_file_exits_with_the_same_line(sound: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copyfile(sound, data / "nahida.db")
    pages_overwritten(data / "nahida.db")
    ran = nahida(tmp_path, "--data-dir", "data", "run", stdin="你好\n")
    _one_clear_line(ran, Path("data/nahida.db"))
