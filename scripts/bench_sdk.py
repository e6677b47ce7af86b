"""Per-call cost of talking to the model: the provider (OpenAI or Anthropic SDK, one shared client
with keep-alive, built once per provider; aiohttp under it where the SDK offers that) against the
same request through the SDKs' default HTTP client alone (httpx2 in their current releases) and
through a raw aiohttp POST, all to the fake server in a second process (its CPU is not ours).
Prints, per call, our process's CPU and the wall time at a given concurrency: what the SDK's
request building and response parsing cost beyond the HTTP round trip. The
request is shaped like the bot's prompt: `--turns` hot-window turns (20 by default) besides the
system message, the recalled memory and the message.

    .venv/bin/python scripts/bench_sdk.py --calls 2000 --concurrency 16
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import multiprocessing
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nahida.providers.base import ChatRequest, Message  # noqa: E402
from nahida.providers.client import ClientSettings  # noqa: E402
from tests.fakes.llm_server import serve_until_stopped  # noqa: E402


def prompt(turns: int) -> ChatRequest:
    """A request shaped like the bot's: the system message, recalled memory and its
    acknowledgement, `turns` turns of the hot window (20 for the default 10 rounds), the message."""
    history = tuple(
        Message("user" if n % 2 == 0 else "assistant", f"第 {n} 句：周五下午三点在三楼开周会。")
        for n in range(turns)
    )
    return ChatRequest(
        model="m1",
        messages=(
            Message("system", "你是纳西妲。" * 40),
            Message("user", "[长期记忆]\n- 喜欢乌龙茶\n- 周五发周报"),
            Message("assistant", "好的。"),
            *history,
            Message("user", "今天吃什么好呢？"),
        ),
        max_tokens=256,
    )


async def provider_calls(
    kind: str, url: str, request: ChatRequest, calls: int, concurrency: int
) -> tuple[float, float]:
    if kind == "anthropic":
        from nahida.providers.anthropic import AnthropicProvider as Provider
    else:
        from nahida.providers.openai import OpenAIProvider as Provider  # type: ignore[assignment]
    settings = ClientSettings(url, "k-bench", max_retries=0, connections=concurrency)
    provider = Provider("bench", settings)
    await provider.chat(request)  # warm: connection, imports
    cpu, wall = await _timed(lambda: provider.chat(request), calls, concurrency)
    await provider.aclose()
    return cpu, wall


def _raw_request(kind: str, url: str, request: ChatRequest) -> tuple[str, dict[str, object]]:
    messages = [{"role": m.role, "content": m.content} for m in request.messages]
    if kind == "anthropic":
        body = {"model": "m1", "max_tokens": 256, "system": messages[0]["content"]}
        return url.rstrip("/") + "/v1/messages", {**body, "messages": messages[1:]}
    return url.rstrip("/") + "/chat/completions", {
        "model": "m1",
        "max_tokens": 256,
        "messages": messages,
    }


def sdk_transport(kind: str) -> ModuleType:
    """The HTTP package the SDK of `kind` sends its requests with (httpx or httpx2): the
    package of the limits the SDK exports as its default."""
    limits = importlib.import_module(kind).DEFAULT_CONNECTION_LIMITS
    return importlib.import_module(type(limits).__module__.partition(".")[0])


async def transport_calls(
    kind: str, url: str, request: ChatRequest, calls: int, concurrency: int
) -> tuple[float, float]:
    """The SDK's own HTTP client, without the SDK: what the HTTP client alone costs."""
    target, body = _raw_request(kind, url, request)
    async with sdk_transport(kind).AsyncClient() as client:

        async def one() -> object:
            response = await client.post(target, json=body, headers={"x-api-key": "k"})
            return response.json()

        await one()
        return await _timed(one, calls, concurrency)


async def raw_calls(
    kind: str, url: str, request: ChatRequest, calls: int, concurrency: int
) -> tuple[float, float]:
    target, body = _raw_request(kind, url, request)
    async with aiohttp.ClientSession() as session:

        async def one() -> object:
            async with session.post(target, json=body) as response:
                return await response.json()

        await one()
        return await _timed(one, calls, concurrency)


async def _timed(call, calls: int, concurrency: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            await call()

    cpu, started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one() for _ in range(calls)))
    return (time.process_time() - cpu) * 1000 / calls, (
        time.perf_counter() - started
    ) * 1000 / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--turns", type=int, default=20, help="hot-window turns in the prompt (the bot's: 20)"
    )
    args = parser.parse_args()
    request = prompt(args.turns)
    print(
        f"# bench_sdk: {args.calls} calls, concurrency {args.concurrency}, medians of {args.runs},"
        f" {len(request.messages)} messages a request ({args.turns} hot-window turns)"
    )
    print()
    print("| client | our CPU / call | wall / call | calls/s |")
    print("|---|---|---|---|")
    context = multiprocessing.get_context("spawn")
    for kind in ("openai", "anthropic"):
        ports = context.Queue()
        server = context.Process(target=serve_until_stopped, args=(kind, ports), daemon=True)
        server.start()
        url = ports.get(timeout=30)
        try:
            for label, fn in (
                (f"{kind} SDK (our provider)", provider_calls),
                (f"{kind} request, {sdk_transport(kind).__name__} alone", transport_calls),
                (f"{kind} request, aiohttp alone", raw_calls),
            ):
                found = [
                    asyncio.run(fn(kind, url, request, args.calls, args.concurrency))
                    for _ in range(args.runs)
                ]
                cpu = statistics.median(c for c, _ in found)
                wall = statistics.median(w for _, w in found)
                print(f"| {label} | {cpu:.2f} ms | {wall:.2f} ms | {1000 / wall:,.0f} |")
        finally:
            server.terminate()
            server.join()


if __name__ == "__main__":
    main()
