"""WHERE clauses over `memory_items` (alias `r`): what a viewer may see, and a listing's filter."""

from __future__ import annotations

from typing import Any

from nahida.memory.core.scopes import Visibility
from nahida.memory.store.values import ItemFilter


def visibility_sql(visibility: Visibility) -> tuple[str, list[Any]]:
    """A scope seen in full, or a public item of a scope seen public-only."""
    full = list(dict.fromkeys(visibility.full))
    public_only = [s for s in dict.fromkeys(visibility.public_only) if s not in full]
    if not full and not public_only:
        return "FALSE", []
    if not public_only:
        return "r.scope = ANY(%s)", [full]
    if not full:
        return "(r.scope = ANY(%s) AND r.sensitivity = 'public')", [public_only]
    return (
        "(r.scope = ANY(%s) OR (r.scope = ANY(%s) AND r.sensitivity = 'public'))",
        [full, public_only],
    )


def filter_sql(where: ItemFilter) -> tuple[str, list[Any]]:
    """A clause that holds what `where.holds` holds."""
    parts: list[str] = []
    params: list[Any] = []
    if where.scopes is not None:
        parts.append("r.scope = ANY(%s)")
        params.append(list(where.scopes))
    if where.family is not None:  # the scope itself, or one starting `<family>:`
        if ":" in where.family:
            parts.append("FALSE")
        else:
            parts.append("(r.scope = %s OR starts_with(r.scope, %s))")
            params += [where.family, f"{where.family}:"]
    for column in ("kind", "status"):
        value = getattr(where, column)
        if value is not None:
            parts.append(f"r.{column} = %s")
            params.append(value)
    if where.sources is not None or where.source_prefixes:
        either = ["r.source = ANY(%s)"]
        params.append(list(where.sources or ()))
        for prefix in where.source_prefixes:
            either.append("starts_with(r.source, %s)")
            params.append(prefix)
        parts.append(f"({' OR '.join(either)})")
    if where.person is not None:
        parts.append("(r.scope = %s OR r.subject_user = %s)")
        params += [f"user:{where.person}", where.person]
    if where.created is not None:
        parts.append("r.created_at >= %s AND r.created_at < %s")
        params += list(where.created)
    if where.ids is not None:
        parts.append("r.id = ANY(%s)")
        params.append(list(where.ids))
    if where.visibility is not None:
        seen, values = visibility_sql(where.visibility)
        parts.append(seen)
        params += values
    return " AND ".join(parts) or "TRUE", params
