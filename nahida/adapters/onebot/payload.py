"""One frame (or POSTed body) from an implementation, decoded from JSON and made safe to keep.

Whatever a frame holds, it never ends the link and a message is never dropped for a character:

- A frame nested deeper than the JSON parser can follow (`[[[[…]]]]`) raises `PayloadError`
  ("nested too deeply"): the reader logs it and reads on.
- Raw control characters inside strings are accepted (the parser's strict mode would reject
  the whole frame) and, like lone surrogates (`\\ud800` without its pair) and `\\u0000` escapes,
  cleaned out of every string by `clean`: a lone surrogate becomes U+FFFD, a control character
  other than tab, newline and carriage return is removed. Such characters cannot be stored as
  UTF-8, cut texts short in C code, or steer a terminal reading the logs; the rest of the
  message is kept.
- A POSTed body that is not valid UTF-8 has its bad bytes replaced by U+FFFD.

Only a frame that may hold such a character is walked (two scans of its text decide); the others
are returned as the parser made them.
"""

from __future__ import annotations

import json
import re
from typing import Any

# The JSON escapes of control characters and surrogates: \u0000-\u001f (tab and newline too,
# rarely written so), \u007f-\u009f, \ud800-\udfff; and those characters written raw. Two
# searches, not one alternation, which is tried at every character: each alone is a quick scan
# (the first by its literal prefix).
_ESCAPED = re.compile(r"\\u(?:00[01]|007[fF]|00[89]|[dD][89a-fA-F])")
_RAW = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")  # paired ones are already one character when parsed
_JSON = json.JSONDecoder(strict=False)  # made once: `json.loads` with an option makes one a call


class PayloadError(ValueError):
    """A frame that holds no usable JSON; `reason` is safe to log."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def clean(text: str) -> str:
    """`text` with lone surrogates replaced by U+FFFD and control characters (but tab, newline
    and carriage return) removed."""
    text = _SURROGATE.sub("\ufffd", text)
    return _CONTROL.sub("", text)


def decode(frame: str | bytes) -> Any:
    """The JSON value of a text frame or a POSTed body, every string in it cleaned."""
    text = frame if isinstance(frame, str) else frame.decode("utf-8-sig", "replace")
    try:
        value = _JSON.decode(text)
        suspect = _ESCAPED.search(text) or _RAW.search(text)
        return value if suspect is None else _cleaned(value)
    except RecursionError:
        raise PayloadError("nested too deeply") from None
    except ValueError:
        raise PayloadError("not JSON") from None


def _cleaned(value: Any) -> Any:
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(k): _cleaned(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cleaned(v) for v in value]
    return value
