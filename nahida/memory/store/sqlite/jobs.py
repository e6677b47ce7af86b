"""Background job runs and leases in SQLite.

A lease is one row per job: taken when free, expired, or already the holder's, in one statement
(an upsert whose update only applies under those conditions), so two processes sharing the file
cannot both hold it.
"""

from __future__ import annotations

from nahida.memory.core.models import JobRun
from nahida.memory.store.sqlite import rows
from nahida.memory.store.sqlite.connection import Connection


class JobTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def lease(self, job: str, holder: str, until: float, now: float) -> bool:
        row = self.conn.execute(
            "INSERT INTO job_leases (job, holder, expires_at) VALUES (?, ?, ?)"
            " ON CONFLICT (job) DO UPDATE SET holder = excluded.holder,"
            " expires_at = excluded.expires_at"
            " WHERE job_leases.holder = excluded.holder OR job_leases.expires_at <= ?"
            " RETURNING holder",
            (job, holder, until, now),
        ).fetchone()
        return row is not None and row[0] == holder

    def release(self, job: str, holder: str) -> None:
        self.conn.execute("DELETE FROM job_leases WHERE job = ? AND holder = ?", (job, holder))

    def start(self, job: str, holder: str, at: float) -> int:
        cursor = self.conn.execute(
            "INSERT INTO job_runs (job, holder, started_at) VALUES (?, ?, ?)", (job, holder, at)
        )
        return int(cursor.lastrowid or 0)

    def finish(
        self, run_id: int, outcome: str, counts: dict[str, int], error: str | None, at: float
    ) -> None:
        self.conn.execute(
            "UPDATE job_runs SET finished_at = ?, outcome = ?, counts = ?, error = ? WHERE id = ?",
            (at, outcome, rows.dump(counts), error, run_id),
        )

    def latest(self, job: str | None, limit: int) -> list[JobRun]:
        if job is not None:
            found = self.conn.execute(
                f"SELECT * FROM job_runs WHERE job = ? ORDER BY id DESC LIMIT {int(limit)}", (job,)
            )
        else:
            found = self.conn.execute(
                "SELECT * FROM job_runs WHERE id IN (SELECT max(id) FROM job_runs GROUP BY job)"
                f" ORDER BY id DESC LIMIT {int(limit)}"
            )
        return [rows.job_run(r) for r in found]
