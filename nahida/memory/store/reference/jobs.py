"""Background job runs and leases, dream runs and each chat's dream cursor, in memory."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence

from nahida.memory.core.models import DreamRun, JobRun, Turn
from nahida.memory.store.reference.data import Cursor, Data, DreamRow
from nahida.memory.store.values import DreamTally, DueChat, Slice, Span


class JobTable:
    def __init__(self, data: Data) -> None:
        self.data = data

    def lease(self, job: str, holder: str, until: float, now: float) -> bool:
        held = self.data.leases.get(job)
        if held is not None and held[0] != holder and held[1] > now:
            return False
        self.data.leases[job] = (holder, until)
        return True

    def release(self, job: str, holder: str) -> None:
        if self.data.leases.get(job, ("", 0.0))[0] == holder:
            del self.data.leases[job]

    def start(self, job: str, holder: str, at: float) -> int:
        run_id = self.data.next("job_run")
        self.data.job_runs[run_id] = JobRun(run_id, job, holder, at, None, "running", {}, None)
        return run_id

    def finish(
        self, run_id: int, outcome: str, counts: dict[str, int], error: str | None, at: float
    ) -> None:
        run = self.data.job_runs.get(run_id)
        if run is not None:
            self.data.job_runs[run_id] = dataclasses.replace(
                run,
                finished_at=at,
                outcome=outcome,  # type: ignore[arg-type]  # the seam passes it as a str
                counts=dict(counts),
                error=error,
            )

    def latest(self, job: str | None, limit: int) -> list[JobRun]:
        runs = sorted(self.data.job_runs.values(), key=lambda r: r.id, reverse=True)
        if job is not None:
            return [r for r in runs if r.job == job][:limit]
        last: dict[str, JobRun] = {}
        for run in runs:
            last.setdefault(run.job, run)
        return list(last.values())[:limit]


class DreamTable:
    def __init__(self, data: Data) -> None:
        self.data = data

    def cursor(self, chat: str) -> tuple[int, bool]:
        found = self.data.cursors.get(chat, Cursor())
        return found.through, found.paused

    def advance(self, chat: str, through: int, at: float) -> None:
        old = self.data.cursors.get(chat, Cursor())
        self.data.cursors[chat] = Cursor(max(old.through, through), old.paused, at)

    def pause(self, chat: str, paused: bool, at: float) -> None:
        old = self.data.cursors.get(chat, Cursor())
        self.data.cursors[chat] = Cursor(old.through, paused, at)

    def due(self, min_turns: int, limit: int) -> list[DueChat]:
        chats = sorted({s.chat for s in self.data.sessions.values()})
        order = sorted(chats, key=lambda c: self.data.cursors.get(c, Cursor()).updated_at)
        due: list[DueChat] = []
        for chat in order:
            through, paused = self.cursor(chat)
            if not paused and len(self.turns(chat, through, min_turns)) >= min_turns:
                due.append(DueChat(chat, through))
        return due[:limit]

    def turns(self, chat: str, after: int, limit: int) -> list[Turn]:
        found = [
            t for t in self.data.turns.values() if t.chat == chat and t.id > after and t.spoken
        ]
        return [t.turn() for t in found[:limit]]

    def start(self, run: DreamRun) -> None:
        started = DreamRun(  # what a run is when it starts; `save` records the rest
            run.id,
            run.chat,
            run.trigger,
            run.started_at,
            holder=run.holder,
            from_turn=run.from_turn,
            through_turn=run.through_turn,
            model=run.model,
            outcome=run.outcome,
        )
        self.data.dreams[run.id] = DreamRow(self.data.next("dream"), started)

    def save(self, run: DreamRun) -> None:
        row = self.data.dreams.get(run.id)
        if row is not None:  # what `start` wrote of it stays
            kept = row.run
            run = dataclasses.replace(
                run,
                chat=kept.chat,
                trigger=kept.trigger,
                holder=kept.holder,
                started_at=kept.started_at,
            )
            self.data.dreams[run.id] = dataclasses.replace(row, run=run)

    def get(self, run_id: str) -> DreamRun | None:
        row = self.data.dreams.get(run_id)
        return row.run if row else None

    def _by_seq(self) -> list[DreamRow]:
        return sorted(self.data.dreams.values(), key=lambda r: r.seq)

    def latest(self, chat: str | None, limit: int) -> list[DreamRun]:
        found = [r.run for r in reversed(self._by_seq()) if chat in (None, r.run.chat)]
        return found[:limit]

    def abandoned(self, chat: str, before: float, at: float) -> int:
        marked = 0
        for row in self._by_seq():
            run = row.run
            if run.chat == chat and run.outcome == "running" and run.started_at < before:
                run = dataclasses.replace(
                    run,
                    outcome="interrupted",
                    finished_at=at,
                    error="the process stopped during the run",
                )
                self.data.dreams[run.id] = dataclasses.replace(row, run=run)
                marked += 1
        return marked

    def unwritten(self, limit: int) -> list[DreamRun]:
        found = [r.run for r in self._by_seq() if not r.written and r.run.outcome != "running"]
        return found[:limit]

    def mark_written(self, run_ids: list[str]) -> None:
        for run_id in run_ids:
            row = self.data.dreams.get(run_id)
            if row is not None:
                self.data.dreams[run_id] = dataclasses.replace(row, written=True)

    def purge(self, item_id: str, texts: Collection[str]) -> int:
        said = {t for t in texts if t}
        changed = 0
        for row in self._by_seq():
            report = row.run.report
            kept = tuple(
                dataclasses.replace(p, content="", reason="") if p.carries(item_id, said) else p
                for p in report
            )
            if kept != report:
                run = dataclasses.replace(row.run, report=kept)
                self.data.dreams[run.id] = dataclasses.replace(row, run=run)
                changed += 1
        return changed

    def page(self, chat: str | None, offset: int, limit: int) -> Slice[DreamRun]:
        found = self.latest(chat, len(self.data.dreams))
        shown = [dataclasses.replace(run, report=()) for run in found[offset : offset + limit]]
        return Slice(shown, len(found))

    def tally(self, spans: Sequence[Span]) -> list[DreamTally]:
        found = []
        for n, (start, end) in enumerate(spans):
            runs = [r.run for r in self.data.dreams.values() if start <= r.run.started_at < end]
            if runs:
                sums = [sum(getattr(r, k) for r in runs) for k in _SUMMED]
                found.append(DreamTally(n, len(runs), *sums))
        return found


_SUMMED = ("proposals", "applied", "pending", "rejected")  # `DreamTally`'s sums, in its order
