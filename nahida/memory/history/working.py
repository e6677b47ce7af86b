"""Working memory per session (DESIGN §7, the Ethan layer 2): hot rounds, warm summary, cold facts.

The prompt shows the last `hot_size` rounds verbatim (`Sessions.record_user_turn` reads them with
the summary, in one round trip). Whenever `compress_batch` rounds have left the hot window and no
summary covers them yet, `compact` asks the `compress` model to merge them into the session's warm
summary; once the summary covers `warm_capacity` rounds, the model also names the cold key facts
(proposed as candidates, source `compress`) and profile bullets (merged into the person's
profile), and gives a shorter summary that replaces it (a roll). When a session ends (idle split,
`/new`, `/resume` of another, the console exiting) with at least two rounds, `finish` writes its
episode; one the model failed to write (an error, an answer without its JSON) is counted on the
session's row like a failed compaction and written by `retry_episodes` (the `episode_retry` job)
once the pause after the failure has passed.

All of this is background work (`schedule`, the app's work queue, keyed by chat so a chat's
compactions run in order and never delay its next message); without a queue (CLI, tests) it runs
where it is called. A failed model call keeps every turn (the next turn retries, after a pause
that grows with the failures) and is counted on the session's row, which `doctor` shows.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import tzinfo

import structlog

from nahida.envelope import ChatKey
from nahida.errors import NahidaError
from nahida.memory.core.models import (
    PROFILE_SECTIONS,
    Candidate,
    Episode,
    Turn,
    WarmSummary,
    WriteResult,
)
from nahida.memory.history import compress
from nahida.memory.history.episodes import Episodes
from nahida.memory.profiles import Profiles
from nahida.memory.store.base import Store, Tx
from nahida.memory.write import proposed
from nahida.providers.base import ChatModel, Message

log = structlog.get_logger(__name__)

Schedule = Callable[[str, str, Callable[[], Awaitable[None]]], Awaitable[bool]]
SOURCE = "compress"
INFERRED_NEVER = "基础特征"  # never inferred: written only when the person states it
COMPANION_ONLY = "心理与情绪"  # filled by background extraction only in companion chats
MAX_BACKOFF = 3600.0
EPISODE_TURNS = 60  # the last turns an episode request shows (the summary covers the rest)
SINCE_LIMIT = 400  # unsummarised turns read at once
PENDING_SESSIONS = 10_000  # sessions whose unsummarised rounds are counted in memory
EPISODE_FAILED = "episode: "  # how a failed episode's error starts on its session's row
RETRY_READ = 200  # failing sessions looked at per retry of episodes


@dataclass(frozen=True, slots=True)
class WorkingSettings:
    hot_size: int = 10  # rounds
    compress_batch: int = 5  # rounds
    warm_capacity: int = 20  # rounds
    episode_rounds: int = 2  # a session with fewer gets no episode
    companion: frozenset[str] = frozenset()  # chats in companion mode (`bot.chat_modes`)

    @property
    def hot_turns(self) -> int:
        return self.hot_size * 2

    @property
    def batch_turns(self) -> int:
        return self.compress_batch * 2


def rounds(turns: Sequence[Turn]) -> int:
    """Rounds among turns: each user turn opens one."""
    return sum(1 for t in turns if t.role == "user")


class WorkingMemory:
    """`memory.working`: compaction and episodes, run in the background."""

    def __init__(
        self,
        store: Store,
        model: ChatModel | None,
        *,
        settings: WorkingSettings,
        propose: Callable[[Candidate, str], Awaitable[WriteResult]],
        profiles: Profiles,
        episodes: Episodes,
        tz: tzinfo | None = None,
    ) -> None:
        self.store = store
        self.model = model
        self.settings = settings
        self.propose = propose  # `Items.propose`: cold facts go through the one write path
        self.profiles = profiles
        self.episodes = episodes
        self.tz = tz
        self.schedule: Schedule | None = None  # the app's work queue; None: run in place
        self._pending: dict[str, int] = {}  # session → rounds no summary covers (most recent last)
        # session → when its compaction may be tried again, after a failure (`_backoff`)
        self._resting: dict[str, float] = {}

    @property
    def enabled(self) -> bool:
        return self.model is not None and self.model.configured

    async def summary(self, session_id: str) -> WarmSummary | None:
        return await self.store.read(lambda tx: tx.summaries.get(session_id))

    async def failing(self, limit: int = 5) -> list[WarmSummary]:
        """Sessions whose last compaction failed (for `doctor`)."""
        return await self.store.read(lambda tx: tx.summaries.failing(limit))

    # -- compaction --------------------------------------------------------------------------

    async def compact(self, session_id: str, chat: str) -> WarmSummary | None:
        """Summarise the rounds that left the hot window, if a batch of them has; the new
        summary, or None when nothing was due (or the model failed: logged and counted)."""
        if not self.enabled:
            return None
        state = await self.summary(session_id) or WarmSummary(session_id, chat)
        resting = state.updated_at + _backoff(state.failures) if state.failures else 0.0
        if time.time() < resting:
            self._resting[session_id] = resting
            return None
        after = state.through_turn
        turns = await self.store.read(lambda tx: tx.turns.after(session_id, after, SINCE_LIMIT))
        outside = list(turns[: max(0, len(turns) - self.settings.hot_turns)])
        if outside and outside[-1].role == "user":  # whole rounds: its reply is still hot
            outside.pop()
        if rounds(outside) < self.settings.compress_batch:
            self._pending[session_id] = rounds(turns)
            return None
        bound = log.bind(session=session_id, chat=chat)
        try:
            request = compress.summary_request(state.summary, outside, self.tz)
            text = compress.bounded(await self._ask(request), compress.SUMMARY_CHARS)
            if not text:
                raise _Unusable("the compress model answered with an empty summary")
            covered = rounds(outside)
            state = replace(
                state,
                summary=text,
                through_turn=outside[-1].id,
                rounds=state.rounds + covered,
                total_rounds=state.total_rounds + covered,
                failures=0,
                last_error=None,
                updated_at=time.time(),
            )
        except (NahidaError, _Unusable) as exc:
            await self._failed(state, exc)
            return None
        if state.rounds >= self.settings.warm_capacity:
            try:
                state = await self._roll(state, outside[-1].time.timestamp())
            except (NahidaError, _Unusable) as exc:  # the new summary stays; the roll is retried
                await self.store.write(lambda tx: tx.summaries.put(state))
                await self._failed(state, exc)
                return None
        await self.store.write(lambda tx: tx.summaries.put(state))
        self._pending[session_id] = rounds(turns) - rounds(outside)
        bound.info("warm_summary_updated", rounds=state.rounds, through=state.through_turn)
        return state

    def after_turn(self, session_id: str, chat: str) -> Callable[[], Awaitable[None]] | None:
        """Count a user turn of the session (on the chat's worker: no I/O) and return the
        compaction to run in the background once enough rounds may have left the hot window
        and a failed compaction's pause has passed, else None. A session this process has not
        seen counts from this turn: after a restart a long session is compacted `hot_size +
        compress_batch` rounds later than it could be (the compaction itself reads what is
        really there), instead of every chat's first message costing a read; and in a pause
        no message costs one either."""
        if not self.enabled:
            return None
        pending = self._pending.pop(session_id, 0) + 1
        self._pending[session_id] = pending  # most recently active last
        self._trim()
        if pending < self.settings.hot_size + self.settings.compress_batch:
            return None
        resting = self._resting.get(session_id)
        if resting is not None:
            if time.time() < resting:
                return None
            del self._resting[session_id]
        return functools.partial(self._compact_logged, session_id, chat)

    async def _compact_logged(self, session_id: str, chat: str) -> None:
        try:
            await self.compact(session_id, chat)
        except Exception:  # a bug, not a model failure (those are counted): logged, turns kept
            log.exception("compaction_crashed", session=session_id, chat=chat)

    def _trim(self) -> None:
        while len(self._pending) > PENDING_SESSIONS:
            self._pending.pop(next(iter(self._pending)))  # the least recently active
        while len(self._resting) > PENDING_SESSIONS:
            self._resting.pop(next(iter(self._resting)))  # the longest known

    async def _roll(self, state: WarmSummary, said: float) -> WarmSummary:
        """Cold facts and profile bullets out of a full summary, and a shorter one instead. The
        facts are dated `said`, the time of the newest turn the summary covers: what they tell
        was said by then, not when the compaction ran (a later turn may still replace them)."""
        chat = ChatKey.parse(state.chat)
        person = None if chat.is_group else chat.person
        sections = [
            s
            for s in PROFILE_SECTIONS
            if s != INFERRED_NEVER
            and (s != COMPANION_ONLY or state.chat in self.settings.companion)
        ]
        request = compress.roll_request(
            state.summary, person=str(person) if person else None, sections=sections
        )
        parsed = compress.read_roll(await self._ask(request), sections)
        if not parsed.summary:
            raise _Unusable(f"the roll answer was unusable: {'; '.join(parsed.problems)}")
        bound = log.bind(session=state.session_id, chat=state.chat)
        if parsed.problems:
            bound.warning("roll_answer_partly_unusable", problems=parsed.problems)
        for fact in parsed.facts:
            candidate = proposed.compressed(
                fact.content,
                kind=fact.kind,
                explicit=fact.explicit,
                chat=chat,
                session_id=state.session_id,
                at=said,
            )
            result = await self.propose(candidate, SOURCE)
            bound.info("cold_fact_proposed", kind=fact.kind, outcome=result.outcome)
        if person is not None:
            for bullet in parsed.profile:
                try:
                    await self.profiles.update(
                        person,
                        bullet.section,
                        bullet.text,
                        mode="merge",
                        sensitivity="private",
                        source=SOURCE,
                        chat=state.chat,
                        actor=SOURCE,
                        inferred=True,
                    )
                except ValueError as exc:  # a refused section or bullet: the rest still counts
                    bound.info("profile_bullet_refused", section=bullet.section, reason=str(exc))
        return replace(state, summary=parsed.summary, rounds=0, rolls=state.rolls + 1)

    async def _failed(self, state: WarmSummary, exc: Exception) -> None:
        error = f"{type(exc).__name__}: {exc}"
        now = time.time()
        failures = await self.store.write(
            lambda tx: tx.summaries.failed(state.session_id, state.chat, error, now)
        )
        self._resting[state.session_id] = now + _backoff(failures)
        log.warning(
            "compaction_failed",
            session=state.session_id,
            chat=state.chat,
            failures=failures,
            error=error,
            retry_in=round(_backoff(failures)),
        )

    async def _ask(self, messages: tuple[Message, ...]) -> str:
        assert self.model is not None
        response = await self.model.chat("compress", messages, max_tokens=1024)
        return response.content

    # -- episodes ----------------------------------------------------------------------------

    async def finish(self, session_id: str, chat: str) -> None:
        """A session ended: write its episode in the background (or now, without a queue)."""
        if not self.enabled:
            return

        async def run() -> None:
            try:
                await self.episode(session_id)
            except Exception:
                log.exception("episode_failed", session=session_id, chat=chat)

        if self.schedule is None or not await self.schedule(chat, "episode", run):
            await run()

    async def episode(self, session_id: str) -> Episode | None:
        """The episode of a finished session with enough rounds; None when it has too few or the
        model failed or gave nothing usable: then the failure is counted on the session's row
        (`doctor` shows it) and `retry_episodes` tries again later."""
        if not self.enabled:
            return None
        turns = await self.store.read(lambda tx: tx.turns.after(session_id, 0, 100_000))
        if rounds(turns) < self.settings.episode_rounds:
            return None
        state = await self.summary(session_id)
        warm = state.summary if state else ""
        shown = [t for t in turns if state is None or t.id > state.through_turn][-EPISODE_TURNS:]
        chat = turns[0].chat
        try:
            answer = await self._ask(compress.episode_request(warm, shown, self.tz))
            parsed = compress.read_episode(answer)
            if not parsed.summary:
                raise _Unusable(f"the episode answer was unusable: {'; '.join(parsed.problems)}")
        except (NahidaError, _Unusable) as exc:
            await self._episode_failed(session_id, chat, exc)
            return None
        bound = log.bind(session=session_id, chat=chat)
        if parsed.problems:
            bound.info("episode_answer_partly_unusable", problems=parsed.problems)
        episode = await self.episodes.add(
            session_id=session_id,
            chat=turns[0].chat,
            summary=parsed.summary,
            keywords=parsed.keywords,
            started_at=turns[0].time.timestamp(),
            ended_at=turns[-1].time.timestamp(),
            turn_count=len(turns),
        )
        await self.store.write(_episode_written, session_id)
        bound.info("episode_written", episode=episode.id, turns=len(turns))
        return episode

    async def retry_episodes(self, now: float | None = None) -> tuple[int, int]:
        """Write again the episodes that failed, once the pause after their last failure has
        passed (`now`: the time to judge it by); (written, failed again)."""
        if not self.enabled:
            return 0, 0
        now = time.time() if now is None else now
        failing = await self.failing(RETRY_READ)
        due = [
            f.session_id
            for f in failing
            if (f.last_error or "").startswith(EPISODE_FAILED)
            and f.updated_at + _backoff(f.failures) <= now
        ]
        written = 0
        for session_id in due:
            written += await self.episode(session_id) is not None
        return written, len(due) - written

    async def _episode_failed(self, session_id: str, chat: str, exc: Exception) -> None:
        error = f"{EPISODE_FAILED}{type(exc).__name__}: {exc}"
        now = time.time()
        failures = await self.store.write(
            lambda tx: tx.summaries.failed(session_id, chat, error, now)
        )
        log.warning(
            "episode_failed",
            session=session_id,
            chat=chat,
            failures=failures,
            error=error,
            retry_in=round(_backoff(failures)),
        )


class _Unusable(Exception):
    """The compress model answered, but with nothing usable."""


def _episode_written(tx: Tx, session_id: str) -> None:
    """A failed episode written at last: its session's row no longer counts the failure."""
    state = tx.summaries.get(session_id)
    if state is not None and (state.last_error or "").startswith(EPISODE_FAILED):
        tx.summaries.put(replace(state, failures=0, last_error=None))


def _backoff(failures: int) -> float:
    """Seconds before a compaction that failed `failures` times in a row is tried again."""
    return min(MAX_BACKOFF, 15.0 * float(2 ** max(0, failures - 1)))
