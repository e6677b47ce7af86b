"""The tables of the PostgreSQL store (DESIGN §3, §16), one constant per group of tables, each the
SQL of one migration step (`migrations.py`).

The columns follow the SQLite store's final schema: times are double precision (the seam passes
epoch seconds as floats), turn ids and other counters BIGINT identities, JSON is jsonb.

Lexical search (`lexical.py`): a row that is searched carries `fts` (a tsvector of its index
text's words: English words stemmed as FTS5's `porter` stems them, no stop words, CJK tokens as
they are) and `fts_len` (its length as FTS5 counts it: the body's tokens and the scope
keys), with a GIN index on `fts`; a row out of the index has `fts` NULL. Visibility is an
ordinary filter on the row's columns inside the same query.
"""

from __future__ import annotations

# A row's lexemes are made here from the words `lexical.words` cut its index text into (folded to
# lower case): an ASCII word of three letters or more is stemmed by Porter's algorithm (Snowball's
# `porter`, the one FTS5's `porter` applies; it keeps every word: no stop words), any other word
# is its own lexeme, as in FTS5. `nahida_tsvector` places them one after another (a phrase's
# words stand in a row), `nahida_query` is a phrase of lexemes as a tsquery, `nahida_tf` counts a
# phrase in a tsvector and `nahida_any` ORs tsqueries: what the BM25 in `lexical.py` needs. A
# lexeme is letters and digits only, so quoting it is just its quotes; one longer than a
# tsvector takes is left out (its place still counts).
TEXT_SEARCH = """
CREATE TEXT SEARCH DICTIONARY nahida_porter (TEMPLATE = snowball, LANGUAGE = porter);
CREATE FUNCTION nahida_lexemes(words text[]) RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(
        CASE WHEN length(w) >= 3 AND octet_length(w) = length(w)
            THEN coalesce((ts_lexize('nahida_porter', w))[1], w) ELSE w END
        ORDER BY n), '{}')
    FROM unnest(words) WITH ORDINALITY AS u (w, n)
$$;
CREATE FUNCTION nahida_tsvector(words text[]) RETURNS tsvector
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(string_agg('''' || l || ''':' || least(n, 16383), ' '), '')::tsvector
    FROM unnest(nahida_lexemes(words)) WITH ORDINALITY AS u (l, n)
    WHERE octet_length(l) < 2047
$$;
CREATE FUNCTION nahida_query(lexemes text[]) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT string_agg('''' || l || '''', ' <-> ' ORDER BY n)::tsquery
    FROM unnest(lexemes) WITH ORDINALITY AS u (l, n)
    WHERE octet_length(l) < 2047
$$;
CREATE FUNCTION nahida_tf(v tsvector, phrase text[]) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT count(*)::integer
    FROM unnest(v) AS u (lexeme, positions, weights), unnest(u.positions) AS p (pos)
    WHERE u.lexeme = phrase[1] AND NOT EXISTS (
        SELECT 1 FROM generate_subscripts(phrase, 1) AS i
        WHERE i > 1 AND NOT EXISTS (
            SELECT 1 FROM unnest(v) AS w (lexeme, positions, weights)
            WHERE w.lexeme = phrase[i] AND p.pos + i - 1 = ANY (w.positions)
        )
    )
$$;
CREATE AGGREGATE nahida_any (tsquery) (SFUNC = tsquery_or, STYPE = tsquery);
"""

SESSIONS_AND_TURNS = """
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    chat        TEXT NOT NULL,
    title       TEXT NOT NULL,
    created_at  DOUBLE PRECISION NOT NULL,
    updated_at  DOUBLE PRECISION NOT NULL,
    turn_count  BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_chat ON sessions (chat, updated_at, turn_count);
CREATE INDEX sessions_by_update ON sessions (updated_at, id);
CREATE TABLE turns (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    chat          TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system')),
    speaker       TEXT,
    speaker_name  TEXT,
    content       TEXT NOT NULL,
    message_id    TEXT,
    time          DOUBLE PRECISION NOT NULL,
    tool_calls    JSONB,
    addressed     BOOLEAN NOT NULL DEFAULT TRUE,
    error         TEXT,
    hidden_by     TEXT,
    earlier_for   TEXT,
    delivery      TEXT CHECK (delivery IN ('delivered', 'undelivered', 'none')),
    fts           TSVECTOR,
    fts_len       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX turns_by_session ON turns (session_id, id);
CREATE INDEX turns_by_chat_time ON turns (chat, time);
CREATE INDEX turns_by_message ON turns (chat, message_id) WHERE message_id IS NOT NULL;
CREATE INDEX turns_hidden_by ON turns (hidden_by) WHERE hidden_by IS NOT NULL;
CREATE INDEX turns_earlier_for ON turns (earlier_for) WHERE earlier_for IS NOT NULL;
CREATE INDEX turns_undelivered ON turns (id) WHERE delivery = 'undelivered';
CREATE INDEX turns_fts ON turns USING gin (fts);
CREATE TABLE chats (
    chat             TEXT PRIMARY KEY,
    current_session  TEXT REFERENCES sessions (id) ON DELETE SET NULL,
    last_active      DOUBLE PRECISION NOT NULL
);
"""

ITEMS = """
CREATE TABLE memory_items (
    id             TEXT PRIMARY KEY,
    scope          TEXT NOT NULL,
    kind           TEXT NOT NULL,
    title          TEXT NOT NULL DEFAULT '',
    content        TEXT NOT NULL,
    status         TEXT NOT NULL DEFAULT 'active'
                   CHECK (status IN ('active', 'archived', 'superseded', 'rejected')),
    confidence     DOUBLE PRECISION NOT NULL DEFAULT 0.5,
    importance     DOUBLE PRECISION NOT NULL DEFAULT 0.5,
    sensitivity    TEXT NOT NULL DEFAULT 'private' CHECK (sensitivity IN ('public', 'private')),
    source         TEXT NOT NULL,
    subject_user   TEXT,
    speaker_user   TEXT,
    slot           TEXT,
    evidence       JSONB NOT NULL DEFAULT '[]',
    supersedes     TEXT REFERENCES memory_items (id),
    valid_from     DOUBLE PRECISION,
    valid_until    DOUBLE PRECISION,
    last_accessed  DOUBLE PRECISION,
    access_count   BIGINT NOT NULL DEFAULT 0,
    created_at     DOUBLE PRECISION NOT NULL,
    updated_at     DOUBLE PRECISION NOT NULL,
    fts_body       TEXT,
    fts            TSVECTOR,
    fts_len        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX memory_items_by_scope ON memory_items (scope, status, kind);
CREATE INDEX memory_items_by_slot ON memory_items (scope, slot) WHERE slot IS NOT NULL;
CREATE INDEX memory_items_listed ON memory_items (updated_at DESC, id);
CREATE INDEX memory_items_by_created ON memory_items (created_at, source);
CREATE INDEX memory_items_by_supersedes ON memory_items (supersedes) WHERE supersedes IS NOT NULL;
CREATE INDEX memory_items_by_subject ON memory_items (subject_user) WHERE subject_user IS NOT NULL;
CREATE INDEX memory_items_fts ON memory_items USING gin (fts);
"""

# The audit trail is append-only (DESIGN §3): every delete aborts, and so does every update but
# the one a purge makes (docs/memory.md): an event's text (before, after, reason) blanked, nothing
# else changed, and only once the trail records the item's purge (SQLite's 0017).
EVENTS = """
CREATE TABLE memory_events (
    id       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item_id  TEXT NOT NULL,
    action   TEXT NOT NULL,
    actor    TEXT NOT NULL,
    before   JSONB,
    after    JSONB,
    reason   TEXT,
    time     DOUBLE PRECISION NOT NULL
);
CREATE INDEX memory_events_by_item ON memory_events (item_id, id);
CREATE FUNCTION memory_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE'
        AND NEW.id = OLD.id AND NEW.item_id = OLD.item_id AND NEW.action = OLD.action
        AND NEW.actor = OLD.actor AND NEW.time = OLD.time
        AND NEW.before IS NULL AND NEW.after IS NULL AND NEW.reason IS NULL
        AND OLD.action <> 'purged'
        AND EXISTS (
            SELECT 1 FROM memory_events p WHERE p.item_id = OLD.item_id AND p.action = 'purged'
        )
    THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        RAISE EXCEPTION 'memory_events is append-only: only a purge blanks an event''s text';
    END IF;
    RAISE EXCEPTION 'memory_events is append-only';
END
$$;
CREATE TRIGGER memory_events_append_only BEFORE UPDATE OR DELETE ON memory_events
    FOR EACH ROW EXECUTE FUNCTION memory_events_append_only();
CREATE TRIGGER memory_events_no_truncate BEFORE TRUNCATE ON memory_events
    FOR EACH STATEMENT EXECUTE FUNCTION memory_events_append_only();
"""

CANDIDATES = """
CREATE TABLE memory_candidates (
    id             TEXT PRIMARY KEY,
    scope          TEXT NOT NULL,
    kind           TEXT NOT NULL,
    title          TEXT NOT NULL DEFAULT '',
    content        TEXT NOT NULL,
    confidence     DOUBLE PRECISION NOT NULL,
    importance     DOUBLE PRECISION NOT NULL,
    sensitivity    TEXT NOT NULL,
    source         TEXT NOT NULL,
    subject_user   TEXT,
    speaker_user   TEXT,
    slot           TEXT,
    evidence       JSONB NOT NULL DEFAULT '[]',
    status         TEXT NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending', 'accepted', 'rejected', 'merged', 'refused')),
    item_id        TEXT,
    reason         TEXT,
    created_at     DOUBLE PRECISION NOT NULL,
    decided_at     DOUBLE PRECISION,
    decided_by     TEXT,
    valid_from     DOUBLE PRECISION,
    valid_until    DOUBLE PRECISION,
    op             TEXT NOT NULL DEFAULT 'add',
    target         TEXT,
    note           TEXT NOT NULL DEFAULT ''
);
CREATE INDEX memory_candidates_pending ON memory_candidates (status, scope);
CREATE INDEX memory_candidates_by_created ON memory_candidates (created_at, id);
CREATE INDEX memory_candidates_by_decided ON memory_candidates (decided_at, id)
    WHERE decided_at > created_at;
CREATE INDEX memory_candidates_by_item ON memory_candidates (item_id) WHERE item_id IS NOT NULL;
"""

# `job_runs` records each background job run, `job_leases` which process may run a job.
JOBS = """
CREATE TABLE job_runs (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job          TEXT NOT NULL,
    holder       TEXT NOT NULL,
    started_at   DOUBLE PRECISION NOT NULL,
    finished_at  DOUBLE PRECISION,
    outcome      TEXT NOT NULL DEFAULT 'running',
    counts       JSONB NOT NULL DEFAULT '{}',
    error        TEXT
);
CREATE INDEX job_runs_by_job ON job_runs (job, id);
CREATE TABLE job_leases (
    job         TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    expires_at  DOUBLE PRECISION NOT NULL
);
"""

# The Markdown projection's files (DESIGN §9) and small values kept under a name.
MARKDOWN = """
CREATE TABLE markdown_files (
    path         TEXT PRIMARY KEY,
    hash         TEXT NOT NULL,
    mtime        DOUBLE PRECISION NOT NULL,
    snapshot     JSONB NOT NULL DEFAULT '{}',
    rendered_at  DOUBLE PRECISION NOT NULL
);
CREATE TABLE named_state (
    key         TEXT PRIMARY KEY,
    value       TEXT NOT NULL,
    updated_at  DOUBLE PRECISION NOT NULL
);
"""

# Commands answered: the message's chat, id and event time, never its words. Kept a month.
ANSWERED_COMMANDS = """
CREATE TABLE answered_commands (
    chat         TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    time         DOUBLE PRECISION NOT NULL,
    answered_at  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (chat, message_id, time)
);
CREATE INDEX answered_commands_by_age ON answered_commands (answered_at);
"""
