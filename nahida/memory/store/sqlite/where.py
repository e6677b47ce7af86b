"""WHERE clauses over `memory_items`: what a viewer may see, and a listing's filter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nahida.memory.core.scopes import Visibility
from nahida.memory.store.sqlite import rows
from nahida.memory.store.values import ItemFilter


def visibility_sql(visibility: Visibility) -> tuple[str, list[str]]:
    """A `memory_items` WHERE clause equivalent to the visibility's FTS keys: a scope seen in
    full, or a public item of a scope seen public-only. Written as one `scope IN` range (then
    the sensitivity) so that an index on (scope, …) answers it without an OR of two scans."""
    public_only = [s for s in visibility.public_only if s not in visibility.full]
    scopes = [*visibility.full, *public_only]
    if not scopes:
        return "0", []
    where = f"scope IN ({', '.join('?' * len(scopes))})"
    if not public_only:
        return where, scopes
    if not visibility.full:
        return f"({where} AND sensitivity = 'public')", scopes
    full = ", ".join("?" * len(visibility.full))
    return (
        f"({where} AND (scope IN ({full}) OR sensitivity = 'public'))",
        [*scopes, *visibility.full],
    )


def filter_sql(where: ItemFilter) -> tuple[str, list[Any]]:
    """A `memory_items` WHERE clause that holds what `where.holds` holds."""
    parts: list[str] = []
    params: list[Any] = []

    def among(column: str, values: Sequence[str]) -> None:
        parts.append(f"{column} IN ({', '.join('?' * len(values))})" if values else "0")
        params.extend(values)

    if where.scopes is not None:
        among("scope", where.scopes)
    if where.family is not None:  # the scope itself, or one starting `<family>:`
        if ":" in where.family:
            parts.append("0")
        else:  # one range of the scope index, then the exact test
            parts.append("scope >= ? AND scope < ? AND (scope = ? OR substr(scope, 1, ?) = ?)")
            family = where.family
            params += [family, f"{family};", family, len(family) + 1, f"{family}:"]
    for column in ("kind", "status"):
        value = getattr(where, column)
        if value is not None:
            parts.append(f"{column} = ?")
            params.append(value)
    if where.sources is not None or where.source_prefixes:
        named = list(where.sources or ())
        either = [f"source IN ({', '.join('?' * len(named))})"] if named else []
        either += ["substr(source, 1, ?) = ?"] * len(where.source_prefixes)
        parts.append(f"({' OR '.join(either)})" if either else "0")
        params += named
        for prefix in where.source_prefixes:
            params += [len(prefix), prefix]
    if where.person is not None:
        parts.append("(scope = ? OR subject_user = ?)")
        params += [f"user:{where.person}", where.person]
    if where.created is not None:
        parts.append("created_at >= ? AND created_at < ?")
        params += list(where.created)
    if where.ids is not None:
        parts.append("id IN (SELECT value FROM json_each(?))")
        params.append(rows.dump(list(where.ids)))
    if where.visibility is not None:
        seen, values = visibility_sql(where.visibility)
        parts.append(seen)
        params += values
    return " AND ".join(parts) or "1", params
