"""A server command that cannot listen says so in one line, names host:port and the flag to
change, and exits 69 (not 70, an internal error); the commands' default ports differ."""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from governance import AddressUnavailable, bind_socket
from harness import _exit_codes as codes
from harness.cli._app import cli


class Unexpected(Exception):
    pass


@pytest.fixture
def taken_port() -> Iterator[int]:
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    try:
        yield holder.getsockname()[1]
    finally:
        holder.close()


def _port_commands() -> dict[str, object]:
    """Every command (nested groups included) with a `--port` option, and its default."""
    found: dict[str, object] = {}

    def walk(group: click.Group, prefix: str) -> None:
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None
            path = f"{prefix} {name}".strip()
            if isinstance(command, click.Group):
                walk(command, path)
            for param in command.params:
                if param.name == "port":
                    found[path] = param.default

    walk(cli, "")
    return found


def test_no_two_commands_that_listen_default_to_the_same_port() -> None:
    defaults = _port_commands()
    assert {"serve", "stub"} <= set(defaults)
    assert len(set(defaults.values())) == len(defaults), defaults


def _invoke(args: list[str]) -> tuple[int, list[str]]:
    result = CliRunner().invoke(cli, args)
    lines = [line for line in result.output.splitlines() if line.startswith("error")]
    assert "Traceback" not in result.output
    return result.exit_code, lines


def test_the_stub_on_a_taken_port_exits_69_naming_the_port_and_the_flag(taken_port: int) -> None:
    code, errors = _invoke(["stub", "--port", str(taken_port)])
    assert code == codes.UNAVAILABLE == 69
    assert errors == [
        f"error: cannot listen on 127.0.0.1:{taken_port}: the port is already in use; "
        "choose another with --port (0 picks a free one)"
    ]


def test_serve_on_a_taken_port_exits_69_naming_the_port_and_the_flag(
    taken_port: int, tmp_path: Path
) -> None:
    args = ["serve", "--state-dir", str(tmp_path / "state"), "--transport", "http"]
    code, errors = _invoke([*args, "--port", str(taken_port)])
    assert code == codes.UNAVAILABLE
    assert len(errors) == 1
    assert f"127.0.0.1:{taken_port}: the port is already in use" in errors[0]
    assert "--port" in errors[0]


def test_an_address_that_is_not_this_machines_names_the_host_flag() -> None:
    # 192.0.2.1 is TEST-NET-1 (RFC 5737): never assigned to a local interface.
    code, errors = _invoke(["stub", "--host", "192.0.2.1", "--port", "0"])
    assert code == codes.UNAVAILABLE
    assert errors == [
        "error: cannot listen on 192.0.2.1:0: the address is not one of this machine's; "
        "choose another with --host"
    ]


def _failing_bind(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    class Refusing(socket.socket):
        def bind(self, address: object) -> None:
            raise OSError(code, os.strerror(code))

    monkeypatch.setattr(socket, "socket", Refusing)


def test_a_privileged_port_is_permission_denied_not_an_internal_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _failing_bind(monkeypatch, errno.EACCES)
    code, errors = _invoke(["stub", "--port", "80"])
    assert code == codes.UNAVAILABLE
    assert errors == [
        "error: cannot listen on 127.0.0.1:80: permission denied (ports below 1024 need "
        "privileges); choose another with --port (0 picks a free one)"
    ]


def test_any_other_bind_failure_stays_the_callers_own_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _failing_bind(monkeypatch, errno.EMFILE)
    with pytest.raises(Unexpected, match="cannot listen on 127.0.0.1:0"):
        bind_socket("127.0.0.1", 0, Unexpected)


def test_a_host_that_does_not_resolve_names_the_host_flag() -> None:
    with pytest.raises(AddressUnavailable, match="cannot resolve") as caught:
        bind_socket("no-such-host.invalid", 0, Unexpected)
    assert caught.value.culprit == "host"
