"""The Markdown projection of memory (DESIGN §9): files people read (and, for MEMORY.md and
profiles, edit). The database stays the authority."""
