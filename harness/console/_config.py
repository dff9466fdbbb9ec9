"""What one console process serves: its gateway's stores and policy, and how it is reached."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 8767
ProviderChoice = Literal["stub", "live", "script"]


@dataclass(frozen=True, slots=True)
class ConsoleConfig:
    """`policy_path` None: the shipped policy, which the console shows but never overwrites."""

    state_dir: Path
    token: str
    policy_path: Path | None = None
    store: str = "sqlite"
    mcp_config: Path | None = None
    reports_dir: Path = Path("reports")
    host: str = LOOPBACK
    port: int = DEFAULT_PORT
    provider: ProviderChoice = "stub"
    script_path: Path | None = None
