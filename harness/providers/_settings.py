"""Where the live provider's endpoint, model and key come from: flags > environment > `.env`.

The `.env` file is read with python-dotenv's `dotenv_values`, so `os.environ` is never touched.
No key anywhere means "not configured" (None: the smoke command exits 77), not an error.

The key and the base URL it is sent to must come from one place: both from what the operator
typed (flags and the environment), or both from the same `.env` file. A `.env` in a checked-out
working directory must not be able to send the operator's key to its own endpoint, nor the
reverse; a mix is refused with `CredentialSourceError` (the CLI exits 64).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from governance import ConfigError
from harness._errors import CredentialSourceError
from harness.providers._endpoint import endpoint_origin

__all__ = [
    "CredentialSourceError",
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "ENV_TIMEOUT",
    "ProviderSettings",
    "resolve_settings",
]

ENV_BASE_URL = "PROCTOR_LLM_BASE_URL"
ENV_MODEL = "PROCTOR_LLM_MODEL"
ENV_API_KEY = "PROCTOR_LLM_API_KEY"
ENV_TIMEOUT = "PROCTOR_LLM_TIMEOUT"

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 2
DEFAULT_MAX_BACKOFF = 20.0
DEFAULT_PROVIDER_NAME = "openai-compatible"


@dataclass(frozen=True, slots=True, repr=False)
class ProviderSettings:
    """One live endpoint. `repr()` masks the key and shows the URL's origin alone, so logging
    the settings cannot leak a key or a token in the URL's path or query."""

    base_url: str
    model: str
    api_key: str
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    max_backoff: float = DEFAULT_MAX_BACKOFF
    provider_name: str = DEFAULT_PROVIDER_NAME

    def __post_init__(self) -> None:
        for name in ("base_url", "model", "api_key"):
            if not getattr(self, name).strip():
                raise ValueError(f"{name} must not be blank")
        if not (math.isfinite(self.timeout) and self.timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds, not {self.timeout!r}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, not {self.max_retries!r}")
        if not (math.isfinite(self.max_backoff) and self.max_backoff >= 0):
            raise ValueError(f"max_backoff must be 0 or more seconds, not {self.max_backoff!r}")

    def __repr__(self) -> str:
        return (
            f"ProviderSettings(base_url={endpoint_origin(self.base_url)!r}, model={self.model!r}, "
            f"api_key='***', timeout={self.timeout!r}, max_retries={self.max_retries!r}, "
            f"max_backoff={self.max_backoff!r}, provider_name={self.provider_name!r})"
        )


@dataclass(frozen=True, slots=True)
class _Origin:
    """Where one setting was found: a flag, the environment, or a line of a `.env` file."""

    label: str
    file: Path | None = None
    line: int | None = None

    def __str__(self) -> str:
        if self.file is None:
            return self.label
        return f"{self.file}:{self.line}" if self.line is not None else str(self.file)


def _line_of(path: Path, name: str) -> int | None:
    """The line of `name=` in a `.env` file, so an error can point at it."""
    pattern = re.compile(rf"^\s*(?:export\s+)?{re.escape(name)}\s*=")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for number, line in enumerate(lines, start=1):
        if pattern.match(line):
            return number
    return None


def resolve_settings(
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    dotenv_path: Path | None = Path(".env"),
) -> ProviderSettings | None:
    """Settings from flags, then `env` (default `os.environ`), then the `.env` file.

    Returns None when no API key is configured anywhere. Raises ConfigError naming the variable
    to set when a key is configured but the model or base URL is not, or a value is unusable,
    and CredentialSourceError when the key and the base URL come from different places.
    Blank values count as unset.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    dotenv: dict[str, str] = {}
    dotenv_file: Path | None = None
    if dotenv_path is not None and dotenv_path.is_file():
        dotenv_file = dotenv_path
        from dotenv import dotenv_values  # only where there is a file: a replay run has none

        dotenv = {k: v for k, v in dotenv_values(dotenv_path).items() if v is not None}

    def pick(flag: str | None, name: str, option: str) -> tuple[str | None, _Origin | None]:
        """The value and where it was found."""
        layers = ((flag, f"the {option} flag"), (environ.get(name), f"the environment ({name})"))
        for value, where in layers:
            if value is not None and value.strip():
                return value.strip(), _Origin(where)
        value = dotenv.get(name)
        if dotenv_file is not None and value is not None and value.strip():
            return value.strip(), _Origin(name, dotenv_file, _line_of(dotenv_file, name))
        return None, None

    key, key_origin = pick(api_key, ENV_API_KEY, "--api-key")
    if key is None or key_origin is None:
        return None

    def missing(name: str, flag: str, what: str) -> ConfigError:
        return ConfigError(
            dotenv_file,
            None,
            f"{ENV_API_KEY} is set but no {what} is configured: set {name} in the environment "
            f"or in .env, or pass {flag}",
        )

    url, url_origin = pick(base_url, ENV_BASE_URL, "--base-url")
    if url is None:
        raise missing(ENV_BASE_URL, "--base-url", "base URL")
    if not re.match(r"^https?://[^\s/]+", url):
        raise ConfigError(
            url_origin.file if url_origin else None,
            url_origin.line if url_origin else None,
            f"{ENV_BASE_URL} must be an http(s) URL such as https://api.openai.com/v1, not {url!r}",
        )
    _same_source(key_origin, url_origin)
    chosen_model, _ = pick(model, ENV_MODEL, "--model")
    if chosen_model is None:
        raise missing(ENV_MODEL, "--model", "model")

    seconds = DEFAULT_TIMEOUT
    if timeout is not None:
        seconds = timeout
    else:
        raw, origin = pick(None, ENV_TIMEOUT, "--timeout")
        if raw is not None:
            try:
                seconds = float(raw)
            except ValueError:
                seconds = math.nan
            if not (math.isfinite(seconds) and seconds > 0):
                raise ConfigError(
                    origin.file if origin else None,
                    origin.line if origin else None,
                    f"{ENV_TIMEOUT} must be a positive number of seconds (e.g. 60), not {raw!r}",
                )
    if not (math.isfinite(seconds) and seconds > 0):
        raise ConfigError(
            None, None, f"--timeout must be a positive number of seconds, not {seconds!r}"
        )

    return ProviderSettings(base_url=url, model=chosen_model, api_key=key, timeout=seconds)


def _same_source(key: _Origin, url: _Origin | None) -> None:
    """Refuse a key from one place sent to an endpoint from another (a flag and the
    environment count as one place: both are what the operator typed)."""
    if url is None or key.file == url.file:
        return
    dotenv = key if key.file is not None else url
    raise CredentialSourceError(
        dotenv.file,
        dotenv.line,
        f"the API key comes from {_describe(key, ENV_API_KEY)} but the base URL it would be "
        f"sent to comes from {_describe(url, ENV_BASE_URL)}; nothing was sent. Proctor sends "
        f"a key only to an endpoint set in the same place: set {ENV_API_KEY} and "
        f"{ENV_BASE_URL} both in that .env file, or both in the environment or as flags "
        "(--api-key, --base-url)",
    )


def _describe(origin: _Origin, name: str) -> str:
    return origin.label if origin.file is None else f"{name} in {origin}"
