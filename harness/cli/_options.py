"""Options shared by the commands that open a governed gateway."""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import click

if TYPE_CHECKING:
    from governance import Gateway
    from governance.telemetry import Telemetry

F = TypeVar("F", bound=Callable[..., Any])


def shipped_policy_path() -> Path:
    return Path(str(resources.files("governance") / "data" / "default_policy.yaml"))


MCP_CONFIG_META = "proctor.mcp_config"
STORE_META = "proctor.store"
STORE_ENV = "PROCTOR_STORE_URL"  # governance.stores._backends.STORE_URL_ENV, without the import
STORE_HELP = (
    "Where approvals, budgets and the audit log live: sqlite (the files in --state-dir), "
    "sqlite:///<dir>, memory: or postgresql://user@host:port/db (shared by every gateway "
    "pointed at it; `proctor store migrate` first) [env PROCTOR_STORE_URL; default: sqlite]."
)


def _remember_mcp_config(ctx: click.Context, _: click.Parameter, value: Path | None) -> None:
    # Kept on the context rather than passed as a parameter, so every command that opens a
    # gateway gets MCP servers without each one growing an `mcp_config` argument.
    ctx.meta[MCP_CONFIG_META] = value


def _remember_store(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    # Parsed here, so a malformed URL is a usage error before anything opens; kept on the
    # context like --mcp-config, so open_gateway finds it.
    if value is not None:
        from governance.stores import StoreUrlError, parse_store_url

        try:
            parse_store_url(value)
        except StoreUrlError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    ctx.meta[STORE_META] = value


def store_option(func: F) -> F:
    """`--store URL` [env PROCTOR_STORE_URL]: which backend holds the stores."""
    return click.option(
        "--store",
        envvar=STORE_ENV,
        default=None,
        expose_value=False,
        callback=_remember_store,
        metavar="URL",
        help=STORE_HELP,
    )(func)


def gateway_options(func: F) -> F:
    """`--state-dir`, `--policy`, `--store` and `--mcp-config`, with env fallbacks, on
    governing commands."""
    # The gateway module (stores, firewall) loads with the commands that open one, not with
    # `check` or `policy`, which share this module for `suite_options`.
    from governance import DEFAULT_STATE_DIR

    func = store_option(func)
    func = click.option(
        "--mcp-config",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        envvar="PROCTOR_MCP_CONFIG",
        default=None,
        expose_value=False,
        callback=_remember_mcp_config,
        help="MCP servers file: their tools are governed like local ones "
        "[env PROCTOR_MCP_CONFIG; default: none].",
    )(func)
    func = click.option(
        "--policy",
        "policy_path",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        envvar="PROCTOR_POLICY",
        default=None,
        help="Policy file [env PROCTOR_POLICY; default: the shipped policy].",
    )(func)
    func = click.option(
        "--state-dir",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="PROCTOR_STATE_DIR",
        default=DEFAULT_STATE_DIR,
        show_default=True,
        help="Where the audit log, approvals, budgets, runs and workspace live "
        "[env PROCTOR_STATE_DIR].",
    )(func)
    return func


def open_gateway(
    state_dir: Path,
    policy_path: Path | None,
    mcp_config: Path | None = None,
    *,
    held_calls: Literal["detached", "awaited"] = "detached",
    telemetry: Telemetry | None = None,
) -> Gateway:
    """The gateway a command asked for; `mcp_config` defaults to the command's --mcp-config,
    the store to its --store. `held_calls="awaited"` when this process itself waits for the
    decisions (`ask --wait`); `telemetry` (--otel) observes every call and run event."""
    ctx = click.get_current_context(silent=True)
    if mcp_config is None:
        mcp_config = ctx.meta.get(MCP_CONFIG_META) if ctx is not None else None
    store = (ctx.meta.get(STORE_META) if ctx is not None else None) or "sqlite"
    from governance import Gateway
    from governance.stores import CheckpointError, checkpoint_schedule_from_env

    try:  # PROCTOR_CHECKPOINT_FILE/_KEY/_EVERY: the gateway signs checkpoints as it goes
        checkpoint = checkpoint_schedule_from_env()
    except CheckpointError as exc:
        raise click.UsageError(str(exc)) from None
    return Gateway(
        state_dir=state_dir,
        policy_path=policy_path or shipped_policy_path(),
        mcp_config=mcp_config,
        checkpoint=checkpoint,
        held_calls=held_calls,
        store=store,
        telemetry=telemetry,
    )


DEFAULT_SCENARIOS = Path("scenarios")
DEFAULT_BASELINE = Path("baselines/baseline.json")


def suite_options(func: F) -> F:
    """`--scenarios` and the selectors `--id`, `-k`, `--tag`, `--limit` for every command that
    reads scenario files; the selectors reach the command as one `selection` argument."""
    from harness._select import Selection

    @functools.wraps(func)
    def with_selection(
        *args: Any,
        ids: tuple[str, ...],
        expression: str | None,
        tags: tuple[str, ...],
        limit: int | None,
        **kwargs: Any,
    ) -> Any:
        selection = Selection.of(ids=ids, expression=expression, tags=tags, limit=limit)
        return func(*args, selection=selection, **kwargs)

    wrapped: Any = with_selection
    for option in _SELECTORS:
        wrapped = option(wrapped)
    return cast(
        F,
        click.option(
            "--scenarios",
            "scenario_paths",
            type=click.Path(exists=True, path_type=Path),
            multiple=True,
            help="Scenario file or directory (repeatable) [default: scenarios/].",
        )(wrapped),
    )


def _valid_expression(_: click.Context, __: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        from harness._select import SelectionError, parse_expression

        try:
            parse_expression(value)
        except SelectionError as exc:
            raise click.BadParameter(str(exc), param_hint="-k") from None
    return value


# Applied bottom-up: `--help` lists them as written here, top to bottom, after --scenarios.
_SELECTORS = (
    click.option(
        "--limit",
        type=click.IntRange(min=1),
        default=None,
        help="Only the first N selected scenarios, in the suite's order (files sorted).",
    ),
    click.option(
        "--tag",
        "tags",
        multiple=True,
        help="Only scenarios with this tag (repeatable: any of them).",
    ),
    click.option(
        "-k",
        "expression",
        default=None,
        callback=_valid_expression,
        metavar="EXPR",
        help="Only scenarios this expression over ids and tags selects: words, and, or, not, "
        "parentheses (e.g. 'kb and not injection'); a word matches a tag or part of an id, "
        "*?[ make it a glob.",
    ),
    click.option(
        "--id",
        "ids",
        multiple=True,
        metavar="ID",
        help="Only this scenario (repeatable; shell-style globs: 'refund-*'). A selector "
        "that matches nothing exits 64 naming the closest ids and tags; a partial run is "
        "gated only on what it selected.",
    ),
)
