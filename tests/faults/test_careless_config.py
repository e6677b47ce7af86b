"""A careless config: aliases that loop, values out of any sensible range, a mistyped provider,
a channel secret that is not set where only memory is read. Each is one clear line, exit 2 —
never a traceback — and read-only commands run without the channels' secrets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nahida.config import Config, load_config
from nahida.errors import ConfigError
from nahida.providers.base import Task
from nahida.providers.router import Route, resolve_routes
from tests.integration.test_cli import nahida

QQ_CONFIG = """\
server: {host: 127.0.0.1, port: 8080}
channels:
  onebot:
    enabled: true
    mode: reverse_ws
    path: /onebot/v11/ws
    access_token: ${ONEBOT_TOKEN}
"""


def routes_of(config: Config) -> dict[Task, Route]:
    return resolve_routes(config.models, {n: p.model for n, p in config.providers.items()})


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "nahida.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "text",
    [
        "bot: &b\n  name: x\n  nicknames: *b\n",  # a mapping that holds itself
        "plugins: {enabled: &l [a, *l]}\n",  # a list that holds itself
    ],
)
def test_a_recursive_alias_is_one_clear_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError, match="alias refers to a mapping or list that contains it"):
        load_config(write(tmp_path, text), {})


def test_aliases_that_expand_without_end_are_refused(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 8)]
    with pytest.raises(ConfigError, match="expands to more than"):
        load_config(write(tmp_path, "\n".join(lines) + "\n"), {})


def test_yaml_nested_too_deeply_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_config(write(tmp_path, "bot: " + "[" * 5000 + "]" * 5000 + "\n"), {})


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("session: {hot_size: 100000}", "session.hot_size"),
        ("bus: {concurrency: 1000000}", "bus.concurrency"),
        ("memory: {budget_tokens: 99999999}", "memory.budget_tokens"),
        ("limits: {item_chars: 10000000}", "limits.item_chars"),
        ("bot: {max_reply_delay: 1e12}", "bot.max_reply_delay"),
    ],
)
def test_values_out_of_range_name_the_key_and_the_bound(
    tmp_path: Path, text: str, key: str
) -> None:
    with pytest.raises(ConfigError, match="less than or equal to") as caught:
        load_config(write(tmp_path, text + "\n"), {})
    assert caught.value.key == key


def test_a_mistyped_provider_name_is_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "providers: {openai: {type: openai, api_key: k, model: gpt-4o}}\n"
        "models: {chat: opnai/gpt-4o, compress: opnai}\n",
    )
    with pytest.raises(ConfigError, match="misspelt provider name 'openai'") as caught:
        routes_of(load_config(path, {}))
    assert caught.value.key == "models.chat"
    # a gateway's model names keep working: a prefix that is no near miss, digits, a dash
    fine = write(
        tmp_path,
        "providers: {gw: {type: openai, api_key: k, model: x}}\n"
        "models: {chat: openai/gpt-4o, compress: qwen3-8b, dream: gw}\n",
    )
    routes = routes_of(load_config(fine, {}))
    assert routes["chat"].model == "openai/gpt-4o" and routes["compress"].model == "qwen3-8b"


async def test_read_only_commands_need_no_channel_secret(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "nahida.yaml").write_text(QQ_CONFIG, encoding="utf-8")
    listed = await nahida(tmp_path, "session", "list", "--json")
    assert listed.code == 0, listed.err
    assert json.loads(listed.out) == []
    searched = await nahida(tmp_path, "memory", "list", "--json")
    assert searched.code == 0, searched.err
    doctor = await nahida(tmp_path, "doctor")
    assert doctor.code == 1  # `nahida run` could not start: said, not a traceback
    assert "environment variable ONEBOT_TOKEN is not set" in doctor.out
    assert "Traceback" not in doctor.err
    run = await nahida(tmp_path, "run")
    assert run.code == 2
    assert "ONEBOT_TOKEN is not set" in run.err and "channels.onebot.access_token" in run.err
    assert "Traceback" not in run.err


async def test_doctor_names_the_embedder_in_use_not_the_chat_model(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "nahida.yaml").write_text(
        "memory: {embedding: {backend: none}}\n", encoding="utf-8"
    )
    result = await nahida(tmp_path, "doctor", "--json", env=env)
    models = json.loads(result.out)["models"]
    assert models["chat"] == "openai/gpt-4o-mini"
    assert models["embed"] == "none"  # lexical recall only: no model embeds
    assert models["rerank"] == "off"  # memory.rerank is off


def test_a_channels_values_out_of_range_name_the_key() -> None:
    from nahida.adapters.onebot import config as onebot_config

    with pytest.raises(ConfigError, match="less than or equal to") as caught:
        onebot_config.load({"enabled": True, "queue_limit": 10**12})
    assert caught.value.key == "channels.onebot.queue_limit"
