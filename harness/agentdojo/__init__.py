"""AgentDojo's task suites as Proctor scenarios: `proctor import agentdojo` writes them.

Importing this package does not import `agentdojo` (an optional extra, ~2 s to import): the
generator loads it when it runs, and says how to install it when it is missing.
"""

from __future__ import annotations

from harness.agentdojo._attack import ATTACK_NAME, attack_text
from harness.agentdojo._files import MARK, is_generated
from harness.agentdojo._ground_truth import GroundTruthError
from harness.agentdojo._import import (
    DEFAULT_VERSION,
    ImportRequest,
    SuiteImport,
    import_agentdojo,
)

__all__ = [
    "ATTACK_NAME",
    "DEFAULT_VERSION",
    "MARK",
    "GroundTruthError",
    "ImportRequest",
    "SuiteImport",
    "attack_text",
    "import_agentdojo",
    "is_generated",
]
