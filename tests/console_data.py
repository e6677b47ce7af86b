"""The memory the console's tests and screenshots look at: two people, a group and their private
chats, memories in every scope (one private to each person), a little history, and a config with
secrets in it that no page may show.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import yaml

from nahida.memory import Candidate, Evidence, MemoryService
from nahida.memory.core.models import DreamRun, Proposal
from nahida.memory.store.values import RecallRecord
from nahida.memory.write import write

GROUP = "onebot:group:1001"
ALICE, BOB = "onebot:42", "onebot:43"
ALICE_DM, BOB_DM = "onebot:private:42", "onebot:private:43"

HOSTILE = "<script>alert(1)</script> and {{ 7*7 }}"  # memory text is data, never markup
# (text, scope, sensitivity)
ITEMS = [
    ("The reading club reads one science fiction book a month", f"chat:{GROUP}", "public"),
    ("The reading club meets on Friday evenings in the library", f"chat:{GROUP}", "public"),
    ("Alice is allergic to peanuts", f"user:{ALICE}", "private"),
    ("Alice likes the book Solaris by Stanisław Lem", f"user:{ALICE}", "public"),
    ("Bob borrowed a science fiction book from his sister Mei", f"user:{BOB}", "private"),
    ("The bot's admin is Carol", "global", "public"),
    (f"A member wrote {HOSTILE} in a book review", f"chat:{GROUP}", "public"),
]  # fmt: skip
GROUP_TEXT = "reads one science fiction book"  # a group memory a search for "book" finds
BOB_PRIVATE = "his sister Mei"  # Bob's private memory: never in the group, never to Alice
DREAM_RUN = "d_console_seed"  # a dream run over the group, one proposal of each fate
DREAM_REJECTED = "the evidence cites no turn"  # why its rejected proposal was rejected

TURNS = [
    (GROUP, "42", "Alice", "Has anyone finished the book for Friday?", "2026-03-05T12:00:00Z"),
    (GROUP, "43", "Bob", "Halfway through, the ending of the book is slow", "2026-03-05T12:01:00Z"),
    (BOB_DM, "43", "Bob", "Remind me to return the book to Mei", "2026-03-05T13:00:00Z"),
]

# secrets a config holds that no page or answer of the console may show
API_KEY = "sk-console-test-4d1f9a0b7c2e"
ONEBOT_TOKEN = "onebot-token-7c2e4d1f9a0b"
LARK_SECRET = "lark-app-secret-9a0b7c2e4d1f"
SECRETS = (API_KEY, ONEBOT_TOKEN, LARK_SECRET)


def config_tree(base_url: str | None = None, **admin: Any) -> dict[str, Any]:
    """A config with a provider key and channel secrets; the provider at `base_url`, else on a
    closed loopback port with the key in its URL too (the doctor's ping fails fast, goes
    nowhere, and its error must not show the key)."""
    return {
        "providers": {
            "main": {
                "type": "openai",
                "base_url": base_url or f"http://{API_KEY}@127.0.0.1:9/v1",
                "api_key": API_KEY,
                "model": "test-model",
                "timeout": 2,
                "max_retries": 0,
            }
        },
        "channels": {
            "onebot": {"enabled": False, "access_token": ONEBOT_TOKEN},
            "lark": {"enabled": False, "app_id": "cli_test", "app_secret": LARK_SECRET},
        },
        "memory": {"embedding": {"backend": "none"}, "dreaming": {"enabled": False}},
        "scheduler": {"enabled": False},
        "admin": {"enabled": True, "port": 0, **admin},
    }


def write_config(path: Path, base_url: str | None = None, **admin: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tree = config_tree(base_url, **admin)
    path.write_text(yaml.safe_dump(tree, allow_unicode=True), encoding="utf-8")
    return path


async def seed(memory: MemoryService, folder: Path) -> None:
    """The items and turns above, written as an admin's edits and an imported history."""
    for text, scope, sensitivity in ITEMS:
        candidate = memory.items.admin_candidate(text, scope=scope, sensitivity=sensitivity)
        result = await memory.items.propose(candidate, "cli")
        assert result.outcome == "created", (text, result)
    lines = [
        {
            "chat": chat,
            "user": user,
            "name": name,
            "text": text,
            "time": time,
            "message_id": f"t{n}",
        }
        for n, (chat, user, name, text, time) in enumerate(TURNS)
    ]
    history = folder / "history.jsonl"
    history.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    report = await asyncio.to_thread(memory.import_history, history)
    assert report.imported == len(TURNS), report
    await seed_review(memory)
    await seed_activity(memory)


# a dream's op waiting for review: the club moved its meetings (the Review page's diff)
DREAM_UPDATE = "The reading club meets on Saturday mornings in the library"


async def seed_review(
    memory: MemoryService, about: str = "Friday evenings", text: str = DREAM_UPDATE
) -> str:
    """A dream run's `supersede` of the item found for `about` (the Friday meeting), held for
    review as a dream's op is in manual_review mode; its candidate id."""
    found = await memory.admin.items(text=about)
    target = found.rows[0].id
    candidate = Candidate(
        scope=f"chat:{GROUP}",
        kind="fact",
        content=text,
        source="llm_dream",
        confidence=0.8,
        sensitivity="public",
        evidence=(Evidence(chat=GROUP, message_id="t0", time=time.time(), quote="Friday?"),),
        op="supersede",  # an admin-made item is replaced, never rewritten
        target=target,
        note="the club said it moves to Saturdays",
    )
    prepared = write.prepare(candidate)
    result = await memory.store.write(write.propose, prepared, "manual_review", "dream:d_seed")
    assert result.outcome == "pending" and result.candidate_id is not None, result
    return result.candidate_id


async def seed_activity(memory: MemoryService) -> None:
    """What the Overview, Chats and Dreams pages show beyond items and turns: a recall recorded
    for Alice's question in the group (the group's first two memories) and a dream run over
    the group with an applied, a pending and a rejected proposal (the last one hostile text)."""
    admin = memory.admin
    group_items = await admin.items(scope=f"chat:{GROUP}", limit=10)
    recalled = tuple(sorted(i.id for i in group_items.rows if "reading club" in i.content))
    session = (await admin.sessions(GROUP)).rows[0]
    transcript = await admin.transcript(session.id)
    assert transcript is not None
    question = next(
        r.turn
        for r in transcript.turns.rows
        if r.turn.role == "user" and "42" in (r.turn.speaker or "")
    )
    now = time.time()
    record = RecallRecord(question.id, GROUP, now, recalled)
    proposals = (
        Proposal("add", "fact", "The reading club picked Solaris", f"chat:{GROUP}", fate="created"),
        Proposal("add", "fact", "Bob reads slowly", f"chat:{GROUP}", fate="pending"),
        Proposal(
            "add",
            "fact",
            f"Someone said {HOSTILE}",
            f"chat:{GROUP}",
            guard="evidence",
            detail=DREAM_REJECTED,
        ),
    )
    run = DreamRun(
        DREAM_RUN,
        GROUP,
        "cli",
        now,
        from_turn=1,
        through_turn=2,
        turns=2,
        model="test-model",
        proposals=3,
        applied=1,
        pending=1,
        rejected=1,
        outcome="ok",
        report=proposals,
        fates={"created": 1, "pending": 1, "rejected": 1},
        finished_at=now + 1,
    )

    def write(tx: Any) -> None:
        tx.recalls.add(record)
        tx.dreams.start(run)
        tx.dreams.save(run)

    await memory.store.write(write)
