"""AgentDojo's task suites (ETH Zürich, MIT licence) behind Proctor's firewall: each suite's
functions as governed tools over a fresh copy of its environment, with committed descriptor
facts per suite. The `agentdojo` package is an optional extra (`proctor[agentdojo]`), imported
only when a suite's tools are opened.
"""

from __future__ import annotations

from governance.agentdojo._environments import SuiteEnvironments, canaries
from governance.agentdojo._mapping import (
    AGENTDOJO_SUITES,
    AgentDojoMapping,
    AgentDojoMappingError,
    AgentDojoSuite,
    ToolFacts,
    load_agentdojo_mapping,
    mapping_path,
)
from governance.agentdojo._source import AgentDojoToolSource, ReceivedCall, render_result
from governance.agentdojo._suite import (
    INSTALL_HINT,
    AgentDojoUnavailable,
    SuiteTools,
    copy_environment,
    import_suites,
    suite_tools,
)
from governance.agentdojo._verdicts import Verdict, injection_task, judge, user_task

__all__ = [
    "AGENTDOJO_SUITES",
    "INSTALL_HINT",
    "AgentDojoMapping",
    "AgentDojoMappingError",
    "AgentDojoSuite",
    "AgentDojoToolSource",
    "AgentDojoUnavailable",
    "ReceivedCall",
    "SuiteEnvironments",
    "SuiteTools",
    "ToolFacts",
    "Verdict",
    "canaries",
    "copy_environment",
    "import_suites",
    "injection_task",
    "judge",
    "load_agentdojo_mapping",
    "mapping_path",
    "render_result",
    "suite_tools",
    "user_task",
]
