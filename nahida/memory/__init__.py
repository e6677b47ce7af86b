"""Memory (DESIGN §3–§9): the `MemoryService` facade and the types that cross its boundary.

Code outside `nahida/memory/` imports from here only, except `nahida.app`, which also wires
`memory.turn` into the runner and `memory.jobs` into the scheduler. The backends live under
`store/`, and only `nahida.app` picks one (`open_memory`).
"""

from nahida.errors import MemoryPermissionError, SecretRefused, UnsafePath
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
    iso,
    spoken,
)
from nahida.memory.core.safety import redact
from nahida.memory.core.scopes import GLOBAL, Viewer, admin_viewer, validate_scope, viewer_for
from nahida.memory.core.tokenize import index_text
from nahida.memory.dream import DreamSettings
from nahida.memory.dream.run import NoModel
from nahida.memory.embedding import EmbeddingSettings, EmbedReport
from nahida.memory.history.importer import (
    ITEM_STATUSES,
    BadLine,
    ImportReport,
    bounded_lines,
    export_lines,
    parse_moment,
)
from nahida.memory.history.sessions import shown_ids
from nahida.memory.history.working import WorkingSettings
from nahida.memory.markdown.paths import WorkspaceFiles
from nahida.memory.markdown.sync import BULK_ARCHIVE, FileReport, SyncReport
from nahida.memory.opening import open_memory
from nahida.memory.profiles import ProfileChange, ProfileExplanation, Profiles
from nahida.memory.recall import GUARD, MODES, TUNING, Mode, Query, Tuning
from nahida.memory.recall.quotes import has_links
from nahida.memory.recall.rerank import LLMReranker
from nahida.memory.service import TOO_LONG, MemoryService
from nahida.memory.startup import warm_up
from nahida.memory.store.base import Store
from nahida.memory.store.values import (
    CommandMessage,
    Delivery,
    Fate,
    StoreCapabilities,
    VectorCounts,
)
from nahida.memory.write import candidates

__all__ = [
    "BULK_ARCHIVE",
    "GLOBAL",
    "GUARD",
    "ITEM_STATUSES",
    "KINDS",
    "MODES",
    "PROFILE_SECTIONS",
    "TOO_LONG",
    "TUNING",
    "Actor",
    "BadLine",
    "Candidate",
    "CommandMessage",
    "CommitMode",
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
    "JobRun",
    "LLMReranker",
    "MemoryEvent",
    "MemoryItem",
    "MemoryPermissionError",
    "MemoryService",
    "Mode",
    "NewTurn",
    "NoModel",
    "ProfileChange",
    "ProfileEntry",
    "ProfileExplanation",
    "Profiles",
    "Proposal",
    "Query",
    "SecretRefused",
    "Session",
    "Store",
    "StoreCapabilities",
    "SyncReport",
    "Tuning",
    "Turn",
    "UnsafePath",
    "VectorCounts",
    "Viewer",
    "WorkingSettings",
    "WorkspaceFiles",
    "WriteResult",
    "admin_viewer",
    "bounded_lines",
    "candidates",
    "export_lines",
    "has_links",
    "index_text",
    "iso",
    "open_memory",
    "parse_moment",
    "redact",
    "shown_ids",
    "spoken",
    "validate_scope",
    "viewer_for",
    "warm_up",
]
