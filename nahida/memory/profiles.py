"""Profiles (the Ethan layer 3): one Markdown profile per person; filled in by the profiles work."""

from __future__ import annotations

from nahida.envelope import UserKey
from nahida.memory.models import ProfileMode
from nahida.memory.scopes import Viewer
from nahida.memory.store.base import Store


class Profiles:
    """`memory.profiles`."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def update(
        self,
        user: UserKey | str,
        section: str,
        text: str,
        *,
        mode: ProfileMode = "append",
        sensitivity: str = "private",
        source: str = "agent_proactive",
        chat: str | None = None,
        actor: str,
        inferred: bool = False,
    ) -> object:
        raise NotImplementedError  # the profiles work

    async def card(self, viewer: Viewer, *, budget_tokens: int = 400) -> str | None:
        raise NotImplementedError  # the profiles work
