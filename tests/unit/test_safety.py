"""The secret filter: one example per kind, redaction, ordinary chat stays clean, idempotence."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nahida.memory.core.safety import SecretFinding, contains_secret, find_secrets, redact

CORPUS = Path(__file__).parent.parent / "data" / "chat_lines_zh_en.txt"
# passwords said in words and on command lines, and talk about passwords without one
WORDED = [
    json.loads(line)["text"]
    for name in ("secrets_corpus.jsonl", "secrets_heldout.jsonl")
    for line in (CORPUS.parent / name).read_text("utf-8").splitlines()
]

# Fake secrets in real formats. The prefixes are split off so secret scanners leave this file alone.
OPENAI = "sk-" + "proj-4fR9xKq2LmN8vB3cT7yW1zA6dE0gH5jU2pQ"
OPENAI_LEGACY = "sk-" + "Ab3dEf9hIj2kLm4nOp6qRs8tUv0wXy1zAb3dEf9hIj2kLm4n"
DEEPSEEK = "sk-" + "5d41402abc4b2a76b9719d911017c592"
ANTHROPIC = "sk-" + "ant-api03-Xy7kP2mQ9rT4vW8zB3nC6dF1gH5jK0lM-AbCdEf_123456"
GOOGLE = "AI" + "zaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI"
GITHUB = "gh" + "p_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"
GITHUB_OAUTH = "gh" + "o_16C7e42F292c6912E7710c838347Ae178B4a"
GITHUB_PAT = "github" + "_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzAB"
SLACK = "xo" + "xb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUv"
SLACK_USER = "xo" + "xp-2345678901-8765432109-ZyXwVuTsRqPoNmLkJiHgFe"
TELEGRAM = "1234567" + "89:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0"
AWS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"  # AWS's documented example
AWS_STS_KEY_ID = "ASIA" + "Y34FZKBOKMUTVV7A"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6Ik5haGlkYSJ9"
    ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aozN3tihPmljnnudb9G3HECdnH\n"
    "lWu2/a1gB9JW5TBQ+AVpum9Okx7KfqkfBKL9mcHgSL0yWMdjMfNOqNtrQqKlN4kE\n"
    "p6RtXLjD2tF0VLq9o+xyz==\n"
    "-----END RSA PRIVATE KEY-----"
)
BLOB = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFla"
PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

# (kind, text, the secret that must disappear, text that must survive)
POSITIVES: list[tuple[str, str, str, str]] = [
    (
        "openai_key",
        f"我的key是{OPENAI}，帮我记住",
        OPENAI,
        "我的key是[REDACTED:openai_key]，帮我记住",
    ),
    ("openai_key", f"old key {OPENAI_LEGACY} please rotate", OPENAI_LEGACY, "please rotate"),
    ("openai_key", f"DeepSeek 的 key：{DEEPSEEK}", DEEPSEEK, "DeepSeek 的 key："),
    ("anthropic_key", f"Claude key is {ANTHROPIC} ok?", ANTHROPIC, "Claude key is "),
    ("google_api_key", f"地图 key {GOOGLE} 别外传", GOOGLE, "别外传"),
    ("github_token", f"用这个 token {GITHUB} 推一下", GITHUB, "推一下"),
    ("github_token", f"oauth {GITHUB_OAUTH}", GITHUB_OAUTH, "oauth "),
    ("github_token", f"fine-grained: {GITHUB_PAT}", GITHUB_PAT, "fine-grained: "),
    ("slack_token", f"slack bot token {SLACK} for #ops", SLACK, "for #ops"),
    ("slack_token", f"{SLACK_USER} 是我的 user token", SLACK_USER, "是我的 user token"),
    ("telegram_token", f"TG 机器人 {TELEGRAM} 记一下", TELEGRAM, "记一下"),
    ("aws_access_key_id", f"AWS_ACCESS_KEY_ID={AWS_KEY_ID}", AWS_KEY_ID, "AWS_ACCESS_KEY_ID="),
    ("aws_access_key_id", f"临时凭证 {AWS_STS_KEY_ID} 一小时过期", AWS_STS_KEY_ID, "一小时过期"),
    (
        "aws_secret_key",
        f"aws_secret_access_key = {AWS_SECRET}",
        AWS_SECRET,
        "aws_secret_access_key = ",
    ),
    ("jwt", f"登录后拿到的 {JWT} 是这个", JWT, "登录后拿到的 "),
    ("private_key", f"服务器私钥：\n{PEM}\n存一下", "MIIEpAIBAAKCAQEA", "存一下"),
    (
        "private_key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
        "",
    ),
    (
        "authorization",
        'curl -H "Authorization: Bearer abcDEF123456ghiJKL789" https://api.x.com',
        "abcDEF123456ghiJKL789",
        'curl -H "Authorization: [REDACTED:authorization]" https://api.x.com',
    ),
    (
        "authorization",
        "Authorization: Basic dXNlcjpwYXNzd29yZA==",
        "dXNlcjpwYXNz",
        "Authorization: ",
    ),
    ("authorization", "请求头带 bearer Zx9Yw8Vu7Ts6Rq5Po4Nm3 就行", "Zx9Yw8Vu7Ts6", "就行"),
    ("cookie", "Cookie: sessionid=8f7a6b5c4d3e2f1a; csrftoken=Zx9Yw8Vu7", "8f7a6b5c", "Cookie: "),
    ("cookie", "Set-Cookie: SID=31d4d96e407aad42; Path=/; Secure", "31d4d96e", "Set-Cookie: "),
    (
        "password",
        "数据库 password: hunter2! 别告诉别人",
        "hunter2",
        "数据库 password: [REDACTED:password] 别告诉别人",
    ),
    ("password", "my password is Tr0ub4dor&3 lol", "Tr0ub4dor", "my password is "),
    ("password", "password: $ecretPa55", "$ecretPa55", "password: [REDACTED:password]"),
    ("password", "wifi密码是 nahida2024，客厅路由器", "nahida2024", "，客厅路由器"),
    ("password", "密码：P@ssw0rd", "P@ssw0rd", "密码："),
    ("password", "口令 Abc12345 今晚有效", "Abc12345", "今晚有效"),
    ("password", "QQ邮箱授权码：abcdefghijklmnop", "abcdefghijklmnop", "QQ邮箱授权码："),
    ("password", 'export PWD="S3cr3t!"', "S3cr3t", "export PWD="),
    (
        "password",
        '{"username": "nahida", "passwd": "kusanali"}',
        "kusanali",
        '"username": "nahida"',
    ),
    ("credential", "api_key=9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c", "api_key="),
    (
        "credential",
        "LARK_APP_SECRET: 'aBcDeFgHiJkLmNoPqRsTuVwX12'",
        "aBcDeFgH",
        "LARK_APP_SECRET: '",
    ),
    ("credential", "飞书 encrypt_key=Ek7Hs9Jq2Lw4Xz6Cv8Bn 配好了", "Ek7Hs9Jq2Lw4", "配好了"),
    ("credential", "token=tkn_8Hq2ZpL0xY7w 这个先别删", "tkn_8Hq2ZpL0xY7w", "这个先别删"),
    ("credential", "密钥是 A1b2C3d4E5f6G7h8", "A1b2C3d4E5f6G7h8", "密钥是 "),
    ("credential", "秘钥：Ab12cd34ef", "Ab12cd34ef", "秘钥："),
    (
        "signed_url",
        "https://bucket.s3.amazonaws.com/report.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Credential=AKIAEXAMPLE%2F20240101&X-Amz-Signature=3f2a9c1d 下载链接",
        "X-Amz-Signature=3f2a9c1d",
        "https://bucket.s3.amazonaws.com/report.pdf?[REDACTED:signed_url] 下载链接",
    ),
    (
        "signed_url",
        "重置链接 https://example.com/reset?token=Qw3rTy9UiOp，点一下",
        "Qw3rTy9UiOp",
        "https://example.com/reset?[REDACTED:signed_url]，点一下",
    ),
    (
        "signed_url",
        "https://cdn.example.com/v.mp4?Expires=1716000000&Signature=a1B2c3D4&Key-Pair-Id=K2ABC",
        "a1B2c3D4",
        "https://cdn.example.com/v.mp4?",
    ),
    ("signed_url", "https://app.example.com/cb#access_token=ya29.A0ARrdaM", "ya29", "app.example"),
    (
        "url_credentials",
        "连库用 postgres://admin:s3cr3tP4ss@db.internal:5432/app",
        "s3cr3tP4ss",
        "postgres://admin:[REDACTED:url_credentials]@db.internal:5432/app",
    ),
    (
        "webhook_url",
        "群机器人 https://open.feishu.cn/open-apis/bot/v2/hook/1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d",
        "1a2b3c4d-5e6f",
        "https://open.feishu.cn/open-apis/bot/v2/hook/[REDACTED:webhook_url]",
    ),
    ("data_uri", f"头像 {PNG} 就是这个", "iVBORw0KGgo", "头像 [REDACTED:data_uri] 就是这个"),
    ("base64_blob", f"blob {BLOB} end", BLOB, "blob [REDACTED:base64_blob] end"),
    ("base64_blob", f"这串 {AWS_SECRET} 是啥", AWS_SECRET, "这串 [REDACTED:base64_blob] 是啥"),
]

NEGATIVES = [
    "commit 3f2a9c1 引入的 bug",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "https://github.com/foo/bar/blob/main/src/components/VeryLongComponentName.tsx",
    "https://www.reuters.com/technology/sk-hynix-quarterly-profit-beats-estimates-2024-04-25/",
    "pip install scikit-learn，也叫 sk-learn",
    "def login(username: str, password: str) -> Session:",
    "password: required",
    "密码是多少？",
    "max_tokens=4096",
    "pwd: /home/ubuntu",
    'curl -H "Authorization: Bearer $OPENAI_API_KEY" https://api.openai.com/v1/models',
    "password=os.getenv('DB_PASSWORD')",
    "password: $DB_PASS",
    "api_key: {{ secrets.LARK_APP_SECRET }}",
    "AbstractSingletonProxyFactoryBeanTestCase2024 failed",
    "订单号 202405201314520001",
    "cookie: chocolate chip is the best",
    "password: [REDACTED:password]",
]


@pytest.mark.parametrize(("kind", "text", "secret", "kept"), POSITIVES)
def test_each_kind_is_found_and_redacted(kind: str, text: str, secret: str, kept: str) -> None:
    findings = find_secrets(text)
    assert [f.kind for f in findings] == [kind]
    assert contains_secret(text)
    redacted = redact(text)
    assert secret not in redacted
    assert f"[REDACTED:{kind}]" in redacted
    assert kept in redacted
    assert not contains_secret(redacted)


def test_every_kind_has_an_example() -> None:
    kinds = {kind for kind, *_ in POSITIVES}
    assert kinds == {
        "private_key",
        "data_uri",
        "jwt",
        "anthropic_key",
        "openai_key",
        "google_api_key",
        "github_token",
        "slack_token",
        "telegram_token",
        "aws_access_key_id",
        "webhook_url",
        "url_credentials",
        "signed_url",
        "authorization",
        "cookie",
        "aws_secret_key",
        "password",
        "credential",
        "base64_blob",
    }


@pytest.mark.parametrize("text", NEGATIVES)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text) == text


def test_finding_holds_position_not_secret() -> None:
    text = f"key: {OPENAI} end"
    [finding] = find_secrets(text)
    assert finding == SecretFinding("openai_key", 5, 5 + len(OPENAI))
    assert [f.name for f in dataclasses.fields(SecretFinding)] == ["kind", "start", "end"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        finding.kind = "x"  # type: ignore[misc]


def test_labels_are_kept() -> None:
    assert redact("password: hunter2") == "password: [REDACTED:password]"
    assert redact("密码：hunter22") == "密码：[REDACTED:password]"
    assert redact("PASSWORD=hunter2;") == "PASSWORD=[REDACTED:password]"
    assert redact("Cookie: a=1; b=2") == "Cookie: [REDACTED:cookie]"


def test_several_secrets_in_one_text() -> None:
    text = f"openai {OPENAI}\ngithub {GITHUB}\nand {JWT}."
    assert [f.kind for f in find_secrets(text)] == ["openai_key", "github_token", "jwt"]
    assert redact(text) == (
        "openai [REDACTED:openai_key]\ngithub [REDACTED:github_token]\nand [REDACTED:jwt]."
    )


def test_overlapping_findings_merge_under_the_longest() -> None:
    text = f"Authorization: Bearer {JWT}"
    assert redact(text) == "Authorization: [REDACTED:authorization]"
    assert redact(f"api_key={OPENAI}") == "api_key=[REDACTED:openai_key]"


def test_private_key_block_is_removed_whole() -> None:
    text = f"before\n{PEM}\nafter"
    assert redact(text) == "before\n[REDACTED:private_key]\nafter"


def test_corpus_of_ordinary_chat_has_no_false_positives() -> None:
    lines = [line for line in CORPUS.read_text("utf-8").splitlines() if line.strip()]
    assert len(lines) >= 400
    flagged = [(line, find_secrets(line)) for line in lines]
    flagged = [(line, found) for line, found in flagged if found]
    rate = len(flagged) / len(lines)
    print(f"secret filter false positives: {len(flagged)}/{len(lines)} = {rate:.2%}")
    assert flagged == [], f"false-positive rate {rate:.2%}"
    assert all(redact(line) == line for line in lines)


_FRAGMENTS = st.sampled_from(
    [
        OPENAI,
        ANTHROPIC,
        GITHUB,
        SLACK,
        JWT,
        PEM,
        BLOB,
        PNG,
        AWS_KEY_ID,
        "password: ",
        "密码是",
        "pwd=",
        "token=",
        "api_key: ",
        "Authorization: Bearer ",
        "Cookie: a=",
        "https://x.io/p?sig=",
        "postgres://u:",
        "@host",
        "-----BEGIN PRIVATE KEY-----",
        "[REDACTED:password]",
        "[REDACTED:",
        "]",
        "=",
        " ",
        "\n",
        "，",
        "记住",
        "aB3",
    ]
)
_MIXED = st.lists(st.one_of(_FRAGMENTS, st.text(max_size=12)), max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), _MIXED))
def test_redact_is_idempotent_and_total(text: str) -> None:
    once = redact(text)
    assert redact(once) == once
    assert find_secrets(once) == []
    findings = find_secrets(text)
    assert all(0 <= f.start < f.end <= len(text) for f in findings)
    assert all(a.end <= b.start for a, b in itertools.pairwise(findings))
    assert contains_secret(text) == bool(findings)
    if not findings:
        assert once == text


@pytest.mark.parametrize(
    "unit",
    [
        "a",
        "中文",
        "cookie:",
        "https://a/",
        "x://y:z/",
        "password=[REDACTED:x]a",
        "-----BEGIN PRIVATE KEY-----!",
        "-----BEGIN PRIVATE KEY-----\nAbC1+/\n-----END PRIVATE KEY-----",
        "aB3dE9/+",
        "mysql -p",
        "curl -u a:",
        "password for ",
        "密码改成",
        "密码是「",
        "pw: ",
    ],
)
def test_hostile_input_is_scanned_in_linear_time(unit: str) -> None:
    text = unit * (100_000 // len(unit))
    started = time.perf_counter()
    redact(text)
    assert time.perf_counter() - started < 2.0  # about 0.05 s; quadratic patterns take minutes


def test_the_quick_screen_never_hides_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """`find_secrets` skips its detectors when the text has nothing any of them needs: the same
    findings with and without that screen, over every sample here and the chat corpus."""
    import re

    from nahida.memory.core import safety

    corpus = Path(__file__).resolve().parents[1] / "data" / "chat_lines_zh_en.txt"
    texts = [text for _, text, _, _ in POSITIVES] + NEGATIVES + WORDED
    texts += corpus.read_text(encoding="utf-8").splitlines()
    # as written, upper-cased, and with letters an ignore-case pattern reads as s, i and k
    odd = str.maketrans({"s": "ſ", "i": "ı", "I": "İ", "k": "\u212a"})
    odd_ones = [text.translate(odd) for text in texts]
    texts += [text.upper() for text in texts] + odd_ones
    screened = [find_secrets(text) for text in texts]
    everything = re.compile("")  # matches everything: no screen
    monkeypatch.setattr(safety, "MAYBE", everything)
    monkeypatch.setattr(safety, "MAYBE_LOWERED", everything)
    assert [find_secrets(text) for text in texts] == screened
    assert sum(map(bool, screened)) >= 2 * len(POSITIVES)  # not vacuous
    assert sum(map(bool, screened[-len(odd_ones) :])) >= 10  # nor for the odd letters


def test_needles_never_hide_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """A detector runs only where one of its needles occurs, and in a long text tries only the
    starts its needles allow: the same findings as every detector run over the whole text, over
    every sample short and padded long, as written, upper-cased, case-swapped and with the letters
    an ignore-case pattern reads as `s`/`i` (`ſ`, `ı`, `İ`), every credential label, the samples
    all in one text, and the chat corpus."""
    from nahida.memory.core import secret_patterns

    corpus = Path(__file__).resolve().parents[1] / "data" / "chat_lines_zh_en.txt"
    labels = (
        re.sub(r"\(\?:|\)|\[_-\]\?", "_", secret_patterns.CREDENTIAL_LABEL).strip("_").split("|")
    )
    samples = [text for _, text, _, _ in POSITIVES] + NEGATIVES + WORDED
    samples += [f"配置里 {label.replace('__', '_').strip('_')}: Ab3dEf9hIj2k" for label in labels]
    samples += [f"x{text}" for text in samples]
    samples += [
        f"{text}{' ' * secret_patterns.TRY_STARTS_FROM}" for text in samples
    ]  # long: tried starts
    samples.append("  ".join(samples))
    texts = [*samples, *corpus.read_text(encoding="utf-8").splitlines()]
    for text in samples:
        odd = text.replace("s", "ſ").replace("i", "ı").replace("I", "İ")
        texts += [text.upper(), text.swapcase(), odd]
    needled = [find_secrets(text) for text in texts]
    monkeypatch.setattr(
        secret_patterns.Detector, "find", lambda self, text, lowered: self.spans(text, None)
    )
    assert [find_secrets(text) for text in texts] == needled
    assert sum(map(bool, needled)) >= 2 * len(POSITIVES)  # not vacuous
