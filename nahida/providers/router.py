"""Model routing: which provider and model serve each task.

Routes are `models.<task>` strings: `provider/model`, or `provider` alone (its default `model`), or,
with a single provider, just a model name. A task without a route uses the `chat` route; without a
`chat` route the first provider's default model serves everything. The `compress` task without a
route takes the cheap sibling of the chat model (`compress_model`, the Ethan design's table) on
the chat route's provider; when that provider does not know the model, the chat model serves it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from nahida.errors import ConfigError, ProviderError, ProviderResponseError

if TYPE_CHECKING:
    import numpy.typing as npt
from nahida.providers.base import (
    TASKS,
    ChatRequest,
    ChatResponse,
    EmbedKind,
    Message,
    Provider,
    Task,
    ToolSpec,
)

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Route:
    provider: str
    model: str
    derived: bool = False  # not configured: `compress_model` of the chat model


# (pattern of the chat model, the compress model): the first that matches names it.
COMPRESS_MODELS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"claude-(?:opus|sonnet)-.*"), "claude-haiku-4-5"),
    (
        re.compile(r"(gemini-.*?)-(?:pro|flash)(?:-(?:preview|exp|latest)[\w.-]*)?"),
        r"\1-flash-lite",
    ),
    (re.compile(r"gpt-4o(?:-\d{4}-\d{2}-\d{2})?|gpt-5.*"), "gpt-4o-mini"),
)


def compress_model(chat_model: str) -> str:
    """The cheaper model the compress task uses when `models.compress` is not declared:
    claude-opus-*/claude-sonnet-* → claude-haiku-4-5, gemini-*-pro/gemini-*-flash →
    gemini-*-flash-lite, gpt-4o/gpt-5* → gpt-4o-mini; any other model compresses itself."""
    name = chat_model.strip()
    prefix, slash, bare = name.rpartition("/")  # "openai/gpt-4o" through a gateway keeps its prefix
    for pattern, cheap in COMPRESS_MODELS:
        if pattern.fullmatch(bare.lower()):
            return prefix + slash + pattern.sub(cheap, bare.lower())
    return name


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
            only = next(iter(defaults))
            typo = _misspelt(head if sep else text, only)
            if typo:
                raise ConfigError(
                    f"{typo!r} looks like a misspelt provider name {only!r}; write"
                    f" {only}/<model> (or {only}/{text} when {text!r} is the model's name)",
                    source=source,
                    key=f"models.{task}",
                )
            return Route(only, text)
        raise ConfigError(
            f"{text!r} names no provider; known: {', '.join(defaults)}",
            source=source,
            key=f"models.{task}",
        )

    first = next(iter(defaults))
    chat = parse("chat", routes["chat"]) if "chat" in routes else parse("chat", first)
    resolved = {t: parse(t, routes[t]) if t in routes else chat for t in TASKS}
    if "compress" not in routes and compress_model(chat.model) != chat.model:
        resolved["compress"] = Route(chat.provider, compress_model(chat.model), derived=True)
    return resolved


def _misspelt(word: str, name: str) -> str | None:
    """`word` when it is one or two letters away from the provider's `name` without being it: a
    model name (`gpt-4o`, `qwen3`, a gateway's `openai/gpt-4o`) has digits or a dash, or is
    farther off."""
    if word == name or len(word) < 4 or any(c.isdigit() or c in "-." for c in word):
        return None
    return word if _distance(word.lower(), name.lower()) <= 2 else None


def _distance(a: str, b: str) -> int:
    """Levenshtein distance."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


class EmbeddingEndpoint(Protocol):
    """A provider that serves `/embeddings` (OpenAI-compatible ones do; Anthropic does not)."""

    name: str

    async def embed(self, model: str, texts: Sequence[str]) -> list[list[float]]: ...


class EndpointEmbedder:
    """An `Embedder` on the `embed` route: the provider's client, retries and typed errors.

    The endpoint's vectors are normalised here, so a dot product is the cosine whatever the
    model returns. `kind` is not sent (OpenAI's models take none). `owned`: `aclose` closes the
    endpoint too (else the router does)."""

    def __init__(self, endpoint: EmbeddingEndpoint, model: str, *, owned: bool = False) -> None:
        self._endpoint = endpoint
        self._owned = owned
        self.name = endpoint.name
        self.model = model
        self.dimension: int | None = None

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> npt.NDArray[Any]:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        rows = np.asarray(await self._endpoint.embed(self.model, texts), dtype=np.float32)
        if rows.ndim != 2 or rows.shape[0] != len(texts) or rows.shape[1] == 0:
            raise ProviderResponseError(
                f"{self.name}: embeddings of shape {rows.shape} for {len(texts)} texts",
                provider=self.name,
            )
        if self.dimension is not None and rows.shape[1] != self.dimension:
            raise ProviderResponseError(
                f"{self.name}: {rows.shape[1]}-dimensional embeddings after {self.dimension}",
                provider=self.name,
            )
        self.dimension = int(rows.shape[1])
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms > 0, norms, 1.0)

    async def aclose(self) -> None:
        close = getattr(self._endpoint, "aclose", None)
        if self._owned and close is not None:
            await close()


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

    def embedder(self) -> EndpointEmbedder:
        """The `embed` route's provider as an `Embedder`; ConfigError when it has no
        `/embeddings`."""
        route = self._routes["embed"]
        provider = self._providers[route.provider]
        if not callable(getattr(provider, "embed", None)):
            raise ConfigError(
                f"provider {route.provider!r} serves no embeddings; route models.embed to an"
                " OpenAI-compatible provider, or set memory.embedding.backend to local or none",
                key="models.embed",
            )
        endpoint: EmbeddingEndpoint = provider  # type: ignore[assignment]
        return EndpointEmbedder(endpoint, route.model)

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
        try:
            return await self._providers[route.provider].chat(request)
        except ProviderError as exc:
            if not route.derived or type(exc) is not ProviderError or exc.status not in (400, 404):
                raise
            # the provider does not serve the derived model: the chat model does, from now on
            chat = self._routes["chat"]
            log.warning("derived_route_refused", task=task, model=route.model, fallback=chat.model)
            self._routes[task] = chat
            return await self._providers[chat.provider].chat(replace(request, model=chat.model))

    async def aclose(self) -> None:
        for provider in self._providers.values():
            await provider.aclose()
