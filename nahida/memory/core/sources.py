"""Where items come from, in families an admin reads at a glance (the console's series and
filters): each family is some sources by name and some by the start of their name.

- `said`: `user_explicit` (`/memory remember`), `plugin:<name>` (a plugin's `memory_store`);
- `extracted`: `rule_extract` (rules after each turn), `agent_proactive` (the model's tools),
  `compress` (the cold facts of working memory);
- `dreamed`: `llm_dream`, and any `dream…` source;
- `edited`: `human_edit` (the CLI, MEMORY.md, profile files);
- `imported`: `import`;
- `other`: anything else.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

SourceFamily = Literal["said", "extracted", "dreamed", "edited", "imported", "other"]


class Sources(NamedTuple):
    """The sources of a family: by name, and by the start of their name."""

    names: tuple[str, ...]
    prefixes: tuple[str, ...] = ()

    def holds(self, source: str) -> bool:
        return source in self.names or source.startswith(self.prefixes)


SOURCE_FAMILIES: dict[SourceFamily, Sources] = {
    "said": Sources(("user_explicit",), ("plugin:",)),
    "extracted": Sources(("rule_extract", "agent_proactive", "compress")),
    "dreamed": Sources(("llm_dream",), ("dream",)),
    "edited": Sources(("human_edit",)),
    "imported": Sources(("import",)),
}
FAMILIES: tuple[SourceFamily, ...] = (*SOURCE_FAMILIES, "other")


def source_family(source: str) -> SourceFamily:
    for family, sources in SOURCE_FAMILIES.items():
        if sources.holds(source):
            return family
    return "other"
