"""The reference store: the store seam in plain Python, its data kept in memory (`store`)."""

from nahida.memory.store.reference.store import ReferenceStore, Shelf

__all__ = ["ReferenceStore", "Shelf"]
