"""The migration step that keeps each searched table's index size and total row length
(`lexical.weights` reads them), apart from `schema.py` to keep each module short."""

from __future__ import annotations

# Each searched table's index size and total row length, which BM25 needs for every search:
# kept by triggers on the rows' `fts` and `fts_len` (any writer, a cascade and a copy included)
# instead of counted per search, which is linear in the table. Each change appends its delta
# row rather than updating one row per table: a transaction that updates one row thousands of
# times walks the row's ever longer chain of versions on every update. Every 256th delta folds
# all of them into one row per table, so a search sums a few hundred rows at most. The deltas
# are written under the store's write lock anyway; a fold racing another is still exact (each
# deletes only rows it sees, and sums what it deleted).
LEXICAL_STATS = """
CREATE TABLE lexical_stats (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tbl        TEXT NOT NULL,
    rows       BIGINT NOT NULL,
    total_len  BIGINT NOT NULL
);
CREATE INDEX lexical_stats_by_table ON lexical_stats (tbl) INCLUDE (rows, total_len);
INSERT INTO lexical_stats (tbl, rows, total_len)
    SELECT 'turns', count(*), coalesce(sum(fts_len), 0) FROM turns WHERE fts IS NOT NULL
    UNION ALL
    SELECT 'memory_items', count(*), coalesce(sum(fts_len), 0) FROM memory_items
    WHERE fts IS NOT NULL
    UNION ALL
    SELECT 'episodes', count(*), coalesce(sum(fts_len), 0) FROM episodes WHERE fts IS NOT NULL;
CREATE FUNCTION lexical_stats_fold() RETURNS void LANGUAGE sql AS $$
    WITH gone AS (DELETE FROM lexical_stats RETURNING tbl, rows, total_len)
    INSERT INTO lexical_stats (tbl, rows, total_len)
    SELECT tbl, sum(rows), sum(total_len) FROM gone GROUP BY tbl
$$;
CREATE FUNCTION lexical_stats_kept() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    d_rows bigint := 0;
    d_len bigint := 0;
    made bigint;
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.fts IS NOT NULL THEN
        d_rows := -1;
        d_len := -OLD.fts_len;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.fts IS NOT NULL THEN
        d_rows := d_rows + 1;
        d_len := d_len + NEW.fts_len;
    END IF;
    INSERT INTO lexical_stats (tbl, rows, total_len) VALUES (TG_TABLE_NAME, d_rows, d_len)
    RETURNING seq INTO made;
    IF made % 256 = 0 THEN
        PERFORM lexical_stats_fold();
    END IF;
    RETURN NULL;
END $$;
CREATE FUNCTION lexical_stats_emptied() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lexical_stats (tbl, rows, total_len)
    SELECT TG_TABLE_NAME, -coalesce(sum(rows), 0), -coalesce(sum(total_len), 0)
    FROM lexical_stats WHERE tbl = TG_TABLE_NAME;
    RETURN NULL;
END $$;
"""

# the triggers of one searched table: only a change to what the index counts calls the function
_STATS_TRIGGERS = """
CREATE TRIGGER {t}_stats_insert AFTER INSERT ON {t}
    FOR EACH ROW WHEN (NEW.fts IS NOT NULL) EXECUTE FUNCTION lexical_stats_kept();
CREATE TRIGGER {t}_stats_delete AFTER DELETE ON {t}
    FOR EACH ROW WHEN (OLD.fts IS NOT NULL) EXECUTE FUNCTION lexical_stats_kept();
CREATE TRIGGER {t}_stats_update AFTER UPDATE OF fts, fts_len ON {t}
    FOR EACH ROW WHEN ((OLD.fts IS NULL) <> (NEW.fts IS NULL)
        OR (NEW.fts IS NOT NULL AND OLD.fts_len <> NEW.fts_len))
    EXECUTE FUNCTION lexical_stats_kept();
CREATE TRIGGER {t}_stats_truncate AFTER TRUNCATE ON {t}
    FOR EACH STATEMENT EXECUTE FUNCTION lexical_stats_emptied();
"""

LEXICAL_STATS += "".join(_STATS_TRIGGERS.format(t=t) for t in ("turns", "memory_items", "episodes"))
