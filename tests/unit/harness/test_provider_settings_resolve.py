"""resolve_settings: flags > env > .env; no key means "not configured"; the key never shows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from governance import ConfigError
from harness.providers._settings import ProviderSettings, resolve_settings

KEY = "sk-test-SECRET-0123456789"


def _dotenv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / ".env"
    path.write_text(text, encoding="utf-8")
    return path


def test_no_key_anywhere_is_not_configured(tmp_path: Path) -> None:
    dotenv = _dotenv(tmp_path, "PROCTOR_LLM_MODEL=m\nPROCTOR_LLM_BASE_URL=http://x/v1\n")
    assert resolve_settings(env={"PROCTOR_LLM_MODEL": "m"}, dotenv_path=dotenv) is None
    assert resolve_settings(env={}, dotenv_path=tmp_path / "absent.env") is None
    assert resolve_settings(env={}, dotenv_path=None) is None


def test_a_blank_key_counts_as_unset(tmp_path: Path) -> None:
    env = {
        "PROCTOR_LLM_API_KEY": "  ",
        "PROCTOR_LLM_MODEL": "m",
        "PROCTOR_LLM_BASE_URL": "http://x",
    }
    assert (
        resolve_settings(env=env, dotenv_path=_dotenv(tmp_path, "PROCTOR_LLM_API_KEY=\n")) is None
    )


def test_flags_beat_env_which_beats_dotenv(tmp_path: Path) -> None:
    dotenv = _dotenv(
        tmp_path,
        "PROCTOR_LLM_API_KEY=dotenv-key\n"
        "PROCTOR_LLM_MODEL=dotenv-model\n"
        "PROCTOR_LLM_BASE_URL=http://dotenv/v1\n"
        "PROCTOR_LLM_TIMEOUT=5\n",
    )
    env = {"PROCTOR_LLM_MODEL": "env-model", "PROCTOR_LLM_TIMEOUT": "7"}
    settings = resolve_settings(base_url="http://flag/v1", env=env, dotenv_path=dotenv)
    assert settings == ProviderSettings(
        base_url="http://flag/v1", model="env-model", api_key="dotenv-key", timeout=7.0
    )
    flagged = resolve_settings(
        model="flag-model", api_key="flag-key", timeout=3.0, env=env, dotenv_path=dotenv
    )
    assert flagged is not None
    assert (flagged.model, flagged.api_key, flagged.timeout, flagged.base_url) == (
        "flag-model",
        "flag-key",
        3.0,
        "http://dotenv/v1",
    )


def test_defaults_apply_when_only_the_required_values_are_set() -> None:
    env = {"PROCTOR_LLM_API_KEY": KEY, "PROCTOR_LLM_MODEL": "m", "PROCTOR_LLM_BASE_URL": "http://x"}
    settings = resolve_settings(env=env, dotenv_path=None)
    assert settings is not None
    assert (settings.timeout, settings.max_retries, settings.max_backoff) == (60.0, 2, 20.0)
    assert settings.provider_name == "openai-compatible"


def test_reading_dotenv_never_touches_os_environ(tmp_path: Path) -> None:
    dotenv = _dotenv(
        tmp_path, f"PROCTOR_LLM_API_KEY={KEY}\nPROCTOR_LLM_MODEL=m\nPROCTOR_LLM_BASE_URL=http://x\n"
    )
    before = dict(os.environ)
    assert resolve_settings(env={}, dotenv_path=dotenv) is not None
    assert dict(os.environ) == before
    assert "PROCTOR_LLM_API_KEY" not in os.environ or os.environ["PROCTOR_LLM_API_KEY"] != KEY


def test_env_none_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROCTOR_LLM_API_KEY", KEY)
    monkeypatch.setenv("PROCTOR_LLM_MODEL", "m")
    monkeypatch.setenv("PROCTOR_LLM_BASE_URL", "http://x/v1")
    settings = resolve_settings(dotenv_path=None)
    assert settings is not None and settings.api_key == KEY


def test_key_without_model_names_the_variable_to_set(tmp_path: Path) -> None:
    dotenv = _dotenv(tmp_path, f"PROCTOR_LLM_API_KEY={KEY}\nPROCTOR_LLM_BASE_URL=http://x\n")
    with pytest.raises(ConfigError) as caught:
        resolve_settings(env={}, dotenv_path=dotenv)
    assert "PROCTOR_LLM_MODEL" in str(caught.value)
    assert caught.value.path == str(dotenv)
    assert KEY not in str(caught.value)


def test_key_without_base_url_names_the_variable_to_set() -> None:
    with pytest.raises(ConfigError, match="PROCTOR_LLM_BASE_URL") as caught:
        resolve_settings(
            env={"PROCTOR_LLM_API_KEY": KEY, "PROCTOR_LLM_MODEL": "m"}, dotenv_path=None
        )
    assert caught.value.path is None
    assert KEY not in str(caught.value)


def test_a_bad_timeout_in_dotenv_names_file_and_line(tmp_path: Path) -> None:
    dotenv = _dotenv(
        tmp_path,
        f"# live vendor\nPROCTOR_LLM_API_KEY={KEY}\nPROCTOR_LLM_MODEL=m\n"
        "PROCTOR_LLM_BASE_URL=http://x\nexport PROCTOR_LLM_TIMEOUT=soon\n",
    )
    with pytest.raises(ConfigError, match="PROCTOR_LLM_TIMEOUT") as caught:
        resolve_settings(env={}, dotenv_path=dotenv)
    assert (caught.value.path, caught.value.line) == (str(dotenv), 5)


@pytest.mark.parametrize("raw", ["0", "-1", "nan", "inf", "abc"])
def test_unusable_timeouts_from_env_are_config_errors(raw: str) -> None:
    env = {
        "PROCTOR_LLM_API_KEY": KEY,
        "PROCTOR_LLM_MODEL": "m",
        "PROCTOR_LLM_BASE_URL": "http://x",
        "PROCTOR_LLM_TIMEOUT": raw,
    }
    with pytest.raises(ConfigError, match="PROCTOR_LLM_TIMEOUT"):
        resolve_settings(env=env, dotenv_path=None)


def test_a_base_url_that_is_not_http_is_refused() -> None:
    env = {"PROCTOR_LLM_API_KEY": KEY, "PROCTOR_LLM_MODEL": "m", "PROCTOR_LLM_BASE_URL": "api.x"}
    with pytest.raises(ConfigError, match="http"):
        resolve_settings(env=env, dotenv_path=None)


def test_repr_and_str_never_show_the_key() -> None:
    settings = ProviderSettings(base_url="http://x", model="m", api_key=KEY)
    assert KEY not in repr(settings)
    assert KEY not in str(settings)
    assert KEY not in f"{settings}"
    assert "api_key='***'" in repr(settings)


def test_settings_are_frozen() -> None:
    settings = ProviderSettings(base_url="http://x", model="m", api_key=KEY)
    with pytest.raises(AttributeError):
        settings.api_key = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    "overrides",
    [
        {"timeout": 0.0},
        {"max_retries": -1},
        {"max_backoff": float("nan")},
        {"api_key": " "},
        {"model": ""},
    ],
)
def test_impossible_settings_are_refused(overrides: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        values: dict[str, object] = {"base_url": "http://x", "model": "m", "api_key": KEY}
        ProviderSettings(**(values | overrides))  # type: ignore[arg-type]
