"""Background job runs and leases in PostgreSQL.

A lease is one row per job, taken when free, expired or already the holder's in one statement
(an upsert whose update applies only under those conditions): two processes cannot both hold
it, as the conflicting insert waits for the other's row lock and then sees its row.
"""

from __future__ import annotations

from nahida.memory.core.models import JobRun
from nahida.memory.store.postgres import rows
from nahida.memory.store.postgres.db import Connection

_SELECT = "SELECT id, job, holder, started_at, finished_at, outcome, counts, error FROM job_runs"


class JobTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def lease(self, job: str, holder: str, until: float, now: float) -> bool:
        row = self.conn.execute(
            "INSERT INTO job_leases (job, holder, expires_at) VALUES (%s, %s, %s)"
            " ON CONFLICT (job) DO UPDATE SET holder = excluded.holder,"
            " expires_at = excluded.expires_at"
            " WHERE job_leases.holder = excluded.holder OR job_leases.expires_at <= %s"
            " RETURNING holder",
            (job, holder, until, now),
        ).fetchone()
        return row is not None and row[0] == holder

    def release(self, job: str, holder: str) -> None:
        self.conn.execute("DELETE FROM job_leases WHERE job = %s AND holder = %s", (job, holder))

    def start(self, job: str, holder: str, at: float) -> int:
        row = self.conn.execute(
            "INSERT INTO job_runs (job, holder, started_at) VALUES (%s, %s, %s) RETURNING id",
            (job, holder, at),
        ).fetchone()
        assert row is not None
        return int(row[0])

    def finish(
        self, run_id: int, outcome: str, counts: dict[str, int], error: str | None, at: float
    ) -> None:
        self.conn.execute(
            "UPDATE job_runs SET finished_at = %s, outcome = %s, counts = %s::jsonb, error = %s"
            " WHERE id = %s",
            (at, outcome, rows.dump(counts), error, run_id),
        )

    def latest(self, job: str | None, limit: int) -> list[JobRun]:
        if job is not None:
            found = self.conn.execute(
                f"{_SELECT} WHERE job = %s ORDER BY id DESC LIMIT {limit:d}", (job,)
            )
        else:
            found = self.conn.execute(
                f"{_SELECT} WHERE id IN (SELECT max(id) FROM job_runs GROUP BY job)"
                f" ORDER BY id DESC LIMIT {limit:d}"
            )
        return [rows.job_run(r) for r in found]
