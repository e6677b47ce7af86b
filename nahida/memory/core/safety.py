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
    password *         password / passwd / pwd / pw / pass / 密码 / 口令 / 授权码 / 暗号 followed
                       by a value, also in words ("密码改成了 x", "password was changed to x",
                       "口令是 芝麻开门123", "密码是「…」"), and on command lines (`mysql -pPASS`,
                       `sshpass -p`, `PGPASSWORD=`, `curl -u user:x`, `redis-cli -a`,
                       `--password x`)
    credential *       api_key / token / secret / app_secret / 密钥 / 令牌 ... assignments
    base64_blob        40+ characters of base64 that look random (not in a URL's path)

Overlapping findings are merged into one span (nothing of a secret is left behind); the kind of
the longest one names it. `redact()` repeats until nothing is found, so it is idempotent, and it
never treats its own placeholders as secrets.

The detectors themselves, their patterns, value checks and needles, are in `secret_patterns`.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from nahida.memory.core.secret_patterns import DETECTORS, MAYBE, MAYBE_LOWERED, ODD_CASE, URL_PATH


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """A secret of `kind` at `text[start:end]`; the secret itself is never kept."""

    kind: str
    start: int
    end: int


def find_secrets(text: str) -> list[SecretFinding]:
    """Every secret in `text`, merged where they overlap, in order of position."""
    lowered = text.lower()
    trusted = len(lowered) == len(text) and not any(c in text for c in ODD_CASE)
    if (MAYBE_LOWERED.search(lowered) if trusted else MAYBE.search(text)) is None:
        return []  # nearly every chat line: none of the detectors can fire
    spans: list[tuple[int, int, int]] = []  # start, end, detector index
    url_paths: list[tuple[int, int]] | None = None
    for index, detector in enumerate(DETECTORS):
        for start, end in detector.find(text, lowered if trusted else None):
            if not detector.in_url_path:
                if url_paths is None:
                    url_paths = [m.span() for m in URL_PATH.finditer(text)]
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


_MAX_PASSES = 64
_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")


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
        findings.append(SecretFinding(DETECTORS[best].kind, start, end))
        start, end, best = s_start, s_end, index
        best_key = (end - start, -best)
    findings.append(SecretFinding(DETECTORS[best].kind, start, end))
    return findings
