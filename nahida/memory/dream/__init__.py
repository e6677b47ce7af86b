"""Dreaming (DESIGN §8): LLM consolidation of a chat's new turns into long-term memory.

`prompt` builds the request, `proposals` reads the answer (strict), `guards` turns each proposed
op into a candidate or rejects it, `run` is the run over one chat (`Dreaming`).
"""

from nahida.memory.dream.run import Dreaming, DreamSettings

__all__ = ["DreamSettings", "Dreaming"]
