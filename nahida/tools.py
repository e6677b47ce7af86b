"""Tools the model may call, and the loop that runs a completion through tool calls.

A tool error is given back to the model as the tool's answer (it can recover); it never ends the
turn. Memory tools (`memory_write`, …) register here. What passes through the loop is bounded
(`TOOL_CHARS`): a call whose arguments are longer is not run (the model is told why, and the
call is sent back to it and recorded without them), a longer result is cut, saying so, and so is
the text a model sends along with its calls.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

import structlog

from nahida.hooks import TurnContext
from nahida.providers.base import ChatModel, Message, ToolCall, ToolSpec

log = structlog.get_logger(__name__)

ToolFn = Callable[[dict[str, Any], TurnContext], Awaitable[str]]
TOOL_CHARS = 8000  # of a tool call's arguments (as JSON), of its result, of the text beside calls


@dataclass
class ToolRegistry:
    _tools: dict[str, tuple[ToolSpec, ToolFn]] = field(default_factory=dict)

    def register(self, spec: ToolSpec, fn: ToolFn) -> None:
        if spec.name in self._tools:
            raise ValueError(f"tool {spec.name!r} is already registered")
        self._tools[spec.name] = (spec, fn)

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(spec for spec, _ in self._tools.values())

    async def call(self, call: ToolCall, turn: TurnContext) -> str:
        entry = self._tools.get(call.name)
        if entry is None:
            return f"error: no tool named {call.name!r}"
        try:
            return _cut(await entry[1](call.arguments, turn))
        except Exception as exc:
            log.warning("tool_failed", tool=call.name, error=str(exc))
            return _cut(f"error: {exc}")


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    tool_calls: list[dict[str, Any]]  # what was called, for the history record


async def complete(
    model: ChatModel,
    messages: tuple[Message, ...],
    registry: ToolRegistry,
    turn: TurnContext,
    *,
    max_rounds: int,
) -> Completion:
    """Call the chat model, running requested tools, until it answers in text."""
    specs = registry.specs()
    transcript: list[dict[str, Any]] = []
    for _ in range(max_rounds if specs else 0):
        response = await model.chat("chat", messages, tools=specs)
        if not response.tool_calls:
            return Completion(response.content, transcript)
        results = []
        calls = []
        for call in response.tool_calls:
            size = len(json.dumps(call.arguments, ensure_ascii=False))
            if size > TOOL_CHARS:
                log.warning("tool_arguments_too_long", tool=call.name, chars=size)
                call = replace(call, arguments={})
                result = (
                    f"error: the arguments were {size} characters, more than the {TOOL_CHARS} a"
                    " tool takes; nothing was done"
                )
            else:
                result = await registry.call(call, turn)
            calls.append(call)
            transcript.append({"name": call.name, "arguments": call.arguments, "result": result})
            results.append(Message("tool", result, tool_call_id=call.id))
        messages = (
            *messages,
            Message("assistant", _cut(response.content), tool_calls=tuple(calls)),
            *results,
        )
    final = await model.chat("chat", messages)  # no tools offered: the model must answer
    return Completion(final.content, transcript)


def _cut(text: str) -> str:
    if len(text) <= TOOL_CHARS:
        return text
    return f"{text[:TOOL_CHARS]}… (cut: {len(text)} characters, {TOOL_CHARS} kept)"
