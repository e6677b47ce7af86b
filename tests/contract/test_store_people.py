"""The store contract for people (the speakers of user turns, and users with a profile) and for
the recalls recorded for answered turns, for every backend.

As in `test_store.py`, only the `Store` protocol and the domain types are used.
"""

from __future__ import annotations

from pathlib import Path

from nahida.memory.core.models import NewTurn, ProfileEntry
from nahida.memory.core.tokenize import index_text
from nahida.memory.store.base import Store, Tx
from nahida.memory.store.values import NameUse, RecallRecord, RecallTally, Seen
from tests.contract.conftest import Factory

T0 = 1_780_000_000.0
DAY = 86_400.0
GROUP = "qq:group:1"
DM = "qq:private:u1"


def speak(
    store: Store,
    session_id: str,
    chat: str,
    *said: tuple[str | None, str | None, float],
    role: str = "user",
) -> list[int]:
    """Store turns of (speaker, name, time) in a session (made when missing); their ids."""

    def run(tx: Tx) -> list[int]:
        tx.sessions.create(session_id, chat, "t", T0)
        made = []
        for speaker, name, at in said:
            turn = NewTurn(chat, role, "hi there", at, speaker=speaker, speaker_name=name)
            made.append(tx.turns.add(session_id, turn, index_text(turn.content)))
        return made

    return store.write_sync(run)


def fold(store: Store, limit: int = 1000) -> int:
    """Take every turn stored since the last fold into people; how many turns that was."""
    folded = 0
    while (taken := store.write_sync(lambda tx: tx.people.fold(limit))) > 0:
        folded += taken
    return folded


def names(store: Store, *users: str) -> list[NameUse]:
    return store.read_sync(lambda tx: tx.people.names(users))


def people(store: Store, offset: int = 0, limit: int = 50) -> tuple[list[Seen], int]:
    found = store.read_sync(lambda tx: tx.people.page(offset, limit))
    return found.rows, found.total


def profile(store: Store, entry_id: str, user: str, status: str = "active") -> None:
    entry = ProfileEntry(entry_id, user, "基础特征", "likes tea", status=status)
    assert store.write_sync(lambda tx: tx.profiles.add(entry, "likes tea"))


# people ----------------------------------------------------------------------------------------


def test_people_are_speakers_latest_seen_first_then_those_with_only_a_profile(
    store: Store,
) -> None:
    assert people(store) == ([], 0)
    assert store.read_sync(lambda tx: tx.people.count()) == 0
    speak(store, "s1", GROUP, ("qq:u1", "Alice", T0), ("qq:u2", "Bob", T0 + 5))
    speak(store, "s2", DM, ("qq:u1", None, T0 + 9))
    speak(store, "s3", GROUP, ("qq:u3", "Cy", T0 + 5))  # a tie: by user
    speak(store, "s3", GROUP, (None, "nobody", T0 + 20))  # no speaker: nobody
    speak(store, "s3", GROUP, ("qq:u9", "bot?", T0 + 30), role="assistant")  # not a user turn
    profile(store, "p1", "qq:u4")
    profile(store, "p2", "qq:u1")  # a speaker too: once
    profile(store, "p3", "qq:u5", status="archived")  # no active bullet: nobody
    assert people(store) == ([Seen("qq:u1", None, 0), Seen("qq:u4", None, 0)], 2)  # no fold yet
    assert fold(store) == 6
    expected = [
        Seen("qq:u1", T0 + 9, 2),
        Seen("qq:u2", T0 + 5, 1),
        Seen("qq:u3", T0 + 5, 1),
        Seen("qq:u4", None, 0),
    ]
    assert people(store) == (expected, 4)
    assert people(store, offset=2, limit=1) == ([expected[2]], 4)
    assert store.read_sync(lambda tx: tx.people.count()) == 4


def test_names_are_each_name_a_person_spoke_under_in_each_chat(store: Store) -> None:
    speak(
        store,
        "s1",
        GROUP,
        ("qq:u1", "Alice", T0 + 2),
        ("qq:u1", "Alice", T0 + 1),  # stored later, said earlier
        ("qq:u1", "Ally", T0 + 3),
        ("qq:u2", "Bob", T0),
    )
    speak(store, "s2", DM, ("qq:u1", None, T0 + 1), ("qq:u1", "", T0 + 4))  # no name, twice
    fold(store)
    assert names(store, "qq:u1", "qq:u2", "qq:u7") == [
        NameUse("qq:u1", None, DM, 2, T0 + 1, T0 + 4),
        NameUse("qq:u1", "Ally", GROUP, 1, T0 + 3, T0 + 3),
        NameUse("qq:u1", "Alice", GROUP, 2, T0 + 1, T0 + 2),
        NameUse("qq:u2", "Bob", GROUP, 1, T0, T0),
    ]
    assert names(store) == []


def test_deleting_a_session_takes_its_turns_out_of_people(store: Store) -> None:
    speak(store, "s1", GROUP, ("qq:u1", "Alice", T0), ("qq:u2", "Bob", T0 + 1))
    speak(store, "s2", GROUP, ("qq:u1", "Alice", T0 + 5), ("qq:u1", "Alice", T0 + 7))
    speak(store, "s3", GROUP, ("qq:u1", "Alice", T0 + 9))
    fold(store)
    store.write_sync(lambda tx: tx.sessions.delete("s3"))  # the latest: last seen goes back
    assert names(store, "qq:u1") == [NameUse("qq:u1", "Alice", GROUP, 3, T0, T0 + 7)]
    store.write_sync(lambda tx: tx.sessions.delete("s1"))  # the first: first seen moves on
    assert names(store, "qq:u1", "qq:u2") == [NameUse("qq:u1", "Alice", GROUP, 2, T0 + 5, T0 + 7)]
    assert people(store) == ([Seen("qq:u1", T0 + 7, 2)], 1)
    store.write_sync(lambda tx: tx.sessions.delete("s2"))
    assert people(store) == ([], 0)
    assert names(store, "qq:u1") == []


def test_people_outlive_reopening_the_store(backend: Factory, tmp_path: Path) -> None:
    store = backend(tmp_path)
    speak(store, "s1", GROUP, ("qq:u1", "Alice", T0))
    fold(store)
    speak(store, "s1", GROUP, ("qq:u1", "Alice", T0 + 1))  # not folded yet
    store.close()
    again = backend(tmp_path)
    assert names(again, "qq:u1") == [NameUse("qq:u1", "Alice", GROUP, 1, T0, T0)]
    assert fold(again) == 1
    assert names(again, "qq:u1") == [NameUse("qq:u1", "Alice", GROUP, 2, T0, T0 + 1)]
    again.close()


def test_a_fold_takes_in_the_turns_stored_since_the_last_a_few_at_a_time(store: Store) -> None:
    assert store.write_sync(lambda tx: tx.people.fold(10)) == 0
    speak(store, "s1", GROUP, *[("qq:u1", "Alice", T0 + n) for n in range(3)])
    speak(store, "s1", GROUP, ("qq:u9", None, T0 + 3), role="assistant")  # taken, not a person
    speak(store, "s2", DM, ("qq:u1", None, T0 + 4))
    assert names(store, "qq:u1") == [] and people(store) == ([], 0)  # not folded yet
    assert store.write_sync(lambda tx: tx.people.fold(2)) == 2
    assert names(store, "qq:u1") == [NameUse("qq:u1", "Alice", GROUP, 2, T0, T0 + 1)]
    assert store.write_sync(lambda tx: tx.people.fold(2)) == 2
    assert store.write_sync(lambda tx: tx.people.fold(2)) == 1
    assert store.write_sync(lambda tx: tx.people.fold(2)) == 0
    assert names(store, "qq:u1") == [
        NameUse("qq:u1", None, DM, 1, T0 + 4, T0 + 4),
        NameUse("qq:u1", "Alice", GROUP, 3, T0, T0 + 2),
    ]


def test_turns_deleted_before_a_fold_never_count_and_new_ones_after_a_delete_do(
    store: Store,
) -> None:
    speak(store, "s1", GROUP, ("qq:u1", "Alice", T0))
    fold(store)
    speak(store, "s2", GROUP, ("qq:u1", "Alice", T0 + 5), ("qq:u2", "Bob", T0 + 6))
    store.write_sync(lambda tx: tx.sessions.delete("s2"))  # never folded: nothing to take out
    assert names(store, "qq:u1", "qq:u2") == [NameUse("qq:u1", "Alice", GROUP, 1, T0, T0)]
    assert fold(store) == 0
    speak(store, "s3", GROUP, ("qq:u1", "Ally", T0 + 7))
    fold(store)
    store.write_sync(lambda tx: tx.sessions.delete("s3"))  # the latest turns, folded
    speak(store, "s4", GROUP, ("qq:u2", "Bob", T0 + 8), ("qq:u2", "Bob", T0 + 9))
    assert fold(store) == 2  # turns stored after a delete are new, whatever their ids
    assert names(store, "qq:u1", "qq:u2") == [
        NameUse("qq:u1", "Alice", GROUP, 1, T0, T0),
        NameUse("qq:u2", "Bob", GROUP, 2, T0 + 8, T0 + 9),
    ]


# recalls ---------------------------------------------------------------------------------------


def recall(turn_id: int, at: float, items: int = 1, turns: int = 0) -> RecallRecord:
    return RecallRecord(
        turn_id,
        GROUP,
        at,
        tuple(f"m_{n}" for n in range(items)),
        tuple(range(100, 100 + turns)),
        ("e_1",),
    )


def test_a_turns_recall_is_recorded_replaced_and_read_by_turn(store: Store) -> None:
    ids = speak(store, "s1", GROUP, ("qq:u1", "Alice", T0), ("qq:u1", "Alice", T0 + 1))
    first = recall(ids[0], T0, items=2, turns=1)
    store.write_sync(lambda tx: tx.recalls.add(first))
    store.write_sync(lambda tx: tx.recalls.add(recall(ids[1], T0 + 1)))
    again = recall(ids[1], T0 + 2, items=0, turns=2)
    store.write_sync(lambda tx: tx.recalls.add(again))
    assert store.read_sync(lambda tx: tx.recalls.of_turns([ids[1], ids[0], 999])) == {
        ids[0]: first,
        ids[1]: again,
    }
    assert first.hits == 4
    assert store.read_sync(lambda tx: tx.recalls.of_turns([])) == {}


def test_a_recall_of_a_turn_not_stored_is_not_kept(store: Store) -> None:
    store.write_sync(lambda tx: tx.recalls.add(recall(12345, T0)))
    assert store.read_sync(lambda tx: tx.recalls.of_turns([12345])) == {}
    assert store.read_sync(lambda tx: tx.recalls.tally([(T0 - 1, T0 + 1)])) == []


def test_recalls_go_with_their_turns(store: Store) -> None:
    ids = speak(store, "s1", GROUP, ("qq:u1", "Alice", T0))
    kept = speak(store, "s2", GROUP, ("qq:u1", "Alice", T0))
    store.write_sync(lambda tx: [tx.recalls.add(recall(i, T0)) for i in ids + kept])
    store.write_sync(lambda tx: tx.sessions.delete("s1"))
    assert list(store.read_sync(lambda tx: tx.recalls.of_turns(ids + kept))) == kept


def test_recall_tally_counts_recalls_and_hits_in_each_span(store: Store) -> None:
    ids = speak(store, "s1", GROUP, *[("qq:u1", "Alice", T0 + n) for n in range(4)])
    store.write_sync(
        lambda tx: [
            tx.recalls.add(record)
            for record in [
                recall(ids[0], T0 - 1),  # before the spans
                recall(ids[1], T0, items=2),  # 3 hits
                recall(ids[2], T0 + DAY - 1, items=1, turns=1),  # 3 hits
                recall(ids[3], T0 + 2 * DAY, items=0),  # 1 hit
            ]
        ]
    )
    spans = [(T0, T0 + DAY), (T0 + DAY, T0 + 2 * DAY), (T0 + 2 * DAY, T0 + 3 * DAY)]
    assert store.read_sync(lambda tx: tx.recalls.tally(spans)) == [
        RecallTally(0, 2, 6),
        RecallTally(2, 1, 1),
    ]
