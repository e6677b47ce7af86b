"""The reference store's lexical index against SQLite's FTS5: the same tokens, the same stems."""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from pathlib import Path

import pytest

from nahida.memory.store.reference.porter import stem
from nahida.memory.store.reference.text import Indexed, bm25, tokens

CORPUS = Path(__file__).parents[1] / "data" / "chat_lines_zh_en.txt"
TRICKY = (
    "caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated"
    " troubled sized hopping tanned falling hissing fizzed failing filing happy sky"
    " relational conditional rational valenci hesitanci digitizer conformabli radicalli"
    " differentli vileli analogousli vietnamization predication operator feudalism"
    " decisiveness hopefulness callousness formaliti sensitiviti sensibiliti triplicate"
    " formative formalize electriciti electrical hopeful goodness revival allowance"
    " inference airliner gyroscopic adjustable defensible irritant replacement adjustment"
    " dependent adoption homologou communism activate angulariti homologous effective"
    " bowdlerize probate rate cease controll roll generalizations oscillators mp3s a1b2s"
)


def fts5_terms(conn: sqlite3.Connection, text: str) -> list[str]:
    """The terms FTS5's `porter unicode61` tokenizer makes of a text, in order."""
    conn.execute("DELETE FROM t")
    conn.execute("INSERT INTO t VALUES (?)", (text,))
    found = conn.execute("SELECT term FROM v ORDER BY offset").fetchall()
    return [term for (term,) in found]


@pytest.fixture(scope="module")
def fts5() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5 (b, tokenize = 'porter unicode61 remove_diacritics 0')"
    )
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'instance')")
    return conn


def test_every_english_word_of_the_corpus_is_stemmed_as_fts5_stems_it(
    fts5: sqlite3.Connection,
) -> None:
    words = sorted(set(re.findall(r"[a-z0-9]+", CORPUS.read_text("utf-8").lower())))
    words += TRICKY.split()
    assert len(words) > 1000
    wrong = [(w, stem(w), t) for w in words for t in fts5_terms(fts5, w) if t != stem(w)]
    assert wrong == []


def letters_and_punctuation(line: str) -> str:
    """The line without symbols, marks and unassigned characters: SQLite's character tables
    are of an older Unicode, where many symbols (most emoji) were unassigned, and an unassigned
    character is part of a token there."""
    return "".join(ch for ch in line if unicodedata.category(ch)[0] not in "SMC")


def test_a_line_splits_into_the_tokens_fts5_makes_of_it(fts5: sqlite3.Connection) -> None:
    lines = [letters_and_punctuation(line) for line in CORPUS.read_text("utf-8").splitlines()]
    assert len(lines) > 300
    for line in lines:
        assert list(tokens(line)) == fts5_terms(fts5, line), line


def test_bm25_ranks_the_rarer_and_denser_match_higher() -> None:
    rows = [
        Indexed(n, tokens(body))
        for n, body in enumerate(
            ["oolong tea", "green tea", "tea tea tea", "black coffee", "oolong oolong tea party"]
        )
    ]
    scored = dict(bm25(["oolong"], rows, rows))
    assert set(scored) == {0, 4}
    assert scored[4] > scored[0]
    assert dict(bm25(["tea", "oolong"], rows, rows))[0] > dict(bm25(["tea"], rows, rows))[1]
