"""What memory's per-message code builds on first use, built up front (`warm_up`): the app
calls it at start, in a thread, so that the first messages after a start do not wait while the
event loop builds it — every chat waits on that loop (a first extraction alone took 16 ms)."""

from __future__ import annotations

from nahida.memory.core import tokenize
from nahida.memory.write import statements, timeparse

SAMPLE = "纳西妲记得你喜欢喝茶"  # a sentence the tokenizer cuts into words


def warm_up() -> bool:
    """Build it all now; whether the tokenizer then cuts a sample sentence into words (what
    `nahida doctor` reports)."""
    tokenize.warm_up()  # jieba's dictionary
    statements.warm_up()  # extraction's rules and their prefilter
    timeparse.warm_up()  # the time parser's prefilter (recall's queries)
    return bool(tokenize.index_text(SAMPLE))
