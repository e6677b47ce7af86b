"""What one search looks for: the question, who asks it and when, and how it is read.

`plan()` reads a question before the store is asked (DESIGN §1: no jieba on the database
thread): its time expressions ("昨天", "last week"; `timeparse`) come out of the lexical part and
name a window relative to the question's moment; the rest is cut into tokens once. A question
about the last conversation ("上次我们聊到哪了", "what did we talk about last time") is marked
`last_time`: the chat's latest episode then comes first (`cascade`). The words stay in the
lexical query, so nothing but the episodes changes.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Literal

from nahida.memory.core.scopes import Viewer
from nahida.memory.core.tokenize import has_content, tokenize
from nahida.memory.store.values import VectorSpace
from nahida.memory.write import timeparse
from nahida.memory.write.timeparse import TimeWindow

if TYPE_CHECKING:
    from nahida.memory.store.values import Vector

RRF_K = 60.0
Mode = Literal["hybrid", "lexical", "vector"]
MODES: tuple[Mode, ...] = ("hybrid", "lexical", "vector")
# Asking about the last conversation: 上次 / 上回 / 上一次, "last time", "our last conversation",
# "where we left off" (not "last week": that is a time window).
LAST_TIME = re.compile(
    r"上一?次|(?<![马晚早])上一?回(?![来去家到复应头])"
    r"|(?<![a-z])(?:last|previous) (?:time|conversation|session|chat|talk)(?![a-z])"
    r"|(?<![a-z])(?:left|leave) off(?![a-z])",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Tuning:
    """Ranking knobs; the defaults are the best measured by scripts/eval_recall.py."""

    max_terms: int = 128  # query terms sent to FTS after stopwords (long, chatty questions)
    depth: int = 50  # lexical candidates per list before re-ranking
    neighbours: float = 0.6  # a turn scores at least this share of an adjacent turn's score
    speaker: float = 1.0  # extra weight for turns said by a speaker the question names
    window: float = 1.0  # extra weight for hits inside the question's time window; < 0: only those
    strip_time: bool = True  # take time expressions out of the lexical query
    rrf_k: float = RRF_K
    vector_weight: float = 0.5  # of the vector ranking in hybrid search (the lexical one: 1)
    hybrid_k: float = 10.0  # the RRF k of hybrid search's second fusion
    vector_reserve: int = 2  # the last places of a hybrid answer kept for hits by meaning
    # a list of hits by meaning whose best is not this much above what unrelated lines score
    # against the query (`Plan.unrelated`, `recall.floor`) gives none; else its hits down to
    # `vector_margin` below its best. In hybrid search the words back meaning up: a stricter
    # floor there keeps more padding out of the prompt and no evidence the dev sets know
    vector_floor: float = 0.01
    hybrid_floor: float = 0.02
    vector_margin: float = 0.05


TUNING = Tuning()


@dataclass(frozen=True, slots=True)
class Query:
    text: str
    viewer: Viewer
    at: float | None = None  # the moment the question is asked; nothing later is returned
    limit: int = 10
    exclude_turns: frozenset[int] = frozenset()
    items: bool = True
    turns: bool = True
    episodes: bool = True
    tz: tzinfo | None = None  # where "today" is for time expressions; None: the searcher's
    # configured zone (`plan`'s `tz`), else the local one
    mode: Mode = "hybrid"  # lexical and vector lists fused; vector only where there is a vector


@dataclass(frozen=True, slots=True)
class Plan:
    """How a query was read."""

    text: str | None  # the lexical part; None when the question is only a time expression
    tokens: tuple[str, ...]  # of `text`
    window: TimeWindow | None
    now: float
    vector: Vector | None = None  # the query's embedding (None: lexical only)
    space: VectorSpace | None = None
    last_time: bool = False  # it asks about the last conversation (`LAST_TIME`)
    # what a line unrelated to the query scores against it (`recall.floor`); None: not known
    # (the floor is then the list's best less `Tuning.vector_margin`)
    unrelated: float | None = None

    def with_vector(
        self, vector: Vector, space: VectorSpace, unrelated: float | None = None
    ) -> Plan:
        return replace(self, vector=vector, space=space, unrelated=unrelated)


def plan(query: Query, tuning: Tuning = TUNING, tz: tzinfo | None = None) -> Plan:
    """How `query` reads; `tz`: where "today" is when the query names no zone (None: the
    local zone)."""
    now = query.at if query.at is not None else time.time()
    zone = query.tz if query.tz is not None else tz
    if zone is not None:
        moment = datetime.fromtimestamp(now, zone)
    else:
        moment = datetime.fromtimestamp(now).astimezone()
    parsed = timeparse.parse(query.text, moment)
    text: str | None = parsed.text if tuning.strip_time else query.text
    tokens = tuple(tokenize(text)) if text else ()
    last_time = LAST_TIME.search(" ".join(query.text.split())) is not None
    if parsed.window is not None and not (text and has_content(tokens)):
        # only a time expression: list the window
        return Plan(None, (), parsed.window, now, last_time=last_time)
    return Plan(text, tokens, parsed.window, now, last_time=last_time)
