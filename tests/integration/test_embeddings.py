"""Embeddings end to end: the `embed` route over a real socket (the OpenAI SDK against the fake
server's `/v1/embeddings`), the upkeep that fills the vectors, the cache by text, the bounded
query wait, a model change, and hybrid search through the facade.

The fake server embeds with character bigrams (a small deterministic embedder: these tests are
about plumbing); `test_local_model.py` uses the real local model.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import structlog
from pytest import approx
from structlog.testing import capture_logs

from nahida.app import Paths, choose_embedder, memory_for
from nahida.clock import SYSTEM, Clock, VirtualClock
from nahida.errors import ConfigError, ProviderServerError
from nahida.memory import EmbeddingSettings, MemoryService, NewTurn, Query, Viewer
from nahida.memory.embedding import Embeddings, TimeShare
from nahida.memory.store.sqlite import SqliteStore
from nahida.providers.base import EmbedKind
from nahida.providers.client import ClientSettings
from nahida.providers.openai import OpenAIProvider
from nahida.providers.router import EndpointEmbedder
from tests.fakes.llm_server import FakeOpenAIServer
from tests.helpers import config, openai_provider

CHAT = "onebot:group:1"
OTHER = "onebot:group:2"


def endpoint(
    server: FakeOpenAIServer, model: str = "bigram-64", retries: int = 0
) -> EndpointEmbedder:
    settings = ClientSettings(
        base_url=server.url, api_key="sk-test", max_retries=retries, backoff_base=0.01
    )
    return EndpointEmbedder(OpenAIProvider("fake", settings), model, owned=True)


@contextlib.asynccontextmanager
async def served(
    server: FakeOpenAIServer,
    path: Path,
    model: str = "bigram-64",
    clock: Clock = SYSTEM,
    **settings: float,
) -> AsyncIterator[MemoryService]:
    """Memory on `path` embedding through the fake server's `/v1/embeddings`; closed after."""
    embedding = EmbeddingSettings(**settings) if settings else None
    memory = MemoryService(
        SqliteStore(path), embedder=endpoint(server, model), embedding=embedding, clock=clock
    )
    try:
        yield memory
    finally:
        await memory.embeddings.aclose()
        memory.close()


def inputs(server: FakeOpenAIServer) -> list[str]:
    """Every text the server was asked to embed."""
    texts: list[str] = []
    for request in server.requests:
        if request.path == "/v1/embeddings":
            texts.extend(request.body["input"])
    return texts


async def say(memory: MemoryService, chat: str, *texts: str, at: float | None = None) -> None:
    start = at if at is not None else time.time() - 1000
    for n, text in enumerate(texts):
        turn = NewTurn(chat, "user", text, start + n, speaker="onebot:7", speaker_name="Ann")
        await memory.sessions.record(turn)


async def test_the_embed_route_gives_normalised_vectors_and_retries(
    openai_server: FakeOpenAIServer,
) -> None:
    embedder = endpoint(openai_server, retries=2)
    openai_server.embed_failures = 1
    try:
        rows = await embedder.embed(["我喜欢乌龙茶", "oolong tea"], "passage")
    finally:
        await embedder.aclose()
    assert rows.shape == (2, 64) and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0)
    assert embedder.dimension == 64
    assert len([r for r in openai_server.requests if r.path == "/v1/embeddings"]) == 2  # 500, ok
    assert openai_server.chat_requests[-1].body["model"] == "bigram-64"
    openai_server.embed_failures = 5
    failing = endpoint(openai_server)
    try:
        with pytest.raises(ProviderServerError):
            await failing.embed(["x"])
    finally:
        await failing.aclose()


async def test_upkeep_embeds_once_per_text_skips_short_turns_and_search_finds_by_vector(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    async with served(openai_server, tmp_path / "m.db") as memory:
        await say(memory, CHAT, "周末我们去爬山吧", "好的", "哈哈哈哈")
        await say(memory, OTHER, "周末我们去爬山吧")  # the same text in another chat
        report = await memory.embeddings.catch_up()
        assert inputs(openai_server).count("Ann: 周末我们去爬山吧") == 1
        assert (report.embedded, report.skipped) == (1, 2)
        assert report.cached == 1  # the second chat's copy
        counts = await memory.embeddings.counts()
        assert (counts.stored, counts.pending) == (1, 0)
        viewer = Viewer.parse(CHAT, "7")
        hits = await memory.recall.search(Query("爬山", viewer, mode="vector"))
        assert [h.text for h in hits] == ["周末我们去爬山吧"]  # this chat's only, no short turns
        assert (await memory.embeddings.catch_up()).embedded == 0  # nothing left to do


async def test_a_slow_embedder_makes_the_search_lexical_within_its_bound(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    clock = VirtualClock()
    async with served(openai_server, tmp_path / "m.db", clock=clock, query_timeout=2.0) as memory:
        await say(memory, CHAT, "我们周末去爬山")
        await memory.embeddings.catch_up()
        openai_server.embed_delay = 60.0
        hits = await clock.run(memory.recall.search(Query("爬山", Viewer.parse(CHAT, "7"))))
        assert clock.monotonic() == 2.0  # it waited for the vector as long as its bound
        assert [h.text for h in hits] == ["我们周末去爬山"]  # found lexically
        vector_only = await clock.run(
            memory.recall.search(Query("爬山", Viewer.parse(CHAT, "7"), mode="vector"))
        )
        assert vector_only == []  # no query vector in time: nothing to search by meaning


async def test_a_new_model_re_embeds_and_models_never_mix(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    path = tmp_path / "m.db"
    async with served(openai_server, path, "model-a") as first:
        await say(first, CHAT, "我们周末去爬山", "明天下午开会")
        assert (await first.embeddings.catch_up()).embedded == 2
    async with served(openai_server, path, "model-b") as second:
        await second.embeddings.load()
        viewer = Viewer.parse(CHAT, "7")
        before = await second.recall.search(Query("爬山", viewer, mode="vector"))
        assert before == []  # model-a's vectors are not used for a model-b query
        counts = await second.embeddings.counts()
        assert (counts.stored, counts.other, counts.pending) == (0, 2, 2)
        report = await second.embeddings.catch_up()
        assert report.embedded == 2
        after = await second.recall.search(Query("爬山", viewer, mode="vector"))
        assert after and after[0].text == "我们周末去爬山"


async def test_hybrid_search_fuses_and_a_forgotten_turn_stays_out(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    from nahida.envelope import ChatKey, UserKey
    from nahida.memory import Actor

    async with served(openai_server, tmp_path / "m.db") as memory:
        result = await memory.items.remember(
            "我喜欢徒步旅行", chat=ChatKey.parse(CHAT), user=UserKey.parse("onebot:7")
        )
        item_id = result.item_id
        assert item_id is not None
        await memory.embeddings.catch_up()
        viewer = Viewer.parse(CHAT, "7")
        hits = await memory.recall.search(Query("徒步旅行", viewer))
        assert item_id in [h.id for h in hits]
        await memory.items.forget(item_id, Actor.cli())
        for mode in ("vector", "hybrid"):
            hits = await memory.recall.search(Query("徒步旅行", viewer, mode=mode))  # type: ignore[arg-type]
            assert item_id not in [h.id for h in hits]


def test_backend_choice(tmp_path: Path) -> None:
    with_route = config(**openai_provider("http://127.0.0.1:9/v1"), models={"embed": "main/e1"})
    choice = choose_embedder(with_route)
    assert choice.embedder is not None and choice.embedder.model == "e1"
    assert "models.embed" in choice.why
    off = config(memory={"embedding": {"backend": "none"}})
    assert choose_embedder(off).embedder is None
    with pytest.raises(ConfigError, match=r"models\.embed"):
        choose_embedder(config(memory={"embedding": {"backend": "provider"}}))
    # tests run as on a machine without the local model (conftest): auto is lexical only
    auto = choose_embedder(config())
    assert auto.embedder is None and "lexical" in auto.why
    with pytest.raises(ConfigError, match="not installed"):
        choose_embedder(config(memory={"embedding": {"backend": "local"}}))
    anthropic = config(
        providers={"a": {"type": "anthropic", "api_key": "k", "model": "c"}},
        models={"embed": "a/c"},
    )
    with pytest.raises(ConfigError, match="serves no embeddings"):
        choose_embedder(anthropic)
    memory = memory_for(off, Paths(None, tmp_path / "d", tmp_path / "w"))
    try:
        assert memory.recall.mode == "lexical"
    finally:
        memory.close()


async def test_background_run_embeds_new_turns_without_being_asked(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    memory = MemoryService(SqliteStore(tmp_path / "m.db"), embedder=endpoint(openai_server))
    task = asyncio.create_task(memory.embeddings.run(settle=0.01))
    try:
        await say(memory, CHAT, "我们周末去爬山")  # nudges the run
        for _ in range(200):
            if (await memory.embeddings.counts()).stored:
                break
            await asyncio.sleep(0.02)
        assert (await memory.embeddings.counts()).stored == 1
    finally:
        memory.embeddings.stop()
        await asyncio.wait_for(task, 5)
        await memory.embeddings.aclose()
        memory.close()


async def test_a_burst_beyond_the_query_queue_is_searched_lexically_at_once(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    clock = VirtualClock()
    async with served(openai_server, tmp_path / "m.db", clock=clock, query_timeout=5.0) as memory:
        await say(memory, CHAT, "我们周末去爬山")
        await memory.embeddings.catch_up()
        openai_server.embed_delay = 60.0  # the vectors do not come: two wait for their bound
        viewer = Viewer.parse(CHAT, "7")
        searches = [
            asyncio.create_task(memory.recall.search(Query("爬山", viewer))) for _ in range(4)
        ]
        done: set[asyncio.Task[Any]] = set()
        while len(done) < 2:
            done, _ = await asyncio.wait(searches, return_when=asyncio.FIRST_COMPLETED)
        assert len(done) == 2  # two answered without any time passing, two wait
        assert memory.embeddings.busy == 2
        await clock.advance(4.9)
        assert sum(s.done() for s in searches) == 2
        await clock.advance(0.1)
        for hits in await asyncio.gather(*searches):
            assert [h.text for h in hits] == ["我们周末去爬山"]


@contextlib.contextmanager
def info_lines() -> Iterator[list[MutableMapping[str, Any]]]:
    """`capture_logs` with every level let through (an earlier test's `configure_logging` may
    have left a filter at WARNING behind), the configuration restored after."""
    before = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    try:
        with capture_logs() as logs:
            yield logs
    finally:
        structlog.configure(**before)


class OnThisMachine:
    """The endpoint embedder counted as a local model (`local`: its time is this machine's CPU,
    which `Embeddings` rations), each call taking `seconds` of `clock` and telling `nudge` of
    `turns` new turns while it runs (chats busy meanwhile)."""

    local = True

    def __init__(self, inner: EndpointEmbedder, clock: VirtualClock, seconds: float) -> None:
        self.inner = inner
        self.clock = clock
        self.seconds = seconds
        self.calls = 0
        self.turns = 0
        self.nudge: Callable[[], None] = lambda: None

    name = property(lambda self: self.inner.name)
    model = property(lambda self: self.inner.model)
    dimension = property(lambda self: self.inner.dimension)

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Any:
        self.calls += 1
        for _ in range(self.turns):
            self.nudge()
        self.clock.now += self.seconds
        return await self.inner.embed(texts, kind)

    async def aclose(self) -> None:
        await self.inner.aclose()


@contextlib.asynccontextmanager
async def rationed(
    memory: MemoryService, server: FakeOpenAIServer, seconds: float, **settings: Any
) -> AsyncIterator[tuple[Embeddings, OnThisMachine, VirtualClock]]:
    """Embeddings of `memory`'s store through a "local" embedder on a clock of its own, loaded
    (the floor's reference lines embedded: `calls` counts what came after)."""
    clock = VirtualClock()
    embedder = OnThisMachine(endpoint(server), clock, seconds)
    local = Embeddings(memory.store, embedder, clock=clock, **settings)
    await local.load()
    embedder.calls = 0
    try:
        yield local, embedder, clock
    finally:
        await local.aclose()


def test_a_time_share_fills_at_its_rate_up_to_its_burst() -> None:
    clock = VirtualClock()
    share = TimeShare(0.25, burst=1.0, clock=clock)
    assert share.available()
    share.spend(0.3)  # a quarter of a second was there; now a twentieth is owed
    assert not share.available()
    clock.now += 0.1  # fills 0.025: still owed
    assert not share.available()
    clock.now += 0.2
    assert share.available()
    clock.now += 100  # a long quiet time keeps at most the burst's share
    share.spend(0.25)
    assert not share.available()
    assert TimeShare(1.0).available()  # unbounded
    unbounded = TimeShare(1.0)
    unbounded.spend(10)
    assert unbounded.available()


async def test_a_local_model_embeds_queries_only_its_share_of_the_time(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    async with served(openai_server, tmp_path / "m.db") as memory:
        with pytest.raises(ValueError, match="background_share"):
            Embeddings(memory.store, None, background_share=0.0)  # a share of no time at all
        async with rationed(memory, openai_server, 0.1, query_share=0.25) as (
            local,
            embedder,
            clock,
        ):
            with info_lines() as logs:
                found = [await local.query("爬山") for _ in range(5)]
            # a quarter of a second's burst: three calls of 0.1 s, then lexical at once
            assert [f is not None for f in found] == [True, True, True, False, False]
            assert (embedder.calls, local.busy) == (3, 2)
            said = [e for e in logs if e["event"] == "query_embedding_busy"]
            assert [e["lexical"] for e in said] == [1]  # once a minute: the second is not said
            clock.now += 1.0  # a quiet second gives its quarter back
            assert await local.query("爬山") is not None
            assert (embedder.calls, local.busy) == (4, 2)
            with info_lines() as logs:
                within = [await local.query("爬山") for _ in range(4)]
                clock.now += (
                    60.0  # a minute on, the next one turned away is said, with the minute's
                )
                after = [await local.query("爬山") for _ in range(6)]
            assert None in within and None in after
            # since the last line: the fifth search above, then those up to the first after a minute
            turned_away = 1 + within.count(None) + after[: after.index(None) + 1].count(None)
            said = [e for e in logs if e["event"] == "query_embedding_busy"]
            assert [e["lexical"] for e in said] == [turned_away]
        # an endpoint's time is not this machine's: never rationed, even when it is slow
        openai_server.embed_delay = 0.1
        assert all([await memory.embeddings.query("爬山") for _ in range(8)])
        assert memory.embeddings.busy == 0


async def test_a_local_model_rests_in_the_background_only_while_it_falls_behind(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    async with (
        served(openai_server, tmp_path / "m.db") as memory,
        rationed(memory, openai_server, 0.05, batch=2, background_share=0.2) as (
            local,
            embedder,
            clock,
        ),
    ):
        embedder.nudge = local.nudge

        async def embedding(*texts: str) -> float:
            """Seconds on the clock that embedding these turns took: the model's and rests."""
            await say(memory, CHAT, *texts)
            started = clock.monotonic()
            await clock.run(local.embed_new())
            return clock.monotonic() - started

        # quiet chats, and chats slower than the model (one turn while it embeds two): no rest,
        # only the calls of 0.05 s
        assert await embedding("我们周末去爬山", "周日下雨就去看电影", "下周一交周报") == approx(
            0.1
        )
        embedder.turns = 1
        slower = ("明天早上八点开会", "会议室在三楼东边", "记得带上电脑", "投影仪找行政借")
        assert await embedding(*slower) == approx(0.1)
        assert (await local.counts()).stored == 7
        # a burst (two turns while it embeds two): 0.2 s of rest after each call of 0.05 s
        embedder.turns = 2
        assert await embedding(
            "下午三点有客户来访", "晚上一起吃火锅吧", "周五团建去郊外"
        ) == approx(0.5)
        assert (await local.counts()).stored == 10

        await say(memory, OTHER, "周六上午九点出发", "记得带雨伞和水")
        embedder.seconds = 30.0  # a rest of MAX_REST (5 s), cut short by stop()
        calls = embedder.calls
        running = asyncio.create_task(local.embed_new())
        while embedder.calls == calls:  # noqa: ASYNC110 - until the first call is made
            await asyncio.sleep(0.01)
        local.stop()
        report = await asyncio.wait_for(running, 30)  # a rest on this clock never ends by itself
        assert report.embedded == 2  # its rest was cut short


async def test_the_upkeep_job_counts_its_work_and_skips_without_an_embedder(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    from nahida.memory.jobs import EmbeddingUpkeep
    from nahida.scheduler import JobContext

    async with served(openai_server, tmp_path / "m.db") as memory:
        await say(memory, CHAT, "我们周末去爬山", "好的")
        ctx = JobContext(asyncio.Event())
        await EmbeddingUpkeep(memory).run(ctx)
        assert ctx.counts == {"embedded": 1, "cached": 0, "skipped": 1, "swept": 0}
        assert ctx.skipped is None
    lexical = MemoryService(SqliteStore(tmp_path / "m.db"))
    try:
        ctx = JobContext(asyncio.Event())
        await EmbeddingUpkeep(lexical).run(ctx)
        assert ctx.skipped == "no embedder"
    finally:
        lexical.close()


async def test_an_embedder_that_cannot_load_leaves_recall_lexical(tmp_path: Path) -> None:
    class Broken:
        name, model, dimension = "local", "broken", 4

        def load(self) -> None:
            raise OSError("libgomp.so.1: cannot open shared object file")

        async def embed(self, texts: object, kind: str = "passage") -> object:
            raise AssertionError("never called")

        async def aclose(self) -> None:
            return None

    memory = MemoryService(SqliteStore(tmp_path / "m.db"), embedder=Broken())  # type: ignore[arg-type]
    try:
        await memory.embeddings.load()
        assert not memory.embeddings.enabled
        assert "failed to load" in memory.embeddings.why
        await say(memory, CHAT, "我们周末去爬山")
        hits = await memory.recall.search(Query("爬山", Viewer.parse(CHAT, "7")))
        assert [h.text for h in hits] == ["我们周末去爬山"]
    finally:
        memory.close()


async def test_upkeep_embeds_episodes_and_vector_search_finds_them_in_their_chat(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    from nahida.memory.jobs import EmbeddingUpkeep
    from nahida.scheduler import JobContext

    async with served(openai_server, tmp_path / "m.db") as memory:
        await say(memory, CHAT, "周末我们去爬山吧")
        await say(memory, OTHER, "西湖边的龙井茶")
        session = await memory.sessions.current(CHAT)
        assert session is not None
        episode = await memory.episodes.add(
            session_id=session,
            chat=CHAT,
            summary="约好了去西湖喝龙井茶",
            keywords=("西湖", "龙井茶"),
            started_at=time.time() - 1000,
            ended_at=time.time() - 900,
            turn_count=2,
        )
        ctx = JobContext(asyncio.Event())
        await EmbeddingUpkeep(memory).run(ctx)  # what `nahida memory embed` runs too
        assert "西湖, 龙井茶: 约好了去西湖喝龙井茶" in inputs(openai_server)
        assert ctx.counts["embedded"] == 3
        assert (await memory.embeddings.counts()).pending == 0
        hits = await memory.recall.search(
            Query("西湖龙井茶", Viewer.parse(CHAT, "7"), mode="vector")
        )
        assert (hits[0].kind, hits[0].id) == ("episode", episode.id)
        elsewhere = await memory.recall.search(
            Query("西湖龙井茶", Viewer.parse(OTHER, "7"), mode="vector")
        )
        assert [h.kind for h in elsewhere] == ["turn"]  # that chat's turn, never the episode
        hybrid = await memory.recall.search(Query("龙井", Viewer.parse(CHAT, "7")))
        assert hybrid[0].id == episode.id  # hybrid (the default): by words and by meaning
        rewritten = await memory.episodes.add(
            session_id=session,
            chat=CHAT,
            summary="改成去灵隐寺看银杏",
            keywords=("灵隐寺",),
            started_at=time.time() - 1000,
            ended_at=time.time() - 800,
            turn_count=4,
        )
        assert rewritten.id == episode.id
        report = await memory.embeddings.catch_up()
        assert (report.embedded, report.swept) == (1, 1)  # the new text; the old one's vector
        hits = await memory.recall.search(
            Query("灵隐寺银杏", Viewer.parse(CHAT, "7"), mode="vector")
        )
        assert hits[0].text == "改成去灵隐寺看银杏"
        assert "约好了去西湖喝龙井茶" not in [h.text for h in hits]
