"""The write path (DESIGN §6): commit modes, merge, supersede, secrets and the append-only audit."""

from __future__ import annotations

from typing import Any

import pytest

from nahida.db import Connection, Database, driver
from nahida.memory import store, write
from nahida.memory.models import Candidate, CommitMode, Evidence, MemoryItem, WriteResult
from nahida.memory.recall import Query, search
from nahida.memory.scopes import Viewer, admin_viewer
from nahida.memory.service import MemoryService

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


def propose(db: Database, c: Candidate, mode: CommitMode = "auto_safe") -> WriteResult:
    return db.call(write.propose, c, mode, "test")


def item(db: Database, item_id: str | None) -> MemoryItem:
    assert item_id is not None
    found = db.call(store.get, item_id)
    assert found is not None
    return found


def count(db: Database, table: str) -> int:
    return int(db.call(lambda conn: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]))


def dump(db: Database) -> str:
    """Every value of every table (FTS shadow tables included) as text."""

    def run(conn: Connection) -> str:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        values = []
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                values.extend(str(v) for v in row)
        return "\n".join(values)

    return db.call(run)


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
        ("auto_safe", {"kind": "procedure", "confidence": 0.9}, "pending"),
        ("auto_safe", {"source": "llm_dream", "kind": "warning", "confidence": 0.9}, "pending"),
        ("manual_review", {"kind": "fact", "confidence": 0.95}, "pending"),
        ("manual_review", {"source": "user_explicit"}, "created"),
        ("auto_full", {"kind": "procedure", "confidence": 0.2}, "created"),
        ("auto_full", {"source": "llm_dream", "kind": "summary", "confidence": 0.1}, "created"),
    ],
)
def test_commit_mode_decides(
    db: Database, mode: CommitMode, fields: dict[str, Any], outcome: str
) -> None:
    result = propose(db, candidate("周五下午三点开组会", **fields), mode)
    assert result.outcome == outcome
    assert result.candidate_id is not None
    assert count(db, "memory_items") == (1 if outcome == "created" else 0)
    status = db.call(
        lambda conn: conn.execute(
            "SELECT status FROM memory_candidates WHERE id = ?", (result.candidate_id,)
        ).fetchone()[0]
    )
    assert status == ("pending" if outcome == "pending" else "accepted")


def test_pending_candidate_waits_for_review_then_commits(db: Database) -> None:
    result = propose(db, candidate("项目代号是青鸟"), "manual_review")
    waiting = db.call(write.pending, None, 20)
    assert [cid for cid, _, _ in waiting] == [result.candidate_id]
    decided = db.call(write.decide, result.candidate_id, True, "admin")
    assert decided is not None and decided.outcome == "created"
    assert item(db, decided.item_id).content == "项目代号是青鸟"
    assert db.call(write.pending, None, 20) == []
    assert db.call(write.decide, result.candidate_id, True, "admin") is None  # decided once


# --- duplicates -----------------------------------------------------------------------------


def test_exact_duplicate_merges_confidence_access_and_evidence(db: Database) -> None:
    first = propose(db, candidate("项目代号是青鸟", confidence=0.8))
    again = candidate(
        "项目代号是青鸟", evidence=(Evidence(chat="qq:private:alice", message_id="m2"),)
    )
    second = propose(db, again)
    assert (first.outcome, second.outcome) == ("created", "merged")
    assert second.item_id == first.item_id
    merged = item(db, first.item_id)
    assert merged.confidence == pytest.approx(0.85)
    assert merged.access_count == 1
    assert merged.message_ids == ["m1", "m2"]
    assert count(db, "memory_items") == 1
    assert [e.action for e in db.call(store.events, merged.id)] == ["create", "merge"]


def test_near_duplicate_merges(db: Database) -> None:
    first = propose(db, candidate("每周五下午三点在三楼开组会"))
    second = propose(db, candidate("每周五下午三点在三楼开组会吧", confidence=0.9))
    assert second.outcome == "merged" and second.item_id == first.item_id
    assert item(db, first.item_id).confidence == pytest.approx(0.95)


@pytest.mark.parametrize(
    "other",
    [
        {"kind": "decision"},
        {"subject_user": "qq:bob"},
        {"scope": "user:qq:bob"},
        {"content": "项目代号是红隼"},
    ],
)
def test_not_a_duplicate(db: Database, other: dict[str, Any]) -> None:
    propose(db, candidate("项目代号是青鸟"))
    fields = {"content": "项目代号是青鸟", **other}
    content = fields.pop("content")
    assert propose(db, candidate(content, **fields)).outcome == "created"
    assert count(db, "memory_items") == 2


# --- supersede ------------------------------------------------------------------------------


def test_new_value_for_a_slot_supersedes_and_both_stay_linked(db: Database) -> None:
    old = propose(db, candidate("喜欢乌龙茶", kind="preference", slot="pref:乌龙茶"))
    new = propose(db, candidate("不喜欢乌龙茶", kind="preference", slot="pref:乌龙茶"))
    assert new.outcome == "superseded" and new.replaced == old.item_id
    before, after = item(db, old.item_id), item(db, new.item_id)
    assert before.status == "superseded" and before.valid_until is not None
    assert after.status == "active" and after.supersedes == before.id
    actions = [(e.action, e.reason) for e in db.call(store.events, before.id)]
    assert actions == [("create", None), ("supersede", f"replaced by {after.id}")]
    hits = db.call(search, Query("乌龙茶", admin_viewer([ALICE]), turns=False))
    assert [h.id for h in hits] == [after.id]  # the old one left the index, not the table


def test_slot_supersede_needs_same_scope_and_subject(db: Database) -> None:
    propose(db, candidate("住在杭州", slot="home"))
    other_person = candidate("住在上海", slot="home", subject_user="qq:bob", scope=GROUP)
    assert propose(db, other_person).outcome == "created"
    assert propose(db, candidate("住在苏州", slot="home", scope="user:qq:bob")).outcome == "created"
    assert propose(db, candidate("住在北京", slot="home")).outcome == "superseded"


# --- secrets --------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["user_explicit", "human_edit", "plugin:notes"])
def test_explicit_secret_is_refused_and_nothing_is_stored(db: Database, source: str) -> None:
    with pytest.raises(write.SecretRefused):
        propose(db, candidate(f"我的 api key 是 {KEY}", source=source))
    with pytest.raises(write.SecretRefused):
        propose(db, candidate("服务器", title=f"token={KEY}", source=source))
    for table in ("memory_items", "memory_candidates", "memory_events", "memory_items_fts"):
        assert count(db, table) == 0, table
    assert KEY not in dump(db) and KEY.lower() not in dump(db)


async def test_explicit_remember_with_secret_is_refused(db: Database) -> None:
    from nahida.envelope import ChatKey, UserKey

    service = MemoryService(db)
    with pytest.raises(write.SecretRefused):
        await service.remember(
            f"记住 password: {KEY}",
            chat=ChatKey.parse("qq:private:alice"),
            user=UserKey.parse("qq:alice"),
        )
    assert count(db, "memory_items") == count(db, "memory_candidates") == 0


def test_automatic_secret_is_redacted(db: Database) -> None:
    result = propose(db, candidate(f"我的 api key 是 {KEY}"))
    assert result.outcome == "created" and result.redacted
    stored = item(db, result.item_id)
    assert stored.content == "我的 api key 是 [REDACTED:openai_key]"
    everything = dump(db)
    assert "[REDACTED:openai_key]" in everything  # the dump does see the stored rows
    assert KEY not in everything and KEY.lower() not in everything


def test_automatic_secret_in_evidence_quote_is_redacted(db: Database) -> None:
    quoted = (Evidence(chat="qq:private:alice", message_id="m1", quote=f"key {KEY}"),)
    propose(db, candidate(f"我的 api key 是 {KEY}", evidence=quoted))
    assert KEY not in dump(db)


# --- audit ----------------------------------------------------------------------------------


def test_audit_table_is_append_only(db: Database) -> None:
    result = propose(db, candidate("项目代号是青鸟"))
    assert count(db, "memory_events") == 1

    def tamper(sql: str) -> Any:
        return lambda conn: conn.execute(sql)

    with pytest.raises(driver.IntegrityError, match="append-only"):
        db.call(tamper("UPDATE memory_events SET actor = 'mallory'"))
    with pytest.raises(driver.IntegrityError, match="append-only"):
        db.call(tamper("DELETE FROM memory_events"))
    events = db.call(store.events, result.item_id)
    assert [(e.action, e.actor) for e in events] == [("create", "test")]


def test_every_change_is_audited_with_before_and_after(db: Database) -> None:
    created = item(db, propose(db, candidate("项目代号是青鸟")).item_id)

    def archive(conn: Connection) -> MemoryItem:
        return store.update(conn, created, "qq:alice", "archive", "forgotten", status="archived")

    db.call(archive)
    last = db.call(store.events, created.id)[-1]
    assert (last.action, last.actor, last.reason) == ("archive", "qq:alice", "forgotten")
    assert last.before is not None and last.after is not None
    assert (last.before["status"], last.after["status"]) == ("active", "archived")
    assert db.call(store.list_items, Viewer(scopes=(ALICE,))) == []
