"""The `proctor` group and the exit-code contract: click's usage error 2 never leaks out."""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Mapping, Sequence
from typing import Any

import click
from click.formatting import HelpFormatter

from governance import AddressUnavailable, ConfigError, ExtraUnavailable, GovernanceError
from harness import _exit_codes as codes
from harness._errors import CredentialSourceError, HarnessError, UsageProblem
from harness.cli._commands import COMMANDS, LazyCommand
from harness.cli._preload import preload_command

# No auto env vars: every environment switch is declared (and documented) on its option, so
# nothing like PROCTOR_RUN_NO_BASELINE=1 can quietly turn a gate off.
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}

EPILOG = """\b
Exit codes:
  0   clean
  1   a scenario check failed (nothing gated regressed)
  2   a gated metric regressed against the baseline
  3   invalid input: a scenario, policy or config file fails its schema or contract,
      stored traces do not verify (digest, consistency, signature), or the store's
      schema is not this Proctor's (`proctor store migrate`)
  64  usage error (bad flags)
  69  unavailable: the host:port to serve on is in use, privileged or not this machine's,
      or the PostgreSQL store cannot be reached
  70  internal error
  77  live smoke skipped: no credential configured
"""


class ProctorGroup(click.Group):
    """Runs commands non-standalone so every failure maps onto Proctor's exit codes.

    Commands are imported on first use from `lazy` (see harness.cli._commands): the group's
    own help lists their summaries without importing any of them.
    """

    def __init__(
        self, *args: Any, lazy: Mapping[str, LazyCommand] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self.commands.get(cmd_name)
        entry = self.lazy.get(cmd_name)
        if command is None and entry is not None:
            command = getattr(importlib.import_module(entry.module), entry.attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{entry.module}.{entry.attribute} is not a click command")
            self.add_command(command, cmd_name)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0]
        unknown = self.get_command(ctx, name) is None and not name.startswith("-")
        if unknown and not ctx.resilient_parsing:
            # click suggests close names from `self.commands`, which holds only loaded ones.
            raise click.NoSuchCommand(name, possibilities=self.list_commands(ctx), ctx=ctx)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: HelpFormatter) -> None:
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            loaded = self.commands.get(name)
            if loaded is not None:
                if not loaded.hidden:
                    rows.append((name, loaded.get_short_help_str(limit)))
            else:
                # A bare command with the same help shortens it exactly as the real one would.
                stand_in = click.Command(name, help=self.lazy[name].summary)
                rows.append((name, stand_in.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        code = self._run(args, prog_name, complete_var, **extra)
        if standalone_mode:
            sys.exit(code)
        return code

    def _run(
        self,
        args: Sequence[str] | None,
        prog_name: str | None,
        complete_var: str | None,
        **extra: Any,
    ) -> int:
        try:
            rv = super().main(
                args, prog_name or "proctor", complete_var, standalone_mode=False, **extra
            )
        except click.UsageError as exc:
            exc.show()
            return codes.USAGE
        except click.ClickException as exc:
            exc.show()
            return codes.USAGE if exc.exit_code == 2 else exc.exit_code
        except click.Abort:
            click.echo("Aborted.", err=True)
            return codes.INTERNAL
        except CredentialSourceError as exc:  # how Proctor was invoked, not a suite file
            click.echo(f"error: {exc}", err=True)
            return codes.USAGE
        except ConfigError as exc:
            click.echo(f"error: {exc}", err=True)
            return codes.INVALID_SUITE
        except (UsageProblem, ExtraUnavailable) as exc:
            click.echo(f"error: {exc}", err=True)
            return codes.USAGE
        except AddressUnavailable as exc:
            free = " (0 picks a free one)" if exc.culprit == "port" else ""
            click.echo(f"error: {exc}; choose another with --{exc.culprit}{free}", err=True)
            return codes.UNAVAILABLE
        except (GovernanceError, HarnessError) as exc:
            click.echo(f"error: {exc}", err=True)
            return _store_code(exc)
        except Exception:
            click.echo("internal error (please report it with this traceback):", err=True)
            click.echo(traceback.format_exc(), err=True)
            return codes.INTERNAL
        return rv if isinstance(rv, int) else codes.OK


def _store_code(exc: Exception) -> int:
    """69 for a store server that cannot be reached, 3 for a store schema this Proctor does not
    speak; else internal. Imported only when an error gets here."""
    from governance.stores import PostgresUnavailable, StoreSchemaError

    if isinstance(exc, PostgresUnavailable):
        return codes.UNAVAILABLE
    if isinstance(exc, StoreSchemaError):
        return codes.INVALID_SUITE
    return codes.INTERNAL


@click.group(cls=ProctorGroup, lazy=COMMANDS, context_settings=CONTEXT_SETTINGS, epilog=EPILOG)
@click.version_option(package_name="proctor", prog_name="proctor")
def cli() -> None:
    """Proctor: govern what tool-calling agents may do, and gate changes on it in CI."""


def main() -> None:
    try:
        preload_command(sys.argv[1:], COMMANDS)
    except KeyboardInterrupt:  # interrupted while importing: reported as the group would
        click.echo("\nAborted.", err=True)
        sys.exit(codes.INTERNAL)
    cli.main(prog_name="proctor")
