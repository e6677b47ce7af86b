"""The write path (DESIGN §6): commit modes, merge, supersede, secrets and the append-only audit."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from nahida.memory import (
    Actor,
    Candidate,
    CommitMode,
    Evidence,
    MemoryEvent,
    MemoryItem,
    MemoryService,
    Query,
    SecretRefused,
    Viewer,
    WriteResult,
    recall,
)
from nahida.memory.store.sqlite import SqliteStore
from nahida.memory.store.sqlite.connection import Connection, driver
from nahida.memory.write import write

ALICE = "user:qq:alice"
GROUP = "chat:qq:group:100"
KEY = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"


def candidate(content: str, **fields: Any) -> Candidate:
    defaults: dict[str, Any] = {
        "scope": ALICE,
        "kind": "fact",
        "source": "rule_extract",
        "confidence": 0.8,
        "subject_user": "qq:alice",
        "speaker_user": "qq:alice",
        "evidence": (Evidence(chat="qq:private:alice", message_id="m1", time=1.0),),
    }
    return Candidate(content=content, **{**defaults, **fields})


def propose(store: SqliteStore, c: Candidate, mode: CommitMode = "auto_safe") -> WriteResult:
    return store.write_sync(write.propose, write.prepare(c), mode, "test")


def item(store: SqliteStore, item_id: str | None) -> MemoryItem:
    assert item_id is not None
    found = store.read_sync(lambda tx: tx.items.get(item_id))
    assert found is not None
    return found


def events(store: SqliteStore, item_id: str | None) -> list[MemoryEvent]:
    assert item_id is not None
    return store.read_sync(lambda tx: tx.events.of_item(item_id))


def sql(store: SqliteStore, statement: str, *params: Any) -> Any:
    """Run one statement on the store's connection (to look at, or tamper with, the rows)."""
    return store.db.call(lambda conn: conn.execute(statement, params).fetchall())


def count(store: SqliteStore, table: str) -> int:
    return int(sql(store, f"SELECT count(*) FROM {table}")[0][0])


def dump(store: SqliteStore) -> str:
    """Every value of every table (FTS shadow tables included) as text."""

    def run(conn: Connection) -> str:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        values = []
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                values.extend(str(v) for v in row)
        return "\n".join(values)

    return store.db.call(run)


# --- commit modes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "fields", "outcome"),
    [
        (
            "auto_safe",
            {"source": "user_explicit", "kind": "procedure", "confidence": 0.3},
            "created",
        ),
        ("auto_safe", {"kind": "preference", "confidence": 0.8}, "created"),
        ("auto_safe", {"kind": "task", "confidence": 0.7}, "created"),
        ("auto_safe", {"kind": "preference", "confidence": 0.6}, "pending"),
        ("auto_safe", {"kind": "procedure", "confidence": 0.8}, "created"),  # what was said
        ("auto_safe", {"kind": "procedure", "confidence": 0.6}, "pending"),
        ("auto_safe", {"source": "compress", "kind": "procedure", "confidence": 0.9}, "pending"),
        ("auto_safe", {"source": "llm_dream", "kind": "warning", "confidence": 0.9}, "pending"),
        ("manual_review", {"kind": "fact", "confidence": 0.95}, "pending"),
        ("manual_review", {"source": "user_explicit"}, "created"),
        ("auto_full", {"kind": "procedure", "confidence": 0.2}, "created"),
        ("auto_full", {"source": "llm_dream", "kind": "summary", "confidence": 0.1}, "created"),
    ],
)
def test_commit_mode_decides(
    store: SqliteStore, mode: CommitMode, fields: dict[str, Any], outcome: str
) -> None:
    result = propose(store, candidate("周五下午三点开组会", **fields), mode)
    assert result.outcome == outcome
    assert result.candidate_id is not None
    assert count(store, "memory_items") == (1 if outcome == "created" else 0)
    status = sql(store, "SELECT status FROM memory_candidates WHERE id = ?", result.candidate_id)[
        0
    ][0]
    assert status == ("pending" if outcome == "pending" else "accepted")


async def test_pending_candidate_waits_for_review_then_commits(store: SqliteStore) -> None:
    result = propose(store, candidate("项目代号是青鸟"), "manual_review")
    assert result.candidate_id is not None
    items = MemoryService(store).items
    waiting = await items.pending(Actor.cli(), 20)
    assert [cid for cid, _, _ in waiting] == [result.candidate_id]
    decided = await items.review(result.candidate_id, True, Actor("admin", is_bot_admin=True))
    assert decided is not None and decided.outcome == "created"
    assert item(store, decided.item_id).content == "项目代号是青鸟"
    assert await items.pending(Actor.cli(), 20) == []
    assert await items.review(result.candidate_id, True, Actor.cli()) is None  # decided once
    again = write.tokens_of(candidate("项目代号是青鸟"))
    assert store.write_sync(write.decide, result.candidate_id, again, True, "admin") is None


# --- duplicates -----------------------------------------------------------------------------


def test_exact_duplicate_merges_confidence_access_and_evidence(store: SqliteStore) -> None:
    first = propose(store, candidate("项目代号是青鸟", confidence=0.8))
    again = candidate(
        "项目代号是青鸟", evidence=(Evidence(chat="qq:private:alice", message_id="m2"),)
    )
    second = propose(store, again)
    assert (first.outcome, second.outcome) == ("created", "merged")
    assert second.item_id == first.item_id
    merged = item(store, first.item_id)
    assert merged.confidence == pytest.approx(0.85)
    assert merged.access_count == 1
    assert merged.message_ids == ["m1", "m2"]
    assert count(store, "memory_items") == 1
    assert [e.action for e in events(store, merged.id)] == ["create", "merge"]


def test_near_duplicate_merges(store: SqliteStore) -> None:
    first = propose(store, candidate("每周五下午三点在三楼开组会"))
    said_again = (Evidence(chat="qq:private:alice", message_id="m2", time=2.0),)
    second = propose(
        store, candidate("每周五下午三点在三楼开组会吧", confidence=0.9, evidence=said_again)
    )
    assert second.outcome == "merged" and second.item_id == first.item_id
    assert item(store, first.item_id).confidence == pytest.approx(0.95)


def test_the_same_message_read_again_reinforces_nothing(store: SqliteStore) -> None:
    """A rerun over the same turns (a dream's fallback to rule extraction) merges without
    raising confidence or adding evidence: only a new message is new evidence."""
    first = propose(store, candidate("每周五下午三点在三楼开组会"))
    again = propose(store, candidate("每周五下午三点在三楼开组会"))
    assert again.outcome == "merged" and again.item_id == first.item_id
    kept = item(store, first.item_id)
    assert kept.confidence == pytest.approx(0.8) and len(kept.evidence) == 1


@pytest.mark.parametrize(
    "other",
    [
        {"kind": "decision"},
        {"subject_user": "qq:bob"},
        {"scope": "user:qq:bob"},
        {"content": "项目代号是红隼"},
    ],
)
def test_not_a_duplicate(store: SqliteStore, other: dict[str, Any]) -> None:
    propose(store, candidate("项目代号是青鸟"))
    fields = {"content": "项目代号是青鸟", **other}
    content = fields.pop("content")
    assert propose(store, candidate(content, **fields)).outcome == "created"
    assert count(store, "memory_items") == 2


# --- supersede ------------------------------------------------------------------------------


def test_new_value_for_a_slot_supersedes_and_both_stay_linked(store: SqliteStore) -> None:
    old = propose(store, candidate("喜欢乌龙茶", kind="preference", slot="pref:乌龙茶"))
    new = propose(store, candidate("不喜欢乌龙茶", kind="preference", slot="pref:乌龙茶"))
    assert new.outcome == "superseded" and new.replaced == old.item_id
    before, after = item(store, old.item_id), item(store, new.item_id)
    assert before.status == "superseded" and before.valid_until is not None
    assert after.status == "active" and after.supersedes == before.id
    actions = [(e.action, e.reason) for e in events(store, before.id)]
    assert actions == [("create", None), ("supersede", f"replaced by {after.id}")]
    query = Query("乌龙茶", Viewer.admin([ALICE]), turns=False)
    hits = store.read_sync(recall.search, query, recall.plan(query))
    assert [h.id for h in hits] == [after.id]  # the old one left the index, not the table


def test_slot_supersede_needs_same_scope_and_subject(store: SqliteStore) -> None:
    propose(store, candidate("住在杭州", slot="home"))
    other_person = candidate("住在上海", slot="home", subject_user="qq:bob", scope=GROUP)
    assert propose(store, other_person).outcome == "created"
    assert (
        propose(store, candidate("住在苏州", slot="home", scope="user:qq:bob")).outcome == "created"
    )
    assert propose(store, candidate("住在北京", slot="home")).outcome == "superseded"


# --- secrets --------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["user_explicit", "human_edit", "plugin:notes"])
def test_explicit_secret_is_refused_and_nothing_is_stored(store: SqliteStore, source: str) -> None:
    with pytest.raises(SecretRefused):
        propose(store, candidate(f"我的 api key 是 {KEY}", source=source))
    with pytest.raises(SecretRefused):
        propose(store, candidate("服务器", title=f"token={KEY}", source=source))
    for table in ("memory_items", "memory_candidates", "memory_events", "memory_items_fts"):
        assert count(store, table) == 0, table
    assert KEY not in dump(store) and KEY.lower() not in dump(store)


async def test_explicit_remember_with_secret_is_refused(store: SqliteStore) -> None:
    from nahida.envelope import ChatKey, UserKey

    service = MemoryService(store)
    with pytest.raises(SecretRefused):
        await service.items.remember(
            f"记住 password: {KEY}",
            chat=ChatKey.parse("qq:private:alice"),
            user=UserKey.parse("qq:alice"),
        )
    assert count(store, "memory_items") == count(store, "memory_candidates") == 0


def test_automatic_secret_is_redacted(store: SqliteStore) -> None:
    result = propose(store, candidate(f"我的 api key 是 {KEY}"))
    assert result.outcome == "created" and result.redacted
    stored = item(store, result.item_id)
    assert stored.content == "我的 api key 是 [REDACTED:openai_key]"
    everything = dump(store)
    assert "[REDACTED:openai_key]" in everything  # the dump does see the stored rows
    assert KEY not in everything and KEY.lower() not in everything


def test_automatic_secret_in_evidence_quote_is_redacted(store: SqliteStore) -> None:
    quoted = (Evidence(chat="qq:private:alice", message_id="m1", quote=f"key {KEY}"),)
    propose(store, candidate(f"我的 api key 是 {KEY}", evidence=quoted))
    assert KEY not in dump(store)


# --- audit ----------------------------------------------------------------------------------


def test_audit_table_is_append_only(store: SqliteStore) -> None:
    result = propose(store, candidate("项目代号是青鸟"))
    assert count(store, "memory_events") == 1

    with pytest.raises(driver.IntegrityError, match="append-only"):
        sql(store, "UPDATE memory_events SET actor = 'mallory'")
    with pytest.raises(driver.IntegrityError, match="append-only"):
        sql(store, "DELETE FROM memory_events")
    trail = events(store, result.item_id)
    assert [(e.action, e.actor) for e in trail] == [("create", "test")]


def test_every_change_is_audited_with_before_and_after(store: SqliteStore) -> None:
    created = item(store, propose(store, candidate("项目代号是青鸟")).item_id)

    store.write_sync(
        lambda tx: write.update_item(
            tx, created, "qq:alice", "archive", "forgotten", status="archived"
        )
    )
    last = events(store, created.id)[-1]
    assert (last.action, last.actor, last.reason) == ("archive", "qq:alice", "forgotten")
    assert last.before is not None and last.after is not None
    assert (last.before["status"], last.after["status"]) == ("active", "archived")
    assert asyncio.run(MemoryService(store).items.latest(Viewer(scopes=(ALICE,)))) == []


# --- ids ------------------------------------------------------------------------------------


def test_an_id_taken_meanwhile_is_drawn_again_never_overwritten(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No check-then-insert: an insert that meets a taken id (say, another process's) draws a
    new one, for items and candidates alike."""
    first = propose(store, candidate("项目代号是青鸟"))
    assert first.item_id is not None and first.candidate_id is not None
    drawn = iter([first.item_id, "m_00000b", first.candidate_id, "c_00000b"])
    monkeypatch.setattr(write, "new_id", lambda prefix: next(drawn))
    second = propose(store, candidate("每周五下午三点开组会", kind="decision"))
    assert (second.item_id, second.candidate_id) == ("m_00000b", "c_00000b")
    assert item(store, first.item_id).content == "项目代号是青鸟"  # untouched
    assert count(store, "memory_items") == 2 and count(store, "memory_candidates") == 2
