"""The long-connection mode: lark-oapi's `ws.Client` on a thread of its own.

The SDK keeps the event loop it runs on in a module global (`lark_oapi.ws.client.loop`, captured at
import) and `Client.start()` blocks in `run_until_complete`, so it cannot run inside our loop. Each
`LongConnection.run()` therefore starts one daemon thread with a fresh loop, points the SDK's global
at it, builds the client there (its caches create tasks on the thread's current loop) and calls
`start()`. Only one long connection can run per process at a time, since that global is shared.

The SDK calls our handler on its thread for each event frame and acknowledges the frame when the
handler returns. The handler only hands the event dict to our loop (`call_soon_threadsafe`) and
waits for the inbox's yes/no, a matter of microseconds, so Lark's ~3 s acknowledgement deadline is
always met; a "no" (inbox full) raises, the SDK answers 500 and Lark pushes the event again later.

Reconnecting is the SDK's: when the socket drops it asks the endpoint for a new URL and reconnects,
with the intervals the server's `ClientConfig` sets.

Stopping (our task cancelled): turn the SDK's auto-reconnect off and stop its loop from our side;
on its thread, `start()` then returns with "Event loop stopped", every task left on that loop is
cancelled and awaited, the socket is closed with a close frame, the loop is closed and the SDK's
global is restored. `run()` returns when the thread has finished, so nothing is left behind.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

import lark_oapi as lark
import lark_oapi.ws.client as sdk_ws
import structlog

from nahida.errors import AdapterError

log = structlog.get_logger(__name__)

Offer = Callable[[dict[str, Any]], bool]
HANDOFF_SECONDS = 2.0  # how long the SDK thread waits for our loop to take an event
STOP_SECONDS = 5.0  # how long run() waits for the SDK thread to wind down

_one_at_a_time = threading.Lock()  # the SDK's loop is a module global


def _close_import_loop() -> None:
    """Close the idle loop `lark_oapi.ws.client` made for itself at import.

    Imported outside a running loop, the SDK calls `asyncio.get_event_loop()`, which creates and
    installs a loop that nothing ever runs or closes (ResourceWarning at exit). Every run here
    swaps in a loop of its own, so that one is never used: close it. A loop that is running (the
    SDK imported from inside one) is someone else's and is left alone.
    """
    loop = sdk_ws.loop
    if isinstance(loop, asyncio.AbstractEventLoop) and not (loop.is_running() or loop.is_closed()):
        loop.close()


_close_import_loop()


class LongConnection:
    def __init__(
        self,
        *,
        app_id: str,
        app_secret: str,
        domain: str,
        offer: Offer,
        event_types: Sequence[str],
    ) -> None:
        self._app_id = app_id
        self._app_secret = app_secret
        self._domain = domain
        self._offer = offer
        self._event_types = tuple(event_types)
        self._main: asyncio.AbstractEventLoop | None = None
        self._sdk_loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._halted = False
        self.reconnects = 0

    async def run(self) -> None:
        """Receive events until cancelled; raises `AdapterError` if the SDK gives up."""
        main = self._main = asyncio.get_running_loop()
        sdk_loop = self._sdk_loop = asyncio.new_event_loop()
        self._halted = False
        done: asyncio.Future[BaseException | None] = main.create_future()
        thread = threading.Thread(
            target=self._thread, args=(main, sdk_loop, done), name="lark-ws", daemon=True
        )
        thread.start()
        log.info("lark_long_connection_starting", domain=self._domain)
        try:
            error = await asyncio.shield(done)
        finally:
            self._halt()
            if not done.done():
                try:
                    async with asyncio.timeout(STOP_SECONDS):
                        await asyncio.shield(done)
                except TimeoutError:
                    log.warning("lark_long_connection_stop_timeout", seconds=STOP_SECONDS)
            if done.done():
                thread.join(timeout=1.0)  # it only has to return from its last statement
        if error is not None:
            raise AdapterError(f"Lark long connection gave up: {error}") from error

    # -- our side ----------------------------------------------------------------------------

    def _halt(self) -> None:
        self._halted = True
        loop = self._sdk_loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # closed in the meantime: nothing to stop
            loop.call_soon_threadsafe(self._stop_sdk, loop)

    # -- the SDK's thread ----------------------------------------------------------------------

    def _thread(
        self,
        main: asyncio.AbstractEventLoop,
        loop: asyncio.AbstractEventLoop,
        done: asyncio.Future[BaseException | None],
    ) -> None:
        error: BaseException | None = None
        try:
            if not _one_at_a_time.acquire(blocking=False):
                loop.close()
                raise AdapterError("another Lark long connection already runs in this process")
            try:
                error = self._serve(loop)
            finally:
                _one_at_a_time.release()
        except BaseException as exc:
            error = exc
        finally:
            with contextlib.suppress(RuntimeError):  # our loop is closed: nobody is waiting
                main.call_soon_threadsafe(_settle, done, error)

    def _serve(self, loop: asyncio.AbstractEventLoop) -> BaseException | None:
        asyncio.set_event_loop(loop)
        previous = sdk_ws.loop
        sdk_ws.loop = loop
        client: Any = None
        try:
            client = self._client = self._make_client()
            if not self._halted:
                client.start()  # returns only by raising
            return None
        except Exception as exc:
            return None if self._halted else exc  # "Event loop stopped" after _halt is the norm
        finally:
            _drain(loop, client)
            self._client = None
            sdk_ws.loop = previous
            asyncio.set_event_loop(None)
            loop.close()

    def _make_client(self) -> Any:
        builder = lark.EventDispatcherHandler.builder("", "")
        for event_type in self._event_types:
            builder = builder.register_p2_customized_event(event_type, self._on_event)
        client = lark.ws.Client(
            self._app_id,
            self._app_secret,
            event_handler=builder.build(),
            domain=self._domain,
            log_level=lark.LogLevel.WARNING,
            auto_reconnect=True,
        )
        client.on_reconnecting = self._on_reconnecting
        client.on_reconnected = self._on_reconnected
        return client

    def _stop_sdk(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._client is not None:
            self._client._auto_reconnect = False  # or start() would try to reconnect on stop
        loop.stop()

    def _on_event(self, event: Any) -> None:
        """Called by the SDK on its thread; returning acknowledges the frame."""
        raw = json.loads(lark.JSON.marshal(event))
        main = self._main
        if main is None:
            raise AdapterError("not running")
        taken: concurrent.futures.Future[bool] = concurrent.futures.Future()

        def deliver() -> None:
            try:
                taken.set_result(self._offer(raw))
            except Exception as exc:
                taken.set_exception(exc)

        main.call_soon_threadsafe(deliver)
        if not taken.result(timeout=HANDOFF_SECONDS):
            raise AdapterError("inbox full; Lark will push the event again")

    def _on_reconnecting(self) -> None:
        log.warning("lark_long_connection_lost")

    def _on_reconnected(self) -> None:
        self.reconnects += 1
        log.info("lark_long_connection_reconnected", reconnects=self.reconnects)


def _settle(done: asyncio.Future[BaseException | None], error: BaseException | None) -> None:
    if not done.done():
        done.set_result(error)


def _drain(loop: asyncio.AbstractEventLoop, client: Any) -> None:
    """Cancel and await every task left on the SDK's loop, then close the socket cleanly."""
    finished: list[asyncio.Task[Any]] = []
    for _ in range(10):  # a task may catch one cancellation (the SDK's ping loop sleeps in finally)
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        if not pending:
            break
        for task in pending:
            task.cancel()
        loop.run_until_complete(asyncio.wait(pending, timeout=0.5))
        finished.extend(pending)
    for task in finished:
        if task.done() and not task.cancelled():
            task.exception()  # retrieved, so no "exception was never retrieved" at collection
    conn = getattr(client, "_conn", None)
    if conn is not None:
        with contextlib.suppress(Exception):
            loop.run_until_complete(asyncio.wait_for(conn.close(), 2.0))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.run_until_complete(loop.shutdown_default_executor())
