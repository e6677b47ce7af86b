"""People in PostgreSQL: the speakers of user turns up to the last fold (`speakers`, schema step
0014) and the users with an active profile bullet."""

from __future__ import annotations

from collections.abc import Sequence

from nahida.memory.store.postgres.db import Connection
from nahida.memory.store.values import NameUse, Seen, Slice

# each person once: a speaker with their latest turn and their turns, or a user with a profile
# who never spoke (no time, no turns)
_PEOPLE = (
    "SELECT person, max(last_seen) AS seen, sum(turns) AS turns FROM speakers GROUP BY person"
    " UNION ALL SELECT DISTINCT p.person, NULL::float8, 0 FROM profile_entries p"
    " WHERE p.status = 'active'"
    " AND NOT EXISTS (SELECT 1 FROM speakers s WHERE s.person = p.person)"
)


class PeopleTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def fold(self, limit: int) -> int:
        # the cursor's row locked first: two folds at once take in each turn once
        row = self.conn.execute("SELECT through_turn FROM speakers_folded FOR UPDATE").fetchone()
        assert row is not None
        through = int(row[0])
        taken = self.conn.execute(
            "SELECT count(*), max(id) FROM"
            f" (SELECT id FROM turns WHERE id > %s ORDER BY id LIMIT {limit:d}) t",
            (through,),
        ).fetchone()
        if taken is None or not taken[0]:
            return 0
        count, last = int(taken[0]), int(taken[1])
        self.conn.execute(
            "INSERT INTO speakers (person, chat, name, turns, first_seen, last_seen)"
            " SELECT speaker, chat, coalesce(speaker_name, ''), count(*), min(time), max(time)"
            " FROM turns WHERE id > %s AND id <= %s AND role = 'user' AND speaker IS NOT NULL"
            " GROUP BY speaker, chat, coalesce(speaker_name, '')"
            " ON CONFLICT (person, chat, name) DO UPDATE SET"
            " turns = speakers.turns + excluded.turns,"
            " first_seen = least(speakers.first_seen, excluded.first_seen),"
            " last_seen = greatest(speakers.last_seen, excluded.last_seen)",
            (through, last),
        )
        self.conn.execute("UPDATE speakers_folded SET through_turn = %s", (last,))
        return count

    def count(self) -> int:
        row = self.conn.execute(f"SELECT count(*) FROM ({_PEOPLE}) p").fetchone()
        return int(row[0]) if row else 0

    def page(self, offset: int, limit: int) -> Slice[Seen]:
        found = self.conn.execute(  # the total counted in the same pass (a page past it: again)
            f"SELECT person, seen, turns, count(*) OVER () FROM ({_PEOPLE}) p"
            " ORDER BY seen IS NULL, seen DESC, person"
            f" LIMIT {limit:d} OFFSET {offset:d}"
        ).fetchall()
        total = int(found[0][3]) if found else self.count()
        return Slice([Seen(r[0], r[1], int(r[2])) for r in found], total)

    def names(self, users: Sequence[str]) -> list[NameUse]:
        if not users:
            return []
        found = self.conn.execute(
            "SELECT person, nullif(name, ''), chat, turns, first_seen, last_seen FROM speakers"
            " WHERE person = ANY(%s) ORDER BY person, last_seen DESC, chat, name",
            (list(users),),
        )
        return [NameUse(r[0], r[1], r[2], int(r[3]), r[4], r[5]) for r in found]
