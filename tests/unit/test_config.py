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
