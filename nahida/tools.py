"""Tools the model may call, and the loop that runs a completion through tool calls.

A tool error is given back to the model as the tool's answer (it can recover); it never ends the
turn. Memory tools (`memory_write`, …) register here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from nahida.hooks import TurnContext
from nahida.providers.base import ChatModel, Message, ToolCall, ToolSpec

log = structlog.get_logger(__name__)

ToolFn = Callable[[dict[str, Any], TurnContext], Awaitable[str]]


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
            return await entry[1](call.arguments, turn)
        except Exception as exc:
            log.warning("tool_failed", tool=call.name, error=str(exc))
            return f"error: {exc}"


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
        for call in response.tool_calls:
            result = await registry.call(call, turn)
            transcript.append({"name": call.name, "arguments": call.arguments, "result": result})
            results.append(Message("tool", result, tool_call_id=call.id))
        messages = (
            *messages,
            Message("assistant", response.content, tool_calls=response.tool_calls),
            *results,
        )
    final = await model.chat("chat", messages)  # no tools offered: the model must answer
    return Completion(final.content, transcript)
