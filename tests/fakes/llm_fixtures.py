"""Pytest fixtures for the fake LLM servers; import them into a conftest.py to use them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from .llm_server import FakeAnthropicServer, FakeOpenAIServer


@pytest.fixture
async def openai_server() -> AsyncIterator[FakeOpenAIServer]:
    """A fake OpenAI-compatible server; give `openai_server.url` to the SDK as base URL."""
    async with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
async def anthropic_server() -> AsyncIterator[FakeAnthropicServer]:
    """A fake Anthropic server; give `anthropic_server.url` to the SDK as base URL."""
    async with FakeAnthropicServer() as server:
        yield server
