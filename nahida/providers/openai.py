"""How to talk OpenAI chat completions: one class for OpenAI and every compatible endpoint.

DeepSeek, Qwen, vLLM, Ollama and the rest differ only in `ClientSettings.base_url`, so nothing
optional is sent when it is unset: some of those endpoints reject `null` parameters or an empty
`tools` list.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import openai
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
    ChatCompletionUserMessageParam,
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

_NAME_FORBIDDEN = re.compile(r"[^a-zA-Z0-9_-]+")
_NAME_MAX = 64


class OpenAIProvider:
    """A `Provider` speaking OpenAI chat completions to one endpoint."""

    def __init__(self, name: str, settings: ClientSettings) -> None:
        self.name = name
        self._settings = settings
        self._client = openai.AsyncOpenAI(
            api_key=settings.api_key,
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=0,  # with_retries is the one place that retries
            http_client=http_client(openai, settings),
        )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        data = await with_retries(lambda: self._create(request), self._settings, self.name)
        return parse_completion(data, self.name)

    async def ping(self) -> None:
        """Check the endpoint answers and takes the key, by listing models (spends no tokens)."""
        try:
            await self._client.models.list()
        except openai.OpenAIError as exc:
            raise from_sdk_error(exc, openai, self.name, self._settings.api_key) from exc
        except ValueError as exc:  # a 200 whose body is not JSON
            raise unreadable(exc, self.name, self._settings.api_key) from exc

    async def aclose(self) -> None:
        await self._client.close()

    async def embed(self, model: str, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text from `/embeddings`, in order."""

        async def create() -> list[list[float]]:
            try:
                answer = await self._client.embeddings.create(
                    model=model, input=list(texts), encoding_format="float"
                )
            except openai.OpenAIError as exc:
                raise from_sdk_error(exc, openai, self.name, self._settings.api_key) from exc
            except ValueError as exc:  # a 200 whose body is not JSON
                raise unreadable(exc, self.name, self._settings.api_key) from exc
            data = sorted(answer.data, key=lambda d: d.index)
            if len(data) != len(texts):
                raise ProviderResponseError(
                    f"{self.name}: {len(data)} embeddings for {len(texts)} texts",
                    provider=self.name,
                )
            return [list(d.embedding) for d in data]

        return await with_retries(create, self._settings, self.name)

    async def _create(self, request: ChatRequest) -> object:
        try:
            return await self._client.post(
                "/chat/completions", body=completion_body(request), cast_to=object
            )
        except openai.OpenAIError as exc:
            raise from_sdk_error(exc, openai, self.name, self._settings.api_key) from exc
        except ValueError as exc:  # a 200 whose body is not JSON
            raise unreadable(exc, self.name, self._settings.api_key) from exc


def completion_body(request: ChatRequest) -> dict[str, Any]:
    """The JSON body of a chat completion request, sent as it is by the SDK's client (`post`:
    its headers, auth and errors, as for any endpoint; `parse_completion` reads the answer).
    `chat.completions.create` would first walk the body against its typed parameters, to rename
    and reformat fields; none of ours needs it (a test compares both bodies), and for a prompt of
    twenty-odd messages the walk cost more CPU than the rest of the call (`scripts/bench_sdk.py`).
    """
    body: dict[str, Any] = {
        "model": request.model,
        "messages": [message_param(m) for m in request.messages],
    }
    if request.tools:
        body["tools"] = [tool_param(t) for t in request.tools]
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def message_param(message: Message) -> ChatCompletionMessageParam:
    match message.role:
        case "system":
            return {"role": "system", "content": message.content}
        case "user":
            user: ChatCompletionUserMessageParam = {"role": "user", "content": message.content}
            name = sanitise_name(message.name)
            if name:
                user["name"] = name
            return user
        case "assistant":
            assistant: ChatCompletionAssistantMessageParam = {"role": "assistant"}
            if message.tool_calls:
                assistant["content"] = message.content or None
                assistant["tool_calls"] = [tool_call_param(c) for c in message.tool_calls]
            else:
                assistant["content"] = message.content
            return assistant
        case "tool":
            return {
                "role": "tool",
                "content": message.content,
                "tool_call_id": message.tool_call_id or "",
            }


def tool_call_param(call: ToolCall) -> ChatCompletionMessageFunctionToolCallParam:
    return {
        "id": call.id,
        "type": "function",
        "function": {
            "name": call.name,
            "arguments": json.dumps(call.arguments, ensure_ascii=False),
        },
    }


def tool_param(tool: ToolSpec) -> ChatCompletionFunctionToolParam:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def sanitise_name(name: str | None) -> str | None:
    """`name` in the charset OpenAI accepts ([a-zA-Z0-9_-], at most 64), or None if nothing is left.

    Runs of other characters become one underscore; a name with no letter or digit left is dropped.
    """
    if not name:
        return None
    cleaned = _NAME_FORBIDDEN.sub("_", name).strip("_")[:_NAME_MAX]
    return cleaned if re.search(r"[a-zA-Z0-9]", cleaned) else None


def parse_completion(data: object, provider: str) -> ChatResponse:
    """Our response for a chat completion's JSON body (`read_answer`)."""
    return read_answer(_parse_completion, data, provider)


def _parse_completion(data: dict[str, Any], provider: str) -> ChatResponse:
    if not data.get("choices"):
        raise ProviderResponseError(f"{provider}: response has no choices", provider=provider)
    choice = data["choices"][0]
    message = choice["message"]
    content = message.get("content")
    if not isinstance(content, str | None):
        raise ProviderResponseError(
            f"{provider}: message content is {type(content).__name__}, not text",
            provider=provider,
        )
    usage = data.get("usage") or {}
    return ChatResponse(
        content=content or "",
        tool_calls=tuple(_tool_call(c, provider) for c in message.get("tool_calls") or ()),
        model=data.get("model") or "",
        finish_reason=choice.get("finish_reason") or "",
        usage=Usage(
            input_tokens=usage.get("prompt_tokens") or 0,
            output_tokens=usage.get("completion_tokens") or 0,
        ),
    )


def _tool_call(call: dict[str, Any], provider: str) -> ToolCall:
    kind = call.get("type", "function")  # some compatible endpoints leave it out
    if kind != "function":
        raise ProviderResponseError(
            f"{provider}: unsupported tool call type {kind!r}", provider=provider
        )
    function = call["function"]
    name = function["name"]
    try:
        arguments: Any = json.loads(function.get("arguments") or "{}")
    except json.JSONDecodeError as exc:
        raise ProviderResponseError(
            f"{provider}: tool call {name!r} has malformed JSON arguments: {exc}", provider=provider
        ) from exc
    if not isinstance(arguments, dict):
        raise ProviderResponseError(
            f"{provider}: tool call {name!r} arguments are not a JSON object", provider=provider
        )
    return ToolCall(id=call["id"], name=name, arguments=arguments)
