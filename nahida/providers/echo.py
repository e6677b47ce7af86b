"""An instant in-process provider: answers `echo: <last user message>`.

The fake beside the real providers (STYLE: an interface with a small in-memory implementation next
to it): benchmarks use it to measure everything but the model, tests use it where no wire is
involved.
"""

from __future__ import annotations

from nahida.providers.base import ChatRequest, ChatResponse


class EchoProvider:
    def __init__(self, name: str = "echo") -> None:
        self.name = name
        self.calls = 0

    async def chat(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        last = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
        return ChatResponse(content=f"echo: {last}", model=request.model, finish_reason="stop")

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        return None
