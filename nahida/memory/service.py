"""MemoryService: the one facade for reading and writing memory (DESIGN §1).

The runner, chat commands, CLI, background jobs and plugins all go through it, by its named parts:

    memory.sessions   history: turns, sessions, /new, /resume, search, import (`sessions.py`)
    memory.items      long-term items: propose, remember, forget, review, list, why, export/import,
                      and an admin's edit, change, restore and purge (`items.py`)
    memory.recall     search as a viewer sees it, and the prompt's memory block
    memory.runs       background job runs and their leases
    memory.embeddings vectors for recall by meaning: upkeep in the background, query vectors
    memory.profiles   one profile per person, in fixed sections (`profiles.py`)
    memory.procedures behavioural rules in force where they are visible (`procedures.py`)
    memory.episodes   one summary per finished session, recallable (`episodes.py`)
    memory.working    warm summaries and episodes, written by the compress model (`working.py`)
    memory.dreams     dream runs: consolidation by the dream model, cursors, pauses (`dream/`)
    memory.markdown   MEMORY.md and profile files, synced both ways (`markdown/sync.py`)
    memory.daily      the daily notes, workspace/memory/YYYY-MM-DD.md (`markdown/daily.py`), or
                      None (disabled, or no workspace)
    memory.admin      what the console and the CLI's `--json` show: counts, series, listings,
                      the pages of an item, person, chat, session, dream run (`admin/`)

Each part prepares what needs CPU (jieba tokens, the safety filter) before it calls the store,
and the store runs the unit of work in one transaction on its own thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import tzinfo
from pathlib import Path
from typing import Any, TypeVar

from nahida.clock import SYSTEM, Clock
from nahida.memory import startup
from nahida.memory.admin import Admin
from nahida.memory.context_units import pin, pinned_unit
from nahida.memory.core.models import (
    INJECTED_CONFIDENCE,
    CommitMode,
    Hit,
    Pinned,
)
from nahida.memory.core.scopes import Viewer
from nahida.memory.core.tokenize import run_cpu
from nahida.memory.dream import Dreaming, DreamSettings
from nahida.memory.embedding import Embeddings, EmbeddingSettings
from nahida.memory.history import importer
from nahida.memory.history.episodes import Episodes
from nahida.memory.history.importer import ImportReport
from nahida.memory.history.recalls import PendingRecalls
from nahida.memory.history.sessions import Sessions
from nahida.memory.history.working import WorkingMemory, WorkingSettings
from nahida.memory.items import MAX_ITEM_CHARS, Items
from nahida.memory.markdown.daily import DailyNotes
from nahida.memory.markdown.sync import MarkdownSync
from nahida.memory.procedures import Procedures
from nahida.memory.profiles import Profiles
from nahida.memory.recall import TUNING, Mode, Query, Tuning, pack, plan, search
from nahida.memory.recall.rerank import rerank
from nahida.memory.runs import Runs
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.values import StoreCapabilities
from nahida.providers.base import ChatModel, Embedder, Reranker
from nahida.scheduler import process_label

T = TypeVar("T")


class Recall:
    """`memory.recall`: what a viewer may see, ranked (DESIGN §5)."""

    def __init__(
        self,
        store: Store,
        budget_tokens: int,
        tz: tzinfo | None = None,
        *,
        embeddings: Embeddings | None = None,
        mode: Mode = "hybrid",
        reranker: Reranker | None = None,
        episodes: Episodes | None = None,
        recalls: PendingRecalls | None = None,
    ) -> None:
        self.store = store
        self.episodes = episodes  # to leave episodes out of searches in chats without any
        # what a prompt for a user turn was given, until its reply records it (`Sessions`)
        self.recalls = PendingRecalls() if recalls is None else recalls
        self.budget_tokens = budget_tokens
        self.tz = tz  # where "昨天" is when a query names no zone
        self.embeddings = embeddings
        self.mode = mode  # for searches that name none (`memory.search`)
        self.reranker = reranker

    async def search(self, query: Query, tuning: Tuning = TUNING) -> list[Hit]:
        """Ranked hits. For hybrid and vector search the query is embedded first, waiting at
        most the embedder's bounded time; without a vector, hybrid is lexical."""
        hits, _ = await self.search_with(query, _nothing, tuning)
        return hits

    async def search_with(
        self, query: Query, also: Callable[[Tx], T], tuning: Tuning = TUNING
    ) -> tuple[list[Hit], T]:
        """`search`, and the read unit `also` in the same read (one round trip for a prompt's
        recalled memory and its pinned context)."""
        found = await run_cpu(plan, query, tuning, self.tz, size=len(query.text))
        if query.mode != "lexical" and self.embeddings is not None and found.text:
            embedded = await self.embeddings.query(found.text)
            if embedded is not None:
                found = found.with_vector(embedded.vector, embedded.space, embedded.unrelated)
        episodes = True  # False: none where the viewer looks (not searched)
        if query.episodes and self.episodes is not None:
            episodes = await self.episodes.in_any(query.viewer.turn_chats())
        hits, extra = await self.store.read(
            lambda tx: (search(tx, query, found, tuning, episodes=episodes), also(tx))
        )
        if self.reranker is not None and len(hits) > 1:
            hits = await rerank(self.reranker, query.text, hits)
        return hits, extra

    async def block(
        self,
        text: str,
        viewer: Viewer,
        exclude_turns: frozenset[int],
        *,
        limit: int,
        mode: Mode | None = None,
    ) -> str | None:
        """The memory slot for a prompt; injected items get their access recorded."""
        block, _ = await self.block_with(
            text, viewer, exclude_turns, _nothing, limit=limit, mode=mode
        )
        return block

    async def block_with(
        self,
        text: str,
        viewer: Viewer,
        exclude_turns: frozenset[int],
        also: Callable[[Tx], T],
        *,
        limit: int,
        mode: Mode | None = None,
        turn: int | None = None,
    ) -> tuple[str | None, T]:
        """`block`, and the read unit `also` in the same read; for the prompt of the user turn
        `turn`, the hits kept wait to be recorded with its reply (`PendingRecalls`)."""
        fields: dict[str, Any] = {"limit": limit, "exclude_turns": exclude_turns}
        if mode is not None:
            fields["mode"] = mode
        hits, extra = await self.search_with(self.query(text, viewer, **fields), also)
        trusted = [h for h in hits if h.item is None or h.item.confidence >= INJECTED_CONFIDENCE]
        block, kept = pack(trusted, self.budget_tokens)
        if turn is not None:
            self.recalls.note(turn, kept)
        used = [h.item.id for h in kept if h.item is not None]
        if used:
            now = time.time()
            await self.store.write(lambda tx: tx.items.touch(used, now))
        return block, extra

    def query(self, text: str, viewer: Viewer, **fields: Any) -> Query:
        """A `Query` in the configured mode unless `fields` name one (and no time zone unless
        they name one: a search reads the configured zone where the query names none)."""
        return Query(text, viewer, **{"mode": self.mode, **fields})


def _nothing(tx: Tx) -> None:
    return None


class MemoryService:
    def __init__(
        self,
        store: Store,
        *,
        mode: CommitMode = "auto_safe",
        budget_tokens: int = 1500,
        idle_split: float = 0.0,
        item_chars: int = MAX_ITEM_CHARS,
        tz: tzinfo | None = None,
        embedder: Embedder | None = None,
        embedding: EmbeddingSettings | None = None,
        search_mode: Mode = "hybrid",
        reranker: Reranker | None = None,
        embedder_why: str = "",
        model: ChatModel | None = None,
        working: WorkingSettings | None = None,
        dreaming: DreamSettings | None = None,
        journal: Path | None = None,
        holder: str | None = None,
        workspace: Path | None = None,
        markdown: bool = True,
        max_bullets: int = 200,
        daily_notes: bool = True,
        clock: Clock = SYSTEM,
    ) -> None:
        self.store = store
        self.tz = tz  # the bot's zone (`bot.timezone`); None: the system's
        recalls = PendingRecalls()  # from the prompt (`recall`) to the reply (`sessions`)
        settings = embedding or EmbeddingSettings()
        self.embeddings = Embeddings(
            store,
            embedder,
            batch=settings.batch,
            query_timeout=settings.query_timeout,
            query_share=settings.query_share,
            background_share=settings.background_share,
            why=embedder_why,
            clock=clock,
        )
        work = working or WorkingSettings()
        self.sessions = Sessions(
            store,
            idle_split=idle_split,
            mode=mode,
            tz=tz,
            changed=self.embeddings.nudge,
            slack=work.batch_turns if model is not None else 0,
            recalls=recalls,
        )
        self.items = Items(store, mode, item_chars, tz, changed=self.embeddings.nudge)
        self.episodes = Episodes(store, changed=self.embeddings.nudge)
        self.recall = Recall(
            store,
            budget_tokens,
            tz,
            embeddings=self.embeddings,
            mode=search_mode if embedder is not None else "lexical",
            reranker=reranker,
            episodes=self.episodes,
            recalls=recalls,
        )
        self.runs = Runs(store)
        self.profiles = Profiles(store)
        self.procedures = Procedures(store, self.items.propose, self.items.forget)
        self.working = WorkingMemory(
            store,
            model,
            settings=work,
            propose=self.items.propose,
            profiles=self.profiles,
            episodes=self.episodes,
            tz=tz,
        )
        self.dreams = Dreaming(
            store,
            model,
            settings=dreaming or DreamSettings(),
            mode=mode,
            holder=holder or process_label(),
            tz=tz,
            journal=journal,
            changed=self.embeddings.nudge,
        )
        # MEMORY.md and the profile files, the daily notes; None without a workspace (tests,
        # scripts) or when switched off
        self.markdown = (
            MarkdownSync(store, workspace, max_bullets=max_bullets, changed=self.embeddings.nudge)
            if workspace is not None and markdown
            else None
        )
        self.daily = DailyNotes(store, workspace, tz) if workspace and daily_notes else None
        self.admin = Admin(store, tz)

    async def context(
        self,
        text: str,
        viewer: Viewer,
        exclude_turns: frozenset[int],
        *,
        limit: int,
        mode: Mode | None = None,
        profile_tokens: int = 400,
        turn: int | None = None,
    ) -> tuple[str | None, Pinned]:
        """A prompt's memory from one read: the recalled block (`Recall.block`) and the pinned
        profile card and rules; a message with nothing to search gets the pinned part only.
        For the prompt of the user turn `turn`, what the block holds is recorded with the
        reply (`sessions.record_reply`)."""
        unit = pinned_unit(viewer)
        if not text.strip():
            return None, pin(await self.store.read(unit), profile_tokens)
        block, raw = await self.recall.block_with(
            text, viewer, exclude_turns, unit, limit=limit, mode=mode, turn=turn
        )
        return block, pin(raw, profile_tokens)

    def import_history(
        self,
        path: Path,
        *,
        extract: bool = False,
        max_line_bytes: int | None = None,
        progress: importer.Progress | None = None,
    ) -> ImportReport:
        """JSONL turns into history (`importer`); synchronous: the CLI's long job."""
        sessions = self.sessions
        return importer.import_file(
            sessions.store,
            path,
            sessions.idle_split,
            mode=sessions.mode,
            tz=sessions.tz,
            extract=extract,
            max_line_bytes=max_line_bytes or importer.MAX_LINE_BYTES,
            progress=progress,
        )

    # what per-message code builds on first use, built up front (`startup.warm_up`): the app
    # calls it at start, and commands a person waits for before their first search
    warm_up = staticmethod(startup.warm_up)

    @property
    def capabilities(self) -> StoreCapabilities:
        return self.store.capabilities

    def handling(self, chat: str) -> AbstractAsyncContextManager[object]:
        """Hold while a message of `chat` is handled (`Store.chat_lock`): bot processes that
        share memory handle a chat's messages one at a time."""
        return self.store.chat_lock(chat)

    def close(self) -> None:
        self.embeddings.stop()
        self.store.close()
