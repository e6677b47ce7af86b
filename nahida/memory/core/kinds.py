"""The memory kinds, in one registry: every other list of kinds is derived from `REGISTRY`.

A new kind is one line here; what each flag decides:

- `safe`: committed without review in `auto_safe` mode (when sure enough), and one the compress
  model may name as a cold fact of a conversation;
- `dreamed`: one a dream run may propose;
- `heading`: a heading of MEMORY.md (`### fact`), where people edit the global memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Kind = Literal["fact", "preference", "decision", "task", "procedure", "warning", "summary"]
Dreamed = Literal["fact", "preference", "decision", "task", "procedure", "warning"]  # a dream's


@dataclass(frozen=True)
class KindSpec:
    name: Kind
    safe: bool
    dreamed: bool
    heading: bool


REGISTRY: tuple[KindSpec, ...] = (
    KindSpec("fact", safe=True, dreamed=True, heading=True),
    KindSpec("preference", safe=True, dreamed=True, heading=True),
    KindSpec("decision", safe=True, dreamed=True, heading=True),
    KindSpec("task", safe=True, dreamed=True, heading=True),
    KindSpec("procedure", safe=False, dreamed=True, heading=True),
    KindSpec("warning", safe=False, dreamed=True, heading=True),
    KindSpec("summary", safe=False, dreamed=False, heading=False),
)
DEFAULT: Kind = "fact"  # what an unknown or missing kind becomes

KINDS: tuple[str, ...] = tuple(k.name for k in REGISTRY)
SAFE_KINDS: tuple[str, ...] = tuple(k.name for k in REGISTRY if k.safe)
DREAMED_KINDS: tuple[str, ...] = tuple(k.name for k in REGISTRY if k.dreamed)
HEADINGS: tuple[str, ...] = tuple(k.name for k in REGISTRY if k.heading)

# the types checkers see, kept equal to the registry (a Literal cannot be built from a tuple)
assert get_args(Kind) == KINDS, "Kind names the kinds of REGISTRY, in its order"
assert get_args(Dreamed) == DREAMED_KINDS, "Dreamed names the dreamed kinds of REGISTRY"


def alternatives(kinds: tuple[str, ...], quoted: bool = True) -> str:
    """`"fact" | "preference"` (or `fact|preference`), for a prompt's JSON shape."""
    return " | ".join(f'"{k}"' for k in kinds) if quoted else "|".join(kinds)
