"""Dream runs and per-chat cursors in PostgreSQL (`dream_runs`, `dream_cursors`, DESIGN §8)."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

from nahida.memory.core.models import DreamRun, Proposal, Turn
from nahida.memory.store.postgres import rows
from nahida.memory.store.postgres.db import Connection
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
_HEAD = (
    "id, chat, trigger, holder, from_turn, through_turn, model, outcome, error, report, fates,"
    " started_at, finished_at, " + ", ".join(_COUNTS)
)
# every column but the report, which only one run's page shows (a listing would parse hundreds)
_LISTED = _HEAD.replace("report,", "'[]'::jsonb,")


def _run(row: Sequence[Any]) -> DreamRun:
    (id_, chat, trigger, holder, from_turn, through_turn, model, outcome, error, report, fates,
     started_at, finished_at) = row[:13]  # fmt: skip
    return DreamRun(
        id=id_,
        chat=chat,
        trigger=trigger,
        started_at=started_at,
        holder=holder,
        from_turn=int(from_turn),
        through_turn=int(through_turn),
        model=model,
        outcome=outcome,
        error=error,
        report=tuple(Proposal.from_json(p) for p in report),
        fates=dict(fates),
        finished_at=finished_at,
        **{k: int(v) for k, v in zip(_COUNTS, row[13:], strict=True)},
    )


def _report(proposals: Sequence[Proposal]) -> str:
    return json.dumps([p.to_json() for p in proposals], ensure_ascii=False)


class DreamTable:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    # -- cursors -----------------------------------------------------------------------------

    def cursor(self, chat: str) -> tuple[int, bool]:
        row = self.conn.execute(
            "SELECT through_turn, paused FROM dream_cursors WHERE chat = %s", (chat,)
        ).fetchone()
        return (0, False) if row is None else (int(row[0]), bool(row[1]))

    def advance(self, chat: str, through: int, at: float) -> None:
        self.conn.execute(
            "INSERT INTO dream_cursors (chat, through_turn, updated_at) VALUES (%s, %s, %s)"
            " ON CONFLICT (chat) DO UPDATE SET through_turn = greatest("
            "dream_cursors.through_turn, excluded.through_turn), updated_at = excluded.updated_at",
            (chat, through, at),
        )

    def pause(self, chat: str, paused: bool, at: float) -> None:
        self.conn.execute(
            "INSERT INTO dream_cursors (chat, paused, updated_at) VALUES (%s, %s, %s)"
            " ON CONFLICT (chat) DO UPDATE SET paused = excluded.paused,"
            " updated_at = excluded.updated_at",
            (chat, bool(paused), at),
        )

    def due(self, min_turns: int, limit: int) -> list[DueChat]:
        """Chats, not paused, with at least `min_turns` dreamable turns after their cursor; the
        ones dreamed longest ago first. The count stops at `min_turns` (an index range each)."""
        found = self.conn.execute(
            "SELECT s.chat, coalesce(d.through_turn, 0) FROM (SELECT DISTINCT chat FROM sessions) s"
            " LEFT JOIN dream_cursors d ON d.chat = s.chat"
            " WHERE NOT coalesce(d.paused, FALSE) AND (SELECT count(*) FROM (SELECT 1 FROM turns t"
            " WHERE t.chat = s.chat AND t.id > coalesce(d.through_turn, 0)"
            " AND t.hidden_by IS NULL AND t.role IN ('user', 'assistant')"
            f" LIMIT {min_turns:d}) n) >= %s"
            f" ORDER BY coalesce(d.updated_at, 0), s.chat LIMIT {limit:d}",
            (min_turns,),
        )
        return [DueChat(r[0], int(r[1])) for r in found]

    def turns(self, chat: str, after: int, limit: int) -> list[Turn]:
        """A chat's turns after `after` (user and assistant, in every session), oldest first;
        turns a forgotten item was learned from are left out (a dream must not bring it back)."""
        found = self.conn.execute(
            f"SELECT {rows.TURN_COLUMNS} FROM turns"
            " WHERE chat = %s AND id > %s AND hidden_by IS NULL"
            f" AND role IN ('user', 'assistant') ORDER BY id LIMIT {limit:d}",
            (chat, after),
        )
        return [rows.turn(r) for r in found]

    # -- runs --------------------------------------------------------------------------------

    def start(self, run: DreamRun) -> None:
        self.conn.execute(
            "INSERT INTO dream_runs (id, chat, trigger, holder, from_turn, through_turn, model,"
            " outcome, started_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
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
            "UPDATE dream_runs SET from_turn = %s, through_turn = %s, model = %s, outcome = %s,"
            " error = %s, report = %s::jsonb, fates = %s::jsonb, finished_at = %s, "
            + ", ".join(f"{k} = %s" for k in _COUNTS)
            + " WHERE id = %s",
            (
                run.from_turn,
                run.through_turn,
                run.model,
                run.outcome,
                run.error,
                _report(run.report),
                json.dumps(run.fates),
                run.finished_at,
                *(getattr(run, k) for k in _COUNTS),
                run.id,
            ),
        )

    def get(self, run_id: str) -> DreamRun | None:
        row = self.conn.execute(f"SELECT {_HEAD} FROM dream_runs WHERE id = %s", (run_id,))
        found = row.fetchone()
        return None if found is None else _run(found)

    def latest(self, chat: str | None, limit: int) -> list[DreamRun]:
        where, params = ("WHERE chat = %s", (chat,)) if chat is not None else ("", ())
        found = self.conn.execute(
            f"SELECT {_HEAD} FROM dream_runs {where} ORDER BY seq DESC LIMIT {limit:d}", params
        )
        return [_run(r) for r in found]

    def abandoned(self, chat: str, before: float, at: float) -> int:
        """Runs of the chat still 'running' that started before `before` (their process died):
        recorded as interrupted. What they applied was applied with the cursor, nothing more."""
        return self.conn.execute(
            "UPDATE dream_runs SET outcome = 'interrupted', finished_at = %s,"
            " error = 'the process stopped during the run' WHERE chat = %s"
            " AND outcome = 'running' AND started_at < %s",
            (at, chat, before),
        ).rowcount

    def unwritten(self, limit: int) -> list[DreamRun]:
        found = self.conn.execute(
            f"SELECT {_HEAD} FROM dream_runs WHERE NOT written AND outcome <> 'running'"
            f" ORDER BY seq LIMIT {limit:d}"
        )
        return [_run(r) for r in found]

    def mark_written(self, run_ids: list[str]) -> None:
        self.conn.execute("UPDATE dream_runs SET written = TRUE WHERE id = ANY(%s)", (run_ids,))

    def purge(self, item_id: str, texts: Collection[str]) -> int:
        said = [t for t in texts if t]
        # as jsonb prints them: JSON strings without their quotes (a first sieve; each report
        # found is then read proposal by proposal)
        needles = [item_id, *(json.dumps(t, ensure_ascii=False)[1:-1] for t in said)]
        found = self.conn.execute(
            "SELECT seq, report FROM dream_runs"
            " WHERE EXISTS (SELECT 1 FROM unnest(%s::text[]) n WHERE strpos(report::text, n) > 0)",
            (needles,),
        ).fetchall()
        changed = 0
        for seq, report in found:
            proposals = [Proposal.from_json(p) for p in report]
            kept = [
                replace(p, content="", reason="") if p.carries(item_id, said) else p
                for p in proposals
            ]
            if kept != proposals:
                self.conn.execute(
                    "UPDATE dream_runs SET report = %s::jsonb WHERE seq = %s", (_report(kept), seq)
                )
                changed += 1
        return changed

    def page(self, chat: str | None, offset: int, limit: int) -> Slice[DreamRun]:
        where, params = ("WHERE chat = %s", (chat,)) if chat is not None else ("", ())
        found = self.conn.execute(
            f"SELECT {_LISTED} FROM dream_runs {where} ORDER BY seq DESC"
            f" LIMIT {limit:d} OFFSET {offset:d}",
            params,
        )
        runs = [_run(r) for r in found]
        row = self.conn.execute(f"SELECT count(*) FROM dream_runs {where}", params).fetchone()
        return Slice(runs, int(row[0]) if row else 0)

    def tally(self, spans: Sequence[Span]) -> list[DreamTally]:
        if not spans:
            return []
        starts, ends = zip(*spans, strict=True)
        found = self.conn.execute(
            "SELECT s.n - 1, count(*), sum(d.proposals), sum(d.applied), sum(d.pending),"
            " sum(d.rejected)"
            " FROM unnest(%s::float8[], %s::float8[]) WITH ORDINALITY AS s (start, stop, n)"
            " JOIN dream_runs d ON d.started_at >= s.start AND d.started_at < s.stop"
            " GROUP BY s.n ORDER BY s.n",
            (list(starts), list(ends)),
        )
        return [DreamTally(*(int(v) for v in r)) for r in found]
