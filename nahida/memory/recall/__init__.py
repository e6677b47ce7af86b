"""Recall (DESIGN §5): plan a query, search the store (lexical and vector lists), fuse, pack."""

from nahida.memory.recall.cascade import search
from nahida.memory.recall.fuse import fuse
from nahida.memory.recall.pack import GUARD, pack
from nahida.memory.recall.plan import MODES, TUNING, Mode, Plan, Query, Tuning, plan

__all__ = [
    "GUARD",
    "MODES",
    "TUNING",
    "Mode",
    "Plan",
    "Query",
    "Tuning",
    "fuse",
    "pack",
    "plan",
    "search",
]
