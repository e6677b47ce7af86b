"""The read units behind `memory.admin`: each builds one answer in one read of the store (one
snapshot, one round trip), from values computed before the call (search terms, day spans).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from typing import TypeVar

from nahida.memory.admin.views import (
    ChatPage,
    ChatSummary,
    Day,
    ItemPage,
    ListedItem,
    Overview,
    Page,
    Person,
    PersonPage,
    Provenance,
    Series,
    Transcript,
    TranscriptTurn,
)
from nahida.memory.core.models import Evidence, MemoryItem, Turn
from nahida.memory.core.scopes import Audience, Visibility, chat_scope, user_scope
from nahida.memory.core.sources import FAMILIES, source_family
from nahida.memory.procedures import KIND as RULE
from nahida.memory.store.base import Tx
from nahida.memory.store.values import (
    ChatActivity,
    ItemFilter,
    Slice,
    Span,
    TextSearch,
)

T = TypeVar("T")

CHAIN = 20  # items of a supersede chain shown each way
EVIDENCE = 20  # pieces of evidence shown with their conversation
TEXT_MATCHES = 500  # items a text filter looks at (the best matches of the lexical search)
FIRST_PAGE = 20  # rows of each listing a person's or a chat's page starts with


def page_of(found: Slice[T], offset: int, limit: int) -> Page[T]:
    return Page(tuple(found.rows), found.total, offset, limit)


def listed(found: Slice[MemoryItem], offset: int, limit: int) -> Page[ListedItem]:
    return Page(tuple(map(ListedItem.of, found.rows)), found.total, offset, limit)


# counts and series -----------------------------------------------------------------------------


def overview(tx: Tx) -> Overview:
    by_kind: Counter[str] = Counter()
    by_family: Counter[str] = Counter()
    by_status: Counter[str] = Counter()
    for tally in tx.items.tally():
        by_kind[tally.kind] += tally.total
        by_family[tally.family] += tally.total
        by_status[tally.status] += tally.total
    history = tx.sessions.totals()
    return Overview(
        sum(by_kind.values()),
        dict(by_kind),
        dict(by_family),
        dict(by_status),
        tx.people.count(),
        history.chats,
        history.sessions,
        history.turns,
        tx.candidates.pending_count(),
    )


def series(tx: Tx, days: Sequence[tuple[date, Span]]) -> Series:
    spans = [span for _, span in days]
    added: list[Counter[str]] = [Counter() for _ in days]
    for count in tx.items.added(spans):
        added[count.span][source_family(count.key)] += count.total
    recalls = {r.span: r for r in tx.recalls.tally(spans)}
    dreams = {d.span: d for d in tx.dreams.tally(spans)}
    found = []
    for n, (day, _) in enumerate(days):
        recall, dream = recalls.get(n), dreams.get(n)
        found.append(
            Day(
                day,
                {family: added[n][family] for family in FAMILIES},
                recalls=recall.recalls if recall else 0,
                recall_hits=recall.hits if recall else 0,
                dream_runs=dream.runs if dream else 0,
                proposals=dream.proposals if dream else 0,
                applied=dream.applied if dream else 0,
                pending=dream.pending if dream else 0,
                rejected=dream.rejected if dream else 0,
            )
        )
    return Series(tuple(found), tuple(tx.jobs.latest(None, 100)))


# items -----------------------------------------------------------------------------------------


def items(
    tx: Tx,
    where: ItemFilter,
    terms: tuple[str, ...] | None,
    visibility: Visibility | None,
    offset: int,
    limit: int,
) -> Page[ListedItem]:
    """The items `where` holds, narrowed to the best matches of the terms (when given) that the
    visibility allows (every scope: None)."""
    if terms is not None:
        search = TextSearch(terms, TEXT_MATCHES)
        if all(len(t) == 1 for t in terms):  # a word index cannot find one character
            matches = tx.items.containing(visibility, terms, search)
        else:
            matches = tx.items.search(visibility, search)
        where = replace(where, ids=tuple(m.item.id for m in matches))
    return listed(tx.items.page(where, offset, limit), offset, limit)


def item_page(tx: Tx, item_id: str, around: int) -> ItemPage | None:
    item = tx.items.get(item_id)
    if item is None:
        return None
    return ItemPage(
        item,
        Audience.of(item.scope, item.sensitivity),
        tuple(tx.events.of_item(item_id)),
        tuple(_provenance(tx, e, around) for e in item.evidence[:EVIDENCE]),
        tuple(tx.turns.hidden_for(item_id)),
        _earlier(tx, item),
        _later(tx, item),
    )


def _provenance(tx: Tx, evidence: Evidence, around: int) -> Provenance:
    """The evidence with the turn it names: by id, else by its message (the one said nearest
    its time: implementations reuse message ids)."""
    turn_id = evidence.turn_id
    if turn_id is None and evidence.chat is not None and evidence.message_id is not None:
        found = tx.turns.of_messages([(evidence.chat, evidence.message_id)])
        if found:
            turn_id = _nearest(found, evidence.time).id
    if turn_id is None:
        return Provenance(evidence)
    context = tx.turns.around(turn_id, around, around)
    turn = next((t for t in context if t.id == turn_id), None)
    return Provenance(evidence, turn, tuple(context))


def _nearest(turns: list[Turn], at: float | None) -> Turn:
    if at is None:
        return turns[-1]
    return min(turns, key=lambda t: abs(t.time.timestamp() - at))


def _earlier(tx: Tx, item: MemoryItem) -> tuple[MemoryItem, ...]:
    chain: list[MemoryItem] = []
    seen = {item.id}
    target = item.supersedes
    while target is not None and target not in seen and len(chain) < CHAIN:
        found = tx.items.get(target)
        if found is None:
            break
        chain.append(found)
        seen.add(target)
        target = found.supersedes
    return tuple(chain)


def _later(tx: Tx, item: MemoryItem) -> tuple[MemoryItem, ...]:
    chain: list[MemoryItem] = []
    seen = {item.id}
    target = tx.items.replaced_by(item.id)
    while target is not None and target not in seen and len(chain) < CHAIN:
        found = tx.items.get(target)
        if found is None:
            break
        chain.append(found)
        seen.add(target)
        target = tx.items.replaced_by(target)
    return tuple(chain)


# people ----------------------------------------------------------------------------------------


def people(tx: Tx, offset: int, limit: int) -> Page[Person]:
    found = tx.people.page(offset, limit)
    names = tx.people.names([s.user for s in found.rows])
    rows = tuple(
        Person(s.user, s.last_seen, s.turns, tuple(n for n in names if n.user == s.user))
        for s in found.rows
    )
    return Page(rows, found.total, offset, limit)


def person_page(tx: Tx, user: str) -> PersonPage | None:
    names = tuple(tx.people.names([user]))
    profile = tuple(tx.profiles.of_user(user, False))
    if not names and not profile:
        return None
    person = Person(
        user,
        max((n.last_seen for n in names), default=None),
        sum(n.turns for n in names),
        names,
    )
    rules = ItemFilter(scopes=(user_scope(user),), kind=RULE, status="active")
    episodes = tx.episodes.of_chats(person.chats, 0, FIRST_PAGE)
    return PersonPage(
        person,
        profile,
        listed(tx.items.page(rules, 0, FIRST_PAGE), 0, FIRST_PAGE),
        listed(tx.items.page(ItemFilter(person=user), 0, FIRST_PAGE), 0, FIRST_PAGE),
        page_of(episodes, 0, FIRST_PAGE),
    )


# chats, sessions, dreams -----------------------------------------------------------------------


def summary(tx: Tx, activity: ChatActivity) -> ChatSummary:
    through, paused = tx.dreams.cursor(activity.chat)
    return ChatSummary(*activity, dreamed_through=through, dreams_paused=paused)


def chats(tx: Tx, offset: int, limit: int) -> Page[ChatSummary]:
    found = tx.sessions.chats(offset, limit)
    return Page(tuple(summary(tx, a) for a in found.rows), found.total, offset, limit)


def chat_page(tx: Tx, chat: str) -> ChatPage | None:
    activity = tx.sessions.activity(chat)
    if activity is None:
        return None
    rules = ItemFilter(scopes=(chat_scope(chat),), kind=RULE, status="active")
    return ChatPage(
        summary(tx, activity),
        page_of(tx.sessions.page(chat, 0, FIRST_PAGE), 0, FIRST_PAGE),
        listed(tx.items.page(rules, 0, FIRST_PAGE), 0, FIRST_PAGE),
        page_of(tx.dreams.page(chat, 0, FIRST_PAGE), 0, FIRST_PAGE),
    )


def transcript(tx: Tx, session_id: str, offset: int, limit: int) -> Transcript | None:
    session = tx.sessions.get(session_id)
    if session is None:
        return None
    found = tx.turns.page(session_id, offset, limit)
    recalls = tx.recalls.of_turns([t.id for t in found.rows if t.role == "user"])
    rows = tuple(TranscriptTurn(t, recalls.get(t.id)) for t in found.rows)
    return Transcript(
        session, tx.episodes.of_session(session_id), Page(rows, found.total, offset, limit)
    )
