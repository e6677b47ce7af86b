"""EventBus: per-chat order, the global bound on what waits (backpressure), the optional bound on
handlers, idle retirement on virtual time, shutdown, dedup."""

from __future__ import annotations

import asyncio
import random
import signal
import sys
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from nahida.bus import EventBus, Handler
from nahida.clock import VirtualClock
from nahida.envelope import ChatKey, Envelope, Segment, Sender, UserKey

SAID = datetime(2026, 5, 1, 12, tzinfo=UTC)


def make_envelope(
    chat: str, message_id: str, text: str = "hi", *, self_id: str = "bot", at: datetime = SAID
) -> Envelope:
    return Envelope(
        platform="test",
        self_id=self_id,
        chat=ChatKey("test", "group", chat),
        sender=Sender(UserKey("test", "u1"), "U"),
        message_id=message_id,
        time=at,
        segments=(Segment.plain(text),),
        text=text,
        to_me=True,
    )


async def noop(envelope: Envelope) -> None:
    return None


async def wait_until(condition: Callable[[], bool], seconds: float = 3.0) -> None:
    async with asyncio.timeout(seconds):
        while not condition():  # noqa: ASYNC110 - polling the bus's counters is the point
            await asyncio.sleep(0.001)


@asynccontextmanager
async def running(bus: EventBus, seconds: float = 5.0) -> AsyncIterator[asyncio.Task[None]]:
    """Run the bus for the body of the block, then shut it down (draining)."""
    async with asyncio.timeout(seconds), asyncio.TaskGroup() as tg:
        runner = tg.create_task(bus.run())
        await asyncio.sleep(0)
        yield runner
        await bus.shutdown()
        assert runner.done()


def recorder() -> tuple[Handler, dict[str, list[str]]]:
    handled: dict[str, list[str]] = defaultdict(list)

    async def handler(envelope: Envelope) -> None:
        handled[str(envelope.chat)].append(envelope.message_id)

    return handler, handled


# --- order: property test -------------------------------------------------------------------------

# One planned message: (chat index, sleeps inside its handler, yields before submitting, producer).
planned_message = st.tuples(
    st.integers(0, 3), st.integers(0, 3), st.integers(0, 2), st.integers(0, 2)
)


async def run_plan(
    plan: list[tuple[int, int, int, int]],
    concurrency: int | None,
    queue_size: int,
    idle_timeout: float,
    run_first: bool,
) -> None:
    sleeps: dict[str, int] = {}
    handled: dict[str, list[str]] = defaultdict(list)
    in_flight: dict[str, int] = defaultdict(int)
    overlaps = 0
    most_waiting = 0

    async def handler(envelope: Envelope) -> None:
        nonlocal overlaps, most_waiting
        chat = str(envelope.chat)
        in_flight[chat] += 1
        overlaps += in_flight[chat] > 1
        most_waiting = max(most_waiting, bus.waiting)
        for _ in range(sleeps[envelope.message_id]):
            await asyncio.sleep(0)
        handled[chat].append(envelope.message_id)
        in_flight[chat] -= 1

    bus = EventBus(
        handler, concurrency=concurrency, queue_size=queue_size, idle_timeout=idle_timeout
    )
    per_producer: dict[int, list[tuple[str, str, int]]] = defaultdict(list)
    for i, (chat, handler_sleeps, yields, producer) in enumerate(plan):
        sleeps[f"m{i}"] = handler_sleeps
        per_producer[producer].append((f"c{chat}", f"m{i}", yields))
    accepted: dict[str, list[str]] = defaultdict(list)

    async def produce(items: list[tuple[str, str, int]]) -> None:
        for chat, message_id, yields in items:
            for _ in range(yields):
                await asyncio.sleep(0)
            assert await bus.submit(make_envelope(chat, message_id))
            accepted[str(ChatKey("test", "group", chat))].append(message_id)

    async with asyncio.timeout(10), asyncio.TaskGroup() as tg:
        if run_first:
            tg.create_task(bus.run())
        producers = [tg.create_task(produce(items)) for items in per_producer.values()]
        if not run_first:
            await asyncio.sleep(0)
            tg.create_task(bus.run())
        await asyncio.gather(*producers)
        await bus.shutdown()

    assert handled == accepted
    all_handled = [m for ids in handled.values() for m in ids]
    assert sorted(all_handled) == sorted(sleeps)  # nothing lost, nothing duplicated
    assert overlaps == 0
    assert most_waiting <= queue_size  # the one bound on what waits, over all chats
    assert bus.accepted == bus.handled == len(plan)
    assert bus.active_chats == 0
    assert bus._chats == {}


@settings(max_examples=150, deadline=None)
@given(
    plan=st.lists(planned_message, min_size=1, max_size=30),
    concurrency=st.none() | st.integers(1, 4),
    queue_size=st.integers(1, 3),
    idle_timeout=st.sampled_from([0.0, 0.0005, 10.0]),
    run_first=st.booleans(),
)
def test_each_chat_is_handled_in_submission_order(
    plan: list[tuple[int, int, int, int]],
    concurrency: int | None,
    queue_size: int,
    idle_timeout: float,
    run_first: bool,
) -> None:
    asyncio.run(run_plan(plan, concurrency, queue_size, idle_timeout, run_first))


# --- concurrency ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bound", [1, 3])
async def test_concurrency_bound_is_respected_and_used(bound: int) -> None:
    in_flight = 0
    peak = 0

    async def handler(envelope: Envelope) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        for _ in range(3):
            await asyncio.sleep(0)
        in_flight -= 1

    bus = EventBus(handler, concurrency=bound)
    async with running(bus):
        for chat in range(10):
            for message in range(3):
                assert await bus.submit(make_envelope(f"c{chat}", f"{chat}-{message}"))
    assert bus.handled == 30
    assert peak == bound


async def test_without_a_bound_every_chat_is_handled_at_once() -> None:
    """The envelope bus bounds no handlers: a chat whose handler waits (on a model) holds up
    nobody else's."""
    gate = asyncio.Event()
    started: list[str] = []

    async def handler(envelope: Envelope) -> None:
        started.append(envelope.message_id)
        await gate.wait()

    bus = EventBus(handler)
    async with running(bus):
        for chat in range(50):
            assert await bus.submit(make_envelope(f"c{chat}", f"m{chat}"))
        await wait_until(lambda: len(started) == 50)
        assert bus.waiting == 0
        gate.set()
    assert bus.handled == 50


# --- backpressure: one bound over all chats -------------------------------------------------------


async def test_submit_waits_while_the_bus_holds_queue_size_messages_in_all_chats() -> None:
    gate = asyncio.Semaphore(0)
    handled: list[str] = []

    async def handler(envelope: Envelope) -> None:
        await gate.acquire()
        handled.append(envelope.message_id)

    bus = EventBus(handler, queue_size=3)
    async with running(bus), asyncio.TaskGroup() as tg:
        assert await bus.submit(make_envelope("a", "a1"))
        await wait_until(lambda: bus.waiting == 0)  # a1 is in the handler: it waits no more
        for message in ("a2", "a3"):
            assert await bus.submit(make_envelope("a", message))
        assert await bus.submit(make_envelope("b", "b1"))
        await wait_until(lambda: bus.waiting == 2)  # b1 started: its chat's worker is free
        assert await bus.submit(make_envelope("c", "c1"))
        await wait_until(lambda: bus.waiting == 2)
        assert await bus.submit(make_envelope("a", "a4"))  # a2 a3 a4 wait: the bus is full
        assert bus.waiting == 3
        blocked_a = tg.create_task(bus.submit(make_envelope("a", "a5")))
        blocked_d = tg.create_task(bus.submit(make_envelope("d", "d1")))  # another chat too
        for _ in range(20):
            await asyncio.sleep(0)
        assert not blocked_a.done() and not blocked_d.done()
        assert bus.accepted == 6
        gate.release()  # one handler finishes; a2 starts (if a1 was the one): room for one
        await wait_until(lambda: blocked_a.done() or blocked_d.done())
        assert bus.waiting <= 3
        for _ in range(8):
            gate.release()
        assert await blocked_a and await blocked_d
    assert [m for m in handled if m.startswith("a")] == ["a1", "a2", "a3", "a4", "a5"]
    assert sorted(handled) == ["a1", "a2", "a3", "a4", "a5", "b1", "c1", "d1"]


async def test_a_cancelled_submit_gives_its_room_back() -> None:
    gate = asyncio.Event()

    async def handler(envelope: Envelope) -> None:
        await gate.wait()

    bus = EventBus(handler, queue_size=1)
    async with running(bus):
        assert await bus.submit(make_envelope("a", "1"))
        assert await bus.submit(make_envelope("a", "2"))  # waits behind "1": the bus is full
        waiting = asyncio.create_task(bus.submit(make_envelope("b", "1")))
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        gate.set()
        assert await asyncio.wait_for(bus.submit(make_envelope("b", "1")), 1)  # let through
    assert bus.handled == 3 and bus.accepted == 3


# --- idle retirement ------------------------------------------------------------------------------


async def test_idle_workers_retire_on_time_and_leave_no_state_behind() -> None:
    clock = VirtualClock()
    bus = EventBus(noop, idle_timeout=60, clock=clock)
    async with running(bus):
        for chat in range(3):
            assert await bus.submit(make_envelope(f"c{chat}", f"c{chat}"))
        await clock.advance(0)
        assert bus.handled == 3
        await clock.advance(30)
        assert await bus.submit(
            make_envelope("c2", "again")
        )  # c2 is busy again: its timer restarts
        await clock.advance(29.9)
        assert bus.active_chats == 3  # idle, but not for long enough yet
        await clock.advance(0.2)
        assert sorted(bus._chats) == ["test:group:c2"]  # c0 and c1 retired at 60 s
        await clock.advance(29.9)
        assert bus.active_chats == 0  # c2 at 90 s
        assert bus._chats == {} and bus._idle == {}

        for chat in range(10_000):
            assert await bus.submit(make_envelope(f"many{chat}", f"many{chat}"))
        assert bus.active_chats > 0
        await wait_until(lambda: bus.handled == 10_004)
        await clock.advance(60)
        assert bus.active_chats == 0
        assert bus._chats == {}
        assert len(bus._seen) == 4096  # the dedup memory is bounded too


@pytest.mark.parametrize("idle_timeout", [0.0, 1.0])
async def test_envelopes_submitted_as_a_worker_retires_are_not_lost(idle_timeout: float) -> None:
    handler, handled = recorder()
    clock = VirtualClock()
    bus = EventBus(handler, idle_timeout=idle_timeout, clock=clock)
    rng = random.Random(20240601)
    saw_retired = 0
    saw_idle_worker = 0
    async with running(bus):
        for i in range(300):
            if bus.active_chats == 0:
                saw_retired += 1
            elif bus.handled == bus.accepted:
                saw_idle_worker += 1  # alive with nothing to do: about to retire
            assert await bus.submit(make_envelope("race", str(i)))
            if idle_timeout:
                await clock.advance(rng.choice([0, 0, idle_timeout * rng.uniform(0.5, 2)]))
            else:
                for _ in range(rng.randint(0, 4)):
                    await asyncio.sleep(0)
    assert handled["test:group:race"] == [str(i) for i in range(300)]
    assert bus.handled == 300
    assert saw_retired > 0
    assert saw_idle_worker > 0


# --- shutdown -------------------------------------------------------------------------------------


async def test_shutdown_handles_everything_accepted_then_refuses() -> None:
    handled: list[str] = []

    async def handler(envelope: Envelope) -> None:
        await asyncio.sleep(0.001)
        handled.append(envelope.message_id)

    bus = EventBus(handler, concurrency=4)
    async with asyncio.timeout(5), asyncio.TaskGroup() as tg:
        runner = tg.create_task(bus.run())
        for chat in range(5):
            for message in range(20):
                assert await bus.submit(make_envelope(f"c{chat}", f"{chat}-{message}"))
        assert bus.handled < 100
        await bus.shutdown()
        assert runner.done()
        assert bus.handled == 100
        assert sorted(handled) == sorted(f"{c}-{m}" for c in range(5) for m in range(20))
        assert not await bus.submit(make_envelope("c0", "late"))
        assert bus.accepted == 100
        assert bus.active_chats == 0


async def test_shutdown_while_submits_wait_for_room() -> None:
    handled: list[str] = []

    async def handler(envelope: Envelope) -> None:
        await asyncio.sleep(0.001)
        handled.append(envelope.message_id)

    bus = EventBus(handler, queue_size=2)
    results: list[bool] = []

    async def produce() -> None:
        for i in range(50):
            results.append(await bus.submit(make_envelope("a", str(i))))

    async with asyncio.timeout(5), asyncio.TaskGroup() as tg:
        tg.create_task(bus.run())
        producer = tg.create_task(produce())
        await asyncio.sleep(0.01)
        await bus.shutdown()
        await producer
    accepted = results.count(True)
    assert 0 < accepted < 50
    assert results == [True] * accepted + [False] * (50 - accepted)
    assert handled == [str(i) for i in range(accepted)]
    assert bus.accepted == bus.handled == accepted


async def test_submit_before_run_is_handled_once_run_starts() -> None:
    handler, handled = recorder()
    bus = EventBus(handler, queue_size=5)
    for i in range(3):
        assert await bus.submit(make_envelope("early", str(i)))
    assert bus.active_chats == 0
    async with asyncio.timeout(5), asyncio.TaskGroup() as tg:
        stopper = tg.create_task(bus.shutdown())
        await asyncio.sleep(0.01)
        assert not stopper.done()  # accepted work is waiting for run()
        tg.create_task(bus.run())
    assert handled["test:group:early"] == ["0", "1", "2"]


async def test_a_chat_worker_starts_in_the_context_of_run_not_of_who_submitted() -> None:
    """A handler's context (its log bindings, its store priority) must not reach the worker a
    submit of that handler starts: that worker serves the chat's later messages too."""
    mark: ContextVar[str] = ContextVar("mark", default="run")
    seen: list[str] = []

    async def background(envelope: Envelope) -> None:
        seen.append(mark.get())

    later = EventBus(background)

    async def handler(envelope: Envelope) -> None:
        mark.set(f"handler {envelope.message_id}")
        assert await later.submit(make_envelope("b", envelope.message_id))

    first = EventBus(handler)
    async with running(later), running(first):
        assert await first.submit(make_envelope("a", "1"))
        await wait_until(lambda: later.handled == 1)
    assert seen == ["run"]


async def test_shutdown_from_a_handler_does_not_wait_for_itself() -> None:
    handled: list[str] = []
    bus: EventBus

    async def handler(envelope: Envelope) -> None:
        handled.append(envelope.message_id)
        if envelope.text == "/stop":
            await bus.shutdown()

    bus = EventBus(handler)
    async with asyncio.timeout(5):
        assert await bus.submit(make_envelope("a", "1", "/stop"))
        assert await bus.submit(make_envelope("a", "2"))
        await bus.run()
    assert handled == ["1", "2"]
    assert not await bus.submit(make_envelope("a", "3"))


@pytest.mark.skipif(sys.platform == "win32", reason="no loop signal handlers on Windows")
async def test_sigterm_closes_the_bus() -> None:
    loop = asyncio.get_running_loop()
    handler, handled = recorder()
    bus = EventBus(handler)
    bus.install_signal_handlers(loop)
    try:
        async with asyncio.timeout(5):
            assert await bus.submit(make_envelope("a", "1"))
            signal.raise_signal(signal.SIGTERM)
            await bus.run()
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        loop.remove_signal_handler(signal.SIGTERM)
    assert bus.closed
    assert handled["test:group:a"] == ["1"]


async def test_run_twice_at_once_is_refused() -> None:
    bus = EventBus(noop)
    async with running(bus):
        with pytest.raises(RuntimeError, match="already running"):
            await bus.run()


# --- dedup and failures ---------------------------------------------------------------------------


async def test_duplicates_are_dropped() -> None:
    handler, handled = recorder()
    bus = EventBus(handler)
    async with running(bus):
        assert await bus.submit(make_envelope("a", "1"))
        assert not await bus.submit(make_envelope("a", "1"))
        assert await bus.submit(make_envelope("a", "1", self_id="other-bot"))
        assert await bus.submit(make_envelope("a", "2"))
        # platforms reuse ids: per chat, or from the start after a restart
        assert await bus.submit(make_envelope("b", "1"))
        assert await bus.submit(make_envelope("a", "1", at=SAID + timedelta(seconds=30)))
    assert handled["test:group:a"] == ["1", "1", "2", "1"]
    assert bus.dropped_duplicates == 1
    assert bus.accepted == 5


async def test_dedup_memory_is_a_bounded_lru() -> None:
    bus = EventBus(noop, dedup_size=2)
    results = []
    async with running(bus):
        for message in ["a", "b", "a", "c", "a", "b"]:
            results.append(await bus.submit(make_envelope("x", message)))
    # "a" seen again refreshes it, so "c" evicts "b"; "a" is still remembered, "b" is not.
    assert results == [True, True, False, True, False, True]
    assert bus.dropped_duplicates == 2


async def test_dedup_key_can_be_replaced_or_turned_off() -> None:
    by_text = EventBus(noop, dedup_key=lambda envelope: envelope.text)
    assert await by_text.submit(make_envelope("a", "1", "same"))
    assert not await by_text.submit(make_envelope("a", "2", "same"))
    no_dedup = EventBus(noop, dedup_size=0)
    assert await no_dedup.submit(make_envelope("a", "1"))
    assert await no_dedup.submit(make_envelope("a", "1"))
    for bus in (by_text, no_dedup):
        async with running(bus):
            pass
    assert by_text.handled == 1
    assert no_dedup.handled == 2


async def test_handler_exception_is_logged_and_the_chat_goes_on() -> None:
    handled: list[str] = []

    async def handler(envelope: Envelope) -> None:
        if envelope.message_id == "1":
            raise RuntimeError("boom")
        handled.append(envelope.message_id)

    bus = EventBus(handler)
    with capture_logs() as logs:
        async with running(bus):
            assert await bus.submit(make_envelope("a", "1"))
            assert await bus.submit(make_envelope("a", "2"))
    assert handled == ["2"]
    assert bus.handled == 2
    assert bus.failed == 1
    failures = [entry for entry in logs if entry["event"] == "handler_failed"]
    assert len(failures) == 1
    assert failures[0]["chat"] == "test:group:a"
    assert failures[0]["msg"] == "1"
    assert failures[0]["log_level"] == "error"


@pytest.mark.parametrize(
    "kwargs",
    [{"concurrency": 0}, {"queue_size": 0}, {"idle_timeout": -1.0}, {"dedup_size": -1}],
)
def test_bad_settings_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        EventBus(noop, **kwargs)  # type: ignore[arg-type]


# --- depth visible -------------------------------------------------------------------------------


async def test_backlog_counts_what_waits_and_logs_it_at_most_every_few_seconds() -> None:
    gate, first = asyncio.Event(), asyncio.Event()

    async def handler(envelope: Envelope) -> None:
        first.set()
        await gate.wait()

    clock = VirtualClock()
    bus = EventBus(handler, backlog_log_at=3, backlog_log_every=60, clock=clock)
    assert bus.backlog().waiting == 0 and bus.backlog().oldest_wait == 0
    with capture_logs() as logs:
        async with running(bus):
            assert await bus.submit(make_envelope("a", "a1"))
            await first.wait()
            await clock.advance(4)
            for message in ("a2", "a3", "a4"):
                assert await bus.submit(make_envelope("a", message))
            await clock.advance(5)
            assert await bus.submit(make_envelope("b", "b1"))  # started at once: b is free
            await clock.advance(0)
            depth = bus.backlog()
            assert (depth.waiting, depth.largest, depth.largest_chat) == (3, 3, "test:group:a")
            assert depth.oldest_wait == 5  # a2's, in virtual seconds
            assert bus.waiting == 3
            gate.set()
    assert bus.waiting == 0 and bus.backlog().waiting == 0
    backlog_lines = [line for line in logs if line["event"] == "bus_backlog"]
    assert len(backlog_lines) == 1  # several crossings within 60 s: one line
    assert backlog_lines[0]["waiting"] == 3 and backlog_lines[0]["bus"] == "bus"
