"""The admin's view of memory (DESIGN §15): read models for the web console and the CLI's
`--json` output, every scope visible.

`views` holds the values it answers (each with `to_json()`), `reads` the read units that build
them in one read of the store each, `console` the facade part (`Admin`, `memory.admin`).
"""

from nahida.memory.admin.console import Admin
from nahida.memory.admin.views import (
    ChatPage,
    ChatSummary,
    Day,
    ItemPage,
    ListedItem,
    Overview,
    Page,
    Person,
    PersonPage,
    Provenance,
    Series,
    Transcript,
    TranscriptTurn,
)

__all__ = [
    "Admin",
    "ChatPage",
    "ChatSummary",
    "Day",
    "ItemPage",
    "ListedItem",
    "Overview",
    "Page",
    "Person",
    "PersonPage",
    "Provenance",
    "Series",
    "Transcript",
    "TranscriptTurn",
]
