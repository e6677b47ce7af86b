"""Upgrades of stored history that need memory's own rules, run once when memory opens.

A schema migration (`memory/store/`) changes tables; what needs the domain's code (the secret
screen, the tokenizer, how a title is cut) is done here instead, as a unit of work over the
`Tx` tables, and recorded as done in the store's named state so that it runs once per database.

`redact_history`: secrets out of the turns, their index text and the session titles of history
written before turns were stored redacted (it was the schema step `0007_redact_history`, which
now does nothing). A title cut from a turn that held a secret is cut again from the redacted turn.
"""

from __future__ import annotations

import time

from nahida.memory.core.models import session_title
from nahida.memory.core.safety import contains_secret, redact
from nahida.memory.core.tokenize import index_text
from nahida.memory.store.base import Store, Tx

REDACTED = "upgrade.redact_history"  # the state key that says it was done
EVERY_SESSION = 1 << 62  # a listing's limit that leaves none out


def redact_history(tx: Tx) -> int | None:
    """A unit: redact every stored turn and session title, once; how many turns it changed, or
    None when it was done before."""
    if tx.state.get(REDACTED) is not None:
        return None
    changed = 0
    for session in tx.sessions.latest(None, EVERY_SESSION):
        title = session.title
        for turn in tx.turns.of_session(session.id):
            if not contains_secret(turn.content):
                continue
            clean = redact(turn.content)
            tx.turns.rewrite(turn.id, clean, index_text(clean))
            changed += 1
            if title == session_title(turn.content):
                title = session_title(clean)
        if contains_secret(title):
            title = redact(title)
        if title != session.title:
            tx.sessions.retitle(session.id, title)
    tx.state.put(REDACTED, str(changed), time.time())
    return changed


def upgrade(store: Store) -> None:
    """Run the history upgrades this database has not had (a read finds them done, mostly). The
    screen and the tokenizer run inside the unit, on the store's thread, unlike a message's:
    this runs once, before memory serves anything."""
    if store.read_sync(lambda tx: tx.state.get(REDACTED)) is None:
        store.write_sync(redact_history)
