"""Recall (DESIGN §5): plan a query, search the store, fuse, pack into the prompt."""

from nahida.memory.recall.fuse import fuse
from nahida.memory.recall.lexical import search
from nahida.memory.recall.pack import GUARD, pack
from nahida.memory.recall.plan import TUNING, Plan, Query, Tuning, plan

__all__ = ["GUARD", "TUNING", "Plan", "Query", "Tuning", "fuse", "pack", "plan", "search"]
