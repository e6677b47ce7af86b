"""Long-term memory: storage, retrieval and the write path (DESIGN §3–§7)."""
