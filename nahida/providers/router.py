"""Model routing: which provider and model serve each task.

Routes are `models.<task>` strings: `provider/model`, or `provider` alone (its default `model`), or,
with a single provider, just a model name. A task without a route uses the `chat` route; without a
`chat` route the first provider's default model serves everything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from nahida.errors import ConfigError, ProviderResponseError

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
        return await self._providers[route.provider].chat(request)

    async def aclose(self) -> None:
        for provider in self._providers.values():
            await provider.aclose()
