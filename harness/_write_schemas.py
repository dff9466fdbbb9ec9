"""`make schemas`: regenerate every committed JSON Schema from the models it describes.

The policy file, the MCP servers file, a scenario file and the baseline each have a schema that
editors validate with and a test compares against its models; never edit one by hand.
"""

from __future__ import annotations

from governance.mcp import write_mcp_schema
from governance.policy import write_policy_schema
from harness._baseline import write_baseline_schema
from harness._scenario_load import write_scenario_schema


def main() -> None:
    for written in (
        write_policy_schema(),
        write_mcp_schema(),
        write_scenario_schema(),
        write_baseline_schema(),
    ):
        print(f"wrote {written}")


if __name__ == "__main__":
    main()
