"""The secret filter for the memory write path and for logs (DESIGN §4, §6).

`find_secrets()` reports where secrets sit in a text (kind and span, never the secret itself);
`redact()` replaces each one with `[REDACTED:<kind>]`. For labelled values (headers, password and
key assignments) only the value is replaced, so `password: hunter2` becomes
`password: [REDACTED:password]`.

Kinds, most specific first (a `*` marks labelled kinds, where only the value is replaced):

    private_key        PEM blocks, `-----BEGIN ... PRIVATE KEY-----` to END (or to the end of
                       the base64 body when END is missing)
    data_uri           `data:image/png;base64,...`
    jwt                three base64url parts, the first starting `eyJ`
    anthropic_key      `sk-ant-...`
    openai_key         `sk-...`, `sk-proj-...` (also OpenAI-compatible providers' `sk-` keys)
    google_api_key     `AIza...`
    github_token       `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`
    slack_token        `xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`, `xoxo-`
    telegram_token     `123456789:AA...` bot tokens
    aws_access_key_id  `AKIA` / `ASIA` + 16
    webhook_url *      Slack, Discord, Feishu/Lark, WeCom and DingTalk bot webhooks
    url_credentials *  the password in `scheme://user:password@host`
    signed_url *       the query of a URL with a signature or token parameter
    authorization *    `Authorization:` header values, `Bearer xxx`
    cookie *           `Cookie:` / `Set-Cookie:` header values
    aws_secret_key *   `aws_secret_access_key = ...` (40 characters)
    password *         password / passwd / pwd / 密码 / 口令 / 授权码 followed by a value
    credential *       api_key / token / secret / app_secret / 密钥 / 令牌 ... assignments
    base64_blob        40+ characters of base64 that look random (not in a URL's path)

Overlapping findings are merged into one span (nothing of a secret is left behind); the kind of
the longest one names it. `redact()` repeats until nothing is found, so it is idempotent, and it
never treats its own placeholders as secrets.

The patterns are tuned against `tests/data/chat_lines_zh_en.txt`, ordinary Chinese and English
group chat (code talk, URLs, version numbers, commit hashes, order numbers), which must stay clean.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """A secret of `kind` at `text[start:end]`; the secret itself is never kept."""

    kind: str
    start: int
    end: int


def find_secrets(text: str) -> list[SecretFinding]:
    """Every secret in `text`, merged where they overlap, in order of position."""
    if _MAYBE.search(text) is None:  # nearly every chat line: none of the detectors can fire
        return []
    spans: list[tuple[int, int, int]] = []  # start, end, detector index
    url_paths: list[tuple[int, int]] | None = None
    lowered = text.lower()
    trusted = len(lowered) == len(text) and not any(c in text for c in _ODD_CASE)
    for index, detector in enumerate(_DETECTORS):
        for start, end in detector.find(text, lowered if trusted else None):
            if not detector.in_url_path:
                if url_paths is None:
                    url_paths = [m.span() for m in _URL_PATH.finditer(text)]
                if _within(url_paths, start, end):
                    continue
            spans.append((start, end, index))
    if not spans:
        return []
    placeholders = [m.span() for m in _PLACEHOLDER.finditer(text)]
    return _merge(_around_placeholders(spans, placeholders))


def contains_secret(text: str) -> bool:
    """Whether `text` holds any secret (for write paths that reject instead of redacting)."""
    return bool(find_secrets(text))


def was_redacted(text: str) -> bool:
    """Whether the text carries a `[REDACTED:<kind>]` placeholder (a secret was taken out)."""
    return _PLACEHOLDER.search(text) is not None


def redact(text: str) -> str:
    """`text` with every secret replaced by `[REDACTED:<kind>]`; the rest is kept as it was."""
    for _ in range(_MAX_PASSES):
        findings = find_secrets(text)
        if not findings:
            break
        parts: list[str] = []
        position = 0
        for finding in findings:
            parts.append(text[position : finding.start])
            parts.append(f"[REDACTED:{finding.kind}]")
            position = finding.end
        parts.append(text[position:])
        text = "".join(parts)
    return text


# --- value checks -------------------------------------------------------------------------

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


def _not_reference(value: str) -> bool:
    """False for placeholders and references such as `$DB_PASS` or `<your token>`."""
    return _REFERENCE.match(value) is None


def _password_value(value: str) -> bool:
    word = value.lower().rstrip(",.;:)]}")
    return (
        len(value) >= 4
        and _not_reference(value)
        and word not in _NOT_PASSWORDS
        and not word.startswith(("optional[", "str|", "secretstr"))
    )


def _password_with_symbol(value: str) -> bool:
    """For loose forms ("password is x", "密码 x", "pwd: x"): the value must have a non-letter."""
    return (
        _password_value(value)
        and not value.startswith(("/", "~", "."))
        and any(not c.isalpha() for c in value)
    )


def _credential_value(value: str) -> bool:
    if len(value) < 8 or not _not_reference(value):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    return (has_digit and has_alpha) or (len(value) >= 20 and _mixed_case(value))


def _header_value(value: str) -> bool:
    """Some credential-looking run: 8+ token characters with a digit or mixed case."""
    for run in _HEADER_RUN.findall(value):
        if run.lower() in _AUTH_SCHEMES:
            continue
        if any(c.isdigit() for c in run) or _mixed_case(run):
            return True
    return False


def _cookie_value(value: str) -> bool:
    return _COOKIE_PAIR.match(value) is not None


def _key_body(value: str) -> bool:
    """An API key body: letters and digits, few separators (not `sk-hynix-earnings-2024`)."""
    body = value.split("-", 2)[-1] if value.startswith(("sk-proj-", "sk-svcacct-")) else value
    has_digit = any(c.isdigit() for c in body)
    has_alpha = any(c.isalpha() for c in body)
    separators = sum(c in "-_" for c in body)
    return has_digit and has_alpha and separators <= len(body) // 10 + 1


def _base64_blob(value: str) -> bool:
    """A long run that looks random: mixed case, digits, few separators, high entropy."""
    run = value.rstrip("=")
    if len(run) < 40 or not _mixed_case(run) or not any(c.isdigit() for c in run):
        return False
    if sum(c in "+/_-" for c in run) > len(run) // 10 + 1:
        return False
    return _entropy(run) >= 4.2 and not _wordy(run)


def _signed_query(value: str) -> bool:
    return _SENSITIVE_PARAM.search(value) is not None


def _mixed_case(value: str) -> bool:
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


# --- detectors ----------------------------------------------------------------------------
#
# Every pattern runs in linear time on hostile input (a 100 KB paste with no spaces): a pattern
# either starts at a literal label or at the start of a run (a lookbehind), and patterns that scan
# to the end of a line or URL always succeed once started, so the scan resumes after them.

Spans = Callable[[str, Sequence[int] | None], Iterator[tuple[int, int]]]


@dataclass(frozen=True, slots=True)
class _Detector:
    """`spans` finds the secrets of `kind`. It can only find one where one of `needles` (if any)
    occurs: in the text as it is, or lower-cased where `folded` (the pattern ignores case); and
    with `reach`, every match starts at most that many characters before a needle, so only those
    starts are tried. A long text (a summary, a paste) then costs a few tries around each needle
    instead of a try at every position."""

    kind: str
    spans: Spans
    needles: tuple[str, ...] = ()
    folded: bool = False
    reach: int | None = None
    in_url_path: bool = True  # False: ignore matches inside a URL's host and path (doc ids)

    def find(self, text: str, lowered: str | None) -> Iterator[tuple[int, int]]:
        """What `spans(text)` finds. `lowered` is the text lower-cased, each character in its
        place, or None where lower-casing cannot be trusted to keep a needle (`_ODD_CASE`)."""
        haystack = lowered if self.folded else text
        if not self.needles or haystack is None:
            return self.spans(text, None)
        if self.reach is None or len(text) < _TRY_STARTS_FROM:
            found = any(needle in haystack for needle in self.needles)
            return self.spans(text, None) if found else iter(())
        starts = _starts(haystack, self.needles, self.reach)
        return self.spans(text, starts) if starts else iter(())


def _starts(haystack: str, needles: tuple[str, ...], reach: int) -> list[int]:
    """Every position at most `reach` characters before an occurrence of a needle, in order."""
    starts: set[int] = set()
    for needle in needles:
        at = haystack.find(needle)
        while at >= 0:
            starts.update(range(max(0, at - reach), at + 1))
            at = haystack.find(needle, at + 1)
    return sorted(starts)


def _regex(
    pattern: str, *, group: int = 0, accept: Callable[[str], bool] | None = None, flags: int = 0
) -> Spans:
    compiled = re.compile(pattern, flags)

    def spans(text: str, starts: Sequence[int] | None) -> Iterator[tuple[int, int]]:
        matches = compiled.finditer(text) if starts is None else _anchored(compiled, text, starts)
        for match in matches:
            start, end = match.span(group)
            if start < end and (accept is None or accept(text[start:end])):
                yield start, end

    return spans


def _anchored(
    compiled: re.Pattern[str], text: str, starts: Sequence[int]
) -> Iterator[re.Match[str]]:
    """What `compiled.finditer(text)` yields when every match starts at one of `starts` (in
    order): the first match from each start not inside the previous match."""
    end = 0
    for start in starts:
        if start >= end and (match := compiled.match(text, start)) is not None:
            yield match
            end = max(match.end(), start + 1)


def _private_keys(text: str, starts: Sequence[int] | None) -> Iterator[tuple[int, int]]:
    """PEM private key blocks, BEGIN to END, or BEGIN to the end of the body if END is cut off."""
    position = 0
    has_end = True
    while begin := _PEM_BEGIN.search(text, position):
        end = _PEM_END.search(text, begin.end()) if has_end else None
        if end is not None:
            position = end.end()
        else:
            has_end = False  # no END anywhere further on: don't look again
            body_end = _PEM_NOT_BODY.search(text, begin.end())
            body = text[begin.end() : body_end.start() if body_end else len(text)]
            position = begin.end() + len(body.rstrip())
        yield begin.start(), position


_I = re.IGNORECASE
# Texts at least this long try only the starts near a needle; shorter ones are scanned whole
# (tries from Python cost more than the regex engine's own scan of a chat line)
_TRY_STARTS_FROM = 200
_MAX_PASSES = 64
_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")
# What every detector needs somewhere in the text: a long key-like run (keys, tokens, JWTs, base64),
# a URL, a data URI, a PEM block, or a label (password, 密码, token, secret, key, cookie, bearer…).
# A text without any of these has no secret, and skips the detectors (most chat lines).
_MAYBE = re.compile(
    r"[A-Za-z0-9+/=_-]{16}|://|data:|-----BEGIN|pass|pwd|密码|密碼|口令|授权码|密钥|秘钥|令牌"
    r"|token|secret|key|session|cookie|bearer|authoriz",
    re.IGNORECASE,
)
# Characters that an ignore-case pattern matches as an ASCII letter but `str.lower()` does not
# lower to it: `ſ` (s), `ı` and `İ` (i). A text with one runs every detector.
_ODD_CASE = "ſıİ"
_LOWER_WORD = re.compile(r"[a-z]{3,}")
_COOKIE_PAIR = re.compile(r"[^\s=;,]+=[^\s;,]")
_HEADER_RUN = re.compile(r"[A-Za-z0-9+/=_.~-]{8,}")
_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "bot", "digest", "negotiate"})
_SENSITIVE_PARAM = re.compile(
    r"(?:^|[?#&;])(?:[a-z0-9_.-]*(?:token|secret|password|passwd|signature|credential|api_?key)"
    r"|sig|sign|auth|sessionid|session_id)=[^&#\s]",
    _I,
)
_PEM_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_NOT_BODY = re.compile(r"[^A-Za-z0-9+/=\s:,-]")
_SCHEME = r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,30}://"
_URL_PATH = re.compile(_SCHEME + r"[^\s?#<>\"']+", _I)
_NOT_KEY = r"(?<![A-Za-z0-9_-])"  # left edge of a key-like token
_LABEL_END = r"""["']?\s*[:=：]\s*["']?"""  # `: `, `=`, `": "`, `='`
_PASSWORD_CHAR = r"[!#-&(-;=?-_a-~]"  # printable ASCII without quotes, <, > and backtick
_VALUE = rf"(?!\[REDACTED:){_PASSWORD_CHAR}+"
_TOKEN_VALUE = r"(?!\[REDACTED:)[A-Za-z0-9_\-./+=~]+"
_CREDENTIAL_LABEL = (
    r"(?:api[_-]?key|apikey|api[_-]?secret|api[_-]?token|access[_-]?key[_-]?secret"
    r"|secret[_-]?key|client[_-]?secret|app[_-]?secret|access[_-]?token|refresh[_-]?token"
    r"|auth[_-]?token|bot[_-]?token|id[_-]?token|session[_-]?(?:id|token|key)|encrypt[_-]?key"
    r"|verification[_-]?token|private[_-]?key|x-api-key|x-auth-token|token|secret)"
)

_DETECTORS: tuple[_Detector, ...] = (
    _Detector("private_key", _private_keys, needles=("-----BEGIN",)),
    _Detector(
        "data_uri",
        _regex(
            r"(?<![A-Za-z0-9])data:[a-z0-9.+-]+/[a-z0-9.+-]+(?:;[a-z0-9.+-]+=[^;,\s]+)*"
            r";base64,[A-Za-z0-9+/_-]+={0,2}",
            flags=_I,
        ),
        needles=("data:",),
        folded=True,
        reach=0,
    ),
    _Detector(
        "jwt",
        _regex(_NOT_KEY + r"eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{10,}"),
        needles=("eyJ",),
        reach=0,
    ),
    _Detector(
        "anthropic_key",
        _regex(_NOT_KEY + r"sk-ant-[A-Za-z0-9_-]{20,}", accept=_key_body),
        needles=("sk-ant-",),
        reach=0,
    ),
    _Detector(
        "openai_key",
        _regex(
            _NOT_KEY + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", accept=_key_body
        ),
        needles=("sk-",),
        reach=0,
    ),
    _Detector(
        "google_api_key",
        _regex(_NOT_KEY + r"AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
        needles=("AIza",),
        reach=0,
    ),
    _Detector(
        "github_token",
        _regex(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
        needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        reach=0,
    ),
    _Detector(
        "slack_token",
        _regex(_NOT_KEY + r"xox[abposr]-[A-Za-z0-9-]{10,}"),
        needles=("xox",),
        reach=0,
    ),
    _Detector(
        "telegram_token",
        _regex(r"(?<![A-Za-z0-9_:-])\d{8,10}:[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
        needles=(":",),
    ),
    _Detector(
        "aws_access_key_id",
        _regex(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
        needles=("AKIA", "ASIA"),
        reach=0,
    ),
    _Detector(
        "webhook_url",
        _regex(
            r"https?://(?:hooks\.slack\.com/services/|discord(?:app)?\.com/api/webhooks/"
            r"|open\.(?:feishu\.cn|larksuite\.com)/open-apis/bot/v2/hook/"
            r"|qyapi\.weixin\.qq\.com/cgi-bin/webhook/send\?key="
            r"|oapi\.dingtalk\.com/robot/send\?access_token=)([A-Za-z0-9/_=-]+)",
            group=1,
            flags=_I,
        ),
        needles=("://",),
        reach=len("https"),
    ),
    _Detector(
        "url_credentials",
        _regex(_SCHEME + r"[^\s/@:\[\]]+:((?!\[REDACTED:)[^\s/@]+)@", group=1, flags=_I),
        needles=("://",),
        reach=31,  # a scheme: up to 31 characters
    ),
    _Detector(
        "signed_url",
        _regex(
            _SCHEME + r"[^\s?#<>\"']+(?:[?#]([!#-&(-;=?-~]*[A-Za-z0-9=_%~*-]))?",
            group=1,
            accept=_signed_query,
            flags=_I,
        ),
        needles=("://",),
        reach=31,
    ),
    _Detector(
        "authorization",
        _regex(
            r"(?<![A-Za-z0-9_-])(?:proxy-)?authorization" + _LABEL_END + r"((?!\[REDACTED:)"
            r"(?:(?:bearer|basic|token|bot)\s+[^\s\"'<>]+|[^\r\n\"'<>]+))",
            group=1,
            accept=_header_value,
            flags=_I,
        ),
        needles=("authorization",),
        folded=True,
        reach=len("proxy-"),
    ),
    _Detector(
        "authorization",
        _regex(
            r"(?<![A-Za-z0-9_-])bearer\s+([A-Za-z0-9._~+/-]{16,}=*)",
            group=1,
            accept=_key_body,
            flags=_I,
        ),
        needles=("bearer",),
        folded=True,
        reach=0,
    ),
    _Detector(
        "cookie",
        _regex(
            r"(?<![A-Za-z0-9_-])(?:set-)?cookie" + _LABEL_END + r"((?!\[REDACTED:)[^\r\n\"'<>]+)",
            group=1,
            accept=_cookie_value,
            flags=_I,
        ),
        needles=("cookie",),
        folded=True,
        reach=len("set-"),
    ),
    _Detector(
        "aws_secret_key",
        _regex(
            r"(?<![A-Za-z0-9])(?:(?:aws[_-]?)?secret[_-]?access[_-]?key|aws[_-]?secret(?:[_-]?key)?)"
            + _LABEL_END
            + r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
            group=1,
            flags=_I,
        ),
        needles=("secret",),
        folded=True,
        reach=len("aws_"),
    ),
    _Detector(
        "password",
        _regex(
            r"(?:(?<![A-Za-z])(?:password|passwd|passphrase|pass_word)|密码|密碼|口令|授权码)"
            + _LABEL_END
            + f"({_VALUE})",
            group=1,
            accept=_password_value,
            flags=_I,
        ),
        needles=("pass", "密码", "密碼", "口令", "授权码"),
        folded=True,
        reach=0,
    ),
    _Detector(
        "password",
        _regex(
            r"(?:(?<![A-Za-z])(?:password|passwd|passphrase)\s+is\s+"
            r"|(?:密码|密碼|口令|授权码)\s*(?:是|为|為)?\s*"
            r"|(?<![A-Za-z])pwd" + _LABEL_END + f")({_VALUE})",
            group=1,
            accept=_password_with_symbol,
            flags=_I,
        ),
        needles=("pass", "pwd", "密码", "密碼", "口令", "授权码"),
        folded=True,
        reach=0,
    ),
    _Detector(
        "credential",
        _regex(
            r"(?:(?<![A-Za-z0-9])" + _CREDENTIAL_LABEL + r"|密钥|秘钥|令牌)"
            r"""(?:["']?\s*[:=：]\s*["']?|\s*(?:是|为|為)\s*)""" + f"({_TOKEN_VALUE})",
            group=1,
            accept=_credential_value,
            flags=_I,
        ),
        needles=("key", "token", "secret", "session", "密钥", "秘钥", "令牌"),
        folded=True,
        reach=len("verification_"),  # the longest label before its needle
    ),
    _Detector(
        "base64_blob",
        _regex(
            r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{40,}={0,2}(?![A-Za-z0-9+/=_-])",
            accept=_base64_blob,
        ),
        in_url_path=False,
    ),
)


def _around_placeholders(
    spans: list[tuple[int, int, int]], placeholders: list[tuple[int, int]]
) -> list[tuple[int, int, int]]:
    """Drop findings inside a placeholder; widen those that cut one to cover it whole."""
    if not placeholders:
        return spans
    ends = [p_end for _, p_end in placeholders]
    kept: list[tuple[int, int, int]] = []
    for start, end, index in spans:
        i = bisect.bisect_right(ends, start)  # first placeholder ending after `start`
        if i < len(placeholders) and placeholders[i][0] <= start and end <= placeholders[i][1]:
            continue
        new_start, new_end = start, end
        while i < len(placeholders) and placeholders[i][0] < end:
            new_start = min(new_start, placeholders[i][0])
            new_end = max(new_end, placeholders[i][1])
            i += 1
        kept.append((new_start, new_end, index))
    return kept


def _within(outer: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether `[start, end)` lies inside one of the sorted, disjoint `outer` spans."""
    i = bisect.bisect_right(outer, start, key=lambda span: span[0]) - 1
    return i >= 0 and outer[i][0] <= start and end <= outer[i][1]


def _merge(spans: list[tuple[int, int, int]]) -> list[SecretFinding]:
    """Union overlapping spans; each union is named by its longest member (ties: most specific)."""
    spans.sort(key=lambda s: (s[0], -s[1], s[2]))
    findings: list[SecretFinding] = []
    start, end, best = spans[0]
    best_key = (end - start, -best)
    for s_start, s_end, index in spans[1:]:
        if s_start < end:
            end = max(end, s_end)
            if (s_end - s_start, -index) > best_key:
                best, best_key = index, (s_end - s_start, -index)
            continue
        findings.append(SecretFinding(_DETECTORS[best].kind, start, end))
        start, end, best = s_start, s_end, index
        best_key = (end - start, -best)
    findings.append(SecretFinding(_DETECTORS[best].kind, start, end))
    return findings
