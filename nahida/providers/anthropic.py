"""How to talk the Anthropic messages API.

Anthropic keeps system text apart from the turns, wants user and assistant turns to alternate, and
carries tool calls and results as content blocks:

    Message(system)                    -> system="..." (all system messages joined)
    Message(assistant, tool_calls=...) -> assistant turn with text + tool_use blocks
    Message(tool, tool_call_id=...)    -> user turn with a tool_result block
    consecutive turns of one role      -> one turn with their blocks in order
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Literal

import anthropic
from anthropic.types import (
    ContentBlockParam,
    MessageParam,
    TextBlockParam,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
)

from nahida.errors import ProviderResponseError
from nahida.providers.base import ChatRequest, ChatResponse, Message, ToolCall, ToolSpec, Usage
from nahida.providers.client import (
    ClientSettings,
    from_sdk_error,
    http_client,
    read_answer,
    unreadable,
    with_retries,
)

DEFAULT_MAX_TOKENS = 1024
# Where the SDK's `post` takes a body as JSON text (`content`), the provider sends it so: a
# `body` the SDK walks and copies first, to read any files in it (~15 % of a call in a profile)
_POST_TAKES_CONTENT = "content" in inspect.signature(anthropic.AsyncAnthropic.post).parameters

Turn = tuple[Literal["user", "assistant"], list[ContentBlockParam]]


class AnthropicProvider:
    """A `Provider` speaking the Anthropic messages API to one endpoint."""

    def __init__(self, name: str, settings: ClientSettings) -> None:
        self.name = name
        self._settings = settings
        self._client = anthropic.AsyncAnthropic(
            api_key=settings.api_key,
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=0,  # with_retries is the one place that retries
            http_client=http_client(anthropic, settings),
        )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        data = await with_retries(lambda: self._create(request), self._settings, self.name)
        return parse_message(data, self.name)

    async def ping(self) -> None:
        """Check the endpoint answers and takes the key, by listing models (spends no tokens)."""
        try:
            await self._client.models.list(limit=1)
        except anthropic.AnthropicError as exc:
            raise from_sdk_error(exc, anthropic, self.name, self._settings.api_key) from exc
        except ValueError as exc:  # a 200 whose body is not JSON
            raise unreadable(exc, self.name, self._settings.api_key) from exc

    async def aclose(self) -> None:
        await self._client.close()

    async def _create(self, request: ChatRequest) -> object:
        body = message_body(request)
        try:
            if _POST_TAKES_CONTENT:
                return await self._client.post(
                    "/v1/messages", content=_json_text(body), cast_to=object
                )
            return await self._client.post("/v1/messages", body=body, cast_to=object)
        except anthropic.AnthropicError as exc:
            raise from_sdk_error(exc, anthropic, self.name, self._settings.api_key) from exc
        except ValueError as exc:  # a 200 whose body is not JSON
            raise unreadable(exc, self.name, self._settings.api_key) from exc


def message_body(request: ChatRequest) -> dict[str, Any]:
    """The JSON body of a messages request, posted as it is by the SDK's client (its headers,
    auth and errors; `messages.create` sends the same body, a test compares them), the answer
    read by `parse_message`."""
    body: dict[str, Any] = {
        "max_tokens": DEFAULT_MAX_TOKENS if request.max_tokens is None else request.max_tokens,
        "messages": message_params(request.messages),
        "model": request.model,
    }
    system = system_text(request.messages)
    if system:
        body["system"] = system
    if request.tools:
        body["tools"] = [tool_param(t) for t in request.tools]
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def _json_text(body: dict[str, Any]) -> bytes:
    """`body` as the SDK's client writes a JSON body (UTF-8, compact, no NaN)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def system_text(messages: tuple[Message, ...]) -> str:
    return "\n\n".join(m.content for m in messages if m.role == "system" and m.content)


def message_params(messages: tuple[Message, ...]) -> list[MessageParam]:
    """The non-system messages as alternating Anthropic turns."""
    turns: list[Turn] = []
    for message in messages:
        if message.role == "system":
            continue
        role, blocks = _turn(message)
        if not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    params: list[MessageParam] = []
    for role, blocks in turns:
        if role == "user":
            # Tool results must open the user turn that follows the assistant's tool_use.
            blocks.sort(key=lambda block: block["type"] != "tool_result")
            params.append({"role": "user", "content": blocks})
        else:
            params.append({"role": "assistant", "content": blocks})
    return params


def _turn(message: Message) -> Turn:
    blocks: list[ContentBlockParam] = []
    if message.role == "tool":
        result: ToolResultBlockParam = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id or "",
            "content": message.content,
        }
        return "user", [result]
    if message.content:  # the API rejects empty text blocks
        text: TextBlockParam = {"type": "text", "text": message.content}
        blocks.append(text)
    if message.role == "assistant":
        blocks.extend(_tool_use(call) for call in message.tool_calls)
        return "assistant", blocks
    return "user", blocks


def _tool_use(call: ToolCall) -> ToolUseBlockParam:
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}


def tool_param(tool: ToolSpec) -> ToolParam:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def parse_message(data: object, provider: str) -> ChatResponse:
    """Our response for a messages request's JSON body (`read_answer`)."""
    return read_answer(_parse_message, data, provider)


def _parse_message(data: dict[str, Any], provider: str) -> ChatResponse:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in data["content"]:
        if block["type"] == "text":
            texts.append(block["text"])
        elif block["type"] == "tool_use":
            arguments: object = block.get("input")
            if not isinstance(arguments, dict):
                raise ProviderResponseError(
                    f"{provider}: tool call {block['name']!r} input is not a JSON object",
                    provider=provider,
                )
            calls.append(ToolCall(id=block["id"], name=block["name"], arguments=arguments))
    usage = data.get("usage") or {}
    return ChatResponse(
        content="".join(texts),
        tool_calls=tuple(calls),
        model=data.get("model") or "",
        finish_reason=data.get("stop_reason") or "",
        usage=Usage(
            input_tokens=usage.get("input_tokens") or 0,
            output_tokens=usage.get("output_tokens") or 0,
        ),
    )
