"""What a value found after a label or in a run must look like to be a secret: the checks the
secret filter's detectors (`secret_patterns`) run on what their patterns matched, so that
`password: required`, `$DB_PASS`, `sk-hynix-earnings-2024` or a long identifier are not taken
for secrets."""

from __future__ import annotations

import math
import re
from collections import Counter

# `$DB_PASS`, `${DB_PASS}`, `$(cat f)`, `<your token>`, `{{ secret }}`, `os.environ[...]`, `***`
_REFERENCE = re.compile(
    r"\$\{?[A-Z_][A-Z0-9_]*\}?[\"'),;]*$|\$\(|<|\{\{|%\(|\*{3}"
    r"|(?i:os\.environ|os\.getenv|process\.env|getenv\(|env\(|settings\.|config\.)"
)


# Words that follow "password:" in prose and type annotations (`password: str | None`).
_NOT_PASSWORDS = frozenset(
    {"str", "string", "secretstr", "bytes", "text", "any", "none", "null", "nil", "undefined"}
    | {"required", "optional", "empty", "hidden", "masked", "redacted", "invalid", "incorrect"}
    | {"wrong", "changed", "reset", "expired", "true", "false"}
)


def not_reference(value: str) -> bool:
    """False for placeholders and references such as `$DB_PASS` or `<your token>`."""
    return _REFERENCE.match(value) is None


def password_value(value: str) -> bool:
    word = value.lower().rstrip(",.;:)]}")
    return (
        len(value) >= 4
        and not_reference(value)
        and word not in _NOT_PASSWORDS
        and not word.startswith(("optional[", "str|", "secretstr"))
    )


def password_with_symbol(value: str) -> bool:
    """For loose forms ("password is x", "密码 x", "pwd: x"): the value must have a non-letter."""
    return (
        password_value(value)
        and not value.startswith(("/", "~", "."))
        and any(not c.isalpha() for c in value)
    )


_TRAILING = ",.;:!?)]}"
_HAN = "\u4e00-\u9fff"
_HAN_RUN = re.compile(f"[{_HAN}]+")
_QUESTION = re.compile("什么|多少|啥|哪|吗|么|？|\\?")


def worded_password(value: str) -> bool:
    """For a password said in words ("密码改成了 x", "password was changed to x"): a digit or
    symbol inside the value, not only at its end ("updated." is a word)."""
    word = value.rstrip(_TRAILING)
    return password_with_symbol(value) and len(word) >= 4 and any(not c.isalpha() for c in word)


def short_label_password(value: str) -> bool:
    """After the short labels `pw` and `pass`: letters with a digit or symbol, and not a path
    or a test's name ("PASS: tests/test_a1.py")."""
    word = value.rstrip(_TRAILING)
    return (
        worded_password(value)
        and any(c.isalpha() for c in word)
        and "/" not in word
        and not word.lower().startswith("test")
    )


def han_password(value: str) -> bool:
    """A passphrase that starts in Han characters ("芝麻开门123"): the rest holds a digit or
    symbol, so words ("什么意思", "我的生日") are not taken for one."""
    tail = _HAN_RUN.sub("", value).rstrip(_TRAILING)
    return len(tail) >= 2 and not_reference(tail) and any(not c.isalpha() for c in tail)


def quoted_password(value: str) -> bool:
    """A quoted passphrase after a password label ("密码是「开心每一天」"), not a question."""
    return len(value.strip()) >= 2 and not_reference(value) and not _QUESTION.search(value)


def command_password(value: str) -> bool:
    """A password given to a command (`mysql -pPASS`, `sshpass -p x`), not a variable."""
    return len(value) >= 2 and not_reference(value)


def credential_value(value: str) -> bool:
    if len(value) < 8 or not not_reference(value):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    return (has_digit and has_alpha) or (len(value) >= 20 and mixed_case(value))


def header_value(value: str) -> bool:
    """Some credential-looking run: 8+ token characters with a digit or mixed case."""
    for run in _HEADER_RUN.findall(value):
        if run.lower() in _AUTH_SCHEMES:
            continue
        if any(c.isdigit() for c in run) or mixed_case(run):
            return True
    return False


def cookie_value(value: str) -> bool:
    return _COOKIE_PAIR.match(value) is not None


def key_body(value: str) -> bool:
    """An API key body: letters and digits, few separators (not `sk-hynix-earnings-2024`)."""
    body = value.split("-", 2)[-1] if value.startswith(("sk-proj-", "sk-svcacct-")) else value
    has_digit = any(c.isdigit() for c in body)
    has_alpha = any(c.isalpha() for c in body)
    separators = sum(c in "-_" for c in body)
    return has_digit and has_alpha and separators <= len(body) // 10 + 1


def base64_blob(value: str) -> bool:
    """A long run that looks random: mixed case, digits, few separators, high entropy."""
    run = value.rstrip("=")
    if len(run) < 40 or not mixed_case(run) or not any(c.isdigit() for c in run):
        return False
    if sum(c in "+/_-" for c in run) > len(run) // 10 + 1:
        return False
    return _entropy(run) >= 4.2 and not _wordy(run)


def signed_query(value: str) -> bool:
    return _SENSITIVE_PARAM.search(value) is not None


def mixed_case(value: str) -> bool:
    return any(c.isupper() for c in value) and any(c.islower() for c in value)


def _entropy(value: str) -> float:
    counts = Counter(value)
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def _wordy(value: str) -> bool:
    """True when half the run is lower-case words (`ThisIsAVeryLongIdentifier2024`).

    In random base64 about 15% of characters sit in runs of three or more lower-case letters
    (99.9th percentile about 50% at 40 characters); in identifiers it is 55% and more.
    """
    return sum(len(m) for m in _LOWER_WORD.findall(value)) * 2 >= len(value)


_LOWER_WORD = re.compile(r"[a-z]{3,}")
_COOKIE_PAIR = re.compile(r"[^\s=;,]+=[^\s;,]")
_HEADER_RUN = re.compile(r"[A-Za-z0-9+/=_.~-]{8,}")
_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "bot", "digest", "negotiate"})
_SENSITIVE_PARAM = re.compile(
    r"(?:^|[?#&;])(?:[a-z0-9_.-]*(?:token|secret|password|passwd|signature|credential|api_?key)"
    r"|sig|sign|auth|sessionid|session_id)=[^&#\s]",
    re.IGNORECASE,
)
