"""Config loading: YAML, ${VAR}, NAHIDA__ overrides, env providers, one clear error line."""

from __future__ import annotations

from pathlib import Path

import pytest

from nahida.config import load_config, masked_dump
from nahida.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "nahida.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_example_config_is_valid_and_complete() -> None:
    config = load_config(Path("config/nahida.example.yaml"), {})
    assert config.bot.language == "zh"
    assert config.server.port == 8080
    text = Path("config/nahida.example.yaml").read_text(encoding="utf-8")
    for section in config.model_dump():
        assert f"\n{section}:" in text, f"section {section} undocumented"


def test_vars_are_expanded_and_overrides_win(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "providers:\n  main: {type: openai, api_key: '${MY_KEY}', base_url: '${URL:-http://x}'}\n"
        "bot: {language: zh}\n",
    )
    env = {"MY_KEY": "sk-secret-value", "NAHIDA__BOT__LANGUAGE": "en", "NAHIDA__SERVER__PORT": "9"}
    config = load_config(path, env)
    assert config.providers["main"].api_key.get_secret_value() == "sk-secret-value"
    assert config.providers["main"].base_url == "http://x"
    assert config.bot.language == "en"
    assert config.server.port == 9
    assert "sk-secret-value" not in str(masked_dump(config))


def test_env_declares_openai_then_anthropic() -> None:
    config = load_config(None, {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://h/v1"})
    assert config.providers["openai"].model == "gpt-4o-mini"
    assert config.providers["openai"].base_url == "http://h/v1"
    config = load_config(None, {"ANTHROPIC_API_KEY": "k", "NAHIDA_MODEL": "claude-x"})
    assert list(config.providers) == ["anthropic"]
    assert config.providers["anthropic"].model == "claude-x"
    assert load_config(None, {}).providers == {}


def test_yaml_providers_win_over_env(tmp_path: Path) -> None:
    path = write(tmp_path, "providers:\n  local: {type: openai, model: qwen}\n")
    config = load_config(path, {"OPENAI_API_KEY": "k"})
    assert list(config.providers) == ["local"]


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ("bot:\n  language: fr\n", "bot.language", "'zh' or 'en'"),
        ("server:\n  port: lots\n", "server.port", "integer"),
        ("bot:\n  nicknamez: [a]\n", "bot.nicknamez", "Extra inputs"),
        ("models:\n  chitchat: a/b\n", "models", "unknown task"),
        ("bot: [\n", None, "invalid YAML at line 2"),
        ("- just\n- a list\n", None, "top level must be a mapping"),
    ],
)
def test_bad_config_names_file_and_key(
    tmp_path: Path, text: str, key: str | None, fragment: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, {})
    message = str(info.value)
    assert message.startswith(str(path))
    if key:
        assert f": {key}: " in message
    assert fragment in message
    assert "\n" not in message


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "nope.yaml", {})


def test_a_file_that_is_not_utf8_names_the_file_and_the_place(tmp_path: Path) -> None:
    path = tmp_path / "gbk.yaml"
    path.write_bytes("bot:\n  name: 纳西妲\n".encode("gbk"))
    with pytest.raises(ConfigError) as info:
        load_config(path, {})
    message = str(info.value)
    assert message.startswith(f"{path}: not valid UTF-8 text")
    assert "at line 2, column 9" in message
    assert "\n" not in message


def test_a_utf8_file_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes("\ufeffbot: {name: 纳西妲}\n".encode())
    assert load_config(path, {}).bot.name == "纳西妲"


def test_a_control_character_is_named_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bot:\n  name: 'a\x01'\n")
    with pytest.raises(ConfigError, match=r"line 2, column 11: unacceptable character #x0001$"):
        load_config(path, {})


def test_a_directory_is_not_a_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read config file: \S"):
        load_config(tmp_path, {})


def test_cli_reports_a_non_utf8_config_in_one_line_with_exit_code_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from nahida.cli.main import main

    path = tmp_path / "latin1.yaml"
    path.write_bytes("bot:\n  name: Nahída\n".encode("latin-1"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.argv", ["nahida", "--config", str(path), "chat"])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: {path}: not valid UTF-8 text")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"NAHIDA__BOT__LANGUAGE": "fr"}, "NAHIDA__BOT__LANGUAGE: Input should be 'zh' or 'en'"),
        ({"NAHIDA__SERVER__PORT": "lots"}, "NAHIDA__SERVER__PORT: Input should be a valid integer"),
        ({"NAHIDA__BOT__NICKNAMEZ": "[a]"}, "NAHIDA__BOT__NICKNAMEZ: Extra inputs"),
        ({"NAHIDA__BOT": "x"}, "NAHIDA__BOT: Input should be a valid dictionary"),
        (  # deeper than the variable: the key is named too
            {"NAHIDA__BOT__RATE_LIMIT": "{per_chat_per_minute: -1}"},
            "NAHIDA__BOT__RATE_LIMIT: bot.rate_limit.per_chat_per_minute: Input should be greater",
        ),
        (  # the variable created a provider without a type
            {"NAHIDA__PROVIDERS__MAIN__API_KEY": "k"},
            "NAHIDA__PROVIDERS__MAIN__API_KEY: providers.main.type: Field required",
        ),
        (  # a check of the whole table, failing because of the variable
            {"NAHIDA__MODELS__CHITCHAT": "main"},
            "NAHIDA__MODELS__CHITCHAT: Value error, unknown task 'chitchat'",
        ),
    ],
)
def test_a_bad_override_names_the_variable(
    tmp_path: Path, env: dict[str, str], expected: str
) -> None:
    for path in (None, write(tmp_path, "bot:\n  name: Nahida\nmodels: {chat: main}\n")):
        with pytest.raises(ConfigError) as info:
            load_config(path, env)
        assert str(info.value).startswith(expected)


def test_a_bad_override_of_a_bad_file_value_names_the_variable(tmp_path: Path) -> None:
    path = write(tmp_path, "bot:\n  language: fr\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, {"NAHIDA__BOT__LANGUAGE": "de"})
    assert str(info.value) == "NAHIDA__BOT__LANGUAGE: Input should be 'zh' or 'en'"
    assert load_config(path, {"NAHIDA__BOT__LANGUAGE": "en"}).bot.language == "en"


@pytest.mark.parametrize(
    ("text", "env", "key"),
    [
        ("bot:\n  language: fr\n", {"NAHIDA__SERVER__PORT": "9"}, "bot.language"),
        ("models:\n  chitchat: main\n", {"NAHIDA__MODELS__CHAT": "main"}, "models"),
        ("bot:\n  nicknamez: [a]\n", {"NAHIDA__BOT__NAME": "N"}, "bot.nicknamez"),
    ],
)
def test_an_error_in_the_file_still_names_the_file_beside_overrides(
    tmp_path: Path, text: str, env: dict[str, str], key: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, env)
    assert str(info.value).startswith(f"{path}: {key}: ")
    assert "NAHIDA__" not in str(info.value)


def test_an_unset_variable_is_an_error_naming_it_and_the_key(tmp_path: Path) -> None:
    path = write(tmp_path, "providers:\n  main: {type: openai, api_key: 'sk-${MY_KEY}'}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, {"OTHER": "x"})
    message = str(info.value)
    assert message.startswith(f"{path}: providers.main.api_key: ")
    assert "MY_KEY is not set" in message
    assert "${MY_KEY:-}" in message
    assert "\n" not in message


def test_an_unset_variable_in_a_list_names_the_item(tmp_path: Path) -> None:
    path = write(tmp_path, "bot:\n  admins: ['onebot:1', '${ADMIN}']\n")
    with pytest.raises(ConfigError, match=r": bot\.admins\.1: environment variable ADMIN "):
        load_config(path, {})


def test_empty_and_default_expansions(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "bot:\n  name: '${NAME:-Nahida}'\n  nicknames: ['${NICK:-}', '${SET}', '${EMPTY:-x}']\n",
    )
    config = load_config(path, {"SET": "", "EMPTY": ""})
    assert config.bot.name == "Nahida"  # unset: the default
    assert config.bot.nicknames == ["", "", "x"]  # `:-` explicit empty; set but empty stays ''
    config = load_config(path, {"NAME": "纳西妲", "NICK": "n", "SET": "s", "EMPTY": "e"})
    assert config.bot.name == "纳西妲"
    assert config.bot.nicknames == ["n", "s", "e"]


def test_chat_modes_name_chats_and_modes(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(
        "bot:\n  chat_modes:\n    'onebot:private:42': companion\n"
        "    'lark:group:oc_1': assistant\n",
        encoding="utf-8",
    )
    assert load_config(good, env={}).bot.companion_chats() == frozenset({"onebot:private:42"})
    for bad, key in (
        ("'onebot:42': companion", "bot.chat_modes"),
        ("'onebot:private:42': pet", ""),
    ):
        path = tmp_path / "bad.yaml"
        path.write_text(f"bot:\n  chat_modes:\n    {bad}\n", encoding="utf-8")
        with pytest.raises(ConfigError) as caught:
            load_config(path, env={})
        assert "bot.chat_modes" in str(caught.value) and key in str(caught.value)


def test_retired_store_keys_are_accepted_and_named_for_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, "memory:\n  store_process: true\n  store_reader: false\n")
    config = load_config(path, {})
    assert config.retired_keys() == ["memory.store_process", "memory.store_reader"]
    assert "store_process" not in config.memory.model_dump()  # nor in `nahida doctor`
    assert load_config(None, {}).retired_keys() == []


def test_the_bot_starts_with_a_retired_key_and_warns_once_for_it(tmp_path: Path) -> None:
    from structlog.testing import capture_logs

    from nahida.app import App, Paths
    from nahida.config import Config

    config = Config.model_validate({"memory": {"store_process": True}})
    with capture_logs() as logs:
        app = App(config, Paths(None, tmp_path / "data", tmp_path / "workspace"))
    app.memory.close()
    warned = [e for e in logs if e["event"] == "config_key_ignored"]
    assert [(e["key"], e["log_level"]) for e in warned] == [("memory.store_process", "warning")]


def test_the_store_is_sqlite_or_a_postgres_uri(tmp_path: Path) -> None:
    assert load_config(None, {}).memory.store == "sqlite"
    uri = "postgresql://nahida:s3cret-pw@db.example:5432/nahida"
    config = load_config(write(tmp_path, f"memory:\n  store: {uri}\n"), {})
    assert config.memory.postgres == uri
    assert "s3cret-pw" in config.secrets()  # masked wherever a log or page shows it
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, "memory:\n  store: mysql://x@y/z\n"), {})
    assert caught.value.key == "memory.store" and "postgresql://" in str(caught.value)


def test_database_url_names_the_store_unless_the_config_does(tmp_path: Path) -> None:
    uri = "postgres://bot:pw@127.0.0.1/memory"
    assert load_config(None, {"DATABASE_URL": uri}).memory.postgres == uri
    # meant for other software: not ours to take
    assert load_config(None, {"DATABASE_URL": "mysql://a@b/c"}).memory.store == "sqlite"
    path = write(tmp_path, "memory:\n  store: sqlite\n")
    assert load_config(path, {"DATABASE_URL": uri}).memory.store == "sqlite"
    assert (
        load_config(None, {"NAHIDA__MEMORY__STORE": "sqlite", "DATABASE_URL": uri}).memory.postgres
        is None
    )
