"""People in SQLite: the speakers of user turns (`speakers`, kept by triggers on `turns`) and
the users with an active profile bullet."""

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

    def count(self) -> int:
        (total,) = self.conn.execute(f"SELECT count(*) FROM ({_PEOPLE})").fetchone()
        return int(total)

    def page(self, offset: int, limit: int) -> Slice[Seen]:
        found = self.conn.execute(
            f"SELECT user, seen, turns FROM ({_PEOPLE}) ORDER BY seen IS NULL, seen DESC, user"
            f" LIMIT {int(limit)} OFFSET {int(offset)}"
        )
        return Slice([Seen(*row) for row in found], self.count())

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
