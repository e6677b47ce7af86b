"""`/memory` chat commands on a real migrated SQLite: every subcommand and who may do what."""

from __future__ import annotations

import re
import time

import pytest

from nahida.commands import memory as memory_commands
from nahida.commands.router import CommandContext, CommandRouter
from nahida.envelope import ChatKey, Role, UserKey
from nahida.i18n import Language, t
from nahida.memory import KINDS, Candidate, Evidence, MemoryService, NewTurn, Viewer, WriteResult
from nahida.memory.store.sqlite import SqliteStore
from tests.helpers import envelope

ALICE, BOB, CAROL = "test:alice", "test:bob", "test:carol"
ALICE_DM, BOB_DM = "test:private:alice", "test:private:bob"
GROUP, OTHER_GROUP = "test:group:g1", "test:group:g2"
ITEM_ID = re.compile(r"\bm_[0-9a-f]{6}\b")
CANDIDATE_ID = re.compile(r"\bc_[0-9a-f]{6}\b")


class Chat:
    """Sends `/memory ...` as someone, somewhere, through the real router."""

    def __init__(self, store: SqliteStore, memory: MemoryService) -> None:
        self.store = store
        self.memory = memory
        self.router = CommandRouter()
        memory_commands.register(self.router)

    async def __call__(
        self,
        text: str,
        *,
        user: str = ALICE,
        chat: str = ALICE_DM,
        role: Role = Role.MEMBER,
        admin: bool = False,
        lang: Language = "zh",
    ) -> str:
        ctx = CommandContext(
            envelope(text, chat=chat, user=user, role=role), lang, admin, self.memory
        )
        return await self.router.dispatch(ctx, text)

    async def remember(self, text: str, **kw: object) -> str:
        reply = await self(f"/memory remember {text}", **kw)  # type: ignore[arg-type]
        found = ITEM_ID.search(reply)
        assert found, reply
        return found.group(0)


@pytest.fixture
def chat(store: SqliteStore, memory: MemoryService) -> Chat:
    return Chat(store, memory)


def count(store: SqliteStore, table: str) -> int:
    return int(store.db.call(lambda c: c.execute(f"SELECT count(*) FROM {table}").fetchone()[0]))


# usage and help -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["/memory", "/memory   ", "/memory frobnicate x", "/memory 忘记 m_1"]
)
async def test_bare_or_unknown_subcommand_prints_usage(chat: Chat, text: str) -> None:
    assert await chat(text) == t("memory_usage", "zh")
    assert await chat(text, lang="en") == t("memory_usage", "en")


async def test_help_lists_memory(chat: Chat) -> None:
    reply = await chat("/help")
    assert f"/memory — {t('cmd_memory', 'zh')}" in reply


# remember -----------------------------------------------------------------------------------


async def test_remember_in_private_goes_to_the_person_privately(chat: Chat) -> None:
    reply = await chat("/memory remember 我喜欢乌龙茶")
    item_id = ITEM_ID.search(reply)
    assert item_id and reply == t("memory_remembered", "zh", id=item_id.group(0))
    item = await chat.memory.items.get(item_id.group(0))
    assert item is not None
    assert (item.scope, item.sensitivity, item.source) == (
        f"user:{ALICE}",
        "private",
        "user_explicit",
    )
    assert item.subject_user == ALICE and item.content == "我喜欢乌龙茶"
    assert item.evidence[0].chat == ALICE_DM and item.evidence[0].message_id


async def test_remember_in_group_goes_to_the_chat(chat: Chat) -> None:
    item_id = await chat.remember("周五下午三点开周会", chat=GROUP, user=BOB)
    item = await chat.memory.items.get(item_id)
    assert item is not None
    assert (item.scope, item.sensitivity) == (f"chat:{GROUP}", "public")
    assert item.subject_user is None and item.speaker_user == BOB


async def test_remember_twice_says_merged_into_the_same_id(chat: Chat) -> None:
    first = await chat.remember("我喜欢乌龙茶")
    again = await chat("/memory remember 我喜欢乌龙茶")
    assert again == t("memory_merged", "zh", id=first)
    assert count(chat.store, "memory_items") == 1


async def test_remember_refuses_a_secret_and_stores_nothing(chat: Chat) -> None:
    secret = "/memory remember 我的 key 是 sk-proj-abcdefghijklmnopqrstuvwxyz123456"
    assert await chat(secret) == t("memory_secret_refused", "zh")
    assert await chat(secret, lang="en") == t("memory_secret_refused", "en")
    assert count(chat.store, "memory_items") == 0
    assert count(chat.store, "memory_candidates") == 0


async def test_remember_without_text_prints_its_usage(chat: Chat) -> None:
    assert await chat("/memory remember") == t("memory_remember_usage", "zh")


def test_write_outcomes_are_worded() -> None:
    written = memory_commands.written
    assert written(WriteResult("pending", None, "c_123456"), "zh") == t(
        "memory_pending", "zh", id="c_123456"
    )
    assert "m_000002" in written(WriteResult("superseded", "m_000002", replaced="m_000001"), "en")
    assert "m_000001" in written(WriteResult("superseded", "m_000002", replaced="m_000001"), "en")


# search and list ----------------------------------------------------------------------------


async def test_search_shows_items_and_history_turns(chat: Chat) -> None:
    item_id = await chat.remember("我喜欢乌龙茶")
    said = time.time() - 3600
    await chat.memory.sessions.record(
        NewTurn(
            chat=ALICE_DM,
            role="user",
            content="昨天买了一包乌龙茶叶",
            time=said,
            speaker=ALICE,
            speaker_name="Alice",
        ),
    )
    reply = await chat("/memory search 乌龙茶")
    lines = reply.splitlines()
    assert lines[0] == t("memory_search_header", "zh", query="乌龙茶")
    item_line = next(line for line in lines if item_id in line)
    assert " · preference · " in item_line and item_line.endswith("我喜欢乌龙茶")
    assert re.search(r"\d{4}-\d{2}-\d{2}", item_line)
    turn_line = next(line for line in lines if "茶叶" in line)
    assert memory_commands.when(said) in turn_line and "Alice" in turn_line


async def test_search_respects_who_is_asking_where(chat: Chat) -> None:
    await chat.remember("我的生日是三月五日", user=ALICE, chat=ALICE_DM)  # Alice's private
    await chat.remember("群规：周三发周报", user=BOB, chat=OTHER_GROUP)
    # Bob in his own private chat, and anyone in g1, see neither
    for user, where in [(BOB, BOB_DM), (ALICE, GROUP), (CAROL, GROUP)]:
        assert await chat("/memory search 生日", user=user, chat=where) == t(
            "memory_no_results", "zh", query="生日"
        )
        assert "m_" not in await chat("/memory search 周报", user=user, chat=where)
    assert "三月五日" in await chat("/memory search 生日")
    assert "周报" in await chat("/memory search 周报", user=CAROL, chat=OTHER_GROUP)


async def test_search_usage_and_english(chat: Chat) -> None:
    assert await chat("/memory search") == t("memory_search_usage", "zh")
    assert await chat("/memory search 不存在的东西", lang="en") == t(
        "memory_no_results", "en", query="不存在的东西"
    )


async def test_list_all_and_by_kind(chat: Chat, memory: MemoryService) -> None:
    fact = await chat.remember("我住在杭州")
    await memory.items.remember(
        "每天早上跑步", chat=ChatKey.parse(ALICE_DM), user=UserKey.parse(ALICE), kind="task"
    )
    await chat.remember("群里的事", chat=GROUP)  # not visible from Alice's private chat
    everything = await chat("/memory list")
    assert everything.splitlines()[0] == t("memory_list_header", "zh", n=2)
    assert fact in everything and "每天早上跑步" in everything and "群里的事" not in everything
    tasks = await chat("/memory list task")
    assert "每天早上跑步" in tasks and fact not in tasks
    assert await chat("/memory list decision") == t("memory_list_empty", "zh")


async def test_list_unknown_kind_lists_the_kinds(chat: Chat) -> None:
    reply = await chat("/memory list gossip", lang="en")
    assert reply == t("memory_list_usage", "en", kinds=", ".join(KINDS))
    assert all(kind in reply for kind in KINDS)


# forget -------------------------------------------------------------------------------------


async def test_subject_forgets_their_own_memory_archived_and_audited(chat: Chat) -> None:
    item_id = await chat.remember("我喜欢乌龙茶")
    assert await chat(f"/memory forget {item_id}") == t("memory_forgotten", "zh", id=item_id)
    item = await chat.memory.items.get(item_id)
    assert item is not None and item.status == "archived"
    explanation = await chat.memory.items.why(item_id, Viewer(scopes=(item.scope,)))
    assert explanation is not None
    assert [(e.action, e.actor) for e in explanation.events] == [
        ("create", ALICE),
        ("archive", ALICE),
    ]
    assert "m_" not in await chat("/memory search 乌龙茶")
    again = await chat(f"/memory forget {item_id}")
    assert again == t("memory_not_active", "zh", id=item_id, status=t("memory_status_archived"))


@pytest.mark.parametrize(
    ("user", "role", "admin", "allowed"),
    [
        (BOB, Role.MEMBER, False, True),  # the speaker who said it
        (CAROL, Role.OWNER, False, True),  # the group's owner
        (CAROL, Role.ADMIN, False, True),  # a group admin
        (CAROL, Role.MEMBER, True, True),  # a bot admin
        (CAROL, Role.MEMBER, False, False),  # anyone else
    ],
)
async def test_who_may_forget_a_group_memory(
    chat: Chat, user: str, role: Role, admin: bool, allowed: bool
) -> None:
    item_id = await chat.remember("周五下午三点开周会", chat=GROUP, user=BOB)
    reply = await chat(f"/memory forget {item_id}", user=user, chat=GROUP, role=role, admin=admin)
    item = await chat.memory.items.get(item_id)
    assert item is not None
    if allowed:
        assert reply == t("memory_forgotten", "zh", id=item_id)
        assert item.status == "archived"
    else:
        assert reply == t("memory_forget_denied", "zh", id=item_id)
        assert item.status == "active"


async def test_a_group_admin_cannot_forget_another_groups_memory(chat: Chat) -> None:
    item_id = await chat.remember("别的群的事情", chat=OTHER_GROUP, user=BOB)
    reply = await chat(f"/memory forget {item_id}", user=CAROL, chat=GROUP, role=Role.OWNER)
    assert reply == t("memory_not_found", "zh", id=item_id)


async def test_other_peoples_memory_is_not_found_not_forbidden(chat: Chat) -> None:
    private = await chat.remember("我的生日是三月五日", user=ALICE, chat=ALICE_DM)
    for kw in [
        {"user": BOB, "chat": BOB_DM},
        {"user": BOB, "chat": GROUP, "role": Role.OWNER},
        {"user": ALICE, "chat": GROUP},  # Alice's own private items stay out of groups
        {"user": CAROL, "chat": GROUP, "admin": True},  # a bot admin's power is not a wider view
    ]:
        for verb in ("forget", "why"):
            reply = await chat(f"/memory {verb} {private}", **kw)  # type: ignore[arg-type]
            assert reply == t("memory_not_found", "zh", id=private)
    assert (await chat.memory.items.get(private)).status == "active"  # type: ignore[union-attr]


async def test_forget_usage_unknown_id_and_english(chat: Chat) -> None:
    assert await chat("/memory forget") == t("memory_forget_usage", "zh")
    assert await chat("/memory forget a b") == t("memory_forget_usage", "zh")
    assert await chat("/memory forget m_ffffff", lang="en") == t(
        "memory_not_found", "en", id="m_ffffff"
    )
    item_id = await chat.remember("周五开周会", chat=GROUP, user=BOB)
    denied = await chat(f"/memory forget {item_id}", user=CAROL, chat=GROUP, lang="en")
    assert denied == t("memory_forget_denied", "en", id=item_id)
    upper = await chat(f"/memory forget {item_id.upper()}", user=BOB, chat=GROUP, lang="en")
    assert upper == t("memory_forgotten", "en", id=item_id)


# why ----------------------------------------------------------------------------------------


async def test_why_shows_source_evidence_and_history(chat: Chat) -> None:
    item_id = await chat.remember("我喜欢乌龙茶")
    await chat("/memory remember 我喜欢乌龙茶")
    await chat(f"/memory forget {item_id}")
    reply = await chat(f"/memory why {item_id}")
    lines = reply.splitlines()
    assert lines[0] == f"{item_id} · preference · {t('memory_status_archived', 'zh')}"
    assert lines[1] == "我喜欢乌龙茶"
    assert "user_explicit" in lines[2] and f"user:{ALICE}" in lines[2]
    assert t("memory_why_evidence", "zh") in lines
    assert sum(1 for line in lines if line.startswith("- ") and ALICE_DM in line) == 2
    history_at = lines.index(t("memory_why_history", "zh"))
    events = lines[history_at + 1 :]
    assert [e.split(" · ")[0].rsplit(" ", 1)[1] for e in events] == ["创建", "合并", "归档"]
    assert all(ALICE in e and re.match(r"- \d{4}-\d{2}-\d{2} \d{2}:\d{2} ", e) for e in events)


async def test_why_links_superseded_items_both_ways(chat: Chat, memory: MemoryService) -> None:
    def drink(text: str) -> Candidate:
        return Candidate(
            scope=f"user:{ALICE}",
            kind="preference",
            content=text,
            source="user_explicit",
            confidence=0.9,
            subject_user=ALICE,
            slot="pref:drink",
            evidence=(Evidence(chat=ALICE_DM, message_id="x1", time=time.time(), quote=text),),
        )

    old = (await memory.items.propose(drink("最喜欢喝咖啡"), ALICE)).item_id
    new = (await memory.items.propose(drink("最喜欢喝乌龙茶"), ALICE)).item_id
    assert old and new
    old_reply = await chat(f"/memory why {old}", lang="en")
    assert old_reply.splitlines()[0].endswith("superseded")
    assert t("memory_why_replaced_by", "en", id=new) in old_reply
    assert "“最喜欢喝咖啡”" in old_reply  # the quote, said in this very chat
    new_reply = await chat(f"/memory why {new}", lang="en")
    assert t("memory_why_supersedes", "en", id=old) in new_reply
    assert "created" in new_reply


async def test_why_hides_quotes_from_other_chats(chat: Chat, memory: MemoryService) -> None:
    result = await memory.items.propose(
        Candidate(
            scope=f"user:{ALICE}",
            kind="fact",
            content="Alice 会说日语",
            source="user_explicit",
            sensitivity="public",
            subject_user=ALICE,
            evidence=(Evidence(chat=ALICE_DM, time=time.time(), quote="私下说的原话"),),
        ),
        ALICE,
    )
    reply = await chat(f"/memory why {result.item_id}", user=ALICE, chat=GROUP)
    assert "Alice 会说日语" in reply and "私下说的原话" not in reply
    assert t("memory_why_no_evidence", "zh") not in reply


async def test_why_usage(chat: Chat) -> None:
    assert await chat("/memory why") == t("memory_why_usage", "zh")


# review -------------------------------------------------------------------------------------


def _extracted(scope: str, text: str) -> Candidate:
    return Candidate(scope=scope, kind="fact", content=text, source="rule_extract", confidence=0.9)


@pytest.fixture
async def pending(store: SqliteStore) -> tuple[MemoryService, str, str]:
    """Manual review: one candidate in g1's memory, one in Bob's."""
    memory = MemoryService(store, mode="manual_review")
    group = await memory.items.propose(_extracted(f"chat:{GROUP}", "群里周五聚餐"), "system")
    bob = await memory.items.propose(_extracted(f"user:{BOB}", "Bob 在学吉他"), "system")
    assert group.candidate_id and bob.candidate_id and group.outcome == "pending"
    return memory, group.candidate_id, bob.candidate_id


async def test_bot_admin_reviews_everything(
    store: SqliteStore, pending: tuple[MemoryService, str, str]
) -> None:
    memory, group_c, bob_c = pending
    chat = Chat(store, memory)
    listing = await chat("/memory review", user=CAROL, chat=BOB_DM, admin=True)
    assert listing.splitlines()[0] == t("memory_review_header", "zh")
    assert group_c in listing and bob_c in listing and "Bob 在学吉他" in listing
    accepted = await chat(f"/memory review accept {bob_c}", user=CAROL, admin=True)
    item_id = ITEM_ID.search(accepted)
    assert item_id and accepted == t(
        "memory_review_accepted", "zh", id=bob_c, item=item_id.group(0)
    )
    rejected = await chat(f"/memory review reject {group_c}", user=CAROL, admin=True)
    assert rejected == t("memory_review_rejected", "zh", id=group_c)
    assert await chat("/memory review", admin=True) == t("memory_review_empty", "zh")
    again = await chat(f"/memory review accept {group_c}", admin=True)
    assert again == t("memory_review_not_found", "zh", id=group_c)


@pytest.mark.parametrize("role", [Role.OWNER, Role.ADMIN])
async def test_group_admins_review_their_own_chat_only(
    store: SqliteStore, pending: tuple[MemoryService, str, str], role: Role
) -> None:
    memory, group_c, bob_c = pending
    chat = Chat(store, memory)
    listing = await chat("/memory review", user=CAROL, chat=GROUP, role=role, lang="en")
    assert group_c in listing and bob_c not in listing
    other = await chat(f"/memory review accept {bob_c}", user=CAROL, chat=GROUP, role=role)
    assert other == t("memory_review_not_found", "zh", id=bob_c)
    elsewhere = await chat("/memory review", user=CAROL, chat=OTHER_GROUP, role=role)
    assert elsewhere == t("memory_review_empty", "zh")
    merged = await chat(f"/memory review accept {group_c}", user=CAROL, chat=GROUP, role=role)
    assert merged.startswith("已接受") and ITEM_ID.search(merged)


@pytest.mark.parametrize(
    ("user", "where", "role"),
    [(BOB, GROUP, Role.MEMBER), (BOB, BOB_DM, Role.MEMBER), (BOB, BOB_DM, Role.OWNER)],
)
async def test_others_may_not_review(
    store: SqliteStore, pending: tuple[MemoryService, str, str], user: str, where: str, role: Role
) -> None:
    memory, group_c, bob_c = pending
    chat = Chat(store, memory)
    for text in (
        "/memory review",
        f"/memory review accept {bob_c}",
        f"/memory review reject {group_c}",
    ):
        assert await chat(text, user=user, chat=where, role=role) == t("memory_review_denied", "zh")
        assert await chat(text, user=user, chat=where, role=role, lang="en") == t(
            "memory_review_denied", "en"
        )
    assert count(store, "memory_items") == 0


async def test_review_usage(chat: Chat) -> None:
    for text in ("/memory review maybe c_1", "/memory review accept", "/memory review reject a b"):
        assert await chat(text, admin=True) == t("memory_review_usage", "zh")


async def test_review_merges_into_an_existing_item(
    store: SqliteStore, pending: tuple[MemoryService, str, str]
) -> None:
    memory, group_c, _ = pending
    existing = await memory.items.remember(
        "群里周五聚餐", chat=ChatKey.parse(GROUP), user=UserKey.parse(BOB)
    )
    chat = Chat(store, memory)
    reply = await chat(f"/memory review accept {group_c}", admin=True, lang="en")
    assert reply == t("memory_review_merged", "en", id=group_c, item=existing.item_id)


# the actor ----------------------------------------------------------------------------------


def test_actor_role_counts_only_in_groups(store: SqliteStore, memory: MemoryService) -> None:
    private = CommandContext(
        envelope("x", chat=ALICE_DM, user=ALICE, role=Role.OWNER), "zh", False, memory
    )
    group = CommandContext(
        envelope("x", chat=GROUP, user=ALICE, role=Role.ADMIN), "zh", True, memory
    )
    assert memory_commands.actor_of(private).chat is None
    actor = memory_commands.actor_of(group)
    assert (actor.label, str(actor.chat), actor.role, actor.is_bot_admin) == (
        ALICE,
        GROUP,
        Role.ADMIN,
        True,
    )
