"""The event bus: delivers envelopes to one handler, in order per chat (DESIGN §1).

Every chat (keyed by `str(envelope.chat)`) gets a queue and a worker task that handles its
envelopes one at a time, in the order `submit()` accepted them. Workers of different chats run
concurrently: the bus does not bound them (a bus of slow work may, with `concurrency`). What
waits is bounded as a whole: at most `queue_size` messages, in all chats together, are submitted
and not yet started; beyond that `submit()` waits (backpressure, never loss). What needs bounding
inside a handler is bounded there: the runner holds a semaphore around its model call, so group
talk that is only stored never waits for a model.

A worker whose queue has been empty for `idle_timeout` seconds (on the bus's `Clock`) retires
and takes all of its chat's state with it, so memory does not grow with the number of chats ever
seen. One timer task serves every idle chat: idle chats are kept in the order they fell idle,
so the one that retires next is always the first. `shutdown()` stops accepting and returns once
everything accepted has been handled.

Retirement cannot lose an envelope. `submit()` finds (or creates) the chat's entry and counts
itself as pending in one step; a worker retires only when its queue is empty and nobody is pending,
and removes the entry in the same step. Neither step awaits, so the two never interleave: a submit
either reaches the old worker before it decides, or finds no entry and starts a new worker.

Every worker is a child of the TaskGroup inside `run()`; `submit()` spawns into it, and chats
submitted to before `run()` starts get their workers when it does.

The bus is generic over what it carries: envelopes keyed by chat by default, or any item with a
`key` function (the background work queue, `nahida.background`, is one).

The bus knows its depth (`backlog()`: messages submitted and not yet started, the largest chat
queue, the longest wait) and logs `bus_backlog` at most every `backlog_log_every` seconds while
at least `backlog_log_at` messages wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Hashable
from contextvars import Context, ContextVar, copy_context
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

import structlog

from nahida.clock import SYSTEM, Clock
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
    """One chat's queue. `None` in the queue only wakes an idle worker to retire."""

    key: str
    queue: asyncio.Queue[T | None] = field(default_factory=asyncio.Queue)
    pending: int = 0  # submits waiting for room on the bus
    has_worker: bool = False
    # submit times (the clock's monotonic) of the chat's messages not yet started, oldest first
    since: deque[float] = field(default_factory=deque)

    @property
    def idle(self) -> bool:
        return self.pending == 0 and self.queue.empty()


class EventBus(Generic[T]):
    def __init__(
        self,
        handler: Callable[[T], Awaitable[None]],
        *,
        concurrency: int | None = None,
        queue_size: int = 1000,
        idle_timeout: float = 30.0,
        dedup_size: int = 4096,
        dedup_key: Callable[[T], Hashable] | None = None,
        key: Callable[[T], str] | None = None,
        label: Callable[[T], dict[str, Any]] | None = None,
        name: str = "bus",
        backlog_log_at: int = 100,
        backlog_log_every: float = 5.0,
        clock: Clock = SYSTEM,
    ) -> None:
        if concurrency is not None and concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        if queue_size < 1:
            raise ValueError(f"queue_size must be at least 1, not {queue_size}")
        if idle_timeout < 0:
            raise ValueError(f"idle_timeout must not be negative, not {idle_timeout}")
        if dedup_size < 0:
            raise ValueError(f"dedup_size must not be negative, not {dedup_size}")
        self._handler = handler
        # None: handlers of different chats all run at once
        self._running_handlers = asyncio.Semaphore(concurrency) if concurrency else None
        self._room = asyncio.Semaphore(queue_size)  # one permit a message not yet started
        self._idle_timeout = idle_timeout
        self._clock = clock
        self._dedup_size = dedup_size  # 0 turns deduplication off
        # The defaults are for envelopes; a bus of other items passes its own.
        self._dedup_key = dedup_key or cast(Callable[[T], Hashable], _envelope_dedup_key)
        self._key = key or cast(Callable[[T], str], _envelope_chat)
        self._label = label or cast(Callable[[T], dict[str, Any]], _envelope_label)
        self._name = name
        self._backlog_log_at = backlog_log_at
        self._backlog_log_every = backlog_log_every
        self._backlog_logged = -backlog_log_every  # monotonic time of the last `bus_backlog`
        self._waiting = 0
        self._chats: dict[str, _Chat[T]] = {}
        # chats whose worker waits on an empty queue, with the time it began, oldest first
        self._idle: OrderedDict[_Chat[T], float] = OrderedDict()
        self._someone_idle = asyncio.Event()  # wakes the idle timer when `_idle` was empty
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
        """Messages submitted and not yet started."""
        return self._waiting

    def backlog(self) -> Backlog:
        """The bus's depth now: O(chats), for logs and status, not for every message."""
        largest, largest_chat = 0, None
        oldest: float | None = None
        for chat in self._chats.values():
            if not chat.since:
                continue
            if len(chat.since) > largest:
                largest, largest_chat = len(chat.since), chat.key
            if oldest is None or chat.since[0] < oldest:
                oldest = chat.since[0]
        wait = 0.0 if oldest is None else max(0.0, self._clock.monotonic() - oldest)
        return Backlog(self._waiting, largest, largest_chat, wait)

    async def submit(self, envelope: T) -> bool:
        """Queue `envelope` for its chat; wait while the bus holds `queue_size` waiting messages.

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
        try:
            await self._room.acquire()
        except BaseException:
            if key is not None:
                self._seen.pop(key, None)  # never queued: let a retry through
            raise
        finally:
            chat.pending -= 1
        # no await from here on: the queue and `since` keep the same order
        chat.queue.put_nowait(envelope)
        chat.since.append(self._clock.monotonic())
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
                timer = tg.create_task(self._retire_idle(), name=f"{self._name} idle timer")
                try:
                    for chat in list(self._chats.values()):
                        self._start_worker(chat)
                    await self._stop.wait()
                finally:
                    # Closed (or cancelled): no new chats can appear, every chat has its worker.
                    self._tg = None
                    timer.cancel()
        finally:
            for chat in self._chats.values():
                chat.has_worker = False  # only left over when run() was cancelled
            self._idle.clear()
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
            chat = _Chat[T](key)
            self._chats[key] = chat
            self._start_worker(chat)
        return chat

    def _start_worker(self, chat: _Chat[T]) -> None:
        if self._tg is None or chat.has_worker:
            return  # run() starts it
        chat.has_worker = True
        self._workers += 1
        # not in the context of whoever submitted (a handler's, say, with its log bindings):
        # the worker serves that chat's later messages too
        self._tg.create_task(self._work(chat), name=f"bus {chat.key}", context=self._context.copy())

    async def _work(self, chat: _Chat[T]) -> None:
        _worker_of.set(self)
        queue = chat.queue
        try:
            while True:
                if not queue.empty():
                    envelope = queue.get_nowait()
                elif chat.idle and self._closing:
                    break
                else:
                    self._idle[chat] = self._clock.monotonic()
                    if len(self._idle) == 1:
                        self._someone_idle.set()
                    try:
                        envelope = await queue.get()
                    finally:
                        self._idle.pop(chat, None)
                if envelope is None:  # closing, or idle for long enough: retire if still idle
                    if chat.idle:
                        break
                    continue
                if self._running_handlers is None:
                    await self._handle(chat, envelope)
                else:
                    async with self._running_handlers:
                        await self._handle(chat, envelope)
            # Retire: nothing awaits between the idle check above and this removal.
            del self._chats[chat.key]
        finally:
            self._workers -= 1

    async def _retire_idle(self) -> None:
        """Wake each worker whose queue has been empty for `idle_timeout`, so it retires."""
        while True:
            if not self._idle:
                self._someone_idle.clear()
                await self._someone_idle.wait()
                continue
            chat, since = next(iter(self._idle.items()))
            left = since + self._idle_timeout - self._clock.monotonic()
            if left > 0:
                await self._clock.sleep(left)  # a chat idle since later retires later still
                continue
            del self._idle[chat]
            if chat.pending == 0:  # a submit waiting for room wakes the worker itself
                chat.queue.put_nowait(None)

    async def _handle(self, chat: _Chat[T], envelope: T) -> None:
        self._room.release()  # started: no longer waiting
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
        now = self._clock.monotonic()
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
