"""The tables of the SQLite store (DESIGN §3), as the migrations that created them shipped them.

`turns_fts` indexes user and assistant turns under their chat's scope token. `memory_items_fts`
holds only active items: archiving or superseding an item removes its row, so status and
visibility are both decided inside the MATCH. Its `scopes` column carries one token per way the
item may be seen (`fts.item_keys`). Migration 0003 re-created both FTS tables with the porter
stemmer. `job_runs` records each background job run, `job_leases` which process may run a job.
A turn with `hidden_by` (an item id) is evidence of a forgotten item: it stays in the history but
has no FTS row and is left out of windows and neighbours. A turn with `earlier_for` is evidence
of an item a newer value replaced: still found, but recalled as what held earlier.
"""

from __future__ import annotations

SESSIONS_AND_TURNS = """
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    chat        TEXT NOT NULL,
    title       TEXT NOT NULL,
    created_at  REAL NOT NULL,
    updated_at  REAL NOT NULL,
    turn_count  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_chat ON sessions (chat, updated_at);
CREATE TABLE turns (
    id            INTEGER PRIMARY KEY,
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    chat          TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system')),
    speaker       TEXT,
    speaker_name  TEXT,
    content       TEXT NOT NULL,
    message_id    TEXT,
    time          REAL NOT NULL,
    tool_calls    TEXT,
    addressed     INTEGER NOT NULL DEFAULT 1,
    error         TEXT
);
CREATE INDEX turns_by_session ON turns (session_id, id);
CREATE INDEX turns_by_chat_time ON turns (chat, time);
CREATE UNIQUE INDEX turns_by_message ON turns (chat, message_id) WHERE message_id IS NOT NULL;
CREATE TABLE chats (
    chat             TEXT PRIMARY KEY,
    current_session  TEXT REFERENCES sessions (id) ON DELETE SET NULL,
    last_active      REAL NOT NULL
);
CREATE VIRTUAL TABLE turns_fts USING fts5 (body, scopes, tokenize = 'unicode61 remove_diacritics 0')
"""


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

JOB_TABLES = """
CREATE TABLE job_runs (
    id           INTEGER PRIMARY KEY,
    job          TEXT NOT NULL,
    holder       TEXT NOT NULL,
    started_at   REAL NOT NULL,
    finished_at  REAL,
    outcome      TEXT NOT NULL DEFAULT 'running',
    counts       TEXT NOT NULL DEFAULT '{}',
    error        TEXT
);
CREATE INDEX job_runs_by_job ON job_runs (job, id);
CREATE TABLE job_leases (
    job         TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    expires_at  REAL NOT NULL
)
"""

CANDIDATE_VALIDITY = """
ALTER TABLE memory_candidates ADD COLUMN valid_from REAL;
ALTER TABLE memory_candidates ADD COLUMN valid_until REAL
"""

HIDDEN_TURNS = """
ALTER TABLE turns ADD COLUMN hidden_by TEXT;
ALTER TABLE turns ADD COLUMN earlier_for TEXT;
CREATE INDEX turns_hidden_by ON turns (hidden_by) WHERE hidden_by IS NOT NULL;
CREATE INDEX turns_earlier_for ON turns (earlier_for) WHERE earlier_for IS NOT NULL
"""

# One vector per (provider, model, text): the same text in many chats is embedded once. A turn or
# an item names its text by `embed_hash` (NULL: not looked at yet; '': not worth embedding), so
# vector search joins each visible row to its vector in the query's space. The items' search is
# answered from `memory_items_for_vectors` alone (visibility, moment and hash: no table row).
EMBEDDINGS = """
CREATE TABLE embeddings (
    id          INTEGER PRIMARY KEY,
    provider    TEXT NOT NULL,
    model       TEXT NOT NULL,
    dimension   INTEGER NOT NULL,
    hash        TEXT NOT NULL,
    vector      BLOB NOT NULL,
    created_at  REAL NOT NULL
);
CREATE UNIQUE INDEX embeddings_by_text ON embeddings (provider, model, dimension, hash);
ALTER TABLE turns ADD COLUMN embed_hash TEXT;
ALTER TABLE memory_items ADD COLUMN embed_hash TEXT;
CREATE INDEX turns_by_embed_hash ON turns (embed_hash);
CREATE INDEX memory_items_by_embed_hash ON memory_items (embed_hash);
CREATE INDEX memory_items_for_vectors
    ON memory_items (scope, status, sensitivity, created_at, embed_hash)
"""

# Working memory (DESIGN §7): one row per session with a warm summary. `through_turn` is the last
# turn the summary covers; `rounds` how many rounds it covers since it was last rolled into cold
# facts; `failures` / `last_error` what the last compactions that failed said (they retry).
WORKING_MEMORY = """
CREATE TABLE session_summaries (
    session_id    TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    chat          TEXT NOT NULL,
    summary       TEXT NOT NULL DEFAULT '',
    through_turn  INTEGER NOT NULL DEFAULT 0,
    rounds        INTEGER NOT NULL DEFAULT 0,
    total_rounds  INTEGER NOT NULL DEFAULT 0,
    rolls         INTEGER NOT NULL DEFAULT 0,
    failures      INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT,
    updated_at    REAL NOT NULL
);
CREATE INDEX session_summaries_by_chat ON session_summaries (chat, updated_at);
CREATE INDEX session_summaries_failing ON session_summaries (failures) WHERE failures > 0
"""

# Profiles (DESIGN §3, the Ethan layer 3): one row per bullet of a person's profile. `tokens` are
# the bullet's jieba tokens (space-separated), kept so that a merge compares bullets without
# tokenizing on the database thread. Nothing is deleted: a changed or forgotten bullet is archived.
PROFILES = """
CREATE TABLE profile_entries (
    id           TEXT PRIMARY KEY,
    user         TEXT NOT NULL,
    section      TEXT NOT NULL,
    text         TEXT NOT NULL,
    tokens       TEXT NOT NULL DEFAULT '',
    sensitivity  TEXT NOT NULL DEFAULT 'private' CHECK (sensitivity IN ('public', 'private')),
    source       TEXT NOT NULL,
    chat         TEXT,
    status       TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
    created_at   REAL NOT NULL,
    updated_at   REAL NOT NULL
);
CREATE INDEX profile_entries_by_user ON profile_entries (user, status, section)
"""

# Episodes (DESIGN §3, the Ethan layer 4): one row per finished session (a session that ends
# again after a resume has its row rewritten). `id` is shown to people; `seq` is the row's key in
# `episodes_fts` (body: the keywords' and summary's tokens; scopes: the chat's scope token) and
# in vector upkeep. `keywords` is a JSON array; `embed_hash` names the text `keywords: summary`.
EPISODES = """
CREATE TABLE episodes (
    seq         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    session_id  TEXT NOT NULL UNIQUE REFERENCES sessions (id) ON DELETE CASCADE,
    chat        TEXT NOT NULL,
    summary     TEXT NOT NULL,
    keywords    TEXT NOT NULL DEFAULT '[]',
    started_at  REAL NOT NULL,
    ended_at    REAL NOT NULL,
    turn_count  INTEGER NOT NULL,
    created_at  REAL NOT NULL,
    embed_hash  TEXT
);
CREATE INDEX episodes_by_chat ON episodes (chat, ended_at);
CREATE INDEX episodes_by_embed_hash ON episodes (embed_hash);
CREATE VIRTUAL TABLE episodes_fts USING fts5 (
    body, scopes, tokenize = 'porter unicode61 remove_diacritics 0'
)
"""

# Dreaming (DESIGN §8). A proposal may act on an item (`op` update / supersede / archive of
# `target`) and carries the model's reason (`note`). `dream_cursors` holds, per chat, the last turn
# a dream run has read (advanced in the transaction that applies what was read) and whether
# dreaming is paused there. `dream_runs` is one row per run over one chat: the turn range, the
# model and its tokens, the counts (`fates`: every proposal by what became of it), and `report`
# (JSON: the first few hundred proposals, each with its fate);
# `written` is set once its section is in DREAMS.md. `turns_by_chat` finds a chat's newest turns.
DREAMS = """
ALTER TABLE memory_candidates ADD COLUMN op TEXT NOT NULL DEFAULT 'add';
ALTER TABLE memory_candidates ADD COLUMN target TEXT;
ALTER TABLE memory_candidates ADD COLUMN note TEXT NOT NULL DEFAULT '';
CREATE INDEX turns_by_chat ON turns (chat);
CREATE TABLE dream_cursors (
    chat          TEXT PRIMARY KEY,
    through_turn  INTEGER NOT NULL DEFAULT 0,
    paused        INTEGER NOT NULL DEFAULT 0,
    updated_at    REAL NOT NULL
);
CREATE TABLE dream_runs (
    seq           INTEGER PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    chat          TEXT NOT NULL,
    trigger       TEXT NOT NULL,
    holder        TEXT NOT NULL DEFAULT '',
    from_turn     INTEGER NOT NULL DEFAULT 0,
    through_turn  INTEGER NOT NULL DEFAULT 0,
    turns         INTEGER NOT NULL DEFAULT 0,
    model         TEXT NOT NULL DEFAULT '',
    calls         INTEGER NOT NULL DEFAULT 0,
    tokens_in     INTEGER NOT NULL DEFAULT 0,
    tokens_out    INTEGER NOT NULL DEFAULT 0,
    proposals     INTEGER NOT NULL DEFAULT 0,
    applied       INTEGER NOT NULL DEFAULT 0,
    pending       INTEGER NOT NULL DEFAULT 0,
    rejected      INTEGER NOT NULL DEFAULT 0,
    outcome       TEXT NOT NULL DEFAULT 'running',
    error         TEXT,
    report        TEXT NOT NULL DEFAULT '[]',
    fates         TEXT NOT NULL DEFAULT '{}',
    started_at    REAL NOT NULL,
    finished_at   REAL,
    written       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX dream_runs_by_chat ON dream_runs (chat, seq);
CREATE INDEX dream_runs_unwritten ON dream_runs (written) WHERE written = 0
"""

# The Markdown projection (DESIGN §9). `markdown_files`: per projected file (path relative to the
# workspace), the hash and mtime it had when last written or read, and `snapshot` (JSON: the
# bullets its generated block showed then, id → {"group": kind or section, "text": …}): what a
# later edit of the file is compared with. `named_state`: small values kept under a name by
# background work (how far the daily notes have been written, the bus depth doctor shows).
MARKDOWN = """
CREATE TABLE markdown_files (
    path         TEXT PRIMARY KEY,
    hash         TEXT NOT NULL,
    mtime        REAL NOT NULL,
    snapshot     TEXT NOT NULL DEFAULT '{}',
    rendered_at  REAL NOT NULL
);
CREATE TABLE named_state (
    key         TEXT PRIMARY KEY,
    value       TEXT NOT NULL,
    updated_at  REAL NOT NULL
)
"""

# Daily notes (DESIGN §9) read what is new by time: candidates by creation and by a later
# decision, summaries by their last write and episodes by creation.
DAILY_NOTES = """
CREATE INDEX memory_candidates_by_created ON memory_candidates (created_at, id);
CREATE INDEX memory_candidates_by_decided ON memory_candidates (decided_at, id)
    WHERE decided_at > created_at;
CREATE INDEX session_summaries_by_time ON session_summaries (updated_at, session_id);
CREATE INDEX episodes_by_created ON episodes (created_at, seq)
"""

# Deliveries (docs/onebot.md, Delivery). `delivery` on a user turn due an answer: NULL until its
# reply was settled, then `delivered` (acknowledged by the implementation), `undelivered` (given
# up) or `none` (turns stored before this migration, whose fate nobody recorded). Only the few
# undelivered ones are indexed: an index of every message's fate would be written twice for each
# message answered, for the sake of `nahida doctor`. A message id no longer makes a turn unique
# in its chat: implementations reuse ids, so the same message is the same chat, id and time (or
# words), `TurnTable.message`.
DELIVERIES = """
ALTER TABLE turns ADD COLUMN delivery TEXT;
UPDATE turns SET delivery = 'none' WHERE role = 'user' AND addressed = 1;
DROP INDEX turns_by_message;
CREATE INDEX turns_by_message ON turns (chat, message_id) WHERE message_id IS NOT NULL;
CREATE INDEX turns_undelivered ON turns (id) WHERE delivery = 'undelivered'
"""

# Commands answered (chat commands are not history, so a command an implementation delivers
# again after a restart would run again): the message's chat, id and event time, never its words
# (a refused `/memory remember` may hold a secret). Kept a month.
ANSWERED_COMMANDS = """
CREATE TABLE answered_commands (
    chat        TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    time        REAL NOT NULL,
    answered_at REAL NOT NULL,
    PRIMARY KEY (chat, message_id, time)
);
CREATE INDEX answered_commands_by_age ON answered_commands (answered_at)
"""

# A purge (docs/memory.md) takes a memory's words out of its audit trail: the one change the
# trail allows. An event's text (before, after, reason) may be blanked, nothing else changed,
# and only once the trail records the item's purge; every other change, and any delete, aborts.
PURGEABLE_EVENTS = """
DROP TRIGGER memory_events_append_only_update;
CREATE TRIGGER memory_events_append_only_update BEFORE UPDATE ON memory_events
WHEN NOT (
    NEW.id IS OLD.id AND NEW.item_id IS OLD.item_id AND NEW.action IS OLD.action
    AND NEW.actor IS OLD.actor AND NEW.time IS OLD.time
    AND NEW.before IS NULL AND NEW.after IS NULL AND NEW.reason IS NULL
    AND OLD.action != 'purged'
    AND EXISTS (
        SELECT 1 FROM memory_events p WHERE p.item_id = OLD.item_id AND p.action = 'purged'
    )
)
BEGIN
    SELECT RAISE(ABORT, 'memory_events is append-only: only a purge blanks an event''s text');
END
"""

# The admin console (`memory.admin`). `turn_recalls`: what each answered user turn's prompt was
# given from memory (`RecallRecord`: the ids of the hits injected, by kind), written with the
# reply, gone with the turn. `speakers`: per person, chat and name ('' for none) the user turns
# spoken so, up to the turn `speakers_folded.through`: the console folds newer turns in when it
# reads people (`PeopleTable.fold`), so that storing a turn (observed group talk too) pays
# nothing for it, as a trigger or an index on every turn would. A deleted turn that was folded
# is taken out again (the first or last time of its row looked up among the chat's turns by
# time), and the cursor moves back below ids SQLite may hand out again; people are listed from
# `speakers_by_user` alone. `memory_items_listed` holds every column a listing filters on, in
# the listing's order, so a page is read from it alone until it is full; `sessions_by_chat`
# gains the turn count, so chats are counted from it alone. The other indexes serve the series
# by time, an item's supersede chain and the items about a person.
CONSOLE = """
CREATE TABLE turn_recalls (
    turn_id   INTEGER PRIMARY KEY REFERENCES turns (id) ON DELETE CASCADE,
    chat      TEXT NOT NULL,
    time      REAL NOT NULL,
    hits      INTEGER NOT NULL,
    items     TEXT NOT NULL DEFAULT '[]',
    turns     TEXT NOT NULL DEFAULT '[]',
    episodes  TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX turn_recalls_by_time ON turn_recalls (time, hits);
CREATE TABLE speakers (
    user        TEXT NOT NULL,
    chat        TEXT NOT NULL,
    name        TEXT NOT NULL,
    turns       INTEGER NOT NULL,
    first_seen  REAL NOT NULL,
    last_seen   REAL NOT NULL,
    PRIMARY KEY (user, chat, name)
);
CREATE INDEX speakers_by_user ON speakers (user, last_seen, turns);
CREATE TABLE speakers_folded (through INTEGER NOT NULL);
INSERT INTO speakers (user, chat, name, turns, first_seen, last_seen)
    SELECT speaker, chat, coalesce(speaker_name, ''), count(*), min(time), max(time) FROM turns
    WHERE role = 'user' AND speaker IS NOT NULL
    GROUP BY speaker, chat, coalesce(speaker_name, '');
INSERT INTO speakers_folded (through) SELECT coalesce(max(id), 0) FROM turns;
CREATE TRIGGER speakers_drop AFTER DELETE ON turns
WHEN old.id <= (SELECT through FROM speakers_folded)
BEGIN
    DELETE FROM speakers WHERE old.role = 'user' AND user = old.speaker AND chat = old.chat
        AND name = coalesce(old.speaker_name, '') AND turns <= 1;
    UPDATE speakers SET turns = turns - 1,
        first_seen = CASE WHEN first_seen < old.time THEN first_seen ELSE (
            SELECT min(t.time) FROM turns t WHERE t.chat = old.chat AND t.role = 'user'
            AND t.speaker = old.speaker AND t.id <= (SELECT through FROM speakers_folded)
            AND coalesce(t.speaker_name, '') = coalesce(old.speaker_name, '')) END,
        last_seen = CASE WHEN last_seen > old.time THEN last_seen ELSE (
            SELECT max(t.time) FROM turns t WHERE t.chat = old.chat AND t.role = 'user'
            AND t.speaker = old.speaker AND t.id <= (SELECT through FROM speakers_folded)
            AND coalesce(t.speaker_name, '') = coalesce(old.speaker_name, '')) END
    WHERE old.role = 'user' AND user = old.speaker AND chat = old.chat
        AND name = coalesce(old.speaker_name, '');
    UPDATE speakers_folded SET through = (SELECT coalesce(max(id), 0) FROM turns)
    WHERE through > (SELECT coalesce(max(id), 0) FROM turns);
END;
CREATE INDEX memory_items_listed ON memory_items
    (updated_at, id, scope, kind, status, source, created_at, subject_user, sensitivity);
DROP INDEX sessions_by_chat;
CREATE INDEX sessions_by_chat ON sessions (chat, updated_at, turn_count);
CREATE INDEX memory_items_by_created ON memory_items (created_at, source);
CREATE INDEX memory_items_by_supersedes ON memory_items (supersedes) WHERE supersedes IS NOT NULL;
CREATE INDEX memory_items_by_subject ON memory_items (subject_user) WHERE subject_user IS NOT NULL;
CREATE INDEX dream_runs_by_start ON dream_runs (started_at)
"""

# The Overview counts items by scope family, kind and status from this index alone; the
# expression is `items.FAMILY`, which must stay the same text for the index to be used.
TALLY = """
CREATE INDEX memory_items_tally ON memory_items (
    (CASE WHEN instr(scope, ':') = 0 THEN scope ELSE substr(scope, 1, instr(scope, ':') - 1) END),
    kind,
    status
);
"""
