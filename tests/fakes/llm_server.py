"""Loopback LLM servers that speak the real OpenAI and Anthropic wire protocols.

    async with FakeOpenAIServer() as server:          # or FakeAnthropicServer()
        server.fail(429, times=2, retry_after=0.01)   # two rate-limit answers...
        server.reply_tool_call("weather", {"city": "Paris"})  # ...then a tool call
        provider = OpenAIProvider("fake", ClientSettings(base_url=server.url, api_key="sk-test"))
        ...
        assert len(server.requests) == 3

Each request takes the next scripted behaviour; once the script is empty the server echoes the
last user text ("echo: <text>"), which is all an end-to-end test usually needs. The memory's own
requests (the compress model's summaries, rolls and episodes, `memory_model`) are answered from
their input and never take a scripted behaviour, so a script stays the chat's; `chat_requests`
are the others. Answers are built
from the SDKs' own response types, so they have the real wire shape. Every request's JSON body and
headers are recorded in `server.requests`.
"""

from __future__ import annotations

import abc
import asyncio
import base64
import contextlib
import itertools
import json
import struct
import time
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

import anthropic.types as at
import openai.types
import openai.types.chat as oc
from aiohttp import web
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_message_function_tool_call import Function
from openai.types.completion_usage import CompletionUsage

from tests.fakes import memory_model
from tests.fakes.loopback import LoopbackServer


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # lower-case names
    body: dict[str, Any]
    peer: str = ""  # the client's end of the connection it came on ("host:port")


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class CallTool:
    name: str
    arguments: str  # raw JSON text, so a test can make it malformed
    call_id: str
    text: str = ""


@dataclass(frozen=True, slots=True)
class Fail:
    status: int
    message: str
    retry_after: float | None = None


@dataclass(frozen=True, slots=True)
class Hang:
    seconds: float  # then the echo reply, if the server is still open
    until: asyncio.Event | None = None  # or as soon as the test sets this


@dataclass(frozen=True, slots=True)
class Raw:
    body: str
    content_type: str = "application/json"


@dataclass(frozen=True, slots=True)
class Drop:
    """Close the connection without an answer."""


Behaviour = Text | CallTool | Fail | Hang | Raw | Drop


class FakeLLMServer(LoopbackServer, abc.ABC):
    """Shared machinery: the aiohttp server, the script and the request log."""

    route: ClassVar[str]
    url_suffix: ClassVar[str]

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._script: list[Behaviour] = []
        self.memory_failures = 0  # the next memory requests that answer 500
        # the next dream (episode) requests' answers (text, or a behaviour: Fail, Hang, Raw);
        # when empty, `memory_model` answers them from their input
        self.dream_script: list[str | Behaviour] = []
        self.episode_script: list[str | Behaviour] = []
        self._ids = itertools.count(1)
        self._closing = asyncio.Event()
        app = web.Application()
        app.router.add_post(self.route, self._handle)
        app.router.add_get("/v1/models", self._models)  # what `ping()` asks; never scripted
        self.add_routes(app)
        super().__init__(app)

    def add_routes(self, app: web.Application) -> None:
        """More endpoints of the protocol (none by default)."""

    async def before_close(self) -> None:
        self._closing.set()  # lets hanging handlers return before the runner waits for them

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The requests that were not the memory's own (`memory_model`)."""
        return [r for r in self.requests if memory_model.memory_task(r.body) is None]

    def memory_requests(self, task: str) -> list[RecordedRequest]:
        """The memory's own requests of one task: "summary", "roll" or "episode"."""
        return [r for r in self.requests if memory_model.memory_task(r.body) == task]

    @property
    def url(self) -> str:
        """The base URL to give the SDK."""
        return self.base_url + self.url_suffix

    # -- script ------------------------------------------------------------------------------

    def reply_text(self, text: str) -> None:
        self._script.append(Text(text))

    def reply_tool_call(
        self, name: str, arguments: dict[str, Any], *, call_id: str = "call_1", text: str = ""
    ) -> None:
        self._script.append(CallTool(name, json.dumps(arguments), call_id, text))

    def reply_malformed_tool_call(self, name: str, *, call_id: str = "call_1") -> None:
        self._script.append(CallTool(name, '{"city": "Par', call_id))

    def fail(
        self,
        status: int,
        *,
        times: int = 1,
        message: str = "scripted failure",
        retry_after: float | None = None,
    ) -> None:
        self._script.extend(Fail(status, message, retry_after) for _ in range(times))

    def hang(self, seconds: float = 30.0) -> None:
        """Answer nothing for `seconds` (or until the server closes), then echo."""
        self._script.append(Hang(seconds))

    def drop(self) -> None:
        """Close the connection without an answer (a proxy or server gone mid-call)."""
        self._script.append(Drop())

    def reply_raw(self, body: str, *, content_type: str = "application/json") -> None:
        """Answer 200 with `body` as is, e.g. a shape no SDK type can hold."""
        self._script.append(Raw(body, content_type))

    # -- serving -----------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        headers = {name.lower(): value for name, value in request.headers.items()}
        self.requests.append(RecordedRequest(request.path, headers, body, _peer(request)))
        task = memory_model.memory_task(body)
        script = {"dream": self.dream_script, "episode": self.episode_script}.get(task or "")
        memory_answer = None if script else memory_model.answer(body)
        if memory_answer is not None and self.memory_failures > 0:
            self.memory_failures -= 1
            return web.json_response(self.error_body(500, "scripted memory failure"), status=500)
        if memory_answer is not None:
            return web.json_response(self.reply_body(Text(memory_answer), body, next(self._ids)))
        if script:
            scripted = script.pop(0)
            behaviour: Behaviour | None = Text(scripted) if isinstance(scripted, str) else scripted
        else:
            behaviour = self._script.pop(0) if self._script else None
        if isinstance(behaviour, Hang):
            ends = [self._closing] if behaviour.until is None else [self._closing, behaviour.until]
            waits = [asyncio.create_task(end.wait()) for end in ends]
            await asyncio.wait(waits, timeout=behaviour.seconds, return_when="FIRST_COMPLETED")
            for wait in waits:
                wait.cancel()
            behaviour = None
        if isinstance(behaviour, Fail):
            extra = (
                {} if behaviour.retry_after is None else {"retry-after": f"{behaviour.retry_after}"}
            )
            return web.json_response(
                self.error_body(behaviour.status, behaviour.message),
                status=behaviour.status,
                headers=extra,
            )
        if isinstance(behaviour, Raw):
            return web.Response(text=behaviour.body, content_type=behaviour.content_type)
        if isinstance(behaviour, Drop):
            assert request.transport is not None
            request.transport.abort()
            return web.Response()  # written nowhere: the connection is gone
        if behaviour is None:
            behaviour = Text(f"echo: {self.last_user_text(body)}")
        return web.json_response(self.reply_body(behaviour, body, next(self._ids)))

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response(self.models_body())

    @abc.abstractmethod
    def models_body(self) -> dict[str, Any]: ...

    @abc.abstractmethod
    def reply_body(self, reply: Text | CallTool, request: dict[str, Any], n: int) -> Any: ...

    @abc.abstractmethod
    def error_body(self, status: int, message: str) -> dict[str, Any]: ...

    def last_user_text(self, request: dict[str, Any]) -> str:
        users = [m for m in request.get("messages", []) if m.get("role") == "user"]
        return _text_of(users[-1].get("content", "")) if users else ""


def serve_until_stopped(kind: str, urls: Any) -> None:
    """A process's target (the benchmarks'): a fake server of `kind` ("openai", "anthropic")
    puts its URL on the queue `urls` and serves until the process is stopped."""

    async def serve() -> None:
        cls = FakeAnthropicServer if kind == "anthropic" else FakeOpenAIServer
        async with cls() as server:
            urls.put(server.url)
            await asyncio.Event().wait()

    asyncio.run(serve())


def _peer(request: web.Request) -> str:
    address = request.transport.get_extra_info("peername") if request.transport else None
    return f"{address[0]}:{address[1]}" if address else ""


def bigram_vector(text: str, dimension: int) -> list[float]:
    """Counts of the text's character bigrams (case-folded), hashed into `dimension` buckets."""
    folded = "".join(text.casefold().split())
    vector = [0.0] * dimension
    for a, b in itertools.pairwise(folded or " "):
        vector[zlib.crc32(f"{a}{b}".encode()) % dimension] += 1.0
    return vector


def _usage(request: dict[str, Any], text: str) -> tuple[int, int]:
    """Made-up but checkable token counts: one per request message, one per reply word."""
    return len(request.get("messages", [])), len(text.split())


def _text_of(content: Any) -> str:
    """The text of a message content that is a string or a list of typed parts."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if part.get("type") == "text")


class FakeOpenAIServer(FakeLLMServer):
    """POST /v1/chat/completions, answering `ChatCompletion` objects."""

    route = "/v1/chat/completions"
    url_suffix = "/v1"
    embed_dimension = 64

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/embeddings", self._embeddings)
        self.embed_failures = 0  # answer this many embedding requests with HTTP 500
        self.embed_delay = 0.0  # seconds before each embedding answer

    async def _embeddings(self, request: web.Request) -> web.Response:
        """`/v1/embeddings` with a small deterministic embedder: character bigrams hashed into
        `embed_dimension` buckets (texts sharing bigrams are near), base64 or float."""
        body = await request.json()
        headers = {name.lower(): value for name, value in request.headers.items()}
        self.requests.append(RecordedRequest(request.path, headers, body, _peer(request)))
        if self.embed_delay:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), self.embed_delay)
        if self.embed_failures > 0:
            self.embed_failures -= 1
            return web.json_response(self.error_body(500, "embedding failed"), status=500)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for index, text in enumerate(texts):
            vector = bigram_vector(text, self.embed_dimension)
            if body.get("encoding_format") == "base64":
                value: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            else:
                value = vector
            data.append({"object": "embedding", "index": index, "embedding": value})
        usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
        return web.json_response(
            {"object": "list", "data": data, "model": body.get("model", "fake"), "usage": usage}
        )

    def reply_body(self, reply: Text | CallTool, request: dict[str, Any], n: int) -> Any:
        tool_calls: list[oc.ChatCompletionMessageToolCallUnion] | None = None
        if isinstance(reply, CallTool):
            function = Function(name=reply.name, arguments=reply.arguments)
            call = oc.ChatCompletionMessageFunctionToolCall(
                id=reply.call_id, type="function", function=function
            )
            tool_calls = [call]
        prompt, completion = _usage(request, reply.text)
        return oc.ChatCompletion(
            id=f"chatcmpl-{n}",
            object="chat.completion",
            created=int(time.time()),
            model=request.get("model", "fake"),
            choices=[
                Choice(
                    index=0,
                    finish_reason="tool_calls" if tool_calls else "stop",
                    message=oc.ChatCompletionMessage(
                        role="assistant", content=reply.text or None, tool_calls=tool_calls
                    ),
                )
            ],
            usage=CompletionUsage(
                prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
            ),
        ).model_dump(mode="json")

    def models_body(self) -> dict[str, Any]:
        model = openai.types.Model(id="fake-model", created=0, object="model", owned_by="fake")
        return {"object": "list", "data": [model.model_dump(mode="json")]}

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = {401: "invalid_request_error", 429: "rate_limit_exceeded"}.get(
            status, "server_error"
        )
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class FakeAnthropicServer(FakeLLMServer):
    """POST /v1/messages, answering `Message` objects."""

    route = "/v1/messages"
    url_suffix = ""

    def reply_body(self, reply: Text | CallTool, request: dict[str, Any], n: int) -> Any:
        content: list[at.ContentBlock] = []
        if reply.text:
            content.append(at.TextBlock(type="text", text=reply.text))
        malformed = False
        if isinstance(reply, CallTool):
            try:
                arguments = json.loads(reply.arguments)
            except json.JSONDecodeError:
                arguments = None
            malformed = not isinstance(arguments, dict)
            content.append(
                at.ToolUseBlock(
                    type="tool_use",
                    id=reply.call_id,
                    name=reply.name,
                    input=arguments if isinstance(arguments, dict) else {},
                )
            )
        prompt, completion = _usage(request, reply.text)
        body = at.Message(
            id=f"msg_{n:024d}",
            type="message",
            role="assistant",
            model=request.get("model", "fake"),
            content=content,
            stop_reason="tool_use" if isinstance(reply, CallTool) else "end_turn",
            stop_sequence=None,
            usage=at.Usage(input_tokens=prompt, output_tokens=completion),
        ).model_dump(mode="json")
        if malformed and isinstance(reply, CallTool):  # a shape the SDK types cannot hold
            body["content"][-1]["input"] = reply.arguments
        return body

    def models_body(self) -> dict[str, Any]:
        model = at.ModelInfo(
            id="fake-model",
            type="model",
            display_name="Fake model",
            created_at=datetime(2025, 1, 1, tzinfo=UTC),
            lifecycle="active",
        )
        data = [model.model_dump(mode="json")]
        return {"data": data, "has_more": False, "first_id": model.id, "last_id": model.id}

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = {
            401: "authentication_error",
            403: "permission_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
