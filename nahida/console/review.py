"""The Review page: what waits for review (held-back memories, a dream's ops on items), each with
its evidence and a word diff against the item it would change; accept, reject, edit-then-accept,
and one decision for several. `/admin/api/review` is its twin.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from nahida.console.i18n import t
from nahida.console.pages import ACTOR, answer, body_of, paging, text_field, when_of
from nahida.console.state import CONSOLE, lang_of
from nahida.console.views import render
from nahida.errors import MemoryPermissionError
from nahida.memory import Pending

# a word, a run of spaces, or one other character (so Chinese diffs by character)
_TOKENS = re.compile(r"[A-Za-z0-9_]+|\s+|.", re.S)


@dataclass(frozen=True, slots=True)
class Piece:
    """A stretch of a diff: `same`, `del` (only before) or `ins` (only after)."""

    kind: str
    text: str


def word_diff(before: str, after: str) -> list[Piece]:
    """The words of `before` turned into `after`, as kept, deleted and inserted stretches."""
    old, new = _TOKENS.findall(before), _TOKENS.findall(after)
    pieces: list[Piece] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
        None, old, new, autojunk=False
    ).get_opcodes():
        if tag == "equal":
            pieces.append(Piece("same", "".join(old[i1:i2])))
            continue
        if i2 > i1:
            pieces.append(Piece("del", "".join(old[i1:i2])))
        if j2 > j1:
            pieces.append(Piece("ins", "".join(new[j1:j2])))
    return pieces


def pending_json(p: Pending) -> dict[str, Any]:
    c = p.candidate
    return {
        "id": p.id,
        "created": p.created,
        "op": c.op,
        "target": c.target or (p.target.id if p.target is not None else None),
        "kind": c.kind,
        "scope": c.scope,
        "sensitivity": c.sensitivity,
        "content": c.content,
        "source": c.source,
        "confidence": c.confidence,
        "note": c.note,
        "evidence": [e.to_json() for e in c.evidence],
        "before": p.before,
    }


async def queue(request: web.Request, offset: int, limit: int) -> tuple[list[Pending], bool]:
    """A page of the queue, oldest first, and whether a later page has more."""
    found = await request.app[CONSOLE].memory.items.review_queue(ACTOR, offset + limit + 1)
    return found[offset : offset + limit], len(found) > offset + limit


async def review_page(
    request: web.Request, *, error: str | None = None, status: int = 200
) -> web.StreamResponse:
    lang = lang_of(request)
    try:
        offset, limit = paging(request.query)
    except ValueError as exc:
        offset, limit = 0, 50
        error, status = t("refused", lang, error=exc), 400
    rows, more = await queue(request, offset, limit)
    return render(
        request,
        "review.html",
        current="review",
        status=status,
        rows=rows,
        more=more,
        offset=offset,
        limit=limit,
        error=error,
        done=request.query.get("done"),
        outcomes=request.query.get("outcomes", ""),
        diff=word_diff,
        when=when_of(request),
    )


async def decide(
    request: web.Request, ids: list[str], decision: str, text: str | None
) -> dict[str, str]:
    """One decision for these candidates as the console: what became of each (`gone`: none
    pending). `edit` accepts one candidate with `text` in place of its words."""
    items = request.app[CONSOLE].memory.items
    if not ids:
        raise ValueError("choose a candidate or more")
    if decision == "edit":
        if len(ids) != 1 or text is None:
            raise ValueError("edit one candidate at a time, with its new words")
        result = await items.review(ids[0], True, ACTOR, text=text)
        return {ids[0]: result.outcome if result is not None else "gone"}
    if decision not in ("accept", "reject"):
        raise ValueError("a decision is accept, reject or edit")
    results = await items.review_many(ids, decision == "accept", ACTOR)
    return {c: r.outcome if r is not None else "gone" for c, r in results.items()}


async def review_decide(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    ids = [v for v in form.getall("id", []) if isinstance(v, str) and v]
    decision = str(form.get("decision") or "")
    lang = lang_of(request)
    try:
        fates = await decide(request, ids, decision, text_field(form, "text"))
    except (ValueError, MemoryPermissionError) as exc:
        return await review_page(request, error=t("refused", lang, error=exc), status=400)
    outcomes = ",".join(sorted(set(fates.values())))
    raise web.HTTPSeeOther(f"/admin/review?done={len(fates)}&outcomes={outcomes}")


async def review_answer(request: web.Request) -> web.StreamResponse:
    try:
        offset, limit = paging(request.query)
    except ValueError as exc:
        return answer({"error": str(exc)}, 400)
    rows, more = await queue(request, offset, limit)
    return answer({"rows": [pending_json(p) for p in rows], "offset": offset, "more": more})


async def review_change(request: web.Request) -> web.StreamResponse:
    """POST `{"ids": […], "decision": "accept"|"reject"|"edit", "text": …}`."""
    body = await body_of(request)
    ids = [str(i) for i in body.get("ids") or []]
    text = body.get("text")
    try:
        fates = await decide(
            request, ids, str(body.get("decision") or ""), text if isinstance(text, str) else None
        )
    except (ValueError, MemoryPermissionError) as exc:
        return answer({"error": str(exc)}, 400)
    return answer({"results": fates})
