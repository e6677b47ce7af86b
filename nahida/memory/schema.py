"""Memory tables (DESIGN §3): items with their FTS index, candidates, and the append-only audit.

`memory_items_fts` holds only active items: archiving or superseding an item removes its row, so
status and visibility are both decided inside the MATCH. Its `scopes` column carries one token per
scope the item is visible under (see `nahida.memory.scopes.item_scope_keys`).
"""

from __future__ import annotations

MEMORY_TABLES = """
CREATE TABLE memory_items (
    id             TEXT PRIMARY KEY,
    scope          TEXT NOT NULL,
    kind           TEXT NOT NULL,
    title          TEXT NOT NULL DEFAULT '',
    content        TEXT NOT NULL,
    status         TEXT NOT NULL DEFAULT 'active'
                   CHECK (status IN ('active', 'archived', 'superseded', 'rejected')),
    confidence     REAL NOT NULL DEFAULT 0.5,
    importance     REAL NOT NULL DEFAULT 0.5,
    sensitivity    TEXT NOT NULL DEFAULT 'private' CHECK (sensitivity IN ('public', 'private')),
    source         TEXT NOT NULL,
    subject_user   TEXT,
    speaker_user   TEXT,
    slot           TEXT,
    evidence       TEXT NOT NULL DEFAULT '[]',
    supersedes     TEXT REFERENCES memory_items (id),
    valid_from     REAL,
    valid_until    REAL,
    last_accessed  REAL,
    access_count   INTEGER NOT NULL DEFAULT 0,
    created_at     REAL NOT NULL,
    updated_at     REAL NOT NULL
);
CREATE INDEX memory_items_by_scope ON memory_items (scope, status, kind);
CREATE INDEX memory_items_by_slot ON memory_items (scope, slot) WHERE slot IS NOT NULL;
CREATE VIRTUAL TABLE memory_items_fts USING fts5 (
    body, scopes, tokenize = 'unicode61 remove_diacritics 0'
);
CREATE TABLE memory_candidates (
    id             TEXT PRIMARY KEY,
    scope          TEXT NOT NULL,
    kind           TEXT NOT NULL,
    title          TEXT NOT NULL DEFAULT '',
    content        TEXT NOT NULL,
    confidence     REAL NOT NULL,
    importance     REAL NOT NULL,
    sensitivity    TEXT NOT NULL,
    source         TEXT NOT NULL,
    subject_user   TEXT,
    speaker_user   TEXT,
    slot           TEXT,
    evidence       TEXT NOT NULL DEFAULT '[]',
    status         TEXT NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending', 'accepted', 'rejected', 'merged', 'refused')),
    item_id        TEXT,
    reason         TEXT,
    created_at     REAL NOT NULL,
    decided_at     REAL,
    decided_by     TEXT
);
CREATE INDEX memory_candidates_pending ON memory_candidates (status, scope);
CREATE TABLE memory_events (
    id       INTEGER PRIMARY KEY,
    item_id  TEXT NOT NULL,
    action   TEXT NOT NULL,
    actor    TEXT NOT NULL,
    before   TEXT,
    after    TEXT,
    reason   TEXT,
    time     REAL NOT NULL
);
CREATE INDEX memory_events_by_item ON memory_events (item_id, id);
CREATE TRIGGER memory_events_append_only_update BEFORE UPDATE ON memory_events
BEGIN
    SELECT RAISE(ABORT, 'memory_events is append-only');
END;
CREATE TRIGGER memory_events_append_only_delete BEFORE DELETE ON memory_events
BEGIN
    SELECT RAISE(ABORT, 'memory_events is append-only');
END
"""
