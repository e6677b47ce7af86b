"""The compress route (DESIGN §11, the Ethan design's table): declared, or the chat model's
cheaper sibling on the chat route's provider, or the chat model itself."""

from __future__ import annotations

import pytest

from nahida.errors import ProviderError
from nahida.providers.base import ChatRequest, ChatResponse, Message
from nahida.providers.router import ModelRouter, Route, compress_model, resolve_routes


@pytest.mark.parametrize(
    ("chat", "cheap"),
    [
        ("claude-opus-4-1", "claude-haiku-4-5"),
        ("claude-sonnet-4-5", "claude-haiku-4-5"),
        ("gemini-2.5-pro", "gemini-2.5-flash-lite"),
        ("gemini-2.0-flash", "gemini-2.0-flash-lite"),
        ("gpt-4o", "gpt-4o-mini"),
        ("gpt-4o-2024-08-06", "gpt-4o-mini"),
        ("gpt-5", "gpt-4o-mini"),
        ("gpt-5.1-chat", "gpt-4o-mini"),
        ("openai/gpt-4o", "openai/gpt-4o-mini"),  # a gateway's prefix stays
        ("gpt-4o-mini", "gpt-4o-mini"),
        ("claude-haiku-4-5", "claude-haiku-4-5"),
        ("deepseek-chat", "deepseek-chat"),  # not in the table: the chat model itself
        ("qwen-max", "qwen-max"),
    ],
)
def test_the_compress_model_of_a_chat_model(chat: str, cheap: str) -> None:
    assert compress_model(chat) == cheap


def test_a_declared_compress_route_wins_and_a_derived_one_is_marked() -> None:
    routes = resolve_routes({"chat": "main/gpt-4o"}, {"main": "gpt-4o", "other": "x"})
    assert routes["compress"] == Route("main", "gpt-4o-mini", derived=True)
    assert routes["dream"] == Route("main", "gpt-4o")  # other tasks keep the chat route
    declared = resolve_routes(
        {"chat": "main/gpt-4o", "compress": "other/y"}, {"main": "", "other": ""}
    )
    assert declared["compress"] == Route("other", "y")
    same = resolve_routes({}, {"main": "deepseek-chat"})
    assert same["compress"] == same["chat"] == Route("main", "deepseek-chat")


class Picky:
    """A provider that does not serve one model (answers 404 for it)."""

    name = "picky"

    def __init__(self, refused: str) -> None:
        self.refused = refused
        self.models: list[str] = []

    async def chat(self, request: ChatRequest) -> ChatResponse:
        self.models.append(request.model)
        if request.model == self.refused:
            raise ProviderError("picky: HTTP 404: no such model", provider="picky", status=404)
        return ChatResponse(f"ok from {request.model}")

    async def ping(self) -> None: ...

    async def aclose(self) -> None: ...


async def test_a_derived_model_the_provider_does_not_know_falls_back_to_the_chat_model() -> None:
    provider = Picky("gpt-4o-mini")
    router = ModelRouter({"picky": provider}, resolve_routes({}, {"picky": "gpt-4o"}))
    message = (Message("user", "hi"),)
    assert (await router.chat("compress", message)).content == "ok from gpt-4o"
    assert (await router.chat("compress", message)).content == "ok from gpt-4o"
    assert provider.models == ["gpt-4o-mini", "gpt-4o", "gpt-4o"]  # learned once


async def test_a_declared_route_that_fails_is_not_rerouted() -> None:
    provider = Picky("cheap")
    routes = resolve_routes({"chat": "picky/gpt-4o", "compress": "picky/cheap"}, {"picky": ""})
    router = ModelRouter({"picky": provider}, routes)
    with pytest.raises(ProviderError):
        await router.chat("compress", (Message("user", "hi"),))
