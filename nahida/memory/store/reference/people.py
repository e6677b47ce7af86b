"""People, and what each answered user turn's prompt was given from memory, in memory."""

from __future__ import annotations

from collections.abc import Sequence

from nahida.memory.store.reference.data import Data, TurnRow
from nahida.memory.store.values import NameUse, RecallRecord, RecallTally, Seen, Slice, Span


class RecallTable:
    def __init__(self, data: Data) -> None:
        self.data = data

    def add(self, record: RecallRecord) -> None:
        if record.turn_id in self.data.turns:
            self.data.recalls[record.turn_id] = record

    def of_turns(self, turn_ids: Sequence[int]) -> dict[int, RecallRecord]:
        recalls = self.data.recalls
        return {i: recalls[i] for i in dict.fromkeys(turn_ids) if i in recalls}

    def tally(self, spans: Sequence[Span]) -> list[RecallTally]:
        found = []
        for n, (start, end) in enumerate(spans):
            inside = [r for r in self.data.recalls.values() if start <= r.time < end]
            if inside:
                found.append(RecallTally(n, len(inside), sum(r.hits for r in inside)))
        return found


FOLDED = "people_folded"  # the counter holding the last turn a fold took in


class PeopleTable:
    def __init__(self, data: Data) -> None:
        self.data = data

    def fold(self, limit: int) -> int:
        through = self.data.counters.get(FOLDED, 0)
        taken = [i for i in self.data.turns if i > through][: max(0, limit)]
        if taken:
            self.data.counters[FOLDED] = taken[-1]
        return len(taken)

    def _spoken(self) -> dict[tuple[str, str | None, str], list[TurnRow]]:
        """The user turns taken in by a fold, by (speaker, name, chat); an empty name is no
        name (turn ids are never handed out twice here)."""
        through = self.data.counters.get(FOLDED, 0)
        spoken: dict[tuple[str, str | None, str], list[TurnRow]] = {}
        for t in self.data.turns.values():
            if t.id <= through and t.role == "user" and t.speaker is not None:
                spoken.setdefault((t.speaker, t.speaker_name or None, t.chat), []).append(t)
        return spoken

    def _people(self) -> list[Seen]:
        seen: dict[str, Seen] = {}
        for (user, _, _), turns in self._spoken().items():
            latest = max(t.time for t in turns)
            before = seen.get(user, Seen(user, latest, 0))
            seen[user] = Seen(
                user, max(latest, before.last_seen or latest), before.turns + len(turns)
            )
        for row in self.data.profiles.values():
            if row.entry.status == "active":
                seen.setdefault(row.entry.user, Seen(row.entry.user, None, 0))
        return sorted(
            seen.values(), key=lambda s: (s.last_seen is None, -(s.last_seen or 0.0), s.user)
        )

    def count(self) -> int:
        return len(self._people())

    def page(self, offset: int, limit: int) -> Slice[Seen]:
        people = self._people()
        return Slice(people[offset : offset + limit], len(people))

    def names(self, users: Sequence[str]) -> list[NameUse]:
        wanted = set(users)
        found = [
            NameUse(
                user, name, chat, len(turns), min(t.time for t in turns), max(t.time for t in turns)
            )
            for (user, name, chat), turns in self._spoken().items()
            if user in wanted
        ]
        return sorted(found, key=lambda n: (n.user, -n.last_seen, n.chat, n.name or ""))
