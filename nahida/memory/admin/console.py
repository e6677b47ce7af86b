"""`memory.admin`: the read models of the admin console and of the CLI's `--json` output.

An admin sees every scope: counts (`overview`), the last days (`series`), listings a page at a
time (`items`, `people`, `chats`, `sessions`, `episodes`, `dreams`) and the page of one item,
person, chat, session (`transcript`) or dream run. Each answer is one read of the store
(`reads`); what shows people first takes the turns stored since into them (`PeopleRows.fold`,
a few units of work). Listings take `offset`/`limit` and tell the total. Changes go through the
other parts (`items.forget`, `items.review`, …), audited with the admin as actor.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime, timedelta, tzinfo
from datetime import time as clock_time
from typing import cast, get_args

from nahida.memory.admin import reads
from nahida.memory.admin.views import (
    ChatPage,
    ChatSummary,
    ItemPage,
    ListedItem,
    Overview,
    Page,
    Person,
    PersonPage,
    Series,
    Transcript,
)
from nahida.memory.core.kinds import KINDS
from nahida.memory.core.models import DreamRun, Episode, Session, Status
from nahida.memory.core.scopes import GLOBAL, Viewer, validate_scope
from nahida.memory.core.sources import SOURCE_FAMILIES, SourceFamily, Sources
from nahida.memory.core.tokenize import query_terms, run_cpu, tokenize
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.values import ItemFilter, RecallRecord, Span

MAX_LIMIT = 500  # rows of one page
FOLD = 20_000  # turns taken into people by one unit of work (the bot's own work goes on between)
MAX_DAYS = 366
SCOPE_FAMILIES = (GLOBAL, "chat", "user")
STATUSES: tuple[str, ...] = get_args(Status)


def _paging(offset: int, limit: int) -> tuple[int, int]:
    """The page asked for, its size bounded; ValueError for one that is none."""
    if offset < 0 or limit < 1:
        raise ValueError(f"a page starts at 0 or later and holds a row or more: {offset}, {limit}")
    return offset, min(limit, MAX_LIMIT)


def day_spans(today: date, days: int, tz: tzinfo | None) -> list[tuple[date, Span]]:
    """The last `days` days up to `today`, oldest first, each as [its midnight, the next) in
    the zone (None: the system's), daylight saving included."""

    def midnight(day: date) -> float:
        return datetime.combine(day, clock_time(), tzinfo=tz).timestamp()

    first = today - timedelta(days=days - 1)
    found = []
    for n in range(days):
        day = first + timedelta(days=n)
        found.append((day, (midnight(day), midnight(day + timedelta(days=1)))))
    return found


def item_filter(
    *,
    scope: str | None,
    kind: str | None,
    status: str | None,
    source: str | None,
    person: str | None,
    since: date | None,
    until: date | None,
    tz: tzinfo | None,
) -> ItemFilter:
    """The filter of a listing: `scope` a family (`global`, `chat`, `user`) or a scope;
    `source` a family of `core.sources` or a source; `since`/`until` the first and last day
    created, in the zone. ValueError for a scope, kind or status that is none."""
    where = ItemFilter(kind=kind, status=status, person=person)
    if kind is not None and kind not in KINDS:
        raise ValueError(f"a kind is one of {', '.join(KINDS)}: {kind!r}")
    if status is not None and status not in STATUSES:
        raise ValueError(f"a status is one of {', '.join(STATUSES)}: {status!r}")
    if scope in SCOPE_FAMILIES:
        where = replace(where, family=scope)
    elif scope is not None:
        where = replace(where, scopes=(validate_scope(scope),))
    if source is not None:
        named = SOURCE_FAMILIES.get(cast(SourceFamily, source)) or Sources((source,))
        where = replace(where, sources=named.names, source_prefixes=named.prefixes)
    if since is not None or until is not None:
        start = day_spans(since, 1, tz)[0][1][0] if since is not None else float("-inf")
        end = day_spans(until, 1, tz)[0][1][1] if until is not None else float("inf")
        where = replace(where, created=(start, end))
    return where


class Admin:
    """`memory.admin`: what an admin sees of memory (module docstring); it changes nothing but
    how far people have taken in the turns stored."""

    def __init__(self, store: Store, tz: tzinfo | None) -> None:
        self.store = store
        self.tz = tz  # the bot's zone: where a day of a series or a filter begins

    async def overview(self) -> Overview:
        """Items by kind, scope family and status; people, chats, sessions, turns; pending
        reviews. Every count is exact (turns: each session's count, summed)."""
        await self._take_in_people()
        return await self.store.read(reads.overview)

    async def _take_in_people(self) -> None:
        """Fold the turns stored since people were last read into people (`PeopleRows.fold`)."""
        while await self.store.write(lambda tx: tx.people.fold(FOLD)) == FOLD:
            pass

    async def series(self, days: int = 30, *, now: float | None = None) -> Series:
        """The last `days` days (today included) in the bot's zone, oldest first, and the latest
        run of each background job."""
        if not 1 <= days <= MAX_DAYS:
            raise ValueError(f"a series covers 1 to {MAX_DAYS} days, not {days}")
        today = datetime.fromtimestamp(time.time() if now is None else now, self.tz).date()
        spans = day_spans(today, days, self.tz)
        return await self.store.read(reads.series, spans)

    async def items(
        self,
        *,
        scope: str | None = None,
        kind: str | None = None,
        status: str | None = None,
        source: str | None = None,
        person: str | None = None,
        since: date | None = None,
        until: date | None = None,
        text: str | None = None,
        viewer: Viewer | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> Page[ListedItem]:
        """Items, the most recently changed first, a page at a time. Filters (`item_filter`):
        the scope or its family, kind, status, source or its family, a person (their `user:`
        items and those about them), the first and last day created. `text`: only items the
        lexical search finds for it among its best matches (active items only), as `viewer`
        sees them (every scope: None); a viewer narrows the listing to what it sees."""
        offset, limit = _paging(offset, limit)
        where = item_filter(
            scope=scope,
            kind=kind,
            status=status,
            source=source,
            person=person,
            since=since,
            until=until,
            tz=self.tz,
        )
        visibility = viewer.visibility() if viewer is not None else None
        if visibility is not None:
            where = replace(where, visibility=visibility)
        terms = None
        if text is not None and text.strip():
            terms = query_terms(await run_cpu(tokenize, text, size=len(text)))
        return await self.store.read(reads.items, where, terms, visibility, offset, limit)

    async def item(self, item_id: str, *, around: int = 2) -> ItemPage | None:
        """An item's page (any scope, any status), its evidence each with up to `around` turns
        on either side; None for an id no item has."""
        return await self.store.read(reads.item_page, item_id, max(0, around))

    async def recalls(self, turn_ids: Sequence[int]) -> dict[int, RecallRecord]:
        """What the prompts of these user turns were given from memory, by turn (turns answered
        with memory only)."""
        return await self.store.read(lambda tx: tx.recalls.of_turns(list(turn_ids)))

    async def people(self, *, offset: int = 0, limit: int = 50) -> Page[Person]:
        """People (speakers of user turns, users with a profile), the latest seen first."""
        offset, limit = _paging(offset, limit)
        await self._take_in_people()
        return await self.store.read(reads.people, offset, limit)

    async def person(self, user: str) -> PersonPage | None:
        """A person's page; None for a user never seen and without a profile. Their items and
        episodes go on with `items(person=…)` and `episodes(person=…)`."""
        await self._take_in_people()
        return await self.store.read(reads.person_page, user)

    async def episodes(
        self,
        *,
        person: str | None = None,
        chat: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> Page[Episode]:
        """The episodes of a chat, or of the chats a person spoke in (or both), the latest ended
        first; ValueError when neither is named."""
        offset, limit = _paging(offset, limit)
        if person is None and chat is None:
            raise ValueError("the episodes of a chat or of a person's chats")
        if person is not None:
            await self._take_in_people()

        def run(tx: Tx) -> Page[Episode]:
            chats = [chat] if chat is not None else []
            if person is not None:
                chats += [n.chat for n in tx.people.names([person])]
            found = tx.episodes.of_chats(list(dict.fromkeys(chats)), offset, limit)
            return reads.page_of(found, offset, limit)

        return await self.store.read(run)

    async def chats(self, *, offset: int = 0, limit: int = 50) -> Page[ChatSummary]:
        """Chats with history, the latest active first, each with its dream cursor."""
        offset, limit = _paging(offset, limit)
        return await self.store.read(reads.chats, offset, limit)

    async def chat(self, chat: str) -> ChatPage | None:
        """A chat's page; None for a chat without history. Its sessions and dream runs go on
        with `sessions` and `dreams(chat=…)`."""
        return await self.store.read(reads.chat_page, chat)

    async def sessions(self, chat: str, *, offset: int = 0, limit: int = 50) -> Page[Session]:
        """A chat's sessions, newest first."""
        offset, limit = _paging(offset, limit)
        found = await self.store.read(lambda tx: tx.sessions.page(chat, offset, limit))
        return reads.page_of(found, offset, limit)

    async def transcript(
        self, session_id: str, *, offset: int = 0, limit: int = 200
    ) -> Transcript | None:
        """A session's turns in order, every role (hidden ones marked), each user turn with
        what its prompt was given from memory; None for a session not stored."""
        offset, limit = _paging(offset, limit)
        return await self.store.read(reads.transcript, session_id, offset, limit)

    async def dreams(
        self, *, chat: str | None = None, offset: int = 0, limit: int = 50
    ) -> Page[DreamRun]:
        """Dream runs newest first (of one chat, or of all), without their reports."""
        offset, limit = _paging(offset, limit)
        found = await self.store.read(lambda tx: tx.dreams.page(chat, offset, limit))
        return reads.page_of(found, offset, limit)

    async def dream(self, run_id: str) -> DreamRun | None:
        """A dream run with its report: each proposal, its fate and why it was rejected."""
        return await self.store.read(lambda tx: tx.dreams.get(run_id))
