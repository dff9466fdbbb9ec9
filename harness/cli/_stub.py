"""`proctor stub`: serve the bundled OpenAI-compatible vendor stub in the foreground.

It needs no credential (any non-empty bearer key is accepted) and listens on loopback unless
told otherwise. Ctrl-C stops it.
"""

from __future__ import annotations

import ipaddress

import click

from harness import _exit_codes as codes
from stubs.openai_stub import (
    DEFAULT_MODEL,
    FAULT_HEADER,
    STUB_PORT,
    StubStartError,
    model_variants,
    run_stub,
)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command("stub")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=STUB_PORT,
    show_default=True,
    help="Port to listen on (0 picks a free one).",
)
def stub_command(host: str, port: int) -> int:
    """Serve the vendor stub (POST /v1/chat/completions, GET /v1/models) until Ctrl-C."""
    if not _is_loopback(host):
        click.echo(
            f"warning: {host} is not loopback; the stub accepts any API key, so anyone who can "
            "reach it can use it.",
            err=True,
        )

    def announce(base_url: str) -> None:
        click.echo(f"vendor stub listening on {base_url} (any non-empty API key is accepted)")
        click.echo("models:")
        for model in model_variants((DEFAULT_MODEL,)):
            click.echo(f"  {model}")
        click.echo(f"faults also by header: {FAULT_HEADER.title()}: <fault>   (Ctrl-C to stop)")

    try:
        run_stub(host, port, on_ready=announce)
    except StubStartError as exc:
        click.echo(f"error: {exc}", err=True)
        return codes.INTERNAL
    except KeyboardInterrupt:
        click.echo("stopped.", err=True)
    return codes.OK
