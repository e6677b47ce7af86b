"""Stress test of FTS5 compaction (`fts.Compaction`, `fts.Merging`) on a SQLite build.

Writes the same rows into two FTS5 tables in batches of units, as the store's writer does: each
unit in a savepoint, a tenth of the units rolled back, a twentieth of the batches rolled back
whole, rows deleted and updated now and then; one table gets FTS5's `optimize` (or `rebuild`)
every `--every` writes, the other is left to FTS5's own merging. At the end FTS5's integrity
check must pass on both and every search must find the same rows with the same bm25.

    .venv/bin/python scripts/stress_fts.py --driver sqlean --command optimize   # passes
    .venv/bin/python scripts/stress_fts.py --driver stdlib --command optimize   # 3.40.1: fails
    .venv/bin/python scripts/stress_fts.py --crisismerge 2 --every 300          # passes

`--crisismerge 2` sets FTS5's `crisismerge` on the kept table (`fts.Merging` does while the
turns are searched often); `--every 0` runs no compaction command at all.

Exit status 1 when any seed fails (the index is corrupt or finds something else).
"""

from __future__ import annotations

import argparse
import importlib
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

SCHEMA = "(body, scopes, tokenize = 'porter unicode61 remove_diacritics 0')"
WORDS = [f"w{n}" for n in range(3000)]


def stress(
    module: Any, path: Path, seed: int, rows: int, every: int, command: str, crisismerge: int
) -> None:
    conn = module.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    for table in ("kept", "plain"):
        conn.execute(f"CREATE VIRTUAL TABLE {table} USING fts5 {SCHEMA}")
    if crisismerge:
        conn.execute(f"INSERT INTO kept (kept, rank) VALUES ('crisismerge', {int(crisismerge)})")
    rng = random.Random(seed)
    rowid = writes = 0

    def both(sql: str, *params: Any) -> None:
        for table in ("kept", "plain"):
            conn.execute(sql.format(table=table), params)

    while rowid < rows:
        conn.execute("BEGIN IMMEDIATE")
        for _unit in range(rng.choice([1, 2, 3, 6])):
            conn.execute("SAVEPOINT unit")
            for _row in range(rng.choice([1, 2, 4])):
                rowid += 1
                words = WORDS[: rng.choice([30, 300, 3000])]
                body = " ".join(rng.choices(words, k=rng.randrange(1, 40)))
                scope = f"zs{rng.randrange(30)}"
                both(
                    "INSERT INTO {table} (rowid, body, scopes) VALUES (?, ?, ?)", rowid, body, scope
                )
                chance = rng.random()
                if chance < 0.08:
                    both("DELETE FROM {table} WHERE rowid = ?", rng.randrange(1, rowid + 1))
                elif chance < 0.12:
                    body = " ".join(rng.choices(WORDS, k=7))
                    both(
                        "UPDATE {table} SET body = ? WHERE rowid = ?",
                        body,
                        rng.randrange(1, rowid + 1),
                    )
                writes += 1
                if every and writes % every == 0:
                    conn.execute(f"INSERT INTO kept (kept) VALUES ('{command}')")
            if rng.random() < 0.1:
                conn.execute("ROLLBACK TO unit")
            conn.execute("RELEASE unit")
        conn.execute("ROLLBACK" if rng.random() < 0.05 else "COMMIT")
        rowid = conn.execute("SELECT coalesce(max(rowid), 0) FROM plain").fetchone()[0]
    for table in ("kept", "plain"):
        conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
    for phrase in [f'"{w}"' for w in rng.sample(WORDS, 80)] + [f'"zs{n}"' for n in range(5)]:
        found = [
            conn.execute(
                f"SELECT rowid, round(bm25({table}), 9) FROM {table} WHERE {table} MATCH ?"
                " ORDER BY rowid",
                (phrase,),
            ).fetchall()
            for table in ("kept", "plain")
        ]
        if found[0] != found[1]:
            raise AssertionError(f"{phrase}: {len(found[0])} rows against {len(found[1])}")
    conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--driver", choices=["sqlean", "stdlib"], default="sqlean")
    parser.add_argument("--command", choices=["optimize", "rebuild"], default="optimize")
    parser.add_argument("--rows", type=int, default=8000)
    parser.add_argument(
        "--every", type=int, default=7, help="writes between two compactions (0: none)"
    )
    parser.add_argument(
        "--crisismerge", type=int, default=0, help="FTS5's crisismerge for the kept table"
    )
    parser.add_argument("--seeds", type=int, default=1)
    args = parser.parse_args()
    module = importlib.import_module("sqlite3" if args.driver == "stdlib" else "sqlean")
    failed = 0
    for seed in range(args.seeds):
        with tempfile.TemporaryDirectory(prefix="nahida-stress-fts-") as tmp:
            try:
                stress(
                    module,
                    Path(tmp) / "s.db",
                    seed,
                    args.rows,
                    args.every,
                    args.command,
                    args.crisismerge,
                )
            except (module.DatabaseError, AssertionError) as exc:
                failed += 1
                print(f"seed {seed}: FAILED: {exc}")
            else:
                print(f"seed {seed}: passed")
    version = module.sqlite_version
    crisis = f", crisismerge {args.crisismerge}" if args.crisismerge else ""
    print(f"SQLite {version} ({args.driver}), {args.command} every {args.every} writes{crisis},"
          f" {args.rows:,} rows: {args.seeds - failed} of {args.seeds} seeds passed")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
