"""Dream runs and per-chat cursors in SQLite (`dream_runs`, `dream_cursors`, DESIGN §8)."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

from nahida.memory.core.models import DreamRun, Proposal, Turn
from nahida.memory.store.sqlite import rows
from nahida.memory.store.sqlite.connection import Connection
from nahida.memory.store.values import DreamTally, DueChat, Slice, Span

_COUNTS = (
    "turns",
    "calls",
    "tokens_in",
    "tokens_out",
    "proposals",
    "applied",
    "pending",
    "rejected",
)


# every column but the report, which only one run's page shows (a listing would parse hundreds)
_LISTED = (
    "id, chat, trigger, holder, from_turn, through_turn, model, outcome, error, '[]' AS report,"
    " fates, started_at, finished_at, " + ", ".join(_COUNTS)
)


def _run(row: Any) -> DreamRun:
    return DreamRun(
        id=row["id"],
        chat=row["chat"],
        trigger=row["trigger"],
        started_at=row["started_at"],
        holder=row["holder"],
        from_turn=row["from_turn"],
        through_turn=row["through_turn"],
        model=row["model"],
        outcome=row["outcome"],
        error=row["error"],
        report=tuple(Proposal.from_json(p) for p in json.loads(row["report"])),
        fates=json.loads(row["fates"]),
        finished_at=row["finished_at"],
        **{k: row[k] for k in _COUNTS},
    )


class DreamTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    # -- cursors -----------------------------------------------------------------------------

    def cursor(self, chat: str) -> tuple[int, bool]:
        """(the last turn dreamed, paused) of a chat; (0, False) when never dreamed."""
        row = self.conn.execute(
            "SELECT through_turn, paused FROM dream_cursors WHERE chat = ?", (chat,)
        ).fetchone()
        return (0, False) if row is None else (int(row[0]), bool(row[1]))

    def advance(self, chat: str, through: int, at: float) -> None:
        self.conn.execute(
            "INSERT INTO dream_cursors (chat, through_turn, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT (chat) DO UPDATE SET through_turn = max(through_turn,"
            " excluded.through_turn), updated_at = excluded.updated_at",
            (chat, through, at),
        )

    def pause(self, chat: str, paused: bool, at: float) -> None:
        self.conn.execute(
            "INSERT INTO dream_cursors (chat, paused, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT (chat) DO UPDATE SET paused = excluded.paused,"
            " updated_at = excluded.updated_at",
            (chat, int(paused), at),
        )

    def due(self, min_turns: int, limit: int) -> list[DueChat]:
        """Chats, not paused, with at least `min_turns` dreamable turns after their cursor;
        the ones dreamed longest ago first. One index probe per chat with a session."""
        found = self.conn.execute(
            "SELECT s.chat, coalesce(d.through_turn, 0) AS cursor,"
            " (SELECT max(id) FROM turns t WHERE t.chat = s.chat) AS newest"
            " FROM (SELECT DISTINCT chat FROM sessions) s"
            " LEFT JOIN dream_cursors d ON d.chat = s.chat"
            " WHERE coalesce(d.paused, 0) = 0 AND newest > coalesce(d.through_turn, 0)"
            " ORDER BY coalesce(d.updated_at, 0), s.chat"
        ).fetchall()
        due: list[DueChat] = []
        for chat, cursor, _ in found:
            (count,) = self.conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM turns WHERE chat = ? AND id > ?"
                f" AND hidden_by IS NULL AND role IN ('user', 'assistant') LIMIT {int(min_turns)})",
                (chat, cursor),
            ).fetchone()
            if count >= min_turns:
                due.append(DueChat(chat, cursor))
                if len(due) >= limit:
                    break
        return due

    def turns(self, chat: str, after: int, limit: int) -> list[Turn]:
        """A chat's turns after `after` (user and assistant, in every session), oldest first;
        turns a forgotten item was learned from are left out (a dream must not bring it back)."""
        found = self.conn.execute(
            f"SELECT {rows.TURN_COLUMNS} FROM turns"
            " WHERE chat = ? AND id > ? AND hidden_by IS NULL"
            f" AND role IN ('user', 'assistant') ORDER BY id LIMIT {int(limit)}",
            (chat, after),
        )
        return [rows.turn(r) for r in found]

    # -- runs --------------------------------------------------------------------------------

    def start(self, run: DreamRun) -> None:
        self.conn.execute(
            "INSERT INTO dream_runs (id, chat, trigger, holder, from_turn, through_turn, model,"
            " outcome, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run.id,
                run.chat,
                run.trigger,
                run.holder,
                run.from_turn,
                run.through_turn,
                run.model,
                run.outcome,
                run.started_at,
            ),
        )

    def save(self, run: DreamRun) -> None:
        """Everything a run has counted so far (and its outcome when it is over)."""
        self.conn.execute(
            "UPDATE dream_runs SET from_turn = ?, through_turn = ?, model = ?, outcome = ?,"
            " error = ?, report = ?, fates = ?, finished_at = ?, "
            + ", ".join(f"{k} = ?" for k in _COUNTS)
            + " WHERE id = ?",
            (
                run.from_turn,
                run.through_turn,
                run.model,
                run.outcome,
                run.error,
                json.dumps([p.to_json() for p in run.report], ensure_ascii=False),
                json.dumps(run.fates),
                run.finished_at,
                *(getattr(run, k) for k in _COUNTS),
                run.id,
            ),
        )

    def get(self, run_id: str) -> DreamRun | None:
        row = self.conn.execute("SELECT * FROM dream_runs WHERE id = ?", (run_id,)).fetchone()
        return None if row is None else _run(row)

    def latest(self, chat: str | None, limit: int) -> list[DreamRun]:
        if chat is None:
            found = self.conn.execute(
                f"SELECT * FROM dream_runs ORDER BY seq DESC LIMIT {int(limit)}"
            )
        else:
            found = self.conn.execute(
                f"SELECT * FROM dream_runs WHERE chat = ? ORDER BY seq DESC LIMIT {int(limit)}",
                (chat,),
            )
        return [_run(r) for r in found]

    def abandoned(self, chat: str, before: float, at: float) -> int:
        """Runs of the chat still 'running' that started before `before` (their process died):
        recorded as interrupted. What they applied was applied with the cursor, nothing more."""
        return self.conn.execute(
            "UPDATE dream_runs SET outcome = 'interrupted', finished_at = ?,"
            " error = 'the process stopped during the run' WHERE chat = ? AND outcome = 'running'"
            " AND started_at < ?",
            (at, chat, before),
        ).rowcount

    def unwritten(self, limit: int) -> list[DreamRun]:
        """Finished runs whose DREAMS.md section is not written yet, oldest first."""
        found = self.conn.execute(
            "SELECT * FROM dream_runs WHERE written = 0 AND outcome != 'running'"
            f" ORDER BY seq LIMIT {int(limit)}"
        )
        return [_run(r) for r in found]

    def mark_written(self, run_ids: list[str]) -> None:
        self.conn.executemany(
            "UPDATE dream_runs SET written = 1 WHERE id = ?", [(i,) for i in run_ids]
        )

    def purge(self, item_id: str, texts: Collection[str]) -> int:
        said = [t for t in texts if t]
        # as a report holds them: JSON strings, without their quotes
        needles = [item_id, *(json.dumps(t, ensure_ascii=False)[1:-1] for t in said)]
        found = self.conn.execute(
            "SELECT seq, report FROM dream_runs WHERE "
            + " OR ".join("instr(report, ?) > 0" for _ in needles),
            needles,
        ).fetchall()
        changed = 0
        for seq, report in found:
            proposals = [Proposal.from_json(p) for p in json.loads(report)]
            kept = [
                replace(p, content="", reason="") if p.carries(item_id, said) else p
                for p in proposals
            ]
            if kept != proposals:
                self.conn.execute(
                    "UPDATE dream_runs SET report = ? WHERE seq = ?",
                    (json.dumps([p.to_json() for p in kept], ensure_ascii=False), seq),
                )
                changed += 1
        return changed

    def page(self, chat: str | None, offset: int, limit: int) -> Slice[DreamRun]:
        where, params = ("WHERE chat = ?", (chat,)) if chat is not None else ("", ())
        found = self.conn.execute(
            f"SELECT {_LISTED} FROM dream_runs {where} ORDER BY seq DESC"
            f" LIMIT {int(limit)} OFFSET {int(offset)}",
            params,
        )
        runs = [_run(r) for r in found]
        (total,) = self.conn.execute(f"SELECT count(*) FROM dream_runs {where}", params).fetchone()
        return Slice(runs, int(total))

    def tally(self, spans: Sequence[Span]) -> list[DreamTally]:
        found = self.conn.execute(
            "SELECT s.key, count(*), sum(d.proposals), sum(d.applied), sum(d.pending),"
            " sum(d.rejected) FROM json_each(?) s CROSS JOIN dream_runs d"
            " ON d.started_at >= json_extract(s.value, '$[0]')"
            " AND d.started_at < json_extract(s.value, '$[1]') GROUP BY s.key ORDER BY s.key",
            (rows.dump([list(span) for span in spans]),),
        )
        return [DreamTally(*row) for row in found]
