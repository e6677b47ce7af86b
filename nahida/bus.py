"""The event bus: delivers envelopes to one handler, in order per chat (DESIGN §1).

Every chat (keyed by `str(envelope.chat)`) gets a bounded queue and a worker task that handles its
envelopes one at a time, in the order `submit()` accepted them. Workers of different chats run
concurrently, with at most `concurrency` handlers running at once. A full queue makes `submit()`
wait (backpressure, never loss). A worker that has had nothing to do for `idle_timeout` seconds
retires and takes all of its chat's state with it, so memory does not grow with the number of chats
ever seen. `shutdown()` stops accepting and returns once everything accepted has been handled.

Retirement cannot lose an envelope. `submit()` finds (or creates) the chat's entry and counts
itself as pending in one step; a worker retires only when its queue is empty and nobody is pending,
and removes the entry in the same step. Neither step awaits, so the two never interleave: a submit
either reaches the old worker before it decides, or finds no entry and starts a new worker.

Every worker is a child of the TaskGroup inside `run()`; `submit()` spawns into it, and chats
submitted to before `run()` starts get their workers when it does.

The bus is generic over what it carries: envelopes keyed by chat by default, or any item with a
`key` function (the background work queue, `nahida.background`, is one).

Overload: the oldest waiting message is answered first. A worker holding its chat's head message
asks `_Slots` for a slot; when all are busy, a freed slot is handed
directly to the waiting worker whose head message was submitted longest ago (a heap keyed by that
time), not to whichever worker asked first; a worker that finishes a message keeps its slot for
its chat's next message only when that one is older than every waiter. (`asyncio.Semaphore`
wakes in the order workers began waiting: a chat whose next message has waited behind its
previous one for a long while would go after a chat whose only message arrived a moment ago.)
With `light_concurrency`, a message starts in one of those light slots, and a handler whose
message needs the model (an answer, a command) calls `take_heavy_slot()`: it gives up its light
slot and waits, oldest first, for one of the `concurrency` heavy ones. Group talk not addressed to
the bot (stored, indexed, extracted) stays light, so a bot whose every heavy slot waits for the
model still stores the chatter around it, and a burst of chatter is stored in large batches
without more model calls at once.

The bus knows its depth (`backlog()`: messages submitted and not yet started, the largest chat
queue, the longest wait) and logs `bus_backlog` at most every `backlog_log_every` seconds while
at least `backlog_log_at` messages wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import signal
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Hashable
from contextvars import Context, ContextVar, copy_context
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

import structlog

from nahida.envelope import Envelope

T = TypeVar("T")
Handler = Callable[[Envelope], Awaitable[None]]
DedupKey = Callable[[Envelope], Hashable]

log = structlog.get_logger(__name__)

# The bus whose worker runs this task, so a handler calling shutdown() does not wait on itself.
_worker_of: ContextVar[EventBus[Any] | None] = ContextVar("nahida_bus_worker", default=None)


def _envelope_dedup_key(envelope: Envelope) -> Hashable:
    return envelope.dedup_key


def _envelope_chat(envelope: Envelope) -> str:
    return str(envelope.chat)


def _envelope_label(envelope: Envelope) -> dict[str, Any]:
    return {"msg": envelope.message_id}


@dataclass(frozen=True, slots=True)
class Backlog:
    """What waits: messages submitted and not yet started, per bus."""

    waiting: int  # in all chats
    largest: int  # in the chat with the most
    largest_chat: str | None
    oldest_wait: float  # seconds the longest-waiting message has waited (0 when none waits)


@dataclass(slots=True, eq=False)
class _Chat(Generic[T]):
    """One chat's queue. `None` in the queue only wakes an idle worker at shutdown."""

    key: str
    queue: asyncio.Queue[T | None]
    pending: int = 0  # submits waiting for room in the queue
    has_worker: bool = False
    # submit times (monotonic) of the chat's messages not yet started, oldest first
    since: deque[float] = field(default_factory=deque)

    @property
    def idle(self) -> bool:
        return self.pending == 0 and self.queue.empty()


class _Slots:
    """At most `n` holders; a freed slot goes to the waiter whose message has waited longest."""

    def __init__(self, n: int) -> None:
        self._free = n
        self._waiters: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()  # equal times: first come, first served

    async def acquire(self, since: float) -> None:
        if self._free > 0:  # free slots exist only while nobody waits (release hands them over)
            self._free -= 1
            return
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (since, next(self._order), future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # granted, then cancelled before it ran: pass the slot on
            raise

    def keep(self, since: float) -> bool:
        """Whether a holder whose next message was submitted at `since` may keep its slot."""
        while self._waiters and self._waiters[0][2].done():
            heapq.heappop(self._waiters)  # cancelled
        return not self._waiters or since <= self._waiters[0][0]

    def waiters(self) -> tuple[int, float | None]:
        """How many wait, and since when the one that has waited longest (None: nobody)."""
        waiting = [since for since, _, future in self._waiters if not future.done()]
        return len(waiting), min(waiting, default=None)

    def release(self) -> None:
        while self._waiters:
            future = heapq.heappop(self._waiters)[2]
            if not future.done():  # a cancelled waiter stays in the heap until popped here
                future.set_result(None)
                return
        self._free += 1


@dataclass(slots=True, eq=False)
class _Held:
    """Which slot a worker holds: one of `start`'s (where every message starts), one of
    `heavy`'s, or none."""

    start: _Slots
    heavy: _Slots
    slots: _Slots | None = None
    since: float = 0.0  # when the message being handled was submitted


# The slot this worker task holds, for `take_heavy_slot()`.
_held: ContextVar[_Held | None] = ContextVar("nahida_bus_slot", default=None)


async def take_heavy_slot() -> None:
    """From a bus handler whose message needs the model: trade its light slot for one of the
    bus's `concurrency` slots (waiting, oldest message first). Nothing happens outside a bus
    with light slots, or when it already holds a heavy one."""
    held = _held.get()
    if held is None or held.start is held.heavy or held.slots is not held.start:
        return
    held.start.release()
    held.slots = None  # cancelled while waiting below: nothing is held
    await held.heavy.acquire(held.since)
    held.slots = held.heavy


class EventBus(Generic[T]):
    def __init__(
        self,
        handler: Callable[[T], Awaitable[None]],
        *,
        concurrency: int = 16,
        light_concurrency: int = 0,
        queue_size: int = 100,
        idle_timeout: float = 30.0,
        dedup_size: int = 4096,
        dedup_key: Callable[[T], Hashable] | None = None,
        key: Callable[[T], str] | None = None,
        label: Callable[[T], dict[str, Any]] | None = None,
        name: str = "bus",
        backlog_log_at: int = 100,
        backlog_log_every: float = 5.0,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        if light_concurrency < 0:
            raise ValueError(f"light_concurrency must not be negative, not {light_concurrency}")
        if queue_size < 1:
            raise ValueError(f"queue_size must be at least 1, not {queue_size}")
        if idle_timeout < 0:
            raise ValueError(f"idle_timeout must not be negative, not {idle_timeout}")
        if dedup_size < 0:
            raise ValueError(f"dedup_size must not be negative, not {dedup_size}")
        self._handler = handler
        self._queue_size = queue_size
        self._idle_timeout = idle_timeout
        self._dedup_size = dedup_size  # 0 turns deduplication off
        # The defaults are for envelopes; a bus of other items passes its own.
        self._dedup_key = dedup_key or cast(Callable[[T], Hashable], _envelope_dedup_key)
        self._key = key or cast(Callable[[T], str], _envelope_chat)
        self._label = label or cast(Callable[[T], dict[str, Any]], _envelope_label)
        self._heavy = _Slots(concurrency)
        # where a message starts: a light slot, or (without light slots) a heavy one
        self._start = _Slots(light_concurrency) if light_concurrency else self._heavy
        self._name = name
        self._backlog_log_at = backlog_log_at
        self._backlog_log_every = backlog_log_every
        self._backlog_logged = -backlog_log_every  # monotonic time of the last `bus_backlog`
        self._waiting = 0
        self._chats: dict[str, _Chat[T]] = {}
        self._seen: OrderedDict[Hashable, None] = OrderedDict()
        self._tg: asyncio.TaskGroup | None = None
        self._context = Context()  # run()'s: each worker starts in a copy of it
        self._running = False
        self._closing = False
        self._stop = asyncio.Event()
        self._finished = asyncio.Event()
        self._workers = 0
        self._accepted = 0
        self._handled = 0
        self._failed = 0
        self._dropped_duplicates = 0

    @property
    def active_chats(self) -> int:
        """Number of live per-chat workers."""
        return self._workers

    @property
    def accepted(self) -> int:
        return self._accepted

    @property
    def handled(self) -> int:
        """Envelopes whose handler has finished, whether it succeeded or raised."""
        return self._handled

    @property
    def failed(self) -> int:
        return self._failed

    @property
    def dropped_duplicates(self) -> int:
        return self._dropped_duplicates

    @property
    def closed(self) -> bool:
        return self._closing

    @property
    def waiting(self) -> int:
        """Messages submitted and not yet started (queued, holding a worker for a slot, or
        waiting in `take_heavy_slot()`)."""
        return self._waiting + self._heavy_waiters()[0]

    def _heavy_waiters(self) -> tuple[int, float | None]:
        """Messages whose handler waits in `take_heavy_slot()` (the others are in `since`)."""
        return self._heavy.waiters() if self._start is not self._heavy else (0, None)

    def backlog(self) -> Backlog:
        """The bus's depth now: O(chats), for logs and status, not for every message."""
        largest, largest_chat = 0, None
        heavy, oldest = self._heavy_waiters()
        for chat in self._chats.values():
            if not chat.since:
                continue
            if len(chat.since) > largest:
                largest, largest_chat = len(chat.since), chat.key
            if oldest is None or chat.since[0] < oldest:
                oldest = chat.since[0]
        wait = 0.0 if oldest is None else max(0.0, time.monotonic() - oldest)
        return Backlog(self._waiting + heavy, largest, largest_chat, wait)

    async def submit(self, envelope: T) -> bool:
        """Queue `envelope` for its chat; wait while that chat's queue is full.

        Returns False when the envelope is a recent duplicate or the bus is shut down. Envelopes of
        one chat are handled in the order their `submit()` calls returned True.
        """
        if self._closing:
            return False
        key = self._dedup_key(envelope) if self._dedup_size else None
        if key is not None and self._seen_before(key):
            self._dropped_duplicates += 1
            log.info("duplicate_dropped", key=repr(key))
            return False
        chat = self._chat_for(self._key(envelope))
        chat.pending += 1
        since = time.monotonic()
        try:
            await chat.queue.put(envelope)
            chat.since.append(since)  # no await since the put: in the queue's order
        except BaseException:
            if key is not None:
                self._seen.pop(key, None)  # never queued: let a retry through
            raise
        finally:
            chat.pending -= 1
        self._accepted += 1
        self._waiting += 1
        if self._waiting >= self._backlog_log_at:
            self._log_backlog()
        return True

    async def run(self) -> None:
        """Run the chat workers until `shutdown()` and until everything accepted is handled."""
        if self._running:
            raise RuntimeError("EventBus.run() is already running")
        self._running = True
        self._finished.clear()
        try:
            async with asyncio.TaskGroup() as tg:
                self._tg, self._context = tg, copy_context()
                try:
                    for chat in list(self._chats.values()):
                        self._start_worker(chat)
                    await self._stop.wait()
                finally:
                    # Closed (or cancelled): no new chats can appear, every chat has its worker.
                    self._tg = None
        finally:
            for chat in self._chats.values():
                chat.has_worker = False  # only left over when run() was cancelled
            self._running = False
            self._finished.set()

    def close(self) -> None:
        """Stop accepting envelopes; `run()` returns once everything accepted has been handled.

        Synchronous, so a signal handler can call it without starting a task.
        """
        if self._closing:
            return
        self._closing = True
        self._stop.set()
        for chat in self._chats.values():
            if chat.idle:
                chat.queue.put_nowait(None)  # wake the idle worker so it retires now

    async def shutdown(self) -> None:
        """Stop accepting envelopes and return when everything accepted has been handled.

        Called from inside a handler it only closes the bus: it cannot wait for its own worker.
        If envelopes were accepted but `run()` never started, this waits for `run()`.
        """
        self.close()
        if _worker_of.get() is self:
            return
        if self._running or self._chats:
            await self._finished.wait()

    def install_signal_handlers(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Close the bus on SIGINT and SIGTERM (where the loop supports signal handlers)."""
        loop = loop or asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, self.close)

    def _seen_before(self, key: Hashable) -> bool:
        if key in self._seen:
            self._seen.move_to_end(key)
            return True
        self._seen[key] = None
        if len(self._seen) > self._dedup_size:
            self._seen.popitem(last=False)
        return False

    def _chat_for(self, key: str) -> _Chat[T]:
        chat = self._chats.get(key)
        if chat is None:
            chat = _Chat[T](key, asyncio.Queue(self._queue_size))
            self._chats[key] = chat
            self._start_worker(chat)
        return chat

    def _start_worker(self, chat: _Chat[T]) -> None:
        if self._tg is None or chat.has_worker:
            return  # run() starts it
        chat.has_worker = True
        self._workers += 1
        # not in the context of whoever submitted (a handler's, say, with its log bindings
        # and store priority): the worker serves that chat's later messages too
        self._tg.create_task(self._work(chat), name=f"bus {chat.key}", context=self._context.copy())

    async def _work(self, chat: _Chat[T]) -> None:
        _worker_of.set(self)
        # A slot kept from the last message for the next one (see `_Slots.keep`): a start one.
        held = _Held(self._start, self._heavy)
        _held.set(held)
        try:
            queue = chat.queue
            while not (self._closing and chat.idle):
                if not queue.empty():  # a burst: no idle timer to arm and cancel (~5 µs)
                    envelope = queue.get_nowait()
                else:
                    try:
                        async with asyncio.timeout(self._idle_timeout):
                            envelope = await queue.get()
                    except TimeoutError:
                        if chat.idle:
                            break
                        continue
                if envelope is None:
                    continue
                held.since = chat.since[0]  # when `envelope` was submitted
                if held.slots is None:
                    await self._start.acquire(held.since)
                    held.slots = self._start
                await self._handle(chat, envelope)
                # The chat's next message competes for the slot like any other waiter.
                keep = held.slots is self._start and chat.since and self._start.keep(chat.since[0])
                if not keep and held.slots is not None:
                    held.slots.release()
                    held.slots = None
            # Retire: nothing awaits between the idle check above and this removal.
            del self._chats[chat.key]
        finally:
            if held.slots is not None:
                held.slots.release()
            self._workers -= 1

    async def _handle(self, chat: _Chat[T], envelope: T) -> None:
        chat.since.popleft()
        self._waiting -= 1
        if self._waiting >= self._backlog_log_at:
            self._log_backlog()
        try:
            await self._handler(envelope)
        except Exception:
            self._failed += 1
            log.exception("handler_failed", chat=chat.key, **self._label(envelope))
        self._handled += 1

    def _log_backlog(self) -> None:
        now = time.monotonic()
        if now - self._backlog_logged < self._backlog_log_every:
            return
        self._backlog_logged = now
        depth = self.backlog()
        log.warning(
            "bus_backlog",
            bus=self._name,
            waiting=depth.waiting,
            largest=depth.largest,
            largest_chat=depth.largest_chat,
            oldest_wait=round(depth.oldest_wait, 1),
        )
