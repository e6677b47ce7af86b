"""People in SQLite: the speakers of user turns up to the last fold (`speakers`, schema step
0017) and the users with an active profile bullet."""

from __future__ import annotations

from collections.abc import Sequence

from nahida.memory.store.sqlite.connection import Connection
from nahida.memory.store.values import NameUse, Seen, Slice

# each person once: a speaker with their latest turn and their turns, or a user with a profile
# who never spoke (no time, no turns)
_PEOPLE = (
    "SELECT user, max(last_seen) AS seen, sum(turns) AS turns FROM speakers GROUP BY user"
    " UNION ALL SELECT DISTINCT p.user, NULL, 0 FROM profile_entries p"
    " WHERE p.status = 'active' AND NOT EXISTS (SELECT 1 FROM speakers s WHERE s.user = p.user)"
)


class PeopleTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def fold(self, limit: int) -> int:
        (through,) = self.conn.execute("SELECT through FROM speakers_folded").fetchone()
        taken, last = self.conn.execute(
            "SELECT count(*), max(id) FROM"
            f" (SELECT id FROM turns WHERE id > ? ORDER BY id LIMIT {int(limit)})",
            (through,),
        ).fetchone()
        if not taken:
            return 0
        self.conn.execute(
            "INSERT INTO speakers (user, chat, name, turns, first_seen, last_seen)"
            " SELECT speaker, chat, coalesce(speaker_name, ''), count(*), min(time), max(time)"
            " FROM turns WHERE id > ? AND id <= ? AND role = 'user' AND speaker IS NOT NULL"
            " GROUP BY speaker, chat, coalesce(speaker_name, '')"
            " ON CONFLICT (user, chat, name) DO UPDATE SET turns = turns + excluded.turns,"
            " first_seen = min(first_seen, excluded.first_seen),"
            " last_seen = max(last_seen, excluded.last_seen)",
            (through, last),
        )
        self.conn.execute("UPDATE speakers_folded SET through = ?", (last,))
        return int(taken)

    def count(self) -> int:
        (total,) = self.conn.execute(f"SELECT count(*) FROM ({_PEOPLE})").fetchone()
        return int(total)

    def page(self, offset: int, limit: int) -> Slice[Seen]:
        found = self.conn.execute(  # the total counted in the same pass (a page past it: again)
            f"SELECT user, seen, turns, count(*) OVER () FROM ({_PEOPLE})"
            " ORDER BY seen IS NULL, seen DESC, user"
            f" LIMIT {int(limit)} OFFSET {int(offset)}"
        ).fetchall()
        total = int(found[0][3]) if found else self.count()
        return Slice([Seen(*row[:3]) for row in found], total)

    def names(self, users: Sequence[str]) -> list[NameUse]:
        if not users:
            return []
        found = self.conn.execute(
            "SELECT user, nullif(name, ''), chat, turns, first_seen, last_seen FROM speakers"
            f" WHERE user IN ({', '.join('?' * len(users))})"
            " ORDER BY user, last_seen DESC, chat, name",
            tuple(users),
        )
        return [NameUse(*row) for row in found]
