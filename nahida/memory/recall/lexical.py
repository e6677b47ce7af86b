"""The lexical retrieval cascade (DESIGN §5, steps 3 and 5): items, history turns and episodes,
fused.

Every search passes the viewer's visibility to the store, which applies it inside its query, so
nothing the viewer may not see is ever ranked (turns and episodes: only the chat's own). Nothing
said (turns), stored (items) or ended (episodes) after the moment of the question is returned,
nor turns the prompt already shows verbatim (the hot window).

How a question is read and ranked (each step measured by scripts/eval_recall.py; see `Tuning`):

1. Time expressions ("昨天", "last week", "8 May 2023"; `timeparse`) come out of the lexical query
   and name a window relative to the question's moment. Hits inside it weigh `1 + window` times
   more; a window is a preference, not a filter (a filter lost recall: words like "上周" are often
   small talk). A question that is only a time expression lists that window's latest turns.
2. Query terms: jieba tokens minus stopwords and question words (`tokenize.query_terms`),
   matched with bm25 against indexes that stem English (porter).
3. A speaker the question names ("What did Caroline research?") is taken out of the lexical query
   (it mostly matches the other person addressing them) and that speaker's turns weigh
   `1 + speaker` times more.
4. A turn scores at least `neighbours` times the best score of the turn just before or after it
   in its session: an answer often follows the turn that names the topic. Not across the start
   of a new exchange: the bot's reply lends nothing to the person's next message, nor that to
   it (in a chat with the bot, what follows a reply is a new subject, not its answer).
6. A query of single Han characters only ("茶", "好"), which jieba's words never are alone, looks
   for the characters inside the texts instead (`containing`), the latest first.
5. Items and turns are fused by reciprocal rank, boosted (confidence, importance, recency, use),
   and deduplicated by text (`fuse`).

Episodes are matched on their keywords and summary, with the same window preference as items.
`item_hits`, `turn_hits` and `episode_hits` run inside a unit of work (`cascade.search`) with a
`Plan` made before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from nahida.memory.core.models import Episode, Hit, MemoryItem
from nahida.memory.core.tokenize import has_content, name_tokens, query_terms
from nahida.memory.recall.plan import TUNING, Plan, Query, Tuning
from nahida.memory.store.base import Tx
from nahida.memory.store.values import TextSearch, TurnMatch
from nahida.memory.write.timeparse import TimeWindow

K = TypeVar("K")
Fetch = Callable[[tuple[str, ...] | None, TimeWindow | None], list[tuple[Any, float, Any]]]


def _gather(
    fetch: Fetch, lexical: list[tuple[Any, float, Any]], found: Plan, terms: Any, tuning: Tuning
) -> tuple[dict[Any, Any], dict[Any, float], set[Any]]:
    """Records by id, their scores, and the ids inside the window (`fetch(terms, window)`)."""
    records: dict[Any, Any] = {}
    scores: dict[Any, float] = {}
    for key, score, record in lexical:
        records[key] = record
        scores[key] = score
    inside: set[Any] = set()
    if found.window is not None and tuning.window != 0:
        for key, score, record in fetch(terms, found.window):
            records.setdefault(key, record)
            scores.setdefault(key, score)
            inside.add(key)
    return records, scores, inside


def _prefer_window(final: dict[K, float], inside: set[K], tuning: Tuning) -> dict[K, float]:
    if not inside:
        return final
    if tuning.window < 0:
        return {i: v for i, v in final.items() if i in inside}
    return {i: v * (1.0 + tuning.window) if i in inside else v for i, v in final.items()}


def _new_exchange(a: TurnMatch, b: TurnMatch) -> bool:
    """Whether `b` and `a` sit across the start of an exchange: a bot reply (no speaker) and the
    person's message after it."""
    first, second = (a, b) if a.id < b.id else (b, a)
    return first.speaker is None and second.speaker is not None


def _one_character(term: str) -> bool:
    """A lone Han character: never a jieba word of the index on its own."""
    return len(term) == 1 and "\u3400" <= term <= "\u9fff"


def _search(query: Query, terms: tuple[str, ...] | None, limit: int, window: Any) -> TextSearch:
    return TextSearch(terms, limit, query.at, window.bounds if window is not None else None)


def item_hits(tx: Tx, query: Query, found: Plan, depth: int, tuning: Tuning = TUNING) -> list[Hit]:
    visibility = query.viewer.visibility()

    def fetch(
        terms: tuple[str, ...] | None, window: TimeWindow | None
    ) -> list[tuple[Any, float, Any]]:
        search = _search(query, terms, depth, window)
        if terms and all(map(_one_character, terms)):
            matches = tx.items.containing(visibility, terms, search)
        else:
            matches = tx.items.search(visibility, search)
        return [(m.item.id, m.score, m.item) for m in matches]

    terms = None if found.text is None else query_terms(found.tokens, max_terms=tuning.max_terms)
    lexical = fetch(terms, None) if terms is not None else []
    records, scores, inside = _gather(fetch, lexical, found, terms, tuning)
    final = _prefer_window(scores, inside, tuning)
    ranked = sorted(final, key=lambda i: (-final[i], -records[i].created_at, i))[:depth]
    return [item_hit(records[i], final[i]) for i in ranked]


def item_hit(item: MemoryItem, score: float) -> Hit:
    text = f"{item.title}: {item.content}" if item.title else item.content
    return Hit(
        "item", item.id, text, score, item.scope, item.message_ids, item.created_at, item=item
    )


def named_speakers(turns: Iterable[TurnMatch], tokens: Iterable[str]) -> set[str]:
    """Speaker names (of these turns) that the question's tokens name in full."""
    words = set(tokens)
    named = set()
    for name in {t.speaker_name for t in turns if t.speaker_name}:
        parts = name_tokens(name)
        if parts and words.issuperset(parts):
            named.add(name)
    return named


def turn_hits(tx: Tx, query: Query, found: Plan, depth: int, tuning: Tuning = TUNING) -> list[Hit]:
    pool = max(depth, tuning.depth) + len(query.exclude_turns)
    chats = query.viewer.turn_chats()

    def fetch(
        terms: tuple[str, ...] | None, window: TimeWindow | None
    ) -> list[tuple[Any, float, Any]]:
        search = _search(query, terms, pool, window)
        if terms and all(map(_one_character, terms)):
            matches = tx.turns.containing(chats, terms, search)
        else:
            matches = tx.turns.search(chats, search)
        return [(m.id, m.score, m) for m in matches]

    terms: tuple[str, ...] | None = None
    if found.text is not None:
        terms = query_terms(found.tokens, max_terms=tuning.max_terms)
    lexical = fetch(terms, None) if terms is not None else []
    named: set[str] = set()
    if terms is not None and tuning.speaker > 0:
        named = named_speakers((record for _, _, record in lexical), found.tokens)
        drop = {part for name in named for part in name_tokens(name)}
        rest = tuple(t for t in found.tokens if t not in drop) if named else ()
        if has_content(rest):
            terms = query_terms(rest, max_terms=tuning.max_terms)
            lexical = fetch(terms, None)
        elif named and found.window is not None:
            terms, lexical = None, []  # "what did Gina say last week": her turns of that week
    records, scores, inside = _gather(fetch, lexical, found, terms, tuning)
    for turn_id in query.exclude_turns:
        records.pop(turn_id, None)
        scores.pop(turn_id, None)
    final = dict(scores)
    if tuning.neighbours > 0 and terms is not None:
        for of, turn in tx.turns.neighbours(list(scores), query.at):
            if turn.id in query.exclude_turns or _new_exchange(records[of], turn):
                continue
            records.setdefault(turn.id, turn)
            lent = tuning.neighbours * scores[of]
            final[turn.id] = max(final.get(turn.id, 0.0), lent)
    if named:
        for turn_id, turn in records.items():
            if turn.speaker_name in named and turn_id in final:
                final[turn_id] *= 1.0 + tuning.speaker
    final = _prefer_window(final, inside, tuning)
    ranked = sorted(final, key=lambda i: (-final[i], -records[i].time, i))[:depth]  # ties: latest
    return [turn_hit(records[i], final[i]) for i in ranked]


def turn_hit(turn: TurnMatch, score: float) -> Hit:
    return Hit(
        "turn",
        f"t_{turn.id}",
        turn.content,
        score,
        f"chat:{turn.chat}",
        [turn.message_id] if turn.message_id else [],
        turn.time,
        speaker=turn.speaker_name or turn.speaker,
        earlier=turn.earlier_for is not None,
    )


def episode_hits(
    tx: Tx, query: Query, found: Plan, depth: int, tuning: Tuning = TUNING
) -> list[Hit]:
    chats = query.viewer.turn_chats()

    def fetch(
        terms: tuple[str, ...] | None, window: TimeWindow | None
    ) -> list[tuple[Any, float, Any]]:
        matches = tx.episodes.search(chats, _search(query, terms, depth, window))
        return [(m.episode.id, m.score, m.episode) for m in matches]

    terms = None if found.text is None else query_terms(found.tokens, max_terms=tuning.max_terms)
    lexical = fetch(terms, None) if terms is not None else []
    records, scores, inside = _gather(fetch, lexical, found, terms, tuning)
    final = _prefer_window(scores, inside, tuning)
    ranked = sorted(final, key=lambda i: (-final[i], -records[i].ended_at, i))[:depth]
    return [episode_hit(records[i], final[i]) for i in ranked]


def episode_hit(episode: Episode, score: float) -> Hit:
    """An episode as a recalled line: its summary (the keywords only help it be found)."""
    return Hit(
        "episode", episode.id, episode.summary, score, f"chat:{episode.chat}", [], episode.ended_at
    )
