"""Provider interface and the request/response types every provider translates.

A provider turns a `ChatRequest` into one wire protocol and the answer back into a `ChatResponse`.
It raises only `ProviderError` subclasses (see `nahida.errors`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MessageRole = Literal["system", "user", "assistant", "tool"]
Task = Literal["chat", "compress", "dream", "embed", "rerank"]
TASKS: tuple[Task, ...] = ("chat", "compress", "dream", "embed", "rerank")
EmbedKind = Literal["query", "passage"]  # what is searched for / what is searched (e5 prefixes)


def estimate_tokens(text: str) -> int:
    """About how many tokens a model counts: one per CJK character, one per four others (good
    enough to stay inside a budget without a tokenizer dependency)."""
    # CJK characters take three UTF-8 bytes, ASCII one: count them without a Python loop.
    wide = (len(text.encode("utf-8", "replace")) - len(text)) // 2
    return wide + (len(text) - wide + 3) // 4


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments object


@dataclass(frozen=True, slots=True)
class Message:
    role: MessageRole
    content: str
    name: str | None = None  # speaker's display name for user turns in groups
    tool_calls: tuple[ToolCall, ...] = ()  # assistant messages that called tools
    tool_call_id: str | None = None  # tool messages: which call this answers


@dataclass(frozen=True, slots=True)
class ChatRequest:
    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int | None = None
    temperature: float | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ChatResponse:
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    model: str = ""
    finish_reason: str = ""
    usage: Usage = field(default_factory=Usage)


class ChatModel(Protocol):
    """What the turn needs from models: whether one is configured, and a chat per task."""

    @property
    def configured(self) -> bool: ...

    async def chat(
        self,
        task: Task,
        messages: tuple[Message, ...],
        *,
        tools: tuple[ToolSpec, ...] = (),
        max_tokens: int | None = None,
    ) -> ChatResponse: ...


@runtime_checkable
class Provider(Protocol):
    """One configured endpoint speaking one protocol."""

    name: str

    async def chat(self, request: ChatRequest) -> ChatResponse: ...

    async def ping(self) -> None:
        """Check the endpoint answers and accepts the key, spending no tokens."""

    async def aclose(self) -> None: ...


class Embedder(Protocol):
    """Texts to vectors: a local model in-process, or an `/embeddings` endpoint.

    `embed` returns a float32 matrix, one L2-normalised row per text, so a dot product is the
    cosine. `name` and `model` say where the vectors come from: vectors of different ones never
    meet in a query. `dimension` is None until the first answer of an endpoint that does not say.
    An embedder that computes on this machine's CPU has `local = True` (read with `getattr`).
    """

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def dimension(self) -> int | None: ...

    async def embed(
        self, texts: Sequence[str], kind: EmbedKind = "passage"
    ) -> npt.NDArray[np.float32]: ...

    async def aclose(self) -> None: ...


class Reranker(Protocol):
    """Reorders the best hits of a search: `order` gives the indexes of `texts`, best first."""

    async def order(self, query: str, texts: Sequence[str]) -> list[int]: ...
