"""Memory (DESIGN §3–§9): the `MemoryService` facade, `open_memory`, and the value types that
cross its boundary (records, settings, reports, constants, errors) — nothing else.

Code outside `nahida/memory/` imports from here only, except `nahida.app`, which also wires
`memory.turn` into the runner and `memory.jobs` into the scheduler. What callers ask of memory
are the facade's methods (`memory.items.export`, `memory.sessions.record_user_turn`, …) or the
value types' own (`Viewer.parse`, `Turn.spoken`). The backends live under `store/`, and only
`nahida.app` picks one: it opens the store and hands it to `open_memory`.
"""

from nahida.errors import MemoryPermissionError, SecretRefused, UnsafePath
from nahida.memory.admin import (
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
from nahida.memory.core.access import Actor
from nahida.memory.core.kinds import KINDS
from nahida.memory.core.models import (
    PROFILE_SECTIONS,
    Candidate,
    CommitMode,
    DreamRun,
    Episode,
    Evidence,
    Explanation,
    Hit,
    JobRun,
    MemoryEvent,
    MemoryItem,
    NewTurn,
    ProfileEntry,
    Proposal,
    Session,
    Turn,
    WriteResult,
)
from nahida.memory.core.scopes import GLOBAL, Audience, Viewer
from nahida.memory.core.sources import SOURCE_FAMILIES, SourceFamily
from nahida.memory.dream import DreamSettings
from nahida.memory.dream.run import NoModel
from nahida.memory.embedding import EmbeddingSettings, EmbedReport
from nahida.memory.history.importer import ITEM_STATUSES, BadLine, ImportReport
from nahida.memory.history.working import WorkingSettings
from nahida.memory.items import TOO_LONG
from nahida.memory.markdown.sync import BULK_ARCHIVE, FileReport, SyncReport
from nahida.memory.opening import open_memory
from nahida.memory.profiles import ProfileChange, ProfileExplanation
from nahida.memory.recall import GUARD, MODES, TUNING, Mode, Query, Tuning
from nahida.memory.service import MemoryService
from nahida.memory.store.base import Store
from nahida.memory.store.values import (
    CommandMessage,
    Delivery,
    Fate,
    NameUse,
    RecallRecord,
    StoreCapabilities,
    VectorCounts,
)
from nahida.memory.write.purge import Purged
from nahida.memory.write.review import Pending

__all__ = [
    "BULK_ARCHIVE",
    "GLOBAL",
    "GUARD",
    "ITEM_STATUSES",
    "KINDS",
    "MODES",
    "PROFILE_SECTIONS",
    "SOURCE_FAMILIES",
    "TOO_LONG",
    "TUNING",
    "Actor",
    "Audience",
    "BadLine",
    "Candidate",
    "ChatPage",
    "ChatSummary",
    "CommandMessage",
    "CommitMode",
    "Day",
    "Delivery",
    "DreamRun",
    "DreamSettings",
    "EmbedReport",
    "EmbeddingSettings",
    "Episode",
    "Evidence",
    "Explanation",
    "Fate",
    "FileReport",
    "Hit",
    "ImportReport",
    "ItemPage",
    "JobRun",
    "ListedItem",
    "MemoryEvent",
    "MemoryItem",
    "MemoryPermissionError",
    "MemoryService",
    "Mode",
    "NameUse",
    "NewTurn",
    "NoModel",
    "Overview",
    "Page",
    "Pending",
    "Person",
    "PersonPage",
    "ProfileChange",
    "ProfileEntry",
    "ProfileExplanation",
    "Proposal",
    "Provenance",
    "Purged",
    "Query",
    "RecallRecord",
    "SecretRefused",
    "Series",
    "Session",
    "SourceFamily",
    "Store",
    "StoreCapabilities",
    "SyncReport",
    "Transcript",
    "TranscriptTurn",
    "Tuning",
    "Turn",
    "UnsafePath",
    "VectorCounts",
    "Viewer",
    "WorkingSettings",
    "WriteResult",
    "open_memory",
]
