"""`pytest --proctor`: Proctor's scenario suite as pytest test items, gated at session end.

pytest loads this module (the `pytest11` entry point `proctor`) in every session of every
project where Proctor is installed, Proctor's own test suite included; so it imports nothing
but the standard library, and without `--proctor` it only adds its options. Everything else
(`harness.pytest_plugin._plugin`) is imported when the flag is given.

Spelling: `--proctor` is a flag, never a flag with an optional value: an `nargs="?"` option
would swallow the positional path that follows it (`pytest --proctor tests/` would read
`tests/` as a scenario path). The suite is `--proctor-scenarios PATH` (repeatable; it implies
`--proctor`), by default `scenarios/` under pytest's rootdir. What is collected:
`pytest --proctor` alone collects the suite only (not `testpaths`); with positional paths, the
suite is collected besides them (`pytest --proctor tests/`), and a path inside the suite
(`pytest --proctor scenarios/reads.yaml`) narrows the run to it: a partial run, gated on what
it ran, as `proctor run -k` is. A different `--proctor-scenarios` is a different suite, gated
in full, as `proctor run --scenarios` is.

One item per scenario, not per check: one run of a scenario makes one trace, and its checks
are that trace's assertions. Items per check would run the scenario once per check (or share a
run between items, which `-x`, `--lf` and xdist's scheduling would break apart); a scenario is
also what `-k`, tags and the baseline name. A failing item lists every failed check of its run.

Markers: each scenario tag becomes a marker, registered as it is first met (so
`--strict-markers` accepts it and `-m smoke` selects). A tag maps to a marker name by replacing
each character other than an ASCII letter, digit or `_` with `_`, and prefixing `_` when the
result starts with a digit (`default-policy` -> `default_policy`); a tag equal to one of
pytest's own markers or a keyword of `-m` gets the prefix `tag_` (`skip` -> `tag_skip`), so a
tag never skips, xfails or parametrizes a scenario. Two tags may map to one marker; `-k`
matches the tags as written.

Exit codes stay pytest's: a failed check fails its item (1); an invalid suite is a collection
error (2, "interrupted": nothing runs, as `proctor run` exits 3); a bad option or an unusable
baseline is a usage error (4); a gate failure (what `proctor run` exits 2 for) makes a session
whose items all passed exit 1, and the terminal summary shows the CLI's report of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

__all__: list[str] = []  # pytest hooks only

PLUGIN_NAME = "proctor-scenarios"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("proctor", "Proctor scenarios as tests (pytest --proctor)")
    group.addoption(
        "--proctor",
        action="store_true",
        default=False,
        help="Collect Proctor's scenarios as test items (one per scenario), run each with the "
        "replay provider and fail it on a failed check; at the end, gate the run against "
        "the baseline like `proctor run`. Without this flag the plugin does nothing.",
    )
    group.addoption(
        "--proctor-scenarios",
        action="append",
        default=[],
        metavar="PATH",
        help="A scenario file or directory (repeatable; implies --proctor) "
        "[default: scenarios/ under the rootdir].",
    )
    group.addoption(
        "--proctor-baseline",
        default=None,
        metavar="FILE",
        help="Gate against this baseline [default: baselines/baseline.json under the "
        "rootdir, if present; else the run is not gated].",
    )
    group.addoption(
        "--proctor-no-baseline",
        action="store_true",
        default=False,
        help="Score the scenarios only; do not gate.",
    )
    group.addoption(
        "--proctor-fail-on-drift",
        action="store_true",
        default=False,
        help="Fail the session when a scenario's trace changed, even if nothing regressed.",
    )


def pytest_configure(config: pytest.Config) -> None:
    if not (config.getoption("proctor") or config.getoption("proctor_scenarios")):
        stray = [
            flag
            for flag, dest in (
                ("--proctor-baseline", "proctor_baseline"),
                ("--proctor-no-baseline", "proctor_no_baseline"),
                ("--proctor-fail-on-drift", "proctor_fail_on_drift"),
            )
            if config.getoption(dest)
        ]
        if stray:
            from pytest import UsageError

            raise UsageError(f"{', '.join(stray)}: only with --proctor")
        return
    from harness.pytest_plugin._plugin import ProctorPlugin

    config.pluginmanager.register(ProctorPlugin(config), PLUGIN_NAME)
