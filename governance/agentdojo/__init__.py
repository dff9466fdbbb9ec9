"""AgentDojo's task suites (ETH Zürich, MIT licence) behind Proctor's firewall: each suite's
functions as governed tools over a fresh copy of its environment, with committed descriptor
facts per suite. The `agentdojo` package is an optional extra (`proctor[agentdojo]`), imported
only when a suite's tools are opened.
"""

from __future__ import annotations

from governance.agentdojo._mapping import (
    AGENTDOJO_SUITES,
    AgentDojoMapping,
    AgentDojoMappingError,
    AgentDojoSuite,
    ToolFacts,
    load_agentdojo_mapping,
    mapping_path,
)

__all__ = [
    "AGENTDOJO_SUITES",
    "AgentDojoMapping",
    "AgentDojoMappingError",
    "AgentDojoSuite",
    "ToolFacts",
    "load_agentdojo_mapping",
    "mapping_path",
]
