"""The store contract, part 3: profile bullets (the Ethan layer 3), for every backend.

As in `test_store.py`, only the `Store` protocol and the domain types are used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from nahida.memory.core.models import ProfileEntry
from nahida.memory.store.base import Store
from nahida.memory.store.values import SectionEntry

T0 = 1_780_000_000.0
ALICE, BOB = "qq:alice", "qq:bob"
Factory = Callable[[Path], Store]  # as in conftest.py


def bullet(entry_id: str, text: str = "喜欢乌龙茶", **fields: Any) -> ProfileEntry:
    values: dict[str, Any] = {
        "user": ALICE,
        "section": "工作与沟通方式",
        "created_at": T0,
        "updated_at": T0,
        **fields,
    }
    return ProfileEntry(entry_id, text=text, **values)


def add(store: Store, *entries: ProfileEntry) -> None:
    added = store.write_sync(lambda tx: [tx.profiles.add(e, f"tokens of {e.id}") for e in entries])
    assert added == [True] * len(entries)


def of_user(store: Store, user: str = ALICE, public_only: bool = False) -> list[str]:
    return [e.id for e in store.read_sync(lambda tx: tx.profiles.of_user(user, public_only))]


def test_an_entry_comes_back_as_stored_and_a_taken_id_is_refused(store: Store) -> None:
    entry = bullet("p_000001", sensitivity="public", source="user_explicit", chat="qq:group:1")
    add(store, entry)
    assert store.read_sync(lambda tx: tx.profiles.get("p_000001")) == entry
    assert store.read_sync(lambda tx: tx.profiles.get("p_000002")) is None
    again = replace(entry, text="something else")
    assert store.write_sync(lambda tx: tx.profiles.add(again, "")) is False
    assert store.read_sync(lambda tx: tx.profiles.get("p_000001")) == entry


def test_of_user_is_active_oldest_first_and_public_only_when_asked(store: Store) -> None:
    add(
        store,
        bullet("p_000003", created_at=T0 + 2),
        bullet("p_000001", created_at=T0, sensitivity="public"),
        bullet("p_000002", created_at=T0 + 1, section="基础特征"),
        bullet("p_000004", created_at=T0 + 1),  # the same moment: in the order written
        bullet("p_000005", status="archived"),
        bullet("p_000006", user=BOB, sensitivity="public"),
    )
    assert of_user(store) == ["p_000001", "p_000002", "p_000004", "p_000003"]
    assert of_user(store, public_only=True) == ["p_000001"]
    assert of_user(store, BOB, public_only=True) == ["p_000006"]
    assert of_user(store, "qq:nobody") == []


def test_of_section_carries_the_tokens_of_the_active_entries_of_one_section(store: Store) -> None:
    add(
        store,
        bullet("p_000001"),
        bullet("p_000002", section="基础特征"),
        bullet("p_000003", sensitivity="public", created_at=T0 + 1),
        bullet("p_000004", status="archived"),
    )
    found = store.read_sync(lambda tx: tx.profiles.of_section(ALICE, "工作与沟通方式", False))
    assert [(e.entry.id, e.tokens) for e in found] == [
        ("p_000001", "tokens of p_000001"),
        ("p_000003", "tokens of p_000003"),
    ]
    assert all(isinstance(e, SectionEntry) for e in found)
    public = store.read_sync(lambda tx: tx.profiles.of_section(ALICE, "工作与沟通方式", True))
    assert [e.entry.id for e in public] == ["p_000003"]
    assert store.read_sync(lambda tx: tx.profiles.of_section(BOB, "基础特征", False)) == []


def test_set_status_archives_and_restores_and_names_a_missing_entry(store: Store) -> None:
    add(store, bullet("p_000001"))
    assert store.write_sync(lambda tx: tx.profiles.set_status("p_000001", "archived", T0 + 5))
    archived = store.read_sync(lambda tx: tx.profiles.get("p_000001"))
    assert archived is not None and (archived.status, archived.updated_at) == ("archived", T0 + 5)
    assert archived.created_at == T0
    assert of_user(store) == []
    assert store.write_sync(lambda tx: tx.profiles.set_status("p_000001", "active", T0 + 6))
    assert of_user(store) == ["p_000001"]
    assert not store.write_sync(lambda tx: tx.profiles.set_status("p_000009", "archived", T0))


def test_a_status_or_sensitivity_outside_the_schema_is_refused(store: Store) -> None:
    with pytest.raises(Exception):  # noqa: B017 (each backend raises its own integrity error)
        add(store, bullet("p_000001", sensitivity="secret"))
    add(store, bullet("p_000002"))
    with pytest.raises(Exception):  # noqa: B017
        store.write_sync(lambda tx: tx.profiles.set_status("p_000002", "deleted", T0))
    assert of_user(store) == ["p_000002"]


def test_users_are_the_people_with_an_active_entry(store: Store) -> None:
    assert store.read_sync(lambda tx: tx.profiles.users()) == []
    add(
        store,
        bullet("p_000001", user=BOB),
        bullet("p_000002", user=ALICE),
        bullet("p_000003", user=ALICE),
        bullet("p_000004", user="qq:carol", status="archived"),
    )
    assert store.read_sync(lambda tx: tx.profiles.users()) == [ALICE, BOB]


def test_entries_outlive_reopening_the_store(backend: Factory, tmp_path: Path) -> None:
    first = backend(tmp_path)
    add(first, bullet("p_000001"))
    first.close()
    again = backend(tmp_path)
    try:
        assert of_user(again) == ["p_000001"]
    finally:
        again.close()
