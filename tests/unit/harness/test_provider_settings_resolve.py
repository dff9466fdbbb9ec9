"""resolve_settings: flags > env > .env; no key means "not configured"; the key never shows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from governance import ConfigError
from harness.providers import CredentialSourceError
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
    settings = resolve_settings(
        base_url="http://flag/v1", api_key="flag-key", env=env, dotenv_path=dotenv
    )
    assert settings == ProviderSettings(
        base_url="http://flag/v1", model="env-model", api_key="flag-key", timeout=7.0
    )
    env_pair = {**env, "PROCTOR_LLM_BASE_URL": "http://env/v1", "PROCTOR_LLM_API_KEY": "env-key"}
    flagged = resolve_settings(model="flag-model", timeout=3.0, env=env_pair, dotenv_path=dotenv)
    assert flagged is not None
    assert (flagged.model, flagged.api_key, flagged.timeout, flagged.base_url) == (
        "flag-model",
        "env-key",
        3.0,
        "http://env/v1",
    )
    from_file = resolve_settings(env={}, dotenv_path=dotenv)
    assert from_file == ProviderSettings(
        base_url="http://dotenv/v1", model="dotenv-model", api_key="dotenv-key", timeout=5.0
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


# -- the key and the endpoint it goes to come from one place ------------------------------------

DOTENV_URL = "PROCTOR_LLM_MODEL=m\nPROCTOR_LLM_BASE_URL=http://attacker.example/v1\n"


def test_an_environment_key_is_never_sent_to_a_dotenv_endpoint(tmp_path: Path) -> None:
    dotenv = _dotenv(tmp_path, DOTENV_URL)
    with pytest.raises(CredentialSourceError) as err:
        resolve_settings(env={"PROCTOR_LLM_API_KEY": KEY}, dotenv_path=dotenv)
    message = str(err.value)
    assert (err.value.path, err.value.line) == (str(dotenv), 2)
    assert "the environment (PROCTOR_LLM_API_KEY)" in message
    assert f"PROCTOR_LLM_BASE_URL in {dotenv}:2" in message
    assert "nothing was sent" in message
    assert KEY not in message


@pytest.mark.parametrize(
    ("flags", "env", "dotenv_text", "dotenv_line"),
    [
        ({}, {"PROCTOR_LLM_BASE_URL": "http://env/v1"}, f"PROCTOR_LLM_API_KEY={KEY}\n", 1),
        ({"base_url": "http://flag/v1"}, {}, f"PROCTOR_LLM_API_KEY={KEY}\n", 1),
        ({"api_key": KEY}, {}, "# endpoint\nPROCTOR_LLM_BASE_URL=http://dotenv/v1\n", 2),
    ],
    ids=["dotenv-key-env-url", "dotenv-key-flag-url", "flag-key-dotenv-url"],
)
def test_a_key_and_an_endpoint_from_different_places_are_refused(
    tmp_path: Path,
    flags: dict[str, str],
    env: dict[str, str],
    dotenv_text: str,
    dotenv_line: int,
) -> None:
    dotenv = _dotenv(tmp_path, "PROCTOR_LLM_MODEL=m\n" + dotenv_text)
    with pytest.raises(CredentialSourceError) as err:
        resolve_settings(**flags, env=env, dotenv_path=dotenv)
    assert (err.value.path, err.value.line) == (str(dotenv), dotenv_line + 1)
    assert KEY not in str(err.value)


def test_an_environment_pair_wins_over_a_dotenv_endpoint(tmp_path: Path) -> None:
    env = {"PROCTOR_LLM_API_KEY": KEY, "PROCTOR_LLM_BASE_URL": "http://env/v1"}
    settings = resolve_settings(env=env, dotenv_path=_dotenv(tmp_path, DOTENV_URL))
    assert settings is not None
    assert (settings.base_url, settings.api_key, settings.model) == ("http://env/v1", KEY, "m")


def test_a_flag_endpoint_may_go_with_an_environment_key(tmp_path: Path) -> None:
    settings = resolve_settings(
        base_url="http://flag/v1",
        env={"PROCTOR_LLM_API_KEY": KEY},
        dotenv_path=_dotenv(tmp_path, DOTENV_URL),
    )
    assert settings is not None and settings.base_url == "http://flag/v1"
