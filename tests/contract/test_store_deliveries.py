"""The store contract, deliveries: which stored turn a message is (ids are reused), and what
became of the reply to each message due an answer, for every backend."""

from __future__ import annotations

from nahida.memory.store.base import Store
from nahida.memory.store.values import Delivery, KnownMessage
from tests.contract.test_store import CHAT, OTHER, T0, add_turns, new_session, said


def find(
    store: Store, chat: str, message_id: str, at: float, content: str, role: str = "user"
) -> KnownMessage | None:
    return store.read_sync(lambda tx: tx.turns.message(chat, role, message_id, at, content))


def test_a_message_is_its_chat_its_id_and_its_time_or_words(store: Store) -> None:
    new_session(store, "s1")
    (asked,) = add_turns(store, "s1", said("hi", T0, message_id="7"))
    (observed,) = add_turns(store, "s1", said("talk", T0 + 1, message_id="8", addressed=False))
    (reply,) = add_turns(store, "s1", said("hello", T0 + 2, role="assistant", message_id="9"))

    assert find(store, CHAT, "7", T0, "hi") == KnownMessage(asked, "s1", True, "pending")
    assert find(store, CHAT, "7", T0 + 99, "hi") is not None  # redelivered without its time
    assert find(store, CHAT, "7", T0, "other words") is not None  # the same moment
    assert find(store, CHAT, "7", T0 + 99, "other words") is None  # an id used again
    assert find(store, OTHER, "7", T0, "hi") is None  # another chat's message
    assert find(store, CHAT, "8", T0 + 1, "talk") == KnownMessage(observed, "s1", False, None)
    assert find(store, CHAT, "9", T0 + 2, "hello") is None  # the bot's id is not a member's
    assert find(store, CHAT, "9", T0 + 2, "hello", "assistant") == KnownMessage(
        reply, "s1", True, None
    )


def test_two_turns_may_share_a_message_id(store: Store) -> None:
    new_session(store, "s1")
    first, second = add_turns(
        store, "s1", said("before", T0, message_id="7"), said("after", T0 + 60, message_id="7")
    )
    assert find(store, CHAT, "7", T0, "before") == KnownMessage(first, "s1", True, "pending")
    assert find(store, CHAT, "7", T0 + 60, "after") == KnownMessage(second, "s1", True, "pending")


def test_fates_of_messages_due_an_answer(store: Store) -> None:
    new_session(store, "s1")
    a, b, c, _observed, reply = add_turns(
        store,
        "s1",
        said("a", T0, message_id="1"),
        said("b", T0 + 1, message_id="2"),
        said("c", T0 + 2, message_id="3"),
        said("talk", T0 + 3, message_id="4", addressed=False),
        said("to a", T0 + 4, role="assistant", message_id="5"),
    )
    assert store.read_sync(lambda tx: tx.turns.fates()) == {"pending": 3}

    def settle(turn_id: int, fate: str, error: str | None) -> None:
        store.write_sync(lambda tx: tx.turns.set_fate(turn_id, fate, error))  # type: ignore[arg-type]

    settle(a, "delivered", None)
    settle(reply, "delivered", None)
    store.write_sync(lambda tx: tx.turns.mark_error(b, "provider failed"))
    settle(b, "undelivered", "no connection")
    settle(c, "undelivered", "connection closed")
    assert store.read_sync(lambda tx: tx.turns.fates()) == {"delivered": 1, "undelivered": 2}
    assert store.read_sync(lambda tx: tx.turns.deliveries("undelivered", 5)) == [
        Delivery(c, CHAT, "3", T0 + 2, "undelivered", "connection closed"),
        Delivery(b, CHAT, "2", T0 + 1, "undelivered", "provider failed; no connection"),
    ]
    assert [
        d.turn_id for d in store.read_sync(lambda tx: tx.turns.deliveries("undelivered", 1))
    ] == [c]
    assert find(store, CHAT, "2", T0 + 1, "b") == KnownMessage(b, "s1", True, "undelivered")

    settle(b, "delivered", None)  # answered when it came again
    assert store.read_sync(lambda tx: tx.turns.fates()) == {"delivered": 2, "undelivered": 1}
    assert store.read_sync(lambda tx: tx.turns.deliveries("pending", 5)) == []


def test_a_command_answered_is_known_by_its_chat_id_and_time(store: Store) -> None:
    from nahida.memory.store.values import CommandMessage

    command = CommandMessage(CHAT, "7", T0)
    assert not store.read_sync(lambda tx: tx.commands.answered(command))
    store.write_sync(lambda tx: tx.commands.add(command, T0 + 1))
    store.write_sync(lambda tx: tx.commands.add(command, T0 + 2))  # twice: no error
    assert store.read_sync(lambda tx: tx.commands.answered(command))
    for other in (CommandMessage(OTHER, "7", T0), CommandMessage(CHAT, "7", T0 + 60)):
        assert not store.read_sync(lambda tx, other=other: tx.commands.answered(other))
    later = CommandMessage(CHAT, "8", T0 + 40 * 86_400)
    store.write_sync(lambda tx: tx.commands.add(later, T0 + 40 * 86_400))  # a month on
    assert not store.read_sync(lambda tx: tx.commands.answered(command))  # the old one went
