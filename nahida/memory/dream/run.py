"""A dream run over one chat (DESIGN §8): the turns since the chat's cursor, in calls of at most
`batch_turns` turns (and about `batch_tokens` tokens), each shown with the session's warm summary
and the memories the turns touch (lexical recall in the scopes the run may write) to the `dream`
model, whose strict JSON ops pass the guards (`guards.py`) and go through the one write path as
candidates (source `llm_dream`, the run id in their evidence); the commit mode decides.

Each call's changes, the run's counts and the cursor move in one transaction: a crash or a
failed call loses nothing and applies nothing twice (the next run starts where the last
recorded one stopped). A malformed answer is shown to the model once with what was wrong; a
second one falls back to rule extraction over the same turns that rule extraction has not read
yet (live or in an import), and the run is `degraded`. A
model error or timeout ends the run `failed` with the cursor where it was.

One run per chat at a time, across processes: the chat's lease (`dream:<chat>`, in the job
leases); a second caller gets None. Every finished run gets a section in `workspace/DREAMS.md`
(`markdown/dreams_md.py`), written after the run (a crash before it: written by the next).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import tzinfo
from pathlib import Path

import structlog

from nahida.envelope import ChatKey
from nahida.errors import MemoryPermissionError, ProviderError
from nahida.memory.core import access
from nahida.memory.core.access import Actor
from nahida.memory.core.models import (
    CommitMode,
    DreamOutcome,
    DreamRun,
    MemoryItem,
    Proposal,
    Turn,
    WriteResult,
    new_id,
)
from nahida.memory.core.safety import redact
from nahida.memory.core.scopes import GLOBAL, Visibility
from nahida.memory.core.tokenize import query_terms, tokenize
from nahida.memory.dream import guards, prompt, proposals
from nahida.memory.dream.guards import Batch
from nahida.memory.dream.proposals import Malformed, ProposedOp
from nahida.memory.markdown import dreams_md
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.values import DueChat, TextSearch
from nahida.memory.write import extract, write
from nahida.providers.base import ChatModel, Message, Usage

log = structlog.get_logger(__name__)

APPLIED = ("created", "merged", "superseded", "updated", "archived")
ANSWER_TOKENS = 4096
TOUCHED_ITEMS = 30  # memories shown per call
QUERY_CHARS = 4000  # of the turns' text, for finding the memories they touch
REPORT_LIMIT = 300  # proposals kept in a run's report (`fates` counts them all)
CLOCK_SKEW = 86400.0  # a turn's time (the platform's clock) may run ahead of the bot's this much


@dataclass(frozen=True, slots=True)
class DreamSettings:
    enabled: bool = True
    interval: float = 3600.0
    first: float = 300.0
    max_chats: int = 20
    max_turns: int = 1000
    batch_turns: int = 200
    batch_tokens: int = 8000
    min_new_turns: int = 4
    max_ops: int = 20
    timeout: float = 120.0

    @property
    def lease(self) -> float:
        """Seconds a chat's lease lasts; renewed before each call."""
        return 2 * self.timeout + 60.0


class NoModel(Exception):
    """Dreaming needs a configured model."""


class _Moved(Exception):
    """The chat's cursor moved under the run (another process dreamed it)."""


@dataclass(slots=True)
class _Tally:
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    model: str = ""

    def add(self, usage: Usage, model: str) -> None:
        self.calls += 1
        self.tokens_in += usage.input_tokens
        self.tokens_out += usage.output_tokens
        self.model = self.model or model


def _never() -> bool:
    return False


class Dreaming:
    """`memory.dreams`: dream runs, their cursors, pauses and history."""

    def __init__(
        self,
        store: Store,
        model: ChatModel | None,
        *,
        settings: DreamSettings,
        mode: CommitMode,
        holder: str,
        tz: tzinfo | None = None,
        journal: Path | None = None,
        changed: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.model = model
        self.settings = settings
        self.mode = mode
        self.holder = holder
        self.tz = tz
        self.journal = journal  # workspace/DREAMS.md; None: no file
        self.changed = changed  # told after writes (new texts to embed)
        self._running: set[str] = set()  # chats this process is dreaming now

    @property
    def enabled(self) -> bool:
        return self.model is not None and self.model.configured

    # -- what and where ----------------------------------------------------------------------

    async def due(self, limit: int | None = None, min_turns: int | None = None) -> list[DueChat]:
        """Chats not paused with at least `min_turns` new turns (None: `min_new_turns`), at
        most `limit` (None: `max_chats`), dreamed longest ago first."""
        settings = self.settings
        count = settings.max_chats if limit is None else limit
        least = settings.min_new_turns if min_turns is None else min_turns
        return await self.store.read(lambda tx: tx.dreams.due(least, count))

    def may_steer(self, chat: str, actor: Actor) -> bool:
        """Whether `actor` may pause, resume or run the chat's dreaming (`access`)."""
        return access.may_steer_dreaming(actor, ChatKey.parse(chat))

    def _steered(self, chat: str, actor: Actor | None, what: str) -> None:
        """Check who asks (None: the bot itself, its jobs), and log it when someone did."""
        if actor is None:
            return
        if not self.may_steer(chat, actor):
            raise MemoryPermissionError(f"{actor.label} may not steer dreaming in {chat}")
        log.info("dreaming_steered", chat=chat, what=what, actor=actor.label)

    async def pause(self, chat: str, paused: bool = True, *, actor: Actor | None = None) -> None:
        """Pause (or resume) the chat's dreaming; `actor`: who asks (MemoryPermissionError)."""
        self._steered(chat, actor, "pause" if paused else "resume")
        now = time.time()
        await self.store.write(lambda tx: tx.dreams.pause(chat, paused, now))

    async def resume(self, chat: str, *, actor: Actor | None = None) -> None:
        await self.pause(chat, False, actor=actor)

    async def paused(self, chat: str) -> bool:
        _, paused = await self.store.read(lambda tx: tx.dreams.cursor(chat))
        return bool(paused)

    async def runs(self, chat: str | None = None, limit: int = 20) -> list[DreamRun]:
        return await self.store.read(lambda tx: tx.dreams.latest(chat, limit))

    async def get(self, run_id: str) -> DreamRun | None:
        return await self.store.read(lambda tx: tx.dreams.get(run_id))

    # -- a run -------------------------------------------------------------------------------

    async def run(
        self,
        chat: str,
        trigger: str = "cli",
        stopping: Callable[[], bool] = _never,
        *,
        actor: Actor | None = None,
    ) -> DreamRun | None:
        """Dream the chat's new turns now. None when the chat is being dreamed already (here or
        by another process); a run with outcome `skipped` and no id (not recorded) when dreaming
        is paused there or nothing is new. `actor`: who asks (None: the bot's own schedule).
        Raises NoModel without a model, ValueError for a chat key that does not parse,
        MemoryPermissionError for an actor who may not."""
        key = ChatKey.parse(chat)
        self._steered(str(key), actor, "run")
        if not self.enabled:
            raise NoModel("no model is configured (models.dream, else models.chat)")
        chat = str(key)
        if chat in self._running or not await self._lease(chat):
            return None
        self._running.add(chat)
        try:
            return await self._run(key, trigger, stopping)
        finally:
            self._running.discard(chat)
            await self.store.write(lambda tx: tx.jobs.release(f"dream:{chat}", self.holder))
            await self.write_journal()

    async def _lease(self, chat: str) -> bool:
        now = time.time()
        until = now + self.settings.lease
        holder = self.holder
        return bool(
            await self.store.write(lambda tx: tx.jobs.lease(f"dream:{chat}", holder, until, now))
        )

    async def _run(self, key: ChatKey, trigger: str, stopping: Callable[[], bool]) -> DreamRun:
        chat = str(key)
        now = time.time()
        cursor, paused, new = await self.store.read(lambda tx: _where(tx, chat))
        if paused or not new:
            why = "paused" if paused else "no new turns"
            return DreamRun("", chat, trigger, now, outcome="skipped", error=why)
        run = DreamRun(
            new_id("d"), chat, trigger, now, self.holder, cursor + 1, cursor, outcome="running"
        )
        await self.store.write(
            lambda tx: (tx.dreams.abandoned(chat, now, now), tx.dreams.start(run))
        )
        bound = log.bind(run=run.id, chat=chat, trigger=trigger)
        tally = _Tally()
        outcome: DreamOutcome = "ok"
        error: str | None = None
        try:
            while run.turns < self.settings.max_turns:
                if stopping():  # between calls: what was read so far is recorded
                    outcome = "interrupted" if outcome == "ok" else outcome
                    break
                step = await self._step(key, run, tally, bound)
                if step is None:
                    break
                run, problem = step
                if problem is not None:
                    outcome, error = "degraded", problem
        except (ProviderError, TimeoutError) as exc:
            outcome, error = "failed", _error(exc)
            bound.warning("dream_call_failed", error=error)
        except _Moved:
            outcome, error = "failed", "another run moved the chat's cursor"
            bound.warning("dream_cursor_moved")
        except asyncio.CancelledError:
            await self._finish(run, tally, "interrupted", "stopped at the shutdown deadline")
            raise
        except Exception as exc:
            outcome, error = "failed", _error(exc)
            bound.exception("dream_run_crashed")
        run = await self._finish(run, tally, outcome, error)
        bound.info(
            "dream_run_finished",
            outcome=run.outcome,
            turns=run.turns,
            calls=run.calls,
            applied=run.applied,
            pending=run.pending,
            rejected=run.rejected,
        )
        return run

    async def _finish(
        self, run: DreamRun, tally: _Tally, outcome: DreamOutcome, error: str | None
    ) -> DreamRun:
        done = replace(
            run,
            outcome=outcome,
            error=error,
            finished_at=time.time(),
            model=tally.model or run.model,
            calls=tally.calls,
            tokens_in=tally.tokens_in,
            tokens_out=tally.tokens_out,
        )
        await self.store.write(lambda tx: tx.dreams.save(done))
        return done

    async def _step(
        self, key: ChatKey, run: DreamRun, tally: _Tally, bound: structlog.BoundLogger
    ) -> tuple[DreamRun, str | None] | None:
        """One call over the next turns, applied with the cursor; None when nothing is left."""
        chat = str(key)
        settings = self.settings
        limit = min(settings.batch_turns, settings.max_turns - run.turns)
        after = run.through_turn
        turns, summary = await self.store.read(lambda tx: _input(tx, chat, after, limit))
        if not turns:
            return None
        turns = prompt.fit(turns, self.tz, settings.batch_tokens * 3 // 4)
        speakers = [t.speaker for t in turns if t.role == "user" and t.speaker]
        scopes = guards.writable_scopes(key, speakers)
        sees = _visibility(key, scopes)
        writes = Visibility(tuple(s for s in sees.full if s != GLOBAL), sees.public_only)
        terms = await asyncio.to_thread(_terms, turns)
        shown = await self.store.read(lambda tx: _touched(tx, writes, terms))
        messages = prompt.request(
            chat=chat,
            is_group=key.is_group,
            scopes=scopes,
            summary=summary,
            items=shown,
            turns=turns,
            tz=self.tz,
            budget=settings.batch_tokens,
        )
        await self._lease(chat)
        ops, problem = await self._ask(messages, tally)
        if ops is None:
            bound.warning("dream_answer_unusable", error=problem)
            unread = await self._unextracted(chat, turns)
            checked = await asyncio.to_thread(proposals.from_rules, key, unread, self.tz)
        else:
            named = {op.item for op in ops if op.item}
            items = await self.store.read(lambda tx: _named(tx, named, sees))
            batch = Batch(run.id, key, turns, items, shown, scopes)
            checked = await asyncio.to_thread(guards.check_all, ops, batch, self.settings.max_ops)
        expected = after
        through = turns[-1].id
        mode = self.mode
        actor = f"dream:{run.id}"

        def apply(tx: Tx) -> DreamRun:
            if tx.dreams.cursor(chat)[0] != expected:
                raise _Moved
            fates = [_fate(p, write.propose(tx, c, mode, actor) if c else None) for p, c in checked]
            done = _counted(run, fates, len(turns), through, tally)
            tx.dreams.advance(chat, through, time.time())
            tx.dreams.save(done)
            return done

        done = await self.store.write(apply)
        self.changed()
        return done, problem

    async def _unextracted(self, chat: str, turns: Sequence[Turn]) -> list[Turn]:
        """The people's turns rule extraction has not read yet. It leaves a candidate for every
        statement it finds (whatever became of it), live or in an import, and finds nothing
        again in a turn where it found nothing; read again, an old turn only churns what is
        known since."""
        said = [t for t in turns if t.role == "user" and t.speaker]
        if not said:
            return []
        ids = [t.id for t in said]
        since = min(t.time.timestamp() for t in said) - CLOCK_SKEW
        read = await self.store.read(
            lambda tx: tx.candidates.cited_turns(extract.SOURCE, chat, ids, since)
        )
        return [t for t in said if t.id not in read]

    async def _ask(
        self, messages: tuple[Message, ...], tally: _Tally
    ) -> tuple[list[ProposedOp] | None, str | None]:
        """The answer's ops; (None, what was wrong) after two unusable answers."""
        assert self.model is not None
        text, finish = await self._call(messages, tally)
        try:
            return proposals.read(text, finish), None
        except Malformed as first:
            again, finish = await self._call(prompt.retry(messages, text, str(first)), tally)
            try:
                return proposals.read(again, finish), None
            except Malformed as second:
                return None, (
                    f"unusable answer ({first}); again ({second}): rule extraction of the turns"
                    " it had not read"
                )

    async def _call(self, messages: tuple[Message, ...], tally: _Tally) -> tuple[str, str]:
        assert self.model is not None
        call = self.model.chat("dream", messages, max_tokens=ANSWER_TOKENS)
        response = await asyncio.wait_for(call, self.settings.timeout)
        tally.add(response.usage, response.model)
        return response.content, response.finish_reason

    # -- DREAMS.md ---------------------------------------------------------------------------

    async def write_journal(self) -> int:
        """Append the sections of finished runs not in DREAMS.md yet; how many (errors are
        logged: the runs stay unwritten and the next run tries again)."""
        if self.journal is None:
            return 0
        runs = await self.store.read(lambda tx: tx.dreams.unwritten(100))
        if not runs:
            return 0
        journal = self.journal
        try:
            await asyncio.to_thread(dreams_md.append, journal, runs, self.tz)
        except OSError as exc:
            log.warning("dreams_md_failed", path=str(journal), error=str(exc))
            return 0
        ids = [r.id for r in runs]
        await self.store.write(lambda tx: tx.dreams.mark_written(ids))
        return len(runs)


# -- units and helpers ---------------------------------------------------------------------------


def _where(tx: Tx, chat: str) -> tuple[int, bool, bool]:
    """The chat's cursor, whether it is paused, and whether a turn follows the cursor."""
    cursor, paused = tx.dreams.cursor(chat)
    return cursor, paused, bool(tx.dreams.turns(chat, cursor, 1))


def _input(tx: Tx, chat: str, after: int, limit: int) -> tuple[list[Turn], str]:
    """The next turns and the warm summary of the chat's current session."""
    turns = tx.dreams.turns(chat, after, limit)
    current = tx.sessions.current(chat)
    summary = tx.summaries.get(current[0]) if current and current[0] else None
    return turns, summary.summary if summary else ""


def _visibility(key: ChatKey, scopes: Sequence[str]) -> Visibility:
    """What the chat sees of the scopes a run may write (and global): in a group, only the
    public items of its speakers."""
    if key.is_group:
        return Visibility((GLOBAL, scopes[0]), tuple(scopes[1:]))
    return Visibility((GLOBAL, *scopes))


def _terms(turns: Sequence[Turn]) -> tuple[str, ...]:
    text = " ".join(t.content for t in turns if t.role == "user")[:QUERY_CHARS]
    return query_terms(tokenize(text), max_terms=48)


def _touched(tx: Tx, visibility: Visibility, terms: tuple[str, ...]) -> list[MemoryItem]:
    if not terms:
        return []
    return [m.item for m in tx.items.search(visibility, TextSearch(terms, TOUCHED_ITEMS))]


def _named(tx: Tx, ids: set[str], visibility: Visibility) -> dict[str, MemoryItem]:
    found = {}
    for item_id in ids:
        item = tx.items.visible(item_id, visibility)
        if item is not None:
            found[item_id] = item
    return found


def _fate(proposal: Proposal, result: WriteResult | None) -> Proposal:
    if result is None:
        return proposal  # rejected by a guard
    content = redact(proposal.content)
    fate = result.outcome
    if fate == "rejected":
        return replace(proposal, content=content, fate=fate, guard="write", detail=result.reason)
    return replace(
        proposal,
        content=content,
        fate=fate,
        item_id=result.item_id,
        candidate_id=result.candidate_id,
    )


def _counted(
    run: DreamRun, fates: Sequence[Proposal], turns: int, through: int, tally: _Tally
) -> DreamRun:
    return replace(
        run,
        through_turn=through,
        turns=run.turns + turns,
        model=tally.model or run.model,
        calls=tally.calls,
        tokens_in=tally.tokens_in,
        tokens_out=tally.tokens_out,
        proposals=run.proposals + len(fates),
        applied=run.applied + sum(1 for p in fates if p.fate in APPLIED),
        pending=run.pending + sum(1 for p in fates if p.fate == "pending"),
        rejected=run.rejected + sum(1 for p in fates if p.fate == "rejected"),
        report=(*run.report, *fates)[:REPORT_LIMIT],
        fates=dict(Counter(run.fates) + Counter(p.fate for p in fates)),
    )


def _error(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "the dream model did not answer in time"
    return f"{type(exc).__name__}: {exc}"
