"""`open_memory`: memory as the config describes it, over a store the composition root opened.

The composition root (`nahida.app`) chooses what only it may name: the store backend and the
embedder (a concrete provider or the local model). What the `memory`, `session`, `limits` and
`bot` settings mean for memory is decided here, with memory's own types.
"""

from __future__ import annotations

from pathlib import Path

from nahida.clock import SYSTEM, Clock
from nahida.config import Config
from nahida.memory.dream import DreamSettings
from nahida.memory.embedding import EmbeddingSettings
from nahida.memory.history.upgrade import upgrade
from nahida.memory.history.working import WorkingSettings
from nahida.memory.recall.rerank import LLMReranker
from nahida.memory.service import MemoryService
from nahida.memory.store.base import Store
from nahida.providers.base import ChatModel, Embedder


def open_memory(
    store: Store,
    config: Config,
    workspace: Path,
    *,
    model: ChatModel | None = None,
    embedder: Embedder | None = None,
    embedder_why: str = "",
    clock: Clock = SYSTEM,
) -> MemoryService:
    """Memory over `store` (opened and migrated) with `embedder` (`embedder_why`: how it was
    chosen, in words); `model`: the models memory may call (compaction, dreaming, reranking),
    None for none; `workspace`: where the Markdown files and DREAMS.md live. History written
    by an older version is upgraded first, once (`history.upgrade`)."""
    upgrade(store)
    settings = config.memory
    reranker = LLMReranker(model) if model is not None and settings.rerank else None
    return MemoryService(
        store,
        mode=settings.commit_mode,
        budget_tokens=settings.budget_tokens,
        idle_split=config.session.idle_split_minutes * 60.0,
        item_chars=config.limits.item_chars,
        tz=config.bot.zone(),
        embedder=embedder,
        embedding=EmbeddingSettings(
            batch=settings.embedding.batch_size,
            query_timeout=settings.embedding.query_timeout,
            query_share=settings.embedding.query_share,
        ),
        search_mode=settings.search,
        reranker=reranker,
        embedder_why=embedder_why,
        model=model,
        working=WorkingSettings(
            hot_size=config.session.hot_size,
            compress_batch=config.session.compress_batch,
            warm_capacity=config.session.warm_capacity,
            companion=config.bot.companion_chats(),
        ),
        dreaming=dream_settings(config),
        journal=workspace / "DREAMS.md",
        workspace=workspace,
        markdown=settings.markdown.enabled,
        max_bullets=settings.markdown.max_bullets,
        daily_notes=settings.markdown.enabled and settings.markdown.daily_notes,
        clock=clock,
    )


def dream_settings(config: Config) -> DreamSettings:
    d = config.memory.dreaming
    return DreamSettings(
        enabled=d.enabled,
        interval=d.interval_seconds,
        first=d.initial_delay_seconds,
        max_chats=d.max_chats,
        max_turns=d.max_turns,
        batch_turns=d.batch_turns,
        batch_tokens=d.batch_tokens,
        min_new_turns=d.min_new_turns,
        max_ops=d.max_ops,
        timeout=d.timeout_seconds,
    )
