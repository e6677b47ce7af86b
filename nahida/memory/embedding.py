"""Embeddings (DESIGN §5 step 4): which texts get a vector, upkeep, and a search's query vector.

A text is embedded once per space (provider, model, dimension): rows name their text by hash, and
the store keeps one vector per hash, so the same line in many chats costs one embedding. Rows
are embedded in the background, never on a chat's worker:

- `run()` is a task of the app: every change to memory (`nudge()`) wakes it, and it embeds the
  rows never looked at (`embed_new`) in batches until none is left;
- the upkeep job (and `nahida memory embed`) also embeds rows whose text has no vector in the
  current space (`catch_up`: after an import, a model change, a crash), and drops vectors no row
  names any more.

Rows are active items, unhidden turns and episodes (whose text is `keywords: summary`). Very short
turns ("好的", "哈哈") get no vector. Only a search embeds on the message path: its query, with a
bounded wait (`query`), after which the search goes on lexically. A query vector comes with what
lines unrelated to it score (`recall.floor`: its reference lines are embedded once per space, a
local model's when it loads, an endpoint's with the first query), the floor of its hits.

A local model (`Embedder.local`) spends this machine's CPU: ~25 ms a text for the bundled e5,
ten times the rest of a message. So while chats are busy its work is rationed: query vectors may
keep it busy `query_share` of the time (a `TimeShare`; beyond it a search is lexical at once,
and `query_embedding_busy` in the log says how many, at most once a minute),
and the background, when turns arrived faster than it embeds them (a burst: it falls behind
whatever it does), rests after each batch so that it runs `background_share` of the time. When
chats are quiet, or slower than the model, both run freely.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from nahida.clock import SYSTEM, Clock
from nahida.errors import ProviderError, StorageError
from nahida.memory.recall.floor import REFERENCES, unrelated
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.values import Embedded, Unembedded, VectorCounts, VectorSpace
from nahida.providers.base import Embedder

if TYPE_CHECKING:
    from nahida.memory.store.values import Vector

log = structlog.get_logger(__name__)

KINDS: tuple[Embedded, ...] = ("item", "turn", "episode")
MIN_CHARS = 3  # letters or digits: below this a text gets no vector
LOOK_AHEAD = 512  # rows read per round of upkeep
QUERY_TIMEOUT = 1.0
QUERY_QUEUE = 2  # query embeddings in flight; one more is searched lexically instead of waiting
BATCH = 16
QUERY_SHARE = 0.25  # of the time a local model may spend on query vectors, over any second
BACKGROUND_SHARE = 0.2  # of the time a local model embeds in the background while chats are busy
BUSY_LOG_EVERY = 60.0  # seconds between `query_embedding_busy` log lines
MAX_REST = 5.0  # seconds: a batch slowed by busy chats (its thread yields) rests no longer

Progress = Callable[[int], None]  # rows done so far


@dataclass(frozen=True, slots=True)
class EmbeddingSettings:
    batch: int = BATCH  # texts per embedder call in the background
    query_timeout: float = QUERY_TIMEOUT  # seconds a search waits for its query vector
    query_share: float = QUERY_SHARE  # a local model's time for query vectors (0: none)
    background_share: float = BACKGROUND_SHARE  # its time in the background while chats are busy


def text_of(row: Unembedded) -> str:
    return f"{row.title}: {row.content}" if row.title else row.content


def text_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).hexdigest()


def worth_embedding(text: str) -> bool:
    """Whether a text says enough to have a meaning to search for (not "好的", "ok", "哈哈哈")."""
    letters = [c for c in text if c.isalnum()]
    return len(letters) >= MIN_CHARS and len(set(letters)) > 1


class TimeShare:
    """At most `share` of the time, over any stretch of `burst` seconds or more: a bucket of
    seconds that fills at `share` a second, up to `burst`, and is spent by what used the time."""

    def __init__(self, share: float, burst: float = 1.0, clock: Clock = SYSTEM) -> None:
        self.share = share
        self.burst = burst
        self.clock = clock
        self._left = burst * share
        self._at = clock.monotonic()

    def available(self) -> bool:
        return self.share >= 1.0 or self._filled() > 0

    def spend(self, seconds: float) -> None:
        self._left = self._filled() - seconds

    def _filled(self) -> float:
        now = self.clock.monotonic()
        self._left = min(self.burst * self.share, self._left + (now - self._at) * self.share)
        self._at = now
        return self._left


@dataclass(frozen=True, slots=True)
class QueryVector:
    """A search's query embedded: its vector, the vector's space, and what a line unrelated to
    the query scores against it (`recall.floor`)."""

    vector: Vector
    space: VectorSpace
    unrelated: float


@dataclass(slots=True)
class EmbedReport:
    embedded: int = 0  # texts sent to the embedder
    cached: int = 0  # rows whose text already had a vector
    skipped: int = 0  # rows too short for one
    swept: int = 0  # vectors no row named any more
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.embedded / self.seconds if self.seconds > 0 else 0.0


class Embeddings:
    """`memory.embeddings`: vectors for memory's texts, and the query vector of a search."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None,
        *,
        batch: int = BATCH,
        query_timeout: float = QUERY_TIMEOUT,
        query_share: float = QUERY_SHARE,
        background_share: float = BACKGROUND_SHARE,
        why: str = "",
        clock: Clock = SYSTEM,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.why = why or ("on" if embedder is not None else "off")  # how it was chosen
        self.batch = batch
        self.query_timeout = query_timeout
        if not (0 <= query_share <= 1 and 0 < background_share <= 1):
            raise ValueError("query_share must be within [0, 1], background_share within (0, 1]")
        local = bool(getattr(embedder, "local", False))  # its work is this machine's CPU
        self._local = local
        self._queries = TimeShare(query_share if local else 1.0, clock=clock)
        self._background_share = background_share if local else 1.0
        self._clock = clock
        self._nudges = 0  # writes that told of new text
        self._wake = asyncio.Event()
        self._stopped = asyncio.Event()
        self._stopping = False
        self._lock: asyncio.Lock | None = None
        self._warned: set[str] = set()
        self._in_flight = 0
        self.queried = 0  # query vectors embedded
        self.busy = 0  # queries searched lexically because the embedder was busy
        self._busy_logged, self._busy_said = float("-inf"), 0  # the last `query_embedding_busy`
        self._references: dict[VectorSpace, Vector] = {}  # `recall.floor.REFERENCES` embedded

    @property
    def enabled(self) -> bool:
        return self.embedder is not None

    async def load(self) -> None:
        """Load a local model now, in a thread, and embed the floor's reference lines with it
        (the first message then waits for neither; an endpoint's are embedded with its first
        query). A model that cannot load leaves recall lexical, said in the log; the bot runs
        on."""
        load = getattr(self.embedder, "load", None)
        try:
            if callable(load):
                await asyncio.to_thread(load)
            if self.embedder is not None and self._local:
                await self._unrelated_lines(await self._known_space())
        except (OSError, RuntimeError, ImportError, ValueError) as exc:
            log.error("embedder_failed_to_load", embedder=self.why, error=str(exc))
            self.embedder = None
            self.why = f"off: the embedder failed to load ({exc})"

    async def aclose(self) -> None:
        if self.embedder is not None:
            await self.embedder.aclose()

    def space(self) -> VectorSpace | None:
        """The space of the embedder's vectors (None before an endpoint first answered)."""
        if self.embedder is None or self.embedder.dimension is None:
            return None
        return VectorSpace(self.embedder.name, self.embedder.model, self.embedder.dimension)

    async def _known_space(self) -> VectorSpace:
        space = self.space()
        if space is None:
            assert self.embedder is not None
            await self.embedder.embed(["dimension"], "passage")  # an endpoint says it so
            space = self.space()
        assert space is not None
        return space

    def _warn_once(self, event: str, **fields: object) -> None:
        if event not in self._warned:
            self._warned.add(event)
            log.warning(event, **fields)

    async def _unrelated_lines(self, space: VectorSpace) -> Vector:
        """`recall.floor.REFERENCES` embedded as passages in `space`, once."""
        found = self._references.get(space)
        if found is None:
            assert self.embedder is not None
            found = await self.embedder.embed(list(REFERENCES), "passage")
            self._references[space] = found
        return found

    async def query(self, text: str) -> QueryVector | None:
        """The query vector of a search, or None (no embedder, too slow, busy, failed): the
        search is then lexical. Waits at most `query_timeout` (the first query of an endpoint
        waits for the reference lines of the floor too; a local model's are embedded by `load`,
        else once before the first query's wait starts: there is no network to wait for, and a
        wait cut short would start them over), and not at all when `QUERY_QUEUE` queries are
        already being embedded or a local model has had its `query_share` of the time (a burst
        is answered lexically rather than late)."""
        if self.embedder is None or not text.strip():
            return None
        # a burst: no message queues behind others' queries, nor takes more than its share
        if self._in_flight >= QUERY_QUEUE or not self._queries.available():
            self._turned_away()
            return None
        self._in_flight += 1
        started = self._clock.monotonic()
        try:
            if self._local:
                await self._unrelated_lines(await self._known_space())
            async with self._clock.timeout(self.query_timeout):
                rows = await self.embedder.embed([text], "query")
                space = self.space()
                if space is None or space.dimension != rows.shape[1]:
                    return None
                references = await self._unrelated_lines(space)
        except TimeoutError:
            log.info("query_embedding_slow", timeout=self.query_timeout)
            return None
        except (ProviderError, OSError, RuntimeError, ValueError) as exc:
            self._warn_once("query_embedding_failed", error=str(exc))
            return None
        finally:
            self._in_flight -= 1
            self._queries.spend(self._clock.monotonic() - started)
        self.queried += 1
        vector = rows[0]  # a float32 row (the Embedder protocol)
        return QueryVector(vector, space, unrelated(vector, references))

    def _turned_away(self) -> None:
        """Count a search left lexical for a busy embedder; say so at most once a minute."""
        self.busy += 1
        now = self._clock.monotonic()
        if now - self._busy_logged >= BUSY_LOG_EVERY:
            log.info("query_embedding_busy", lexical=self.busy - self._busy_said)
            self._busy_logged, self._busy_said = now, self.busy

    # -- upkeep -------------------------------------------------------------------------------

    def _guard(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def _embed(
        self,
        kind: Embedded,
        rows: Sequence[Unembedded],
        space: VectorSpace,
        report: EmbedReport,
        stopping: Callable[[], bool],
    ) -> None:
        """Vectors for these rows' texts that have none, stored with the rows' hashes, one write
        per batch of texts (what was embedded survives a later failure or a stop: its rows find
        it in the cache next time)."""
        assert self.embedder is not None
        texts = [text_of(r) for r in rows]
        hashes = [
            r.hash if r.hash is not None else text_hash(t) for r, t in zip(rows, texts, strict=True)
        ]
        worth = [bool(h) and worth_embedding(r.content) for h, r in zip(hashes, rows, strict=True)]
        links = [(r.key, h if w else "") for r, h, w in zip(rows, hashes, worth, strict=True)]
        report.skipped += worth.count(False)
        wanted = [h for h, w in zip(hashes, worth, strict=True) if w]
        known = await self.store.read(lambda tx: tx.vectors.known(space, wanted))
        todo: dict[str, str] = {}
        for h, t, w in zip(hashes, texts, worth, strict=True):
            if w and h not in known:
                todo.setdefault(h, t)
        report.cached += len(wanted) - len(todo)  # rows whose text needed no call of its own
        pending = list(todo.items())
        done: set[str] = set(known)
        for start in range(0, max(len(pending), 1), self.batch):
            if start and stopping():
                return
            chunk = pending[start : start + self.batch]
            vectors: list[tuple[str, Vector]] = []
            if chunk:
                started, nudges = self._clock.monotonic(), self._nudges
                matrix = await self.embedder.embed([t for _, t in chunk], "passage")
                vectors = [(h, matrix[i]) for i, (h, _) in enumerate(chunk)]
                report.embedded += len(chunk)
                done.update(h for h, _ in chunk)
                if self._nudges - nudges >= len(chunk):  # more new text than it embedded
                    await self._rest(started)
            last = start + self.batch >= len(pending)
            # rows are linked once their text has a vector (or needs none): an unlinked row is
            # looked at again after a failure
            ready = [(k, h) for k, h in links if h == "" or h in done] if last else []
            await self.store.write(_store_vectors, kind, space, vectors, ready, time.time())

    async def embed_new(
        self, stopping: Callable[[], bool] = lambda: False, progress: Progress | None = None
    ) -> EmbedReport:
        """Embed the rows never looked at, until none is left (or `stopping()`, or `stop()`)."""
        report = EmbedReport()
        if self.embedder is None:
            return report
        stopping = self._or_stopped(stopping)
        started = time.perf_counter()
        async with self._guard():
            space = await self._known_space()
            done = 0
            while not stopping():
                found = False
                for kind in KINDS:
                    rows = await self.store.read(
                        lambda tx, kind=kind: tx.vectors.unhashed(kind, LOOK_AHEAD)
                    )
                    if rows:
                        found = True
                        await self._embed(kind, rows, space, report, stopping)
                        done += len(rows)
                        if progress is not None:
                            progress(done)
                if not found:
                    break
        report.seconds = time.perf_counter() - started
        return report

    async def catch_up(
        self, stopping: Callable[[], bool] = lambda: False, progress: Progress | None = None
    ) -> EmbedReport:
        """`embed_new`, then the rows whose text has no vector in this space; then drop vectors
        that no row names."""
        started = time.perf_counter()
        report = await self.embed_new(stopping, progress)
        if self.embedder is None:
            return report
        stopping = self._or_stopped(stopping)
        async with self._guard():
            space = await self._known_space()
            for kind in KINDS:
                after = 0
                while not stopping():
                    rows = await self.store.read(
                        lambda tx, kind=kind, after=after: tx.vectors.missing(
                            kind, space, after, LOOK_AHEAD
                        )
                    )
                    if not rows:
                        break
                    await self._embed(kind, rows, space, report, stopping)
                    after = rows[-1].key
                    if progress is not None:
                        progress(report.embedded + report.cached + report.skipped)
            if not stopping():
                report.swept = await self.store.write(lambda tx: tx.vectors.sweep())
        report.seconds = time.perf_counter() - started
        return report

    def _or_stopped(self, stopping: Callable[[], bool]) -> Callable[[], bool]:
        return lambda: self._stopping or stopping()

    async def rebuild(self, progress: Progress | None = None) -> EmbedReport:
        """Every vector again, with the current embedder."""
        async with self._guard():
            await self.store.write(lambda tx: tx.vectors.clear())
        return await self.catch_up(progress=progress)

    async def counts(self) -> VectorCounts:
        space = self.space()
        return await self.store.read(lambda tx: tx.vectors.counts(space))

    # -- the background task ------------------------------------------------------------------

    def nudge(self) -> None:
        """Something was written: embed it soon (never waits)."""
        if self.embedder is not None:
            self._nudges += 1
            self._wake.set()

    async def _rest(self, started: float) -> None:
        """After a batch of a local model that began at `started`, in a burst: wait so that the
        background runs `background_share` of the time (or until `stop()`)."""
        share = self._background_share
        if share >= 1.0:
            return
        took = self._clock.monotonic() - started
        rest = min(MAX_REST, took * (1.0 - share) / share)
        with contextlib.suppress(TimeoutError):
            async with self._clock.timeout(rest):
                await self._stopped.wait()

    async def run(self, settle: float = 0.2) -> None:
        """Embed what each nudge brought, until `stop()`; a failure waits for the next nudge
        (the upkeep job retries too)."""
        if self.embedder is None:
            return
        self._wake.set()  # what waited from before the start
        while not self._stopping:
            await self._wake.wait()
            if self._stopping:
                break
            await self._clock.sleep(settle)  # let a burst of turns arrive, embed it in batches
            self._wake.clear()
            try:
                report = await self.embed_new()
            except (ProviderError, StorageError, OSError, RuntimeError, ValueError) as exc:
                log.warning("embedding_failed", error=str(exc))
                continue
            if report.embedded:
                log.debug("embedded", texts=report.embedded, cached=report.cached)

    def stop(self) -> None:
        """`run()` and any upkeep finish their current batch (a rest is cut short) and return."""
        self._stopping = True
        self._stopped.set()
        self._wake.set()


def _store_vectors(
    tx: Tx,
    kind: Embedded,
    space: VectorSpace,
    vectors: Sequence[tuple[str, Vector]],
    links: Sequence[tuple[int, str]],
    at: float,
) -> None:
    if vectors:
        tx.vectors.put(space, vectors, at)
    if links:
        tx.vectors.link(kind, links)
