"""The MCP servers file: its model, its errors (file and line), its committed schema."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from governance.core._errors import ConfigError
from governance.mcp._config import (
    SCHEMA_COMMAND,
    SCHEMA_PATH,
    McpConfigError,
    ToolMapping,
    default_lock_path,
    load_mcp_config,
    mcp_json_schema,
    parse_mcp_config,
    render_mcp_schema,
    write_mcp_schema,
)
from governance.mcp._launch import child_environment, resolve_command

EXAMPLE = """\
version: 1
servers:
  time:
    transport: stdio
    command: python
    args: ["-m", "mcp_server_time"]
    cwd: null
    env: [TZ]
    connect_timeout: 10
    call_timeout: 30
    max_result_chars: 20000
    tools:
      get_current_time:
        {action_type: read, risk: low, reversible: true, external_side_effect: false,
         idempotent: true}
  remote:
    transport: http
    url: http://127.0.0.1:8080/mcp
    headers: {Authorization: {env: REMOTE_TOKEN, prefix: "Bearer "}}
"""


def _error(text: str) -> McpConfigError:
    with pytest.raises(McpConfigError) as caught:
        parse_mcp_config(text, "servers.yaml")
    return caught.value


def test_the_documented_example_parses_into_specs() -> None:
    config = parse_mcp_config(EXAMPLE, "servers.yaml")
    time, remote = config.servers
    assert (time.name, time.transport, time.command, time.args) == (
        "time",
        "stdio",
        "python",
        ("-m", "mcp_server_time"),
    )
    assert time.env == ("TZ",)
    assert time.tools["get_current_time"] == ToolMapping("read", "low", True, False, True)
    assert time.source_name == "mcp.time"
    assert remote.url == "http://127.0.0.1:8080/mcp"
    assert remote.headers["Authorization"].env == "REMOTE_TOKEN"
    assert remote.headers["Authorization"].prefix == "Bearer "
    assert not time.pin_required and not remote.pin_required


def test_an_unknown_key_names_file_line_and_the_schema() -> None:
    error = _error(
        "version: 1\nservers:\n  t:\n    transport: stdio\n    command: x\n    comand: y\n"
    )
    assert isinstance(error, ConfigError)
    assert str(error).startswith("servers.yaml:6: servers.t.comand: unknown key 'comand'")
    assert "mcp.schema.json" in str(error)


def test_a_missing_transport_says_which_values_exist() -> None:
    error = _error("version: 1\nservers:\n  t:\n    command: python\n")
    assert error.line == 3
    assert "write `transport: stdio` or `transport: http`" in error.message


def test_a_bad_transport_points_at_its_own_line() -> None:
    error = _error("version: 1\nservers:\n  t:\n    command: python\n    transport: ftp\n")
    assert error.line == 5
    assert "transport must be 'stdio' or 'http'" in error.message


def test_a_server_name_with_a_dot_is_refused_because_it_would_shift_namespaces() -> None:
    error = _error("version: 1\nservers:\n  bad.name:\n    transport: stdio\n    command: x\n")
    assert error.line == 3
    assert "server name 'bad.name' is not valid" in error.message


def test_a_mapping_for_a_dotted_tool_name_and_a_bad_action_type_are_both_reported() -> None:
    error = _error(
        "version: 1\nservers:\n  t:\n    transport: stdio\n    command: x\n    tools:\n"
        "      a.b: {action_type: read, risk: low, reversible: true, external_side_effect: false}\n"
        "      c: {action_type: allow, risk: low, reversible: true, external_side_effect: false}\n"
    )
    assert error.line == 7
    assert "tool name 'a.b' is not valid" in error.message
    assert "servers.yaml:8: servers.t.tools.c.action_type" in error.message


def test_a_mapping_must_state_reversibility_and_external_effects() -> None:
    error = _error(
        "version: 1\nservers:\n  t:\n    transport: stdio\n    command: x\n    tools:\n"
        "      a: {action_type: read, risk: low}\n"
    )
    assert error.line == 7
    assert "missing required key 'reversible'" in error.message


def test_timeouts_must_be_positive_numbers_not_booleans() -> None:
    error = _error(
        "version: 1\nservers:\n  t:\n    transport: stdio\n    command: x\n"
        "    call_timeout: true\n    connect_timeout: -1\n"
    )
    assert error.line == 6
    assert "must be a number of seconds" in error.message
    assert "servers.yaml:7: servers.t.connect_timeout" in error.message


def test_an_http_url_needs_a_scheme_and_a_host() -> None:
    error = _error("version: 1\nservers:\n  r:\n    transport: http\n    url: ftp://x/mcp\n")
    assert error.line == 5
    assert "must be an http:// or https:// URL" in error.message


def test_stdio_keys_are_refused_on_an_http_server() -> None:
    error = _error(
        "version: 1\nservers:\n  r:\n    transport: http\n    url: http://h/mcp\n"
        "    command: python\n"
    )
    assert error.line == 6
    assert "unknown key 'command'" in error.message


def test_an_environment_allow_list_entry_must_be_a_variable_name() -> None:
    error = _error(
        "version: 1\nservers:\n  t:\n    transport: stdio\n    command: x\n    env: ['A=B']\n"
    )
    assert error.line == 6
    assert "environment variable name 'A=B' is not valid" in error.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "the MCP config is empty"),
        ("- a\n- b\n", "must be a mapping"),
        ("version: 1\nservers: {}\n", "no servers"),
        ("version: true\nservers: {t: {transport: stdio, command: x}}\n", "the number 1"),
        ("version: 1\nservers:\n  t: {transport: stdio, command: x}\n  t: {}\n", "duplicate key"),
    ],
)
def test_unusable_files_are_refused_with_a_reason(text: str, expected: str) -> None:
    error = _error(text)
    assert expected in error.message
    assert error.line is not None


def test_require_pins_makes_every_server_require_pins() -> None:
    config = parse_mcp_config(
        "version: 1\nrequire_pins: true\nservers:\n  a: {transport: stdio, command: x}\n"
        "  b: {transport: http, url: 'http://h/mcp'}\n",
        "s.yaml",
    )
    assert [s.pin_required for s in config.servers] == [True, True]
    alone = parse_mcp_config(
        "version: 1\nservers:\n  a: {transport: stdio, command: x, pin: true}\n"
        "  b: {transport: stdio, command: x}\n",
        "s.yaml",
    )
    assert [s.pin_required for s in alone.servers] == [True, False]


def test_a_relative_cwd_is_relative_to_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "servers.yaml"
    path.parent.mkdir()
    path.write_text("version: 1\nservers:\n  t: {transport: stdio, command: x, cwd: work}\n")
    config = load_mcp_config(path)
    assert config.servers[0].cwd == str((tmp_path / "conf" / "work").resolve())
    assert config.lock_path == tmp_path / "conf" / "servers.lock.json"


def test_an_unreadable_or_non_utf8_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(McpConfigError, match="cannot read the MCP config"):
        load_mcp_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"version: 1\nservers:\n  t: {transport: stdio, command: \xff}\n")
    with pytest.raises(McpConfigError, match=r"bad.yaml:3: .*not UTF-8"):
        load_mcp_config(bad)


def test_the_default_lock_file_sits_next_to_the_config() -> None:
    assert default_lock_path(Path("/etc/proctor/mcp.yaml")) == Path("/etc/proctor/mcp.lock.json")


def test_a_child_gets_path_home_and_only_the_allow_listed_names() -> None:
    parent = {
        "PATH": "/bin",
        "HOME": "/home/x",
        "TZ": "UTC",
        "API_SECRET": "hunter2",
        "USER": "x",
        "LOGNAME": "x",
        "SHELL": "/bin/sh",
    }
    assert child_environment(["TZ", "NOT_SET"], parent) == {
        "PATH": "/bin",
        "HOME": "/home/x",
        "TZ": "UTC",
    }
    assert child_environment([], {"API_SECRET": "hunter2"}) == {}


def test_python_means_this_interpreter_and_other_commands_are_looked_up_on_path(
    tmp_path: Path,
) -> None:
    assert resolve_command("python", "/nowhere") == sys.executable
    assert resolve_command("python3", None) == sys.executable
    tool = tmp_path / "my-server"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert resolve_command("my-server", str(tmp_path)) == str(tool)
    assert resolve_command("my-server", "/nowhere") is None
    assert resolve_command("./bin/server", None) == "./bin/server"


def test_the_committed_schema_matches_the_models() -> None:
    committed = SCHEMA_PATH.read_text(encoding="utf-8")
    assert committed == render_mcp_schema(), (
        f"governance/data/mcp.schema.json is stale: regenerate it with `{SCHEMA_COMMAND}`"
    )


def test_the_schema_writer_writes_the_rendered_schema(tmp_path: Path) -> None:
    written = write_mcp_schema(tmp_path / "nested" / "mcp.schema.json")
    assert json.loads(written.read_text(encoding="utf-8")) == mcp_json_schema()


def test_the_schema_accepts_the_example_and_refuses_what_the_loader_refuses() -> None:
    jsonschema.Draft202012Validator.check_schema(mcp_json_schema())
    validator = jsonschema.Draft202012Validator(mcp_json_schema())
    document = yaml.safe_load(EXAMPLE)
    assert list(validator.iter_errors(document)) == []
    document["servers"]["time"]["transport"] = "ftp"
    assert list(validator.iter_errors(document))
    document["servers"]["time"]["transport"] = "stdio"
    document["servers"]["bad.name"] = document["servers"].pop("remote")
    assert list(validator.iter_errors(document))
