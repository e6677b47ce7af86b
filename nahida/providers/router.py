"""Model routing: which provider and model serve each task.

Routes are `models.<task>` strings: `provider/model`, or `provider` alone (its default `model`), or,
with a single provider, just a model name. A task without a route uses the `chat` route; without a
`chat` route the first provider's default model serves everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from nahida.errors import ConfigError
from nahida.providers.base import (
    TASKS,
    ChatRequest,
    ChatResponse,
    Message,
    Provider,
    Task,
    ToolSpec,
)


@dataclass(frozen=True, slots=True)
class Route:
    provider: str
    model: str


def resolve_routes(
    routes: Mapping[str, str], defaults: Mapping[str, str], *, source: str = "config"
) -> dict[Task, Route]:
    """Resolve task routes against the providers' default models (`defaults`: name -> model)."""
    if not defaults:
        return {}

    def parse(task: str, text: str) -> Route:
        head, sep, tail = text.partition("/")
        if sep and head in defaults:
            return Route(head, tail)
        if text in defaults:
            model = defaults[text]
            if not model:
                raise ConfigError(
                    f"provider {text!r} has no default model; write {text}/<model>",
                    source=source,
                    key=f"models.{task}",
                )
            return Route(text, model)
        if len(defaults) == 1:
            return Route(next(iter(defaults)), text)
        raise ConfigError(
            f"{text!r} names no provider; known: {', '.join(defaults)}",
            source=source,
            key=f"models.{task}",
        )

    first = next(iter(defaults))
    chat = parse("chat", routes["chat"]) if "chat" in routes else parse("chat", first)
    return {t: parse(t, routes[t]) if t in routes else chat for t in TASKS}


class ModelRouter:
    """Sends each request to the provider and model routed for its task."""

    def __init__(self, providers: Mapping[str, Provider], routes: Mapping[Task, Route]) -> None:
        self._providers = dict(providers)
        self._routes = dict(routes)

    @property
    def configured(self) -> bool:
        return bool(self._routes)

    def route(self, task: Task) -> Route | None:
        return self._routes.get(task)

    async def chat(
        self,
        task: Task,
        messages: tuple[Message, ...],
        *,
        tools: tuple[ToolSpec, ...] = (),
        max_tokens: int | None = None,
    ) -> ChatResponse:
        route = self._routes[task]
        request = ChatRequest(model=route.model, messages=messages, tools=tools)
        if max_tokens is not None:
            request = replace(request, max_tokens=max_tokens)
        return await self._providers[route.provider].chat(request)

    async def aclose(self) -> None:
        for provider in self._providers.values():
            await provider.aclose()
