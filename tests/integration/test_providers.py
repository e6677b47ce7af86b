"""Both providers, driven through the real SDKs against the fake loopback servers."""

from __future__ import annotations

import asyncio
import json
import socket
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

import anthropic
import openai
import pytest

from nahida.app import build_model_router
from nahida.errors import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderResponseError,
    ProviderServerError,
    ProviderTimeoutError,
)
from nahida.providers.anthropic import AnthropicProvider, message_body
from nahida.providers.base import ChatRequest, ChatResponse, Message, Provider, ToolCall, ToolSpec
from nahida.providers.client import ClientSettings, backoff_delay, error_for_status, with_retries
from nahida.providers.openai import OpenAIProvider, completion_body, sanitise_name
from tests.fakes.llm_server import FakeAnthropicServer, FakeLLMServer, FakeOpenAIServer
from tests.helpers import config, openai_provider

KEY = "sk-test-5f0c2a9e4b7d41c3"

FAST = ClientSettings(
    base_url=None, api_key=KEY, timeout=5.0, max_retries=2, backoff_base=0.001, backoff_max=0.01
)

WEATHER = ToolSpec(
    name="weather",
    description="Current weather in a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


@dataclass
class Fake:
    """One fake server and the providers pointed at it (closed at teardown)."""

    kind: str
    server: FakeLLMServer
    providers: list[Provider] = field(default_factory=list)

    def provider(self, **overrides: Any) -> OpenAIProvider | AnthropicProvider:
        settings = replace(FAST, **{"base_url": self.server.url, **overrides})
        made: OpenAIProvider | AnthropicProvider
        if self.kind == "openai":
            made = OpenAIProvider("fake-openai", settings)
        else:
            made = AnthropicProvider("fake-anthropic", settings)
        self.providers.append(made)
        return made

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.server.requests]


@pytest.fixture(params=["openai", "anthropic"])
async def fake(
    request: pytest.FixtureRequest,
    openai_server: FakeOpenAIServer,
    anthropic_server: FakeAnthropicServer,
) -> AsyncIterator[Fake]:
    server: FakeLLMServer = openai_server if request.param == "openai" else anthropic_server
    harness = Fake(request.param, server)
    yield harness
    for provider in harness.providers:
        await provider.aclose()


def ask(text: str, **kwargs: Any) -> ChatRequest:
    return ChatRequest(model="fake-model", messages=(Message("user", text),), **kwargs)


# -- behaviour common to both providers ---------------------------------------------------------


async def test_plain_reply(fake: Fake) -> None:
    fake.server.reply_text("hello there")

    response = await fake.provider().chat(ask("hi"))

    assert response.content == "hello there"
    assert response.tool_calls == ()
    assert response.model == "fake-model"
    assert response.finish_reason in ("stop", "end_turn")
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1, 2)
    [received] = fake.server.requests
    assert received.body["model"] == "fake-model"
    headers = received.headers
    if fake.kind == "openai":
        assert headers["authorization"] == f"Bearer {KEY}"
    else:  # this SDK sends the key as a bearer token; older ones used x-api-key
        assert KEY in (headers.get("x-api-key"), headers.get("authorization", "")[len("Bearer ") :])
        assert "anthropic-version" in headers


async def test_default_mode_echoes_last_user_text(fake: Fake) -> None:
    request = ChatRequest(
        model="m",
        messages=(Message("user", "first"), Message("assistant", "ok"), Message("user", "second")),
    )

    response = await fake.provider().chat(request)

    assert response.content == "echo: second"


async def test_rate_limit_then_success_honours_retry_after(fake: Fake) -> None:
    fake.server.fail(429, times=2, retry_after=0.01)
    fake.server.reply_text("finally")
    # Backoff alone would wait 30 s; only honouring the server's hint finishes in time.
    provider = fake.provider(backoff_base=30.0, backoff_max=30.0)

    async with asyncio.timeout(5):
        response = await provider.chat(ask("hi"))

    assert response.content == "finally"
    assert len(fake.server.requests) == 3


async def test_rate_limit_persistent_gives_up(fake: Fake) -> None:
    fake.server.fail(429, times=5, retry_after=0)

    with pytest.raises(ProviderRateLimitError) as caught:
        await fake.provider(max_retries=1).chat(ask("hi"))

    assert caught.value.status == 429
    assert len(fake.server.requests) == 2


async def test_server_error_after_all_retries(fake: Fake) -> None:
    fake.server.fail(500, times=10)

    with pytest.raises(ProviderServerError) as caught:
        await fake.provider().chat(ask("hi"))

    assert caught.value.status == 500
    assert caught.value.provider == f"fake-{fake.kind}"
    # max_retries + 1 attempts: the SDK's own retries are off, ours are the only ones.
    assert len(fake.server.requests) == FAST.max_retries + 1


async def test_timeout(fake: Fake) -> None:
    fake.server.hang()
    fake.server.hang()

    with pytest.raises(ProviderTimeoutError):
        await fake.provider(timeout=0.2, max_retries=1).chat(ask("hi"))

    assert len(fake.server.requests) == 2


async def test_auth_error_is_not_retried_and_hides_the_key(fake: Fake) -> None:
    # A careless server echoes the key back in its error body.
    fake.server.fail(401, message=f"Incorrect API key provided: {KEY}")

    with pytest.raises(ProviderAuthError) as caught:
        await fake.provider().chat(ask("hi"))

    error = caught.value
    assert error.status == 401
    assert "Incorrect API key provided" in str(error)
    printed = "".join(traceback.format_exception(error))
    assert KEY not in printed
    assert KEY not in repr(getattr(error.__cause__, "body", None))
    assert "401" in printed
    assert len(fake.server.requests) == 1


async def test_connection_refused(fake: Fake) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    closed = f"http://127.0.0.1:{port}" + ("/v1" if fake.kind == "openai" else "")

    with pytest.raises(ProviderConnectionError) as caught:
        await fake.provider(base_url=closed, max_retries=1).chat(ask("hi"))

    assert KEY not in str(caught.value)


async def test_a_dropped_connection_is_a_connection_error_and_retried(fake: Fake) -> None:
    """The SDKs' aiohttp transport reports it as a connect timeout; it is neither."""
    fake.server.drop()
    with pytest.raises(ProviderConnectionError):
        await fake.provider(max_retries=0).chat(ask("hi"))
    fake.server.drop()
    response = await fake.provider(max_retries=1).chat(ask("hi"))
    assert response.content == "echo: hi"
    assert len(fake.server.requests) == 3


async def test_ping_lists_models_without_a_chat_request(fake: Fake) -> None:
    await fake.provider().ping()

    assert fake.server.requests == []


async def test_ping_unreachable(fake: Fake) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    with pytest.raises(ProviderConnectionError):
        await fake.provider(base_url=f"http://127.0.0.1:{port}/v1").ping()


async def rounds_of_calls(
    server: FakeLLMServer, chat: Callable[[ChatRequest], Awaitable[Any]], rounds: int, calls: int
) -> list[set[str]]:
    """The connections each round of `calls` calls at once came on (the server holds each call
    a moment, so a round's calls overlap)."""
    peers = []
    for _ in range(rounds):
        for _ in range(calls):
            server.hang(0.2)
        before = len(server.requests)
        await asyncio.gather(*(chat(ask(f"call {n}")) for n in range(calls)))
        peers.append({r.peer for r in server.requests[before:]})
    return peers


async def test_a_provider_keeps_its_pool_of_connections_alive_between_calls(fake: Fake) -> None:
    provider = fake.provider(connections=3)
    first, second = await rounds_of_calls(fake.server, provider.chat, rounds=2, calls=3)
    assert len(first) == 3 and "" not in first
    assert second == first  # every connection kept and used again


async def test_a_provider_opens_no_more_connections_than_its_pool(fake: Fake) -> None:
    """Calls beyond the pool wait for one of its connections, every one kept for the next
    round (the SDKs' aiohttp client: it keeps alive all it opens, so it opens no more)."""
    provider = fake.provider(connections=3)
    first, second = await rounds_of_calls(fake.server, provider.chat, rounds=2, calls=5)
    assert len(first) == 3 and "" not in first
    assert second == first


async def test_the_apps_providers_keep_a_connection_for_each_call_the_bot_makes_at_once(
    openai_server: FakeOpenAIServer,
) -> None:
    """One bus slot's answer and one background slot's work at once, and a scheduled job's:
    three connections for `bus.concurrency: 1`, kept for the next calls."""
    router = build_model_router(
        config(bus={"concurrency": 1}, **openai_provider(openai_server.url))
    )
    try:
        first, second = await rounds_of_calls(
            openai_server, lambda r: router.chat("chat", r.messages), rounds=2, calls=5
        )
    finally:
        await router.aclose()
    assert len(first) == 3 and "" not in first
    assert second == first


async def test_malformed_tool_arguments(fake: Fake) -> None:
    fake.server.reply_malformed_tool_call("weather")

    with pytest.raises(ProviderResponseError, match="weather"):
        await fake.provider().chat(ask("weather in Paris?", tools=(WEATHER,)))

    assert len(fake.server.requests) == 1  # not retried


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("<html>gateway</html>", "text/html"),
        ("{}", "application/json"),
        ("[1, 2]", "application/json"),
    ],
)
async def test_unexpected_response_shape(fake: Fake, body: str, content_type: str) -> None:
    fake.server.reply_raw(body, content_type=content_type)

    with pytest.raises(ProviderResponseError):
        await fake.provider().chat(ask("hi"))


def completion(message: dict[str, Any], **fields: Any) -> str:
    return json.dumps({"choices": [{"message": {"role": "assistant", **message}}], **fields})


@pytest.mark.parametrize(
    ("kind", "body", "wrong"),
    [
        ("openai", completion({"content": [{"type": "text", "text": "hi"}]}), "content is list"),
        ("openai", completion({"tool_calls": [{"id": "c1", "type": "custom"}]}), "custom"),
        ("openai", completion({"tool_calls": [{"type": "function"}]}), "KeyError"),
        ("openai", json.dumps({"choices": {"0": {}}}), "KeyError"),
        ("openai", json.dumps({"choices": ["hi"]}), "TypeError"),
        ("anthropic", json.dumps({"content": [{"type": "text", "text": ["hi"]}]}), "TypeError"),
        ("anthropic", json.dumps({"content": [{"type": "tool_use", "name": "w"}]}), "input"),
        ("anthropic", json.dumps({"content": [{"text": "hi"}]}), "KeyError"),
        ("anthropic", json.dumps({"content": "hi"}), "TypeError"),
    ],
)
async def test_a_reply_of_a_wrong_shape_says_what_is_wrong(
    openai_server: FakeOpenAIServer,
    anthropic_server: FakeAnthropicServer,
    kind: str,
    body: str,
    wrong: str,
) -> None:
    """The providers read the endpoint's JSON themselves (not the SDK's typed response)."""
    fake = Fake(kind, openai_server if kind == "openai" else anthropic_server)
    fake.server.reply_raw(body)
    provider = fake.provider()
    try:
        with pytest.raises(ProviderResponseError, match=wrong):
            await provider.chat(ask("hi"))
    finally:
        await provider.aclose()


async def test_openai_reply_without_the_optional_fields(openai_server: FakeOpenAIServer) -> None:
    """No usage, model or finish reason, a tool call without its type (some compatible
    endpoints send them so): read as zeros, empty texts and a function call."""
    call = {"id": "c1", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}
    openai_server.reply_raw(completion({"content": None, "tool_calls": [call]}))
    provider = OpenAIProvider("fake-openai", replace(FAST, base_url=openai_server.url))
    try:
        response = await provider.chat(ask("weather?", tools=(WEATHER,)))
    finally:
        await provider.aclose()
    assert response.content == "" and response.model == "" and response.finish_reason == ""
    assert (response.usage.input_tokens, response.usage.output_tokens) == (0, 0)
    assert response.tool_calls == (ToolCall("c1", "weather", {"city": "Paris"}),)


async def test_anthropic_reply_without_the_optional_fields(
    anthropic_server: FakeAnthropicServer,
) -> None:
    """No usage, model or stop reason; blocks of other types (thinking) left out."""
    blocks = [
        {"type": "thinking", "thinking": "..."},
        {"type": "text", "text": "Paris: "},
        {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Paris"}},
        {"type": "text", "text": "checking"},
    ]
    anthropic_server.reply_raw(json.dumps({"content": blocks}))
    provider = AnthropicProvider("fake-anthropic", replace(FAST, base_url=anthropic_server.url))
    try:
        response = await provider.chat(ask("weather?", tools=(WEATHER,)))
    finally:
        await provider.aclose()
    assert response.content == "Paris: checking"
    assert response.model == "" and response.finish_reason == ""
    assert (response.usage.input_tokens, response.usage.output_tokens) == (0, 0)
    assert response.tool_calls == (ToolCall("t1", "weather", {"city": "Paris"}),)


async def test_tool_call_round_trip(fake: Fake) -> None:
    fake.server.reply_tool_call("weather", {"city": "Paris"}, call_id="call_7")
    fake.server.reply_text("Sunny in Paris.")
    provider = fake.provider()
    history: tuple[Message, ...] = (
        Message("system", "You are terse."),
        Message("user", "Weather in Paris?"),
    )

    first = await provider.chat(ChatRequest("fake-model", history, tools=(WEATHER,)))
    assert first.tool_calls == (ToolCall("call_7", "weather", {"city": "Paris"}),)
    assert first.finish_reason in ("tool_calls", "tool_use")

    history += (
        Message("assistant", first.content, tool_calls=first.tool_calls),
        Message("tool", "sunny, 25C", tool_call_id="call_7"),
    )
    second = await provider.chat(ChatRequest("fake-model", history, tools=(WEATHER,)))

    assert second.content == "Sunny in Paris."
    assert second.tool_calls == ()
    expect_wire = expect_openai_round_trip if fake.kind == "openai" else expect_anthropic_round_trip
    expect_wire(fake.bodies)


def expect_openai_round_trip(bodies: list[dict[str, Any]]) -> None:
    assert bodies[0]["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": WEATHER.description,
                "parameters": WEATHER.parameters,
            },
        }
    ]
    assert bodies[1]["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_7",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "content": "sunny, 25C", "tool_call_id": "call_7"},
    ]


def expect_anthropic_round_trip(bodies: list[dict[str, Any]]) -> None:
    assert bodies[0]["tools"] == [
        {"name": "weather", "description": WEATHER.description, "input_schema": WEATHER.parameters}
    ]
    assert bodies[1]["system"] == "You are terse."
    assert bodies[1]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "call_7", "name": "weather", "input": {"city": "Paris"}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_7", "content": "sunny, 25C"}],
        },
    ]


# -- translation details of each protocol -------------------------------------------------------


only_openai = pytest.mark.parametrize("fake", ["openai"], indirect=True)
only_anthropic = pytest.mark.parametrize("fake", ["anthropic"], indirect=True)


@only_openai
async def test_openai_sends_no_unset_parameters(fake: Fake) -> None:
    provider = fake.provider()
    await provider.chat(ask("a"))
    await provider.chat(ask("b", max_tokens=50, temperature=0.3))

    unset, given = fake.bodies
    assert not {"max_tokens", "temperature", "tools", "max_completion_tokens"} & unset.keys()
    assert (given["max_tokens"], given["temperature"]) == (50, 0.3)


@only_openai
async def test_openai_user_names_are_sanitised(fake: Fake) -> None:
    request = ChatRequest(
        model="m",
        messages=(
            Message("user", "one", name="Alice Smith"),
            Message("user", "two", name="纳西妲"),
            Message("user", "three", name="bob-2"),
        ),
    )
    await fake.provider().chat(request)

    sent = fake.bodies[0]["messages"]
    assert [m.get("name") for m in sent] == ["Alice_Smith", None, "bob-2"]
    assert "name" not in sent[1]


SENT_AS_IS = [
    ask("今天吃什么好呢？"),
    ask("b", max_tokens=50, temperature=0.3),
    ChatRequest(
        model="m",
        messages=(
            Message("system", "你是纳西妲。"),
            Message("user", "weather?", name="Alice Smith"),
            Message("assistant", "", tool_calls=(ToolCall("call_1", "weather", {"city": "巴黎"}),)),
            Message("tool", '{"temp": 21}', tool_call_id="call_1"),
            Message("assistant", "21 度。"),
            Message("user", "谢谢", name="纳西妲"),
        ),
        tools=(WEATHER,),
        max_tokens=128,
    ),
]


async def assert_sent_alike(
    server: FakeLLMServer,
    provider: Provider,
    sdk: openai.AsyncOpenAI | anthropic.AsyncAnthropic,
    request_: ChatRequest,
    theirs: Callable[[], Awaitable[object]],
) -> None:
    """The provider's request and the SDK's own (`theirs`) reach the server alike."""
    try:
        await provider.chat(request_)
        await theirs()
    finally:
        await provider.aclose()
        await sdk.close()
    ours, sdks = server.requests
    assert ours.path == sdks.path
    assert ours.body == sdks.body
    assert ours.headers == sdks.headers


@pytest.mark.parametrize("request_", SENT_AS_IS, ids=["plain", "options", "tools"])
async def test_openai_posts_the_body_the_sdks_create_would_send(
    openai_server: FakeOpenAIServer, request_: ChatRequest
) -> None:
    """The provider posts its body as it is; the SDK's `create` walks it against its typed
    parameters first. For what the provider sends, the walk must change nothing."""
    provider = OpenAIProvider("o", replace(FAST, base_url=openai_server.url))
    sdk = openai.AsyncOpenAI(
        api_key=KEY, base_url=openai_server.url, timeout=FAST.timeout, max_retries=0
    )
    await assert_sent_alike(
        openai_server,
        provider,
        sdk,
        request_,
        lambda: sdk.chat.completions.create(**completion_body(request_)),
    )


@pytest.mark.parametrize("request_", SENT_AS_IS, ids=["plain", "options", "tools"])
async def test_anthropic_posts_the_body_the_sdks_create_would_send(
    anthropic_server: FakeAnthropicServer, request_: ChatRequest
) -> None:
    provider = AnthropicProvider("a", replace(FAST, base_url=anthropic_server.url))
    sdk = anthropic.AsyncAnthropic(
        api_key=KEY, base_url=anthropic_server.url, timeout=FAST.timeout, max_retries=0
    )
    body = message_body(request_)
    temperature = body.pop("temperature", None)  # not an argument of `create` in this SDK
    extra = None if temperature is None else {"temperature": temperature}
    await assert_sent_alike(
        anthropic_server,
        provider,
        sdk,
        request_,
        lambda: sdk.messages.create(**body, extra_body=extra),
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("alice", "alice"),
        ("Alice Smith", "Alice_Smith"),
        ("Bob (admin)", "Bob_admin"),
        ("小明 Tom", "Tom"),
        ("纳西妲", None),
        ("___", None),
        ("", None),
        (None, None),
        ("x" * 80, "x" * 64),
    ],
)
def test_sanitise_name(name: str | None, expected: str | None) -> None:
    assert sanitise_name(name) == expected


@only_anthropic
async def test_anthropic_joins_system_and_merges_same_role_turns(fake: Fake) -> None:
    request = ChatRequest(
        model="m",
        messages=(
            Message("system", "Rule one."),
            Message("user", "hi", name="Alice"),
            Message("system", "Rule two."),
            Message("user", "anyone?"),
            Message("assistant", "hello"),
            Message("assistant", ""),
            Message("assistant", "again"),
            Message("user", "bye"),
        ),
        temperature=0.2,
    )
    response = await fake.provider().chat(request)

    assert response.content == "echo: bye"
    body = fake.bodies[0]
    assert body["system"] == "Rule one.\n\nRule two."
    assert body["max_tokens"] == 1024
    assert body["temperature"] == 0.2
    assert [(m["role"], [b["text"] for b in m["content"]]) for m in body["messages"]] == [
        ("user", ["hi", "anyone?"]),
        ("assistant", ["hello", "again"]),
        ("user", ["bye"]),
    ]


@only_anthropic
async def test_anthropic_tool_results_open_the_user_turn(fake: Fake) -> None:
    call = ToolCall("t1", "weather", {"city": "Oslo"})
    request = ChatRequest(
        model="m",
        messages=(
            Message("user", "Oslo?"),
            Message("assistant", "Let me look.", tool_calls=(call,)),
            Message("user", "quickly please"),
            Message("tool", "snow", tool_call_id="t1"),
        ),
        max_tokens=64,
    )
    await fake.provider().chat(request)

    body = fake.bodies[0]
    assert body["max_tokens"] == 64
    assistant, user = body["messages"][1:]
    assert [b["type"] for b in assistant["content"]] == ["text", "tool_use"]
    assert [b["type"] for b in user["content"]] == ["tool_result", "text"]


# -- retry policy without a server --------------------------------------------------------------


async def test_with_retries_does_not_retry_non_retryable_errors() -> None:
    attempts = 0

    async def call() -> ChatResponse:
        nonlocal attempts
        attempts += 1
        raise ProviderError("bad request", provider="p", status=400)

    with pytest.raises(ProviderError, match="bad request"):
        await with_retries(call, FAST, "p")
    assert attempts == 1


async def test_with_retries_returns_once_a_retry_succeeds() -> None:
    attempts = 0

    async def call() -> str:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise ProviderServerError("busy", provider="p", status=503)
        return "ok"

    assert await with_retries(call, FAST, "p") == "ok"
    assert attempts == 3


def test_backoff_grows_with_jitter_and_is_capped() -> None:
    settings = replace(FAST, backoff_base=1.0, backoff_max=8.0)
    for retries, ceiling in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0), (6, 8.0)]:
        delays = {backoff_delay(retries, settings) for _ in range(50)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1  # jittered
    assert backoff_delay(5, settings, hint=0.25) == 0.25
    assert backoff_delay(0, settings, hint=3600) <= 1.0  # absurd hints are not waited for


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (400, ProviderError, False),
        (401, ProviderAuthError, False),
        (403, ProviderAuthError, False),
        (404, ProviderError, False),
        (408, ProviderTimeoutError, True),
        (429, ProviderRateLimitError, True),
        (500, ProviderServerError, True),
        (529, ProviderServerError, True),
    ],
)
def test_error_for_status(status: int, kind: type[ProviderError], retryable: bool) -> None:
    error = error_for_status(status, "details", "p")
    assert type(error) is kind
    assert error.retryable is retryable
    assert (error.status, error.provider) == (status, "p")
    assert str(error) == f"p: HTTP {status}: details"
