"""The secret filter's detectors (`safety.find_secrets` runs them): what each kind of secret looks
like, as a pattern and a check of the value it found, and the needles that tell where a pattern
can match at all. The kinds, their order and what is replaced are listed in `safety`.

The patterns are tuned against `tests/data/chat_lines_zh_en.txt`, ordinary Chinese and English
group chat (code talk, URLs, version numbers, commit hashes, order numbers), which must stay clean,
and `tests/data/secrets_corpus.jsonl`, passwords said in words and on command lines beside talk
about passwords that holds none (`scripts/eval_secrets.py` scores both; docs/secrets.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from nahida.memory.core import secret_values as values

# --- detectors ----------------------------------------------------------------------------
#
# Every pattern runs in linear time on hostile input (a 100 KB paste with no spaces): a pattern
# either starts at a literal label or at the start of a run (a lookbehind), and patterns that scan
# to the end of a line or URL always succeed once started, so the scan resumes after them.

Spans = Callable[[str, Sequence[int] | None], Iterator[tuple[int, int]]]


@dataclass(frozen=True, slots=True)
class Detector:
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
        place, or None where lower-casing cannot be trusted to keep a needle (`ODD_CASE`)."""
        haystack = lowered if self.folded else text
        if not self.needles or haystack is None:
            return self.spans(text, None)
        if self.reach is None or len(text) < TRY_STARTS_FROM:
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
TRY_STARTS_FROM = 200
# What every detector needs somewhere in the text: a long key-like run (keys, tokens, JWTs, base64),
# a URL, a data URI, a PEM block, or a label (password, 密码, token, secret, key, cookie, bearer…).
# A text without any of these has no secret, and skips the detectors (most chat lines).
_SCREEN = (  # no escapes in it: lower-cased, it means the same
    r"[A-Za-z0-9+/=_-]{16}|://|data:|-----BEGIN|pass|pwd|pw|pin[ :：=码]|密码|密碼|口令|授权码|暗号"
    r"|提取码|密钥|秘钥|令牌|token|secret|key|session|cookie|bearer|authoriz|mysql|mariadb|redis-cli"
    r"|curl"
)
MAYBE = re.compile(_SCREEN, re.IGNORECASE)
# The same screen for a text lower-cased without `ODD_CASE` in it: a third of the time (Python's
# `re` tries every case of every literal at every position when it ignores case).
MAYBE_LOWERED = re.compile(_SCREEN.lower())
# Characters that an ignore-case pattern matches as an ASCII letter but `str.lower()` does not
# lower to it: `ſ` (s), `ı` and `İ` (i). A text with one runs every detector. (`needles.folded`
# maps them instead, with `casefold`, which may change a text's length: the starts tried here
# need every character in its place.)
ODD_CASE = "ſıİ"
_PEM_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_NOT_BODY = re.compile(r"[^A-Za-z0-9+/=\s:,-]")
_SCHEME = r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,30}://"
URL_PATH = re.compile(_SCHEME + r"[^\s?#<>\"']+", _I)
_NOT_KEY = r"(?<![A-Za-z0-9_-])"  # left edge of a key-like token
_LABEL_END = r"""["']?\s*[:=：]\s*["']?"""  # `: `, `=`, `": "`, `='`
_PASSWORD_CHAR = r"[!#-&(-;=?-_a-~]"  # printable ASCII without quotes, <, > and backtick
_VALUE = rf"(?!\[REDACTED:){_PASSWORD_CHAR}+"
_TOKEN_VALUE = r"(?!\[REDACTED:)[A-Za-z0-9_\-./+=~]+"
# Passwords said in words: a label, a verb that links it to its value ("改成了", "was changed
# to", "is now"), then the value: Latin (`_VALUE`), Han with a Latin tail ("芝麻开门123"), or
# anything quoted ("「开心每一天」"). What the words around it say is left alone.
_ZH_LABELS = ("密码", "密碼", "口令", "授权码", "暗号", "提取码")
_ZH_PASSWORD = "(?:" + "|".join(_ZH_LABELS) + ")"
_ZH_LINK = (
    r"(?:也|已经?|刚刚?|都|又|就|被|先|临时|统一|还|仍然|我们?|你们?|他们?|她们?|管理员)*"
    r"(?:(?:改|换|设|设置|重置|更新|变|修改|更改)(?:成|为|為)|设置的是|设的是|改的是|定为"
    r"|是|为|為|[:：])了?"
)
_HAN_VALUE = r"[\u4e00-\u9fff]{1,12}[!#-&(-;=?-~]{2,}"
_QUOTED = r"""\s*[“"「『'‘]((?!\[REDACTED:)[^“”"「」『』'‘’\n]{2,40})[”"」』'’]"""
_EN_PASSWORD = r"(?:password|passwd|passphrase|passcode|pwd|pw)"
_EN_LINK = (  # "is", "was changed to", "'s still", "for the staging box is", "to" (set it to)
    r"(?:\s+for\s+[^\n]{1,30}?)?"
    r"(?:'s|\s+(?:is|was|has\s+been|had\s+been|got|gets|will\s+be|becomes|became))?"
    r"(?:\s+(?:now|still|then))?"
    r"(?:\s+(?:changed|set|reset|updated|switched)(?:\s+back)?)?"
    r"(?:\s+(?:to|as)|(?<=is)|(?<=was)|(?<=now)|(?<=still)|(?<='s))\s+"
)
# A command's arguments up to the option that takes a password (bounded: a command line)
_ARGUMENTS = r"[^\n|;&<>]{0,200}?"
_ARGUMENT = r"""["']?((?!\[REDACTED:)[^\s'"]+)"""
CREDENTIAL_LABEL = (
    r"(?:api[_-]?key|apikey|api[_-]?secret|api[_-]?token|access[_-]?key[_-]?secret"
    r"|secret[_-]?key|client[_-]?secret|app[_-]?secret|access[_-]?token|refresh[_-]?token"
    r"|auth[_-]?token|bot[_-]?token|id[_-]?token|session[_-]?(?:id|token|key)|encrypt[_-]?key"
    r"|verification[_-]?token|private[_-]?key|x-api-key|x-auth-token|token|secret)"
)

DETECTORS: tuple[Detector, ...] = (
    Detector("private_key", _private_keys, needles=("-----BEGIN",)),
    Detector(
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
    Detector(
        "jwt",
        _regex(_NOT_KEY + r"eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{10,}"),
        needles=("eyJ",),
        reach=0,
    ),
    Detector(
        "anthropic_key",
        _regex(_NOT_KEY + r"sk-ant-[A-Za-z0-9_-]{20,}", accept=values.key_body),
        needles=("sk-ant-",),
        reach=0,
    ),
    Detector(
        "openai_key",
        _regex(
            _NOT_KEY + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
            accept=values.key_body,
        ),
        needles=("sk-",),
        reach=0,
    ),
    Detector(
        "google_api_key",
        _regex(_NOT_KEY + r"AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
        needles=("AIza",),
        reach=0,
    ),
    Detector(
        "github_token",
        _regex(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
        needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        reach=0,
    ),
    Detector(
        "slack_token",
        _regex(_NOT_KEY + r"xox[abposr]-[A-Za-z0-9-]{10,}"),
        needles=("xox",),
        reach=0,
    ),
    Detector(
        "telegram_token",
        _regex(r"(?<![A-Za-z0-9_:-])\d{8,10}:[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
        needles=(":",),
    ),
    Detector(
        "aws_access_key_id",
        _regex(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
        needles=("AKIA", "ASIA"),
        reach=0,
    ),
    Detector(
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
    Detector(
        "url_credentials",
        _regex(_SCHEME + r"[^\s/@:\[\]]+:((?!\[REDACTED:)[^\s/@]+)@", group=1, flags=_I),
        needles=("://",),
        reach=31,  # a scheme: up to 31 characters
    ),
    Detector(
        "signed_url",
        _regex(
            _SCHEME + r"[^\s?#<>\"']+(?:[?#]([!#-&(-;=?-~]*[A-Za-z0-9=_%~*-]))?",
            group=1,
            accept=values.signed_query,
            flags=_I,
        ),
        needles=("://",),
        reach=31,
    ),
    Detector(
        "authorization",
        _regex(
            r"(?<![A-Za-z0-9_-])(?:proxy-)?authorization" + _LABEL_END + r"((?!\[REDACTED:)"
            r"(?:(?:bearer|basic|token|bot)\s+[^\s\"'<>]+|[^\r\n\"'<>]+))",
            group=1,
            accept=values.header_value,
            flags=_I,
        ),
        needles=("authorization",),
        folded=True,
        reach=len("proxy-"),
    ),
    Detector(
        "authorization",
        _regex(
            r"(?<![A-Za-z0-9_-])bearer\s+([A-Za-z0-9._~+/-]{16,}=*)",
            group=1,
            accept=values.key_body,
            flags=_I,
        ),
        needles=("bearer",),
        folded=True,
        reach=0,
    ),
    Detector(
        "cookie",
        _regex(
            r"(?<![A-Za-z0-9_-])(?:set-)?cookie" + _LABEL_END + r"((?!\[REDACTED:)[^\r\n\"'<>]+)",
            group=1,
            accept=values.cookie_value,
            flags=_I,
        ),
        needles=("cookie",),
        folded=True,
        reach=len("set-"),
    ),
    Detector(
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
    Detector(
        "password",
        _regex(
            r"(?:(?<![A-Za-z])(?:password|passwd|passphrase|pass_word)|密码|密碼|口令|授权码)"
            + _LABEL_END
            + f"({_VALUE})",
            group=1,
            accept=values.password_value,
            flags=_I,
        ),
        needles=("pass", "密码", "密碼", "口令", "授权码"),
        folded=True,
        reach=0,
    ),
    Detector(
        "password",
        _regex(
            r"(?:(?<![A-Za-z])(?:password|passwd|passphrase)\s+is\s+"
            r"|(?:密码|密碼|口令|授权码)\s*(?:是|为|為)?\s*"
            r"|(?<![A-Za-z])pwd" + _LABEL_END + f")({_VALUE})",
            group=1,
            accept=values.password_with_symbol,
            flags=_I,
        ),
        needles=("pass", "pwd", "密码", "密碼", "口令", "授权码"),
        folded=True,
        reach=0,
    ),
    # passwords said in words: "密码改成了 x", "口令是 芝麻开门123", "password was changed to x",
    # "pw: x", "密码是「…」"
    Detector(
        "password",
        _regex(
            _ZH_PASSWORD + _ZH_LINK + r"\s*(" + _VALUE + ")",
            group=1,
            accept=values.worded_password,
        ),
        needles=_ZH_LABELS,
        reach=0,
    ),
    Detector(  # a mail app's authorisation code: 16 letters ("授权码是 abcd…")
        "password",
        _regex(r"授权码" + _ZH_LINK + r"\s*([A-Za-z]{12,})(?![A-Za-z0-9])", group=1),
        needles=("授权码",),
        reach=0,
    ),
    Detector(
        "password",
        _regex(
            _ZH_PASSWORD + _ZH_LINK + r"\s*(" + _HAN_VALUE + ")",
            group=1,
            accept=values.han_password,
        ),
        needles=_ZH_LABELS,
        reach=0,
    ),
    Detector(
        "password",
        _regex(
            r"(?:"
            + _ZH_PASSWORD
            + _ZH_LINK
            + r"|(?<![A-Za-z])"
            + _EN_PASSWORD
            + _EN_LINK
            + r")"
            + _QUOTED,
            group=1,
            accept=values.quoted_password,
            flags=_I,
        ),
        needles=("pass", "pw", *_ZH_LABELS),
        folded=True,
        reach=0,
    ),
    Detector(
        "password",
        _regex(
            r"(?<![A-Za-z])" + _EN_PASSWORD + r"(?:" + _EN_LINK + r"|\s+)" + f"({_VALUE})",
            group=1,
            accept=values.worded_password,
            flags=_I,
        ),
        needles=("pass", "pw"),
        folded=True,
        reach=0,
    ),
    Detector(
        "password",
        _regex(
            r"(?<![A-Za-z])(?:pw|pass)(?:'s|\s+is|\s+was|"
            + _LABEL_END
            + r")\s*(?:(?:now|still)\s+)?"
            + f"({_VALUE})",
            group=1,
            accept=values.short_label_password,
            flags=_I,
        ),
        needles=("pass", "pw"),
        folded=True,
        reach=0,
    ),
    Detector(  # a PIN: "my PIN is 4096", "I set my pin to 4096", "PIN码：0926"
        "password",
        _regex(
            r"(?<![A-Za-z])pin(?:\s+code|\s+number|码)?(?:"
            + _EN_LINK
            + r"|"
            + _LABEL_END
            + r"|"
            + _ZH_LINK
            + r"\s*)(\d{4,8})(?!\d)",
            group=1,
            flags=_I,
        ),
        needles=("pin",),
        folded=True,
        reach=0,
    ),
    # passwords on a command line: `mysql -uroot -pPASS`, `sshpass -p x`, `PGPASSWORD=x psql`,
    # `curl -u user:x`, `redis-cli -a x`, `--password x`
    Detector(
        "password",
        _regex(
            r"(?<![\w-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb(?:-dump)?)"
            r"(?![\w-])" + _ARGUMENTS + r"\s-p" + _ARGUMENT,
            group=1,
            accept=values.command_password,
        ),
        needles=("mysql", "mariadb"),
        reach=0,
    ),
    Detector(
        "password",
        _regex(
            r"(?<![\w-])redis-cli(?![\w-])" + _ARGUMENTS + r"\s-a\s+" + _ARGUMENT,
            group=1,
            accept=values.command_password,
        ),
        needles=("redis-cli",),
        reach=0,
    ),
    Detector(
        "password",
        _regex(
            r"(?<![\w-])curl(?![\w-])" + _ARGUMENTS + r"\s(?:-u|--user)(?:\s+|=)?[\"']?"
            r"[^\s:'\"@/]+:((?!\[REDACTED:)[^\s'\"@]+)",
            group=1,
            accept=values.command_password,
        ),
        needles=("curl",),
        reach=0,
    ),
    Detector(
        "password",
        _regex(
            r"(?:(?<![\w-])sshpass\s+-p\s*|(?<![\w-])--(?:password|passwd|pass)\s+"
            r"|(?<![A-Za-z0-9_])(?:PGPASSWORD|MYSQL_PWD|SSHPASS|REDISCLI_AUTH)=)" + _ARGUMENT,
            group=1,
            accept=values.command_password,
        ),
        needles=("sshpass", "--pass", "PGPASSWORD", "MYSQL_PWD", "SSHPASS", "REDISCLI_AUTH"),
        reach=0,
    ),
    Detector(
        "credential",
        _regex(
            r"(?:(?<![A-Za-z0-9])" + CREDENTIAL_LABEL + r"|密钥|秘钥|令牌)"
            r"""(?:["']?\s*[:=：]\s*["']?|\s*(?:是|为|為)\s*)""" + f"({_TOKEN_VALUE})",
            group=1,
            accept=values.credential_value,
            flags=_I,
        ),
        needles=("key", "token", "secret", "session", "密钥", "秘钥", "令牌"),
        folded=True,
        reach=len("verification_"),  # the longest label before its needle
    ),
    Detector(
        "base64_blob",
        _regex(
            r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{40,}={0,2}(?![A-Za-z0-9+/=_-])",
            accept=values.base64_blob,
        ),
        in_url_path=False,
    ),
)
