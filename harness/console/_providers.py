"""Where the console's agent gets its model: the bundled stub (no credential), the live
endpoint from PROCTOR_LLM_*, or a replay script. One provider per turn, from a factory, so
tests inject a script and the sessions never know which it is."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import TypeAdapter

from harness._errors import HarnessError
from harness._run_store import ProviderSpec
from harness.providers import Provider, ReplayProvider, ScriptStep

STUB_MODEL = "proctor-stub-1"
_SCRIPT: TypeAdapter[list[ScriptStep]] = TypeAdapter(list[ScriptStep])


@dataclass(frozen=True, slots=True)
class TurnProvider:
    """The provider for one turn, and how a stored run rebuilds it (never a key)."""

    provider: Provider
    spec: ProviderSpec


class ProviderFactory(Protocol):
    """Builds the provider for one new turn; raises HarnessError when it cannot (no
    credential, stub stopped)."""

    def __call__(self) -> TurnProvider: ...


class ScriptProviders:
    """Every turn replays the same script (tests, demos)."""

    def __init__(self, script: list[Any]) -> None:
        # Validated once: a bad script refuses to start, not on the first turn.
        self._steps = _SCRIPT.validate_python(script)
        self._script = list(script)

    def __call__(self) -> TurnProvider:
        spec = ProviderSpec(kind="replay", script=self._script)
        return TurnProvider(ReplayProvider(self._steps), spec)


class LiveProviders:
    """The OpenAI-compatible endpoint of `base_url`/`model`/`api_key` (the stub's or a live
    one from PROCTOR_LLM_*)."""

    def __init__(self, base_url: str, model: str, api_key: str) -> None:
        from harness.providers._settings import ProviderSettings

        self._settings = ProviderSettings(base_url=base_url, model=model, api_key=api_key)

    @classmethod
    def from_environment(cls) -> LiveProviders:
        """PROCTOR_LLM_* (or .env); HarnessError when no credential is configured."""
        from harness.providers._settings import resolve_settings

        settings = resolve_settings()
        if settings is None:
            raise HarnessError(
                "the live provider needs PROCTOR_LLM_API_KEY (and PROCTOR_LLM_BASE_URL, "
                "PROCTOR_LLM_MODEL) to be set; or use the bundled stub"
            )
        return cls(settings.base_url, settings.model, settings.api_key)

    def __call__(self) -> TurnProvider:
        from harness.providers._openai import OpenAIProvider

        spec = ProviderSpec(
            kind="openai", base_url=self._settings.base_url, model=self._settings.model
        )
        return TurnProvider(OpenAIProvider(self._settings), spec)


class StubProviders:
    """The bundled OpenAI stub, started once for the console's life (`close()` stops it)."""

    def __init__(self) -> None:
        from stubs.openai_stub import running_stub

        self._stack = ExitStack()
        url = self._stack.enter_context(running_stub())
        self._live = LiveProviders(url, STUB_MODEL, "stub")
        self._closed = False

    def __call__(self) -> TurnProvider:
        if self._closed:
            raise HarnessError("the bundled stub has been stopped")
        return self._live()

    def close(self) -> None:
        self._closed = True
        self._stack.close()
