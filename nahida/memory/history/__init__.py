"""Conversation history: sessions and turns, their import, working memory (hot, warm, cold),
compaction and episodes."""
